//! One turn of the tool loop, as a harness host runs it against a
//! provider: the calls of one model response decoded with the request's
//! codec, run concurrently through the validating invoker, and the
//! provider's tool-result message(s) built from their outcomes.
//!
//! Invariants:
//! - Every call the response holds gets exactly one result, in the
//!   response's order: a refused call (a name not offered, arguments that
//!   are not JSON) gets its error result and runs nothing.
//! - What one response can make the host do is bounded: at most
//!   [`MAX_CALLS_PER_TURN`] calls, at most [`MAX_CONCURRENT_CALLS`] of them
//!   at once.
//! - A call of the host's search (offered when the registry defers tools)
//!   is answered in place from the registry's index, journaled, and its
//!   finds kept in [`Turn::found`] for [`Host::offer_next`]; a deferred
//!   tool the model calls without having searched runs as any registered
//!   tool does, as a provider that found it would let it.
//! - With a workflow ([`Host::run_calls_in`]), the calls of bare-named
//!   tools (the intrinsics) are applied to it one after another, in the
//!   response's order, while the other calls run concurrently: the same
//!   response on the same workflow always gives the same workflow.

use std::sync::Arc;

use serde_json::Value;

#[cfg(feature = "intrinsics")]
use crate::intrinsic::{Workflow, WorkflowCommand};
use crate::invoke::{CallOutcome, Caller, ToolCall};
use crate::provider::{DecodedCall, EncodedRequest, GeminiSchema, Provider, ProviderError};

use super::Host;

/// Most tool calls one response may hold (providers send a handful; the
/// largest parallel batches seen are about a hundred).
pub const MAX_CALLS_PER_TURN: usize = 1024;

/// Most calls of one turn that run at once.
pub const MAX_CONCURRENT_CALLS: usize = 16;

/// What one turn did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Turn {
    /// The calls, decoded, in the response's order.
    pub calls: Vec<DecodedCall>,
    /// Each call's outcome, in the same order.
    pub outcomes: Vec<CallOutcome>,
    /// The provider's tool-result message(s) to append to the conversation.
    pub results: Vec<Value>,
    /// The workflow commands applied, in the order they were applied (the
    /// response's order); empty without a workflow.
    #[cfg(feature = "intrinsics")]
    pub commands: Vec<WorkflowCommand>,
    /// The deferred tools this turn's searches found (the host's, and the
    /// provider's own), by registry name, best first per search, each
    /// once: [`Host::offer_next`] lists them from the next request on.
    pub found: Vec<String>,
}

impl Turn {
    /// True when any call's outcome is an error.
    pub fn any_error(&self) -> bool {
        self.outcomes.iter().any(CallOutcome::is_error)
    }
}

/// Why a response's calls were not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The response does not have the provider's shape.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The provider's own search names a tool the request did not defer
    /// (not registered, or not deferred): the response is not an answer
    /// to this request, and none of its calls ran.
    #[error(
        "the provider's tool search names {name:?}, which is not a deferred tool of this request; nothing was run"
    )]
    NotDeferred {
        /// The name, as the request knows it (or as sent, when unknown).
        name: String,
    },
    /// The response holds more calls than one turn may run.
    #[error(
        "the response holds {count} tool calls, more than the {MAX_CALLS_PER_TURN} one turn may run"
    )]
    TooManyCalls {
        /// How many it holds.
        count: usize,
    },
}

/// The workflow a turn's intrinsics are applied to, and the acting
/// participant, if the turn has one.
#[cfg(feature = "intrinsics")]
type Bound<'a> = Option<(&'a mut Workflow, Option<&'a str>)>;
/// Without the intrinsics no turn has a workflow.
#[cfg(not(feature = "intrinsics"))]
type Bound<'a> = Option<(std::convert::Infallible, std::marker::PhantomData<&'a ()>)>;

impl Host {
    /// The tools offered for `provider` in this iteration: every registered
    /// tool, encoded, with the request's wire-name codec. Send
    /// `request.tools` with the request and keep `request` for
    /// [`Host::run_calls`]. When the registry defers tools (`[search]`),
    /// they and the search that finds them take the provider's form
    /// ([`crate::provider::OfferedSearch`]); after a turn,
    /// [`Host::offer_next`] makes the next request, with the tools found.
    pub fn offer(&self, provider: Provider) -> EncodedRequest {
        provider.encode_registry(&self.registry())
    }

    /// [`Host::offer`], with Gemini's schemas sent as `gemini` says (the
    /// subset of OpenAPI that `parameters` takes, rewritten from each
    /// input schema, or JSON Schema in `parametersJsonSchema` as
    /// [`Host::offer`] sends them); the other providers take JSON Schema
    /// and ignore it.
    pub fn offer_with(&self, provider: Provider, gemini: GeminiSchema) -> EncodedRequest {
        provider.encode_registry_with(&self.registry(), &[], gemini)
    }

    /// Runs the tool calls of `response`, the provider's reply to
    /// `request`, in the current iteration (call [`Host::begin_iteration`]
    /// first, once per turn), at most [`MAX_CONCURRENT_CALLS`] at once.
    pub async fn run_calls(
        &self,
        request: &EncodedRequest,
        response: &Value,
    ) -> Result<Turn, TurnError> {
        self.turn(request, response, None).await
    }

    #[cfg(feature = "intrinsics")]
    /// [`Host::run_calls`], with the intrinsics among the calls applied to
    /// `workflow` for the acting participant `actor` (as
    /// [`Host::call_intrinsic`] applies one): one after another in the
    /// response's order, while the other calls run concurrently. A refused
    /// intrinsic leaves `workflow` as the calls before it left it.
    pub async fn run_calls_in(
        &self,
        request: &EncodedRequest,
        response: &Value,
        workflow: &mut Workflow,
        actor: Option<&str>,
    ) -> Result<Turn, TurnError> {
        self.turn(request, response, Some((workflow, actor))).await
    }

    async fn turn(
        &self,
        request: &EncodedRequest,
        response: &Value,
        #[cfg_attr(not(feature = "intrinsics"), allow(unused_mut))] mut bound: Bound<'_>,
    ) -> Result<Turn, TurnError> {
        let calls = request.provider.decode_calls(&request.codec, response)?;
        if calls.len() > MAX_CALLS_PER_TURN {
            return Err(TurnError::TooManyCalls { count: calls.len() });
        }
        let registry = self.registry();
        let mut found = self.provider_found(request, response, &registry)?;
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_CALLS));
        let mut running = tokio::task::JoinSet::new();
        let mut intrinsics = Vec::new();
        let mut searched: Vec<Option<Vec<Value>>> = vec![None; calls.len()];
        let mut answered: Vec<(usize, CallOutcome)> = Vec::new();
        for (index, decoded) in calls.iter().enumerate() {
            if let Some(refused) = decoded.refusal_outcome() {
                let call = ToolCall {
                    id: refused.call_id.clone(),
                    name: refused.tool.clone(),
                    arguments: Value::Null,
                };
                let caller = Caller::new(Some(&decoded.wire_name), None);
                self.invoker.record_refused(&call, &refused, caller);
                running.spawn(async move { (index, refused) });
                continue;
            }
            let Ok(call) = decoded.call.clone() else {
                continue;
            };
            if Self::is_search(request, &call) {
                let answer = self.answer_search(request, decoded, &call, &registry);
                for name in answer.found {
                    if !found.contains(&name) {
                        found.push(name);
                    }
                }
                searched[index] = answer.entries;
                answered.push((index, answer.outcome));
                continue;
            }
            let bare = (registry.get(&call.name)).is_some_and(|tool| tool.name.is_bare());
            if bare && bound.is_some() {
                intrinsics.push((index, call, decoded.wire_name.clone()));
                continue;
            }
            let (host, permits) = (self.clone(), permits.clone());
            let wire_name = decoded.wire_name.clone();
            running.spawn(async move {
                let _permit = permits.acquire_owned().await;
                (index, host.invoke_as(&call, Some(&wire_name)).await)
            });
        }
        let mut outcomes: Vec<Option<CallOutcome>> = vec![None; calls.len()];
        for (index, outcome) in answered {
            outcomes[index] = Some(outcome);
        }
        #[cfg(feature = "intrinsics")]
        let mut commands = Vec::new();
        #[cfg(feature = "intrinsics")]
        if let Some((workflow, actor)) = bound.as_mut() {
            for (index, call, wire_name) in intrinsics {
                let done = self
                    .call_intrinsic_as(&call, Some(&wire_name), workflow, *actor)
                    .await;
                commands.extend(done.command);
                outcomes[index] = Some(done.outcome);
            }
        }
        // A call's task cannot panic by design; if one ever did, its slot
        // stays empty and gets an error result below rather than none.
        while let Some(joined) = running.join_next().await {
            if let Ok((index, outcome)) = joined {
                outcomes[index] = Some(outcome);
            }
        }
        let outcomes: Vec<CallOutcome> = outcomes
            .into_iter()
            .zip(&calls)
            .map(|(outcome, decoded)| {
                outcome.unwrap_or_else(|| {
                    CallOutcome::new(
                        decoded.id.clone(),
                        decoded.wire_name.clone(),
                        Err(crate::tool::CallError::Failed(
                            "the call stopped unexpectedly".to_owned(),
                        )),
                    )
                })
            })
            .collect();
        let replies: Vec<_> = calls
            .iter()
            .zip(&outcomes)
            .zip(searched)
            .map(|((decoded, outcome), entries)| {
                let mut reply = decoded.reply(outcome);
                reply.found = entries;
                reply
            })
            .collect();
        let results = request.provider.format_results(&replies);
        Ok(Turn {
            calls,
            outcomes,
            results,
            #[cfg(feature = "intrinsics")]
            commands,
            found,
        })
    }
}
