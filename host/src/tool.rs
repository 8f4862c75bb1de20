//! Tools as plain data: a definition, a call's result and its content parts.
//!
//! Nothing here does I/O or knows where a tool comes from; the registry,
//! the invoker and the sources all speak these types. Content is always
//! untrusted: see [`crate::render`] for how it reaches a model.

use serde::Serialize;

/// Behaviour hints for a tool, with the meaning MCP gives them.
///
/// The defaults are the cautious ones: a tool that says nothing is taken to
/// change its environment and to be unsafe to repeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool's name within its server (the last part of the registry name).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema its arguments must satisfy.
    pub input_schema: serde_json::Value,
    /// The JSON Schema of the JSON data it returns, if it declares one.
    pub output_schema: Option<serde_json::Value>,
    /// Behaviour hints.
    pub annotations: Annotations,
}

/// One part of a tool's result. Untrusted: render it with [`crate::render`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// The part's body as it is shown to a model: the text itself, or the
    /// JSON document serialised compactly.
    pub fn body(&self) -> String {
        match self {
            ContentPart::Text { text } => text.clone(),
            ContentPart::Json { data, .. } => data.to_string(),
        }
    }

    /// A short label for the kind of part: `text` or the JSON media type.
    pub fn kind(&self) -> &str {
        match self {
            ContentPart::Text { .. } => "text",
            ContentPart::Json { media_type, .. } => media_type,
        }
    }
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
    /// The result (or error message) is larger than the plugin may return;
    /// none of it is shown.
    #[error(
        "the result is {size} bytes, more than the {limit} bytes this tool may return; \
         ask for less (a narrower path or query, a smaller limit)"
    )]
    TooLarge {
        /// The result's size in bytes.
        size: usize,
        /// The plugin's limit in bytes.
        limit: usize,
    },
    /// The tool could not be started (for example, too many calls at once).
    #[error("the tool is unavailable: {0}")]
    Unavailable(String),
    /// The plugin reports that the operation failed.
    #[error("the tool failed: {0}")]
    Failed(String),
}

impl CallError {
    /// The stable error code: `unknown_tool`, `invalid_arguments`, `denied`,
    /// `timeout`, `memory_limit`, `trapped`, `invalid_output`, `too_large`,
    /// `unavailable` or `failed`.
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
            CallError::TooLarge { .. } => "too_large",
            CallError::Unavailable(_) => "unavailable",
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
