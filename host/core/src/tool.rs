//! Tools as plain data: a definition, a call's result and its content parts.
//!
//! Nothing here does I/O or knows where a tool comes from; the registry,
//! the invoker and the sources all speak these types. Content is always
//! untrusted: see [`crate::render`] for how it reaches a model.

use serde::{Deserialize, Serialize};

mod measure;

pub use measure::{
    MAX_SCHEMA_DEPTH, PART_FRAMING_BYTES, ResultBudget, compact_json_len, json_nesting,
};

/// Behaviour hints for a tool, with the meaning MCP gives them.
///
/// The defaults are the cautious ones: a tool that says nothing is taken to
/// change its environment and to be unsafe to repeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotations {
    /// The tool does not change its environment.
    pub read_only: bool,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// The tool reaches an open world (network, processes).
    pub open_world: bool,
}

impl Annotations {
    /// Whether a failed call may be retried: only when the tool says it is
    /// idempotent (a read-only tool is idempotent by nature).
    pub fn retry_safe(&self) -> bool {
        self.idempotent || self.read_only
    }
}

/// One tool as its source describes it, before the registry names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name within its server (the last part of the registry name).
    pub name: String,
    /// A short human-readable name, if the source gives one (MCP tools may).
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema its arguments must satisfy.
    pub input_schema: serde_json::Value,
    /// The JSON Schema of the JSON data it returns, if it declares one.
    pub output_schema: Option<serde_json::Value>,
    /// Behaviour hints.
    pub annotations: Annotations,
}

impl ToolDefinition {
    /// A tool named `name` that does what `description` says and takes
    /// arguments `input_schema` admits, with no title, no output schema
    /// and the cautious annotations (set the fields to say more).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: serde_json::Value,
    ) -> Self {
        ToolDefinition {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: Annotations::default(),
        }
    }
}

/// One part of a tool's result. Untrusted: it reaches a model only inside
/// an untrusted block, as [`CallOutcome::render`](crate::invoke::CallOutcome::render)
/// writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// JSON data with a media type.
    Json {
        /// The media type, e.g. `application/json`.
        media_type: String,
        /// The parsed document.
        data: serde_json::Value,
    },
    /// Binary media (an image or an audio clip), as a source such as an MCP
    /// server sent it. Rendered for a model as a short description, never
    /// as its data; the data is here for adapters that can pass media on.
    Media {
        /// The media type, e.g. `image/png`.
        media_type: String,
        /// The data, base64-encoded.
        data: String,
    },
    /// A link to a resource the source can serve (an MCP `resource_link`).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is, if the source says.
        description: Option<String>,
        /// Its media type, if the source says.
        media_type: Option<String>,
    },
    /// A resource's contents, embedded in the result (an MCP `resource`).
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its media type, if the source says.
        media_type: Option<String>,
        /// Its text, for a text resource.
        text: Option<String>,
        /// Its data, base64-encoded, for a binary resource.
        blob: Option<String>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// The part's body as it is shown to a model: the text itself, or the
    /// JSON document serialised compactly.
    pub fn body(&self) -> String {
        self.shown().into_owned()
    }

    /// [`ContentPart::body`], borrowed where it is the part's own text.
    pub(crate) fn shown(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        Cow::Owned(match self {
            ContentPart::Text { text } => return Cow::Borrowed(text),
            ContentPart::Json { data, .. } => data.to_string(),
            ContentPart::Media { media_type, data } => {
                format!("[{media_type}, {} bytes, not shown]", base64_bytes(data))
            }
            ContentPart::ResourceLink {
                uri,
                name,
                description,
                media_type,
            } => serde_json::json!({
                "uri": uri,
                "name": name,
                "description": description,
                "media_type": media_type,
            })
            .to_string(),
            ContentPart::Resource {
                uri, text, blob, ..
            } => match (text, blob) {
                (Some(text), _) => return Cow::Borrowed(text),
                (None, Some(blob)) => {
                    format!("[{uri}: {} bytes, not shown]", base64_bytes(blob))
                }
                (None, None) => format!("[{uri}: empty]"),
            },
        })
    }

    /// A short label for the kind of part: `text` or the JSON media type.
    pub fn kind(&self) -> &str {
        match self {
            ContentPart::Text { .. } => "text",
            ContentPart::Json { media_type, .. } | ContentPart::Media { media_type, .. } => {
                media_type
            }
            ContentPart::ResourceLink { .. } => "resource_link",
            ContentPart::Resource { .. } => "resource",
        }
    }

    /// The bytes of text and data the part holds: what a result budget
    /// counts for it (besides its framing).
    pub fn size(&self) -> usize {
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        match self {
            ContentPart::Text { text } => text.len(),
            ContentPart::Json { media_type, data } => {
                media_type.len() + compact_json_len(data, usize::MAX)
            }
            ContentPart::Media { media_type, data } => media_type.len() + data.len(),
            ContentPart::ResourceLink {
                uri,
                name,
                description,
                media_type,
            } => uri.len() + name.len() + opt(description) + opt(media_type),
            ContentPart::Resource {
                uri,
                media_type,
                text,
                blob,
            } => uri.len() + opt(media_type) + opt(text) + opt(blob),
        }
    }
}

/// The first 12 hex digits of a hash, for messages.
fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// How many bytes `base64` text decodes to (near enough for people).
fn base64_bytes(base64: &str) -> usize {
    let padding = base64.bytes().rev().take_while(|&b| b == b'=').count();
    (base64.len() / 4 * 3).saturating_sub(padding)
}

/// What a tool returned for one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The content, in order.
    pub content: Vec<ContentPart>,
    /// True when the content describes a failure (the tool ran, but the
    /// operation did not succeed).
    pub is_error: bool,
}

impl ToolResult {
    /// A result of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentPart::text(text)],
            is_error: false,
        }
    }

    /// A failure the tool reports (it ran, but the operation did not
    /// succeed), described by `text`.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentPart::text(text)],
            is_error: true,
        }
    }
}

/// One way the arguments of a call fail their schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON pointer to the offending part of the arguments (`""` for the
    /// whole object).
    pub instance_path: String,
    /// JSON pointer to the schema keyword that failed.
    pub schema_path: String,
    /// What is wrong, in words.
    pub message: String,
}

impl Violation {
    /// Where in the instance it failed, with the root shown as `/`.
    pub fn pointer(&self) -> &str {
        if self.instance_path.is_empty() {
            "/"
        } else {
            &self.instance_path
        }
    }
}

/// Why a call produced no result. Each variant is a refusal or failure the
/// model can act on; [`CallError::code`] is its stable name on the wire.
///
/// None of these is a host failure: the host goes on serving other calls.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool of this name is registered; nothing ran.
    #[error("no tool named {name:?} is registered; call one of the listed tools")]
    UnknownTool {
        /// The name as the caller gave it.
        name: String,
    },
    /// The arguments fail the tool's input schema; the tool was not run.
    #[error("the arguments do not match the tool's input schema: {}", describe_violations(.violations))]
    InvalidArguments {
        /// Each failure, with JSON pointers into the arguments and the schema.
        violations: Vec<Violation>,
    },
    /// The plugin accepted the schema check but refused the arguments.
    #[error("the tool refused its arguments: {0}")]
    RejectedArguments(String),
    /// The sandbox or the plugin's policy refused the operation.
    #[error("denied: {0}")]
    Denied(String),
    /// The call ran past its deadline and was stopped.
    #[error("the call ran longer than its {} ms limit and was stopped", .limit.as_millis())]
    Timeout {
        /// The limit that was exceeded.
        limit: std::time::Duration,
    },
    /// The plugin tried to use more memory than it is granted.
    #[error("the tool tried to use more than its {} MiB memory limit and was stopped", .limit_bytes >> 20)]
    MemoryLimit {
        /// The limit, in bytes.
        limit_bytes: usize,
    },
    /// The plugin crashed (a WebAssembly trap, such as a panic).
    #[error("the tool crashed: {0}")]
    Trapped(String),
    /// The plugin returned something malformed: a JSON part that is not
    /// JSON, or data that does not match the tool's output schema.
    #[error("the tool returned malformed output: {0}")]
    InvalidOutput(String),
    /// The result (or error message) is larger than the tool may return,
    /// counting each part's framing; none of it is shown.
    #[error(
        "the result is more than {limit} bytes (counting {PART_FRAMING_BYTES} bytes of framing \
         per part), the most this tool may return; ask for less (a narrower path or query, \
         a smaller limit)"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The result has more parts than the tool may return; none is shown.
    #[error(
        "the result has {parts} parts, more than the {limit} this tool may return; \
         ask for less"
    )]
    TooManyParts {
        /// How many parts the tool returned.
        parts: usize,
        /// The limit.
        limit: usize,
    },
    /// The arguments are larger than the tool accepts (or than its schema
    /// can be checked against within the validation budget); nothing ran.
    #[error(
        "the arguments are {size} bytes, more than the {limit} bytes this tool accepts; \
         send less (split the work into several calls)"
    )]
    ArgumentsTooLarge {
        /// The arguments' size (compact JSON), or at least this much.
        size: usize,
        /// The most this tool accepts.
        limit: usize,
    },
    /// The tool could not be started (for example, too many calls at once).
    #[error("the tool is unavailable: {0}")]
    Unavailable(String),
    /// The tool's definition is no longer the one that was pinned (its
    /// server changed it, or it disappeared). Every call is refused until
    /// the tool is registered again (`tiny-harness pins update`).
    #[error(
        "the tool's definition changed since it was pinned ({}; pinned {}, now {}); it cannot be called until it is reviewed and registered again",
        if .fields.is_empty() { "removed".to_owned() } else { .fields.join(", ") },
        short_hash(.pinned),
        .current.as_deref().map_or("removed", short_hash)
    )]
    SchemaChanged {
        /// The pinned definition hash.
        pinned: String,
        /// The hash of the definition the source gives now; `None` when the
        /// tool is gone.
        current: Option<String>,
        /// Which parts changed (`input_schema`, `output_schema`, `title`,
        /// `description`, `annotations`); empty when the tool is gone.
        fields: Vec<&'static str>,
    },
    /// The plugin reports that the operation failed.
    #[error("the tool failed: {0}")]
    Failed(String),
    /// The tool is offered now, but is new since its server's tools were
    /// pinned (reviewed), so it is not registered: it cannot be called
    /// until a person accepts it (`tiny-harness pins update`).
    #[error(
        "{name:?} is offered but is new since the tools were pinned, so it is not registered; it can be called once a person reviews and accepts it (tiny-harness pins diff, then tiny-harness pins update)"
    )]
    NotPinned {
        /// The name called.
        name: String,
    },
    /// The tool's server asks for a login the host does not have, or for
    /// a wider scope than the one granted (a step-up): a person must log
    /// in (`tiny-harness mcp login SERVER`); the call did not run.
    #[error("{0}")]
    LoginRequired(String),
}

impl CallError {
    /// The stable error code: `unknown_tool`, `invalid_arguments`, `denied`,
    /// `timeout`, `memory_limit`, `trapped`, `invalid_output`, `too_large`
    /// (a result, or the arguments), `unavailable`, `schema_changed`,
    /// `not_pinned`, `login_required` or `failed`.
    pub fn code(&self) -> &'static str {
        match self {
            CallError::UnknownTool { .. } => "unknown_tool",
            CallError::InvalidArguments { .. } | CallError::RejectedArguments(_) => {
                "invalid_arguments"
            }
            CallError::Denied(_) => "denied",
            CallError::Timeout { .. } => "timeout",
            CallError::MemoryLimit { .. } => "memory_limit",
            CallError::Trapped(_) => "trapped",
            CallError::InvalidOutput(_) => "invalid_output",
            CallError::TooLarge { .. }
            | CallError::TooManyParts { .. }
            | CallError::ArgumentsTooLarge { .. } => "too_large",
            CallError::Unavailable(_) => "unavailable",
            CallError::SchemaChanged { .. } => "schema_changed",
            CallError::NotPinned { .. } => "not_pinned",
            CallError::LoginRequired(_) => "login_required",
            CallError::Failed(_) => "failed",
        }
    }

    /// Whether the same call might succeed if tried again (for a tool that
    /// is safe to retry): deadlines and exhausted capacity are transient;
    /// refusals and crashes are not.
    pub fn is_transient(&self) -> bool {
        matches!(self, CallError::Timeout { .. } | CallError::Unavailable(_))
    }
}

fn describe_violations(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("at {}: {}", v.pointer(), v.message))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_idempotent_or_read_only_tools_are_retry_safe() {
        assert!(!Annotations::default().retry_safe());
        let idempotent = Annotations {
            idempotent: true,
            ..Annotations::default()
        };
        assert!(idempotent.retry_safe());
        let read_only = Annotations {
            read_only: true,
            ..Annotations::default()
        };
        assert!(read_only.retry_safe());
    }

    #[test]
    fn json_parts_show_compact_documents() {
        let part = ContentPart::Json {
            media_type: "application/json".into(),
            data: serde_json::json!({"a": [1, 2]}),
        };
        assert_eq!(part.body(), r#"{"a":[1,2]}"#);
        assert_eq!(part.kind(), "application/json");
    }
}
