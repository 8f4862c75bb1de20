//! The validating invoker: the single path from a model's call to an effect.
//!
//! Invariants:
//! - A name that is not registered runs nothing and yields `unknown_tool`,
//!   or what its server's source says instead (`not_pinned` for a tool new
//!   since the pins, `unavailable` for a server that could not start).
//! - Arguments larger than the tool's source accepts (or than its schema
//!   can be checked against within [`VALIDATION_BUDGET`]) yield
//!   `too_large` before validation; arguments that fail the tool's input
//!   schema never reach the tool and yield `invalid_arguments` with every
//!   violation's JSON pointer.
//! - The call's time limit starts before validation and covers it, the
//!   tool's run and the output check; past it the call yields `timeout`.
//!   The clock is read again before the tool runs only after a validation
//!   that may have taken a tenth of a millisecond or more: a shorter one
//!   cannot have used a noticeable part of any limit, and the source
//!   keeps the deadline from there.
//! - A tool that declares an output schema has the first JSON part of each
//!   successful result checked against it; a result that lacks one or does
//!   not match becomes `invalid_output` (error results are not checked).
//! - Whatever happens in a source (a trap, a timeout, a memory bomb)
//!   becomes an error for that one call; the invoker itself never fails.
//! - Every outcome renders as an untrusted block (see [`crate::render`]).

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::registry::{LiveRegistry, RegisteredTool, Registry};
use crate::render;
use crate::schema::{CompiledSchema, Inadmissible, SchemaHash};
use crate::tool::{CallError, ContentPart, ToolResult, Violation};

/// A model's request to run one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's id for this call, echoed in the rendered block.
    pub id: String,
    /// The full registry name, `<plugin>/<server>.<tool>`.
    pub name: String,
    /// The arguments, which must satisfy the tool's input schema.
    pub arguments: serde_json::Value,
}

/// What one call produced: a result, or an error the model can act on.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The call's id.
    pub call_id: String,
    /// The tool name as called.
    pub tool: String,
    /// The result, or why there is none.
    pub result: Result<ToolResult, CallError>,
    /// The untrusted block, rendered once (see [`CallOutcome::render`]).
    rendered: std::sync::OnceLock<String>,
    /// Whether the invoker checked the result's first JSON part against
    /// the tool's output schema (see [`CallOutcome::structured`]).
    output_checked: bool,
}

impl CallOutcome {
    /// The outcome of call `call_id` of `tool`.
    pub fn new(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        result: Result<ToolResult, CallError>,
    ) -> Self {
        CallOutcome {
            call_id: call_id.into(),
            tool: tool.into(),
            result,
            rendered: std::sync::OnceLock::new(),
            output_checked: false,
        }
    }

    /// The data of the result's first JSON part, when the invoker checked
    /// it against the tool's output schema and it is an object: what an
    /// MCP client takes as `structuredContent`. `None` for an error, and
    /// for a tool without an output schema. It is the tool's data as the
    /// schema admits it, not the untrusted block: [`CallOutcome::render`]
    /// is what a model reads.
    pub fn structured(&self) -> Option<&serde_json::Value> {
        if !self.output_checked {
            return None;
        }
        let result = self.result.as_ref().ok().filter(|r| !r.is_error)?;
        let checked = result.content.iter().find_map(|part| match part {
            ContentPart::Json { data, .. } => Some(data),
            _ => None,
        })?;
        checked.is_object().then_some(checked)
    }

    /// True for an error result: a [`CallError`], or a result the tool
    /// itself marked as an error.
    pub fn is_error(&self) -> bool {
        match &self.result {
            Ok(result) => result.is_error,
            Err(_) => true,
        }
    }

    /// The outcome as an untrusted block for the model. Rendered on first
    /// use and the same block afterwards, so that what a journal records,
    /// what a terminal shows and what the model is sent are one text (set
    /// `result` before the first render: later changes do not show).
    pub fn render(&self) -> &str {
        self.rendered.get_or_init(|| match &self.result {
            Ok(result) => render::render_result(&self.tool, &self.call_id, result),
            Err(error) => {
                render::render_error(&self.tool, &self.call_id, error.code(), &error.to_string())
            }
        })
    }

    /// A JSON view of the outcome for machines (`tiny-harness call --json`).
    pub fn to_json(&self) -> serde_json::Value {
        #[derive(Serialize)]
        struct ErrorView<'a> {
            code: &'a str,
            message: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            violations: Option<&'a [crate::tool::Violation]>,
        }
        let mut view = serde_json::json!({
            "call_id": self.call_id,
            "tool": self.tool,
            "is_error": self.is_error(),
            "rendered": self.render(),
        });
        match &self.result {
            Ok(result) => view["result"] = serde_json::to_value(result).unwrap_or_default(),
            Err(error) => {
                let violations = match error {
                    CallError::InvalidArguments { violations } => Some(violations.as_slice()),
                    _ => None,
                };
                view["error"] = serde_json::to_value(ErrorView {
                    code: error.code(),
                    message: error.to_string(),
                    violations,
                })
                .unwrap_or_default();
            }
        }
        view
    }
}

/// What records every call an invoker runs, as it ends, and every call
/// refused before it could run ([`Invoker::record_refused`]): the call,
/// its outcome, the hash of the definition it ran under (once the tool
/// was found) and the name the provider used. [`crate::journal::Journal`] is
/// one; the invoker knows only this trait, so the layers stay one way.
pub trait CallRecorder: Send + Sync + std::fmt::Debug {
    /// Records one call. A recorder keeps its own failures: the call's
    /// outcome is already decided.
    fn record(
        &self,
        call: &ToolCall,
        outcome: &CallOutcome,
        definition: Option<&SchemaHash>,
        wire_name: Option<&str>,
    );

    /// Records one call with who made it ([`Caller`]). By default, the
    /// same as [`CallRecorder::record`] with the caller's wire name: a
    /// recorder that keeps the client overrides this too.
    fn record_from(
        &self,
        call: &ToolCall,
        outcome: &CallOutcome,
        definition: Option<&SchemaHash>,
        caller: Caller<'_>,
    ) {
        self.record(call, outcome, definition, caller.wire_name);
    }

    /// Records a search of the deferred tools, or tools a search found
    /// being loaded into what a model or client is offered. By default,
    /// nothing: a recorder that keeps a history overrides it.
    fn record_disclosure(&self, disclosure: &Disclosure<'_>, caller: Caller<'_>) {
        let _ = (disclosure, caller);
    }
}

/// What a search disclosed, for the recorder: a search of the deferred
/// tools with what it found, or found tools loaded into an offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disclosure<'a> {
    /// A search: the id of the call that asked for it, the query as sent,
    /// and the tools found, best first.
    Search {
        /// The id of the search call.
        id: &'a str,
        /// The query.
        query: &'a str,
        /// The tools found, best first.
        found: &'a [Disclosed<'a>],
    },
    /// Deferred tools added to the tools offered from the next request on.
    Load {
        /// The tools, in the order they are added.
        tools: &'a [Disclosed<'a>],
    },
}

/// One tool a search disclosed: its registry name and the hash of the
/// pinned definition it was found under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Disclosed<'a> {
    /// The registry name.
    pub tool: &'a str,
    /// The sha256 of the tool's whole definition.
    pub definition: &'a SchemaHash,
}

impl<'a> Disclosed<'a> {
    /// `tool`, found under `definition`.
    pub fn new(tool: &'a str, definition: &'a SchemaHash) -> Self {
        Disclosed { tool, definition }
    }
}

/// Who made a call, for the recorder: the name a provider or an MCP
/// client called the tool by, and the gateway's client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller<'a> {
    /// The name the call used, when a provider adapter or a gateway
    /// decoded it.
    pub wire_name: Option<&'a str>,
    /// The client the call came from (a gateway's token name, `stdio`,
    /// `anonymous`), when a gateway served it.
    pub client: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// A call by `client`, under `wire_name`.
    pub fn new(wire_name: Option<&'a str>, client: Option<&'a str>) -> Self {
        Caller { wire_name, client }
    }
}

/// Validates and dispatches calls against a registry. Cheap to clone and
/// safe to share between tasks: calls run concurrently.
#[derive(Debug, Clone)]
pub struct Invoker {
    registry: Arc<LiveRegistry>,
    recorder: Option<Arc<dyn CallRecorder>>,
}

impl Invoker {
    /// An invoker over `registry`, which may change while calls run.
    pub fn new(registry: Arc<LiveRegistry>) -> Self {
        Invoker {
            registry,
            recorder: None,
        }
    }

    /// The same invoker, giving every call to `recorder` as it ends (a
    /// [`crate::journal::Journal`] appends a line for it).
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The registry as it is now (a snapshot: it does not change under its
    /// holder).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.snapshot()
    }

    /// The registry itself, to change it while calls run.
    pub fn live_registry(&self) -> &Arc<LiveRegistry> {
        &self.registry
    }

    /// Runs one call: lookup, validation, then the tool's source.
    pub async fn invoke(&self, call: &ToolCall) -> CallOutcome {
        self.invoke_as(call, None).await
    }

    /// As [`Invoker::invoke`], for a call a provider made under
    /// `wire_name` (given to the recorder).
    pub async fn invoke_as(&self, call: &ToolCall, wire_name: Option<&str>) -> CallOutcome {
        self.invoke_from(call, Caller::new(wire_name, None)).await
    }

    /// As [`Invoker::invoke`], for a call `caller` made (given to the
    /// recorder).
    pub async fn invoke_from(&self, call: &ToolCall, caller: Caller<'_>) -> CallOutcome {
        let mut checked = false;
        let (entry, result) = match self.entry(call) {
            Ok(entry) => {
                let result = Self::run(&entry, call, &mut checked).await;
                (Some(entry), result)
            }
            Err(refused) => (None, Err(refused)),
        };
        let mut outcome = CallOutcome::new(call.id.clone(), call.name.clone(), result);
        outcome.output_checked = checked;
        if let Some(recorder) = &self.recorder {
            let definition = entry.as_ref().map(|e| &e.definition_hash);
            recorder.record_from(call, &outcome, definition, caller);
        }
        outcome
    }

    /// Gives the recorder an outcome decided without running the call: a
    /// call a provider's reply named by a wire name nobody was offered, or
    /// with arguments that are not a JSON object. Such a call never
    /// reaches [`Invoker::invoke_from`], and the model still sees its
    /// outcome, so a recorder sees it too; `call.arguments` is what could
    /// be decoded of them (`null` when nothing could).
    pub fn record_refused(&self, call: &ToolCall, outcome: &CallOutcome, caller: Caller<'_>) {
        if let Some(recorder) = &self.recorder {
            recorder.record_from(call, outcome, None, caller);
        }
    }

    /// Gives the recorder a search or a load of found tools.
    pub fn record_disclosure(&self, disclosure: &Disclosure<'_>, caller: Caller<'_>) {
        if let Some(recorder) = &self.recorder {
            recorder.record_disclosure(disclosure, caller);
        }
    }

    /// The tool `call` names. It holds its source: a change to the
    /// registry after this lookup does not disturb the call.
    fn entry(&self, call: &ToolCall) -> Result<Arc<RegisteredTool>, CallError> {
        self.registry
            .with_current(|registry| match registry.get(&call.name) {
                Some(entry) => Ok(entry.clone()),
                None => {
                    Err(registry
                        .missing(&call.name)
                        .unwrap_or_else(|| CallError::UnknownTool {
                            name: call.name.clone(),
                        }))
                }
            })
    }

    /// The call's result; `checked` gets whether the result passed the
    /// tool's output schema.
    async fn run(
        entry: &RegisteredTool,
        call: &ToolCall,
        checked: &mut bool,
    ) -> Result<ToolResult, CallError> {
        let started = Instant::now();
        let limits = entry.source.call_limits();
        let deadline = started + limits.timeout;
        let timed_out = || CallError::Timeout {
            limit: limits.timeout,
        };
        let work = check_size(&entry.schema, &call.arguments, limits.arguments_bytes)?;
        entry
            .schema
            .validate(&call.arguments)
            .map_err(|violations| CallError::InvalidArguments { violations })?;
        // A validation that may have used a noticeable part of the time
        // limit is followed by a look at the clock; a small one (all but
        // a few calls) cannot have, and the source keeps the deadline.
        if work > SLOW_VALIDATION && Instant::now() >= deadline {
            return Err(timed_out());
        }
        // The call's span: what the source logs while it runs (a plugin's
        // output, say) carries the call's id. Unless something listens,
        // no span is made and the future is not wrapped at all.
        let running = entry.source.call(
            entry.name.server(),
            entry.name.tool(),
            &call.arguments,
            deadline,
        );
        let result = if tracing::span_enabled!(target: "tiny_harness::call", tracing::Level::INFO) {
            let span = tracing::info_span!(target: "tiny_harness::call", "call", id = %call.id);
            tracing::Instrument::instrument(running, span).await?
        } else {
            running.await?
        };
        if let Some(schema) = &entry.output_schema {
            check_output(schema, &result)?;
            if Instant::now() >= deadline {
                return Err(timed_out());
            }
            *checked = !result.is_error;
        }
        Ok(result)
    }
}

/// The validation work (in the units of [`VALIDATION_BUDGET`], about a
/// nanosecond each) above which the invoker looks at the clock again
/// before the call runs: a tenth of a millisecond.
const SLOW_VALIDATION: u64 = 100_000;

pub use crate::schema::VALIDATION_BUDGET;

/// Refuses arguments larger than `max_bytes` of compact JSON, or too large
/// to check against `schema` within [`VALIDATION_BUDGET`]. Returns the most
/// work validating them can take (their size times the schema's cost).
fn check_size(
    schema: &CompiledSchema,
    arguments: &serde_json::Value,
    max_bytes: usize,
) -> Result<u64, CallError> {
    let size = crate::tool::compact_json_len(arguments, max_bytes);
    if size > max_bytes {
        return Err(CallError::ArgumentsTooLarge {
            size,
            limit: max_bytes,
        });
    }
    match schema.admit_sized(arguments, Some(size)) {
        Ok(()) => {}
        // Said in bytes, which the model can act on: compact JSON has at
        // least one byte per unit.
        Err(Inadmissible::TooLarge { most_units }) => {
            let limit = usize::try_from(most_units)
                .unwrap_or(usize::MAX)
                .min(max_bytes);
            return Err(CallError::ArgumentsTooLarge { size, limit });
        }
        Err(Inadmissible::TooDeep {
            levels,
            most_levels,
        }) => {
            return Err(CallError::InvalidArguments {
                violations: vec![Violation {
                    instance_path: String::new(),
                    schema_path: String::new(),
                    message: format!(
                        "the arguments nest {levels} levels deep; this tool's schema can \
                         check at most {most_levels}"
                    ),
                }],
            });
        }
    }
    // Compact JSON has at least one byte per unit.
    Ok((size as u64).saturating_mul(schema.cost()))
}

/// Checks a successful result's structured data (its first JSON part)
/// against the tool's output schema. Error results carry none to check.
fn check_output(schema: &CompiledSchema, result: &ToolResult) -> Result<(), CallError> {
    if result.is_error {
        return Ok(());
    }
    let Some((index, data)) =
        result
            .content
            .iter()
            .enumerate()
            .find_map(|(index, part)| match part {
                ContentPart::Json { data, .. } => Some((index, data)),
                _ => None,
            })
    else {
        return Err(CallError::InvalidOutput(
            "the tool declares an output schema but its result has no JSON part".into(),
        ));
    };
    if let Err(refused) = schema.admit(data) {
        return Err(CallError::InvalidOutput(match refused {
            Inadmissible::TooDeep { levels, .. } => format!(
                "part {} nests {levels} levels deep, too deep to check against the tool's \
                 output schema",
                index + 1
            ),
            _ => format!(
                "part {} is too large to check against the tool's output schema within \
                 the validation budget",
                index + 1
            ),
        }));
    }
    schema.validate(data).map_err(|violations| {
        let mut details: Vec<String> = violations
            .iter()
            .take(MAX_OUTPUT_VIOLATIONS)
            .map(describe_violation)
            .collect();
        if violations.len() > MAX_OUTPUT_VIOLATIONS {
            details.push(format!(
                "and {} more",
                violations.len() - MAX_OUTPUT_VIOLATIONS
            ));
        }
        CallError::InvalidOutput(format!(
            "part {} does not match the tool's output schema: {}",
            index + 1,
            details.join("; ")
        ))
    })
}

/// The most output-schema violations named in one `invalid_output` error.
const MAX_OUTPUT_VIOLATIONS: usize = 5;

/// The longest violation message kept: a message can quote the offending
/// value, which the tool chose and may be huge.
const MAX_VIOLATION_CHARS: usize = 200;

/// One violation as `pointer: message`, the message cut to
/// [`MAX_VIOLATION_CHARS`].
fn describe_violation(violation: &Violation) -> String {
    let at = violation.pointer();
    let message = &violation.message;
    match message.char_indices().nth(MAX_VIOLATION_CHARS) {
        Some((cut, _)) => format!("{at}: {}...", &message[..cut]),
        None => format!("{at}: {message}"),
    }
}

#[cfg(test)]
mod tests;
