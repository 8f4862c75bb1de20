//! # tiny-harness-provider
//!
//! Provider adapters: our tools in each model provider's request format,
//! the tool calls in its responses, and our results in its result format,
//! with the names each provider accepts ([`wire`]). Pure data on
//! [`serde_json::Value`]s: no I/O, no HTTP, no conversation state. It
//! depends on `tiny-harness-core` only, never on the sandbox, WebAssembly
//! or MCP crates; the `tiny-harness-host` facade re-exports [`Provider`],
//! the calls and replies of a turn, the request and the codec's
//! `WireCodec` at its root, not these modules.
//!
//! One adapter per provider ([`Provider`], each in a module of its own):
//! OpenAI Chat Completions and Responses (`openai`), Anthropic Messages
//! (`anthropic`), Gemini `generateContent` (`gemini`) and Bedrock Converse
//! (`bedrock`), and MCP `tools/list`/`tools/call` for a gateway (`mcp`).
//! A turn goes:
//!
//! ```text
//! Provider::encode_tools(tools)        -> EncodedRequest { codec, tools, rewrites }
//!   (the harness writes `tools` into its request body: `tools.to_string()`)
//! Provider::decode_calls(codec, resp)  -> [DecodedCall]  (ToolCall or refusal)
//!   (the harness invokes each ToolCall; each refusal is already its outcome)
//! Provider::format_results([ToolReply]) -> the messages/items to append
//! ```
//!
//! A registry that defers tools (`[search]`) is offered with them and the
//! search that finds them in each provider's own form
//! ([`Provider::encode_registry`], [`OfferedSearch`]; the `deferred`
//! module says how for each provider): Anthropic's `defer_loading` and
//! `tool_reference`, OpenAI Responses' `tool_search` and namespaces, and
//! for the others the host's [`SEARCH_TOOL`] with the found tools listed
//! after it ([`EncodedRequest::loaded`]).
//!
//! Invariants (each has a test in `tests.rs` or beside it in `tests/`:
//! `encode.rs`, `results.rs`, `null.rs`, `schema.rs`, `props.rs`):
//! - **One result per call.** [`Provider::decode_calls`] returns every
//!   tool call of the response, in order, each with its id, and every one
//!   of them is either a [`ToolCall`] to run or a refusal whose
//!   [`DecodedCall::refusal_outcome`] is the error result to send back.
//!   [`Provider::format_results`] formats exactly the replies it is given,
//!   in their order, so the model gets one result per call.
//! - **Never a guessed name.** A call's name is decoded with the request's
//!   [`WireCodec`] only: a name not offered in this request is refused with
//!   `unknown_tool`, never matched to something close.
//! - **The original schema is what is validated.** The schemas sent to a
//!   provider are hints for the model (for Gemini's subset, where it is
//!   chosen, possibly weakened by [`SchemaRewrite`]); the invoker checks every call's arguments against
//!   the tool's registered schema, so a lossy hint never weakens the check.
//! - **Arguments are objects.** Arguments that are not JSON, or are JSON
//!   but not an object, are refused with `invalid_arguments` and one
//!   violation at `""` saying so; nothing runs.
//! - **Rendered blocks are sent verbatim.** A reply's content is the
//!   outcome's untrusted block ([`CallOutcome::render`]) byte for byte,
//!   with the provider's error flag where it has one.
//! - **Malformed responses are errors, not panics.** A response missing a
//!   field the format requires is a [`ProviderError`] on one line.
//! - **Each tool is encoded once, and a request shares it.** A tool's
//!   entry for a provider is built on the first request that offers it and
//!   kept with the registry entry as compact JSON (`provider/cache.rs`);
//!   a request holds shared entries (`provider/payload.rs`), so
//!   encoding one costs a few pointer copies and a hash-table insertion
//!   per tool, and writing its [`ToolsPayload`] copies text. The bytes are
//!   exactly those of the adapters' values, cached or not.

// The crate exposes the wire-name codec as a module and the rest at its
// root; each adapter is its own.
mod anthropic;
mod bedrock;
mod cache;
mod deferred;
mod encode;
mod gemini;
mod gemini_schema;
mod gemini_shapes;
mod mcp;
mod openai;
mod payload;
mod read;
pub mod wire;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use tiny_harness_core::invoke::{CallOutcome, ToolCall};
use tiny_harness_core::registry::{RegisteredTool, Registry};
use tiny_harness_core::tool::{CallError, Violation};
use wire::{UnknownWireName, WireCodec, WireRule};

pub use deferred::{OfferedSearch, SEARCH_DESCRIPTION, SEARCH_TOOL, search_schema};
pub(crate) use encode::Offered;
pub use encode::{EncodedRequest, ToolRewrites};
pub use gemini::GeminiSchema;
pub use gemini_schema::{SchemaLimits, SchemaRewrite};
pub use payload::ToolsPayload;
pub(crate) use read::{Reader, index, join, json_kind};

/// A model provider's API, by its CLI name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions (`openai-chat`).
    OpenAiChat,
    /// OpenAI Responses (`openai-responses`).
    OpenAiResponses,
    /// Anthropic Messages (`anthropic`).
    Anthropic,
    /// Gemini `generateContent` (`gemini`).
    Gemini,
    /// Amazon Bedrock Converse (`bedrock`).
    Bedrock,
    /// MCP `tools/list` and `tools/call`, for a gateway (`mcp`).
    Mcp,
}

impl Provider {
    /// Every provider, in CLI order.
    pub const ALL: [Provider; 6] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Bedrock,
        Provider::Mcp,
    ];

    /// The CLI name: `openai-chat`, `openai-responses`, `anthropic`,
    /// `gemini`, `bedrock` or `mcp`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai-chat",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Bedrock => "bedrock",
            Provider::Mcp => "mcp",
        }
    }

    /// The tool-name rule of the provider's API.
    pub const fn rule(self) -> WireRule {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => WireRule::openai(),
            Provider::Anthropic => WireRule::anthropic(),
            Provider::Gemini => WireRule::gemini(),
            Provider::Bedrock => WireRule::bedrock(),
            Provider::Mcp => WireRule::mcp(),
        }
    }

    /// The tools of `registry`, in registry-name order, for one request;
    /// when the registry defers tools, with those and the search that
    /// finds them in the provider's form (see [`OfferedSearch`]).
    pub fn encode_registry(self, registry: &Registry) -> EncodedRequest {
        self.encode_registry_with(registry, &[], GeminiSchema::JsonSchema)
    }

    /// [`Provider::encode_registry`], with the deferred tools that earlier
    /// searches found (`loaded`, registry names in the order found) listed
    /// after the search where the provider has no deferred loading of its
    /// own, and Gemini's schemas sent as `gemini` says.
    pub fn encode_registry_with(
        self,
        registry: &Registry,
        loaded: &[String],
        gemini: GeminiSchema,
    ) -> EncodedRequest {
        deferred::encode_offer(self, registry, loaded, gemini)
    }

    /// `tools` (a tool given twice counts once), in the order given, as
    /// the provider's `tools` payload ([`EncodedRequest::tools`]), with the
    /// request's codec. Every provider gets the input schemas unchanged
    /// (Gemini in `parametersJsonSchema`).
    pub fn encode_tools<'a>(
        self,
        tools: impl IntoIterator<Item = &'a RegisteredTool>,
    ) -> EncodedRequest {
        self.encode_tools_with(tools, GeminiSchema::JsonSchema)
    }

    /// [`Provider::encode_tools`], with Gemini's schemas sent as `gemini`
    /// says (ignored by the other providers, which take JSON Schema). Only
    /// entries with the schemas as JSON Schema (`GeminiSchema::JsonSchema`)
    /// are kept between requests: the subset is rewritten every time it is
    /// chosen.
    pub fn encode_tools_with<'a>(
        self,
        tools: impl IntoIterator<Item = &'a RegisteredTool>,
        gemini: GeminiSchema,
    ) -> EncodedRequest {
        encode::encode(self, tools, gemini)
    }

    /// Every tool call in `response` (the provider's whole response body),
    /// in order, decoded with the codec of the request it answers. A
    /// response without tool calls gives an empty list.
    pub fn decode_calls(
        self,
        codec: &WireCodec,
        response: &Value,
    ) -> Result<Vec<DecodedCall>, ProviderError> {
        let raw = match self {
            Provider::OpenAiChat => openai::chat_calls(response)?,
            Provider::OpenAiResponses => openai::responses_calls(response)?,
            Provider::Anthropic => anthropic::calls(response)?,
            Provider::Gemini => gemini::calls(response)?,
            Provider::Bedrock => bedrock::calls(response)?,
            Provider::Mcp => mcp::calls(response)?,
        };
        Ok(raw.into_iter().map(|call| call.decode(codec)).collect())
    }

    /// The registry names of the tools the provider's own search found in
    /// `response` (Anthropic's `tool_reference`s, the functions of an
    /// OpenAI Responses server `tool_search_output`), decoded with the
    /// request's codec: `Err` holds a name the request never offered
    /// (cut as an unknown name is). Empty for the other providers.
    pub fn decode_disclosed(
        self,
        codec: &WireCodec,
        response: &Value,
    ) -> Result<Vec<Result<String, String>>, ProviderError> {
        let names = match self {
            Provider::Anthropic => anthropic::disclosed(response)?,
            Provider::OpenAiResponses => openai::responses_disclosed(response)?,
            _ => Vec::new(),
        };
        Ok(names
            .into_iter()
            .map(|wire| match codec.decode(wire) {
                Ok(name) => Ok(name.to_owned()),
                Err(unknown) => Err(shown(&unknown)),
            })
            .collect())
    }

    /// The provider's tool-result message(s) for `replies`, in order, to
    /// append to the conversation after the model's message: one message
    /// per reply for OpenAI Chat, one item per reply for Responses, one
    /// JSON-RPC response per reply for MCP, and a
    /// single message holding every reply for Anthropic, Gemini and
    /// Bedrock (none when `replies` is empty).
    pub fn format_results(self, replies: &[ToolReply]) -> Vec<Value> {
        match self {
            Provider::OpenAiChat => openai::chat_results(replies),
            Provider::OpenAiResponses => openai::responses_results(replies),
            Provider::Anthropic => anthropic::results(replies),
            Provider::Gemini => gemini::results(replies),
            Provider::Bedrock => bedrock::results(replies),
            Provider::Mcp => mcp::results(replies),
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| UnknownProvider(tiny_harness_core::display::one_line(name).into_owned()))
    }
}

/// A provider name that is none of [`Provider::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown provider {0:?}: use openai-chat, openai-responses, anthropic, gemini, bedrock or mcp"
)]
pub struct UnknownProvider(String);

/// One tool call of a response, decoded: a call to run, or a refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedCall {
    /// The call's id: the provider's, or one the adapter invented (Gemini
    /// calls without an id get `gemini-<index of the part>`).
    pub id: String,
    /// Where [`DecodedCall::id`] comes from, which says how (and whether)
    /// it is sent back.
    pub origin: IdOrigin,
    /// The tool name exactly as the model sent it.
    pub wire_name: String,
    /// The call to run (registry name, parsed arguments), or why not.
    pub call: Result<ToolCall, Refusal>,
    /// The protocol revision the request names, where the format carries
    /// one (an MCP `tools/call` of 2026-07-28 names it in `params._meta`):
    /// its result is formatted for that revision.
    pub protocol: Option<String>,
    /// What kind of call the provider made.
    pub kind: CallKind,
}

/// What kind of call a provider made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallKind {
    /// A call of a tool by name (every provider's function or tool call;
    /// the host's search too where it is offered as a tool).
    #[default]
    Tool,
    /// An OpenAI Responses `tool_search_call` the client executes: the
    /// host's search, answered with a `tool_search_output`.
    ToolSearch,
}

/// Where a call's id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdOrigin {
    /// The provider gave it as a string; it is sent back as one.
    Given,
    /// The provider gave a JSON number (an MCP JSON-RPC request id): the
    /// id is its decimal text, and it is sent back as the number.
    Number,
    /// The provider gave none (Gemini may not): the adapter made it up,
    /// and it is never sent back.
    Invented,
}

/// Why a decoded call is not run. Its result is the error.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The registry name, when the wire name was one offered.
    pub name: Option<String>,
    /// The error for the model: `unknown_tool` or `invalid_arguments`.
    pub error: CallError,
}

impl DecodedCall {
    /// The outcome to send back for a refused call (`None` for a call to
    /// run): its tool is the registry name when known, else the wire name
    /// as sent (cut to [`UnknownWireName::MAX_KEPT`] bytes).
    pub fn refusal_outcome(&self) -> Option<CallOutcome> {
        let refusal = self.call.as_ref().err()?;
        let tool = match &refusal.name {
            Some(name) => name.clone(),
            None => UnknownWireName::kept(&self.wire_name).to_owned(),
        };
        Some(CallOutcome::new(
            self.id.clone(),
            tool,
            Err(refusal.error.clone()),
        ))
    }

    /// The reply carrying `outcome` (this call's) back to the provider.
    pub fn reply(&self, outcome: &CallOutcome) -> ToolReply {
        ToolReply {
            call_id: self.id.clone(),
            origin: self.origin,
            wire_name: self.wire_name.clone(),
            rendered: outcome.render().to_owned(),
            is_error: outcome.is_error(),
            structured: outcome.structured().cloned(),
            protocol: self.protocol.clone(),
            kind: self.kind,
            found: None,
        }
    }
}

/// One result on its way back to a provider: the call it answers and the
/// rendered untrusted block. Build it with [`DecodedCall::reply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolReply {
    /// The id of the call it answers.
    pub call_id: String,
    /// Where that id comes from: an invented id is not sent back.
    pub origin: IdOrigin,
    /// The call's name as the model sent it (Gemini echoes it).
    pub wire_name: String,
    /// The outcome's untrusted block, sent verbatim.
    pub rendered: String,
    /// Whether the outcome is an error.
    pub is_error: bool,
    /// The result's data as its tool's output schema admitted it
    /// ([`CallOutcome::structured`]): MCP's `structuredContent`.
    pub structured: Option<Value>,
    /// The protocol revision of the call's request ([`DecodedCall::protocol`]).
    pub protocol: Option<String>,
    /// The kind of call it answers ([`DecodedCall::kind`]).
    pub kind: CallKind,
    /// For a search of the host's, what the provider is sent for the tools
    /// found ([`EncodedRequest::found_entries`]): Anthropic's
    /// `tool_reference` blocks, or the definitions of an OpenAI Responses
    /// `tool_search_output`. `None` sends `rendered`.
    pub found: Option<Vec<Value>>,
}

/// A provider response that does not have the shape its format requires.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// A required field is missing or has the wrong JSON type.
    #[error("malformed {provider} response: {at} must be {expected}")]
    Malformed {
        /// The provider's CLI name.
        provider: &'static str,
        /// Where, as a path such as `choices[0].message.tool_calls[1].id`.
        at: String,
        /// What the format requires there.
        expected: &'static str,
    },
}

/// A call as an adapter found it, before its name and arguments are
/// decoded.
#[derive(Debug)]
pub(crate) struct RawCall<'a> {
    pub id: String,
    pub origin: IdOrigin,
    pub name: &'a str,
    pub arguments: RawArguments<'a>,
    pub protocol: Option<String>,
    pub kind: CallKind,
}

/// A call's arguments as the provider sent them.
#[derive(Debug)]
pub(crate) enum RawArguments<'a> {
    /// A JSON text (OpenAI).
    Text(&'a str),
    /// A JSON value (the others).
    Value(&'a Value),
}

impl RawCall<'_> {
    fn decode(self, codec: &WireCodec) -> DecodedCall {
        let refuse = |name: Option<String>, error| Refusal { name, error };
        let call = match codec.decode(self.name) {
            Err(unknown) => Err(refuse(
                None,
                CallError::UnknownTool {
                    name: shown(&unknown),
                },
            )),
            Ok(name) => match parse_arguments(self.arguments) {
                Ok(arguments) => Ok(ToolCall {
                    id: self.id.clone(),
                    name: name.to_owned(),
                    arguments,
                }),
                Err(error) => Err(refuse(Some(name.to_owned()), error)),
            },
        };
        DecodedCall {
            id: self.id,
            origin: self.origin,
            wire_name: self.name.to_owned(),
            call,
            protocol: self.protocol,
            kind: self.kind,
        }
    }
}

/// The arguments as a JSON object, or `invalid_arguments` with one
/// violation at the root.
fn parse_arguments(arguments: RawArguments<'_>) -> Result<Value, CallError> {
    let value = match arguments {
        RawArguments::Value(value) => value.clone(),
        RawArguments::Text(text) => serde_json::from_str(text).map_err(|e| {
            root_violation(format!(
                "the arguments are not valid JSON ({e}); send one JSON object"
            ))
        })?,
    };
    if value.is_object() {
        Ok(value)
    } else {
        Err(root_violation(format!(
            "the arguments are a JSON {}, not an object; send one JSON object",
            json_kind(&value)
        )))
    }
}

fn root_violation(message: String) -> CallError {
    CallError::InvalidArguments {
        violations: vec![Violation {
            instance_path: String::new(),
            schema_path: String::new(),
            message,
        }],
    }
}

/// The name an unknown-name error shows: cut, marked when cut.
fn shown(unknown: &UnknownWireName) -> String {
    if unknown.truncated() {
        format!("{}...", unknown.name())
    } else {
        unknown.name().to_owned()
    }
}

/// `{key: [items]}`, moving the items in. (`json!` would serialise each of
/// them again, which for a request's tools, schemas and all, is most of the
/// cost of encoding it.)
pub(crate) fn object(key: &str, items: Vec<Value>) -> Value {
    let mut map = serde_json::Map::new();
    map.insert(key.to_owned(), Value::Array(items));
    Value::Object(map)
}

/// One user message whose `content` holds a block per reply (Anthropic,
/// Bedrock), or none when there is no reply: an empty message is invalid.
pub(crate) fn user_message(
    replies: &[ToolReply],
    block: impl Fn(&ToolReply) -> Value,
) -> Vec<Value> {
    if replies.is_empty() {
        return Vec::new();
    }
    let mut message = object("content", replies.iter().map(block).collect());
    message["role"] = Value::from("user");
    vec![message]
}
