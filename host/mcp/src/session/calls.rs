//! A tool called on an MCP source: the attempts, which failures are
//! retried (only for tools whose pinned annotations allow it, within the
//! deadline), and what each answer becomes (a result, or a typed error).

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::super::bounded::{Cause, MAX_DEPTH};
use super::super::call::{self, Answer};
use super::super::connect::{self, close};
use super::super::convert;
use super::{MAX_ATTEMPTS, McpSource, State};
use tiny_harness_core::source::{
    CallFuture, CallLimits, ListFuture, Missing, PendingTool, ToolSource,
};
use tiny_harness_core::tool::{CallError, ResultBudget, ToolResult};

impl McpSource {
    fn retry_safe(&self, tool: &str) -> bool {
        self.watch
            .read()
            .ok()
            .and_then(|w| w.annotations(tool))
            .is_some_and(|a| a.retry_safe())
    }

    /// Whether connection `generation`'s login replaced a token the
    /// server rejected (once: asking clears it).
    async fn token_replaced(&self, generation: u64) -> bool {
        let connection = self.connection.lock().await;
        connection
            .as_ref()
            .filter(|open| open.generation == generation)
            .and_then(|open| open.login.as_ref())
            .is_some_and(|login| login.take_replaced())
    }

    /// One call of `tool`, made once more on a new session (up to
    /// `renewals` times) when the server rejected the token and the login
    /// replaced it: a server that refuses a request's credentials has not
    /// acted on it, so this holds for every tool.
    async fn attempt(
        &self,
        tool: &str,
        arguments: &Value,
        deadline: Instant,
        renewals: u32,
    ) -> Result<ToolResult, CallError> {
        let (peer, generation) = self.peer().await?;
        self.check().await?;
        if let Some(refusal) = self.watch.read().ok().and_then(|w| w.refusal(tool)) {
            return Err(refusal);
        }
        let limit = self.timeout();
        let stop = deadline.min(Instant::now() + limit);
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments.clone());
        }
        // Dropping the request on timeout sends `notifications/cancelled`.
        let call = std::pin::pin!(call::call_tool(&peer, params, &self.shared));
        let response = self
            .kept
            .within(stop.into(), call)
            .await
            .ok_or(CallError::Timeout { limit })?;
        match response {
            Ok(Answer::Complete(result)) => convert::result(
                result,
                ResultBudget::new(self.limits.result_bytes, self.limits.result_parts),
            ),
            Ok(Answer::Typed(result)) => convert::typed_result(
                result,
                ResultBudget::new(self.limits.result_bytes, self.limits.result_parts),
            ),
            Ok(Answer::InputRequired) => Err(CallError::Failed(
                "the server asked for input (sampling, elicitation or roots) that this host does not give".to_owned(),
            )),
            Ok(Answer::Task) => Err(CallError::Failed(
                "the server answered with a task, which this host does not follow".to_owned(),
            )),
            Err(rmcp::ServiceError::McpError(error)) => Err(CallError::Failed(format!(
                "the server refused the call: {}",
                tiny_harness_core::display::one_line(&error.message)
            ))),
            Err(rmcp::ServiceError::Timeout { .. }) => Err(CallError::Timeout { limit }),
            Err(other) if other.auth_challenge().is_some() => {
                // The transport ends after a 401 or 403: the next call opens
                // a new session, with the login as it is then.
                let challenge = other.auth_challenge().unwrap_or_default().to_owned();
                if renewals > 0 && self.token_replaced(generation).await {
                    Box::pin(self.discard(generation, "the server rejected its token, since refreshed"))
                        .await;
                    return Box::pin(self.attempt(tool, arguments, deadline, renewals - 1)).await;
                }
                let refusal = self.refusal(&challenge);
                Box::pin(self.discard(generation, &refusal.reason)).await;
                Err(if refusal.login_would_help {
                    CallError::LoginRequired(refusal.reason)
                } else {
                    CallError::Denied(refusal.reason)
                })
            }
            Err(other) => {
                match Box::pin(self.discard(generation, &connect::plain(&other))).await {
                    Some(Cause::TooLong) => {
                        return Err(CallError::TooLarge {
                            limit: self.limits.result_bytes,
                        });
                    }
                    Some(Cause::TooDeep) => {
                        return Err(CallError::InvalidOutput(format!(
                            "the server answered with a message nested more than {MAX_DEPTH} levels deep"
                        )));
                    }
                    None => {}
                }
                Err(CallError::Unavailable(format!(
                    "the connection to the server failed during the call: {}",
                    connect::plain(&other)
                )))
            }
        }
    }

    /// What a server's 401 or 403 `challenge` during a call means.
    fn refusal(&self, challenge: &str) -> super::super::oauth::Refusal {
        match self.launch.as_ref().map(|l| &l.target) {
            Some(super::super::launch::Target::Http(endpoint)) => {
                super::super::oauth::refusal_during_call(&self.server, endpoint.auth(), challenge)
            }
            _ => super::super::oauth::Refusal {
                reason: format!("server {} refused the host's credentials", self.server),
                login_would_help: false,
            },
        }
    }

    /// Closes connection `generation` if it is still the current one, so
    /// that the next call opens a new one, and marks the source
    /// disconnected for `why`. Says whether that session ended because the
    /// server sent a message over the size limit or nested too deep.
    async fn discard(&self, generation: u64, why: &str) -> Option<Cause> {
        let mut connection = self.connection.lock().await;
        if connection
            .as_ref()
            .is_some_and(|c| c.generation == generation)
            && let Some(broken) = connection.take()
        {
            drop(connection);
            let cause = broken.tripped.cause();
            // Boxed, as a rare path: see `McpSource::session`.
            Box::pin(close(broken)).await;
            self.set_status(|s| {
                s.state =
                    State::Disconnected(tiny_harness_core::display::one_line(why).into_owned())
            });
            cause
        } else {
            None
        }
    }
}

/// Backoff before attempt `attempt + 1`: 50 ms, then 100 ms, each with up
/// to half again of jitter.
fn backoff(attempt: u32) -> Duration {
    let base = 50u64 << (attempt.saturating_sub(1)).min(6);
    let mut byte = [0u8; 1];
    let _ = getrandom::fill(&mut byte);
    Duration::from_millis(base + base * u64::from(byte[0]) / 512)
}

impl ToolSource for McpSource {
    fn kind(&self) -> &'static str {
        "mcp"
    }

    fn call_limits(&self) -> CallLimits {
        self.limits.call
    }

    fn call<'a>(
        &'a self,
        _server: &'a str,
        tool: &'a str,
        arguments: &'a Value,
        deadline: Instant,
    ) -> CallFuture<'a> {
        let call = Box::write(Box::new_uninit(), async move {
            let retry = self.retry_safe(tool);
            let mut attempt = 1;
            loop {
                let outcome = self.attempt(tool, arguments, deadline, 1).await;
                match outcome {
                    Err(error) if error.is_transient() && !self.settled() => {
                        let pause = backoff(attempt);
                        if !retry || attempt >= MAX_ATTEMPTS || Instant::now() + pause >= deadline {
                            return Err(not_retried(error, retry, attempt));
                        }
                        tracing::debug!(target: "tiny_harness::mcp", tool, attempt, "retrying: {error}");
                        tokio::time::sleep(pause).await;
                        attempt += 1;
                    }
                    other => return other,
                }
            }
        });
        Box::into_pin(call)
    }

    /// Lists the server's tools again (starting it if it has not started),
    /// as they are now: not as pinned.
    fn list_tools(&self) -> ListFuture<'_> {
        Box::pin(async move {
            let listing = self
                .list()
                .await
                .map_err(|why| CallError::Unavailable(why.to_string()))?;
            Ok(listing
                .tools
                .into_iter()
                .map(|definition| PendingTool::new(self.server.clone(), definition))
                .collect())
        })
    }

    fn missing(&self, server: &str, tool: &str) -> Option<Missing> {
        if server != self.server {
            return None;
        }
        if self.watch.read().is_ok_and(|w| w.is_new(tool)) {
            return Some(Missing::NotPinned);
        }
        // A server that never started has no known tools: every name of it
        // answers why. The host's own refusal (a grant, an install) is said
        // in full; what a server that ran said is never quoted here.
        match self.status().state {
            State::Failed(why) if self.pinned().is_empty() => {
                let refused = self.refused.lock().ok().and_then(|r| r.clone());
                if let Some((reason, true)) = refused {
                    return Some(Missing::LoginRequired(reason));
                }
                let why = if self.launch.is_none() {
                    why
                } else {
                    "it failed (why is shown by `tiny-harness plugins`)".to_owned()
                };
                Some(Missing::Unavailable(format!(
                    "server {}/{server} cannot be started: {why}",
                    self.plugin
                )))
            }
            _ => None,
        }
    }
}

/// A transient failure as the model sees it: it says whether the call was
/// retried, so a model knows whether its effect may have happened.
fn not_retried(error: CallError, retry: bool, attempts: u32) -> CallError {
    match error {
        CallError::Unavailable(why) if !retry => CallError::Unavailable(format!(
            "{why}; the call was not retried because the tool is not marked idempotent, so it may or may not have taken effect"
        )),
        CallError::Unavailable(why) if attempts > 1 => {
            CallError::Unavailable(format!("{why} (after {attempts} attempts)"))
        }
        other => other,
    }
}
