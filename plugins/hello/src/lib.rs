//! `hello`: the smallest useful tiny-harness plugin, and the example the
//! README's plugin-writing guide walks through.
//!
//! One server, `hello`, with one tool, `greet`, which returns a greeting for
//! the name it is given. It needs no grants. Being minimal, it is also what
//! the benchmark calls to measure the host's own cost per call.

use serde::Deserialize;

/// Bindings generated from `wit/plugin.wit`. Clippy is silenced here only:
/// the generated export glue has a function with more arguments than it likes.
#[allow(clippy::too_many_arguments)]
mod bindings {
    wit_bindgen::generate!({ world: "plugin", path: "../../wit" });
}

use bindings::tiny_harness::plugin::types::{
    Annotations, ContentPart, ServerDefinition, ToolDefinition,
};
use bindings::{CallError, CallResult, Guest, Registration};

/// The arguments of `greet`, as its input schema describes them.
#[derive(Deserialize)]
struct Greet {
    name: String,
}

/// The component's implementation of the `plugin` world.
struct Hello;

impl Guest for Hello {
    /// Supplies the `hello` server with its one tool. The config is unused.
    fn register(_config: String) -> Result<Registration, String> {
        let greet = ToolDefinition {
            name: "greet".into(),
            description: "Greets someone by name.".into(),
            input_schema: r#"{
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Who to greet."}},
                "required": ["name"],
                "additionalProperties": false
            }"#
            .into(),
            output_schema: None,
            annotations: Annotations {
                read_only: true,
                idempotent: true,
                destructive: false,
                open_world: false,
            },
        };
        Ok(Registration {
            servers: vec![ServerDefinition {
                name: "hello".into(),
                tools: vec![greet],
            }],
            mcp_sources: vec![],
        })
    }

    /// Runs `greet`. The host has already checked the arguments against the
    /// input schema, so a parse failure here means a host bug, reported as
    /// `invalid-arguments` all the same.
    fn call(
        _config: String,
        _server: String,
        tool: String,
        arguments: String,
    ) -> Result<CallResult, CallError> {
        match tool.as_str() {
            "greet" => {
                let args: Greet = serde_json::from_str(&arguments)
                    .map_err(|e| CallError::InvalidArguments(e.to_string()))?;
                Ok(CallResult {
                    content: vec![ContentPart::Text(format!("Hello, {}!", args.name))],
                    is_error: false,
                })
            }
            other => Err(CallError::UnknownTool(format!(
                "hello has no tool {other:?}"
            ))),
        }
    }
}

bindings::export!(Hello with_types_in bindings);
