//! The `chaos` server's tool definitions: names, schemas and hints.

use serde_json::{Value, json};

use crate::bindings::tiny_harness::plugin::types::{Annotations, ToolDefinition};

/// The output schema of `structured`: an object with an integer `count`.
const STRUCTURED_OUTPUT: &str =
    r#"{"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}"#;

/// Behaviour hints of a tool that only reads.
const READ_ONLY: Annotations = Annotations {
    read_only: true,
    idempotent: true,
    destructive: false,
    open_world: false,
};

/// Behaviour hints of a tool that promises nothing.
const NO_PROMISES: Annotations = Annotations {
    read_only: false,
    idempotent: false,
    destructive: false,
    open_world: false,
};

/// Behaviour hints of `connect`, which reaches the network.
const OPEN_WORLD: Annotations = Annotations {
    open_world: true,
    ..NO_PROMISES
};

/// An object schema with these properties, all of them required.
fn schema(properties: Value) -> String {
    let required: Vec<&String> = properties
        .as_object()
        .map_or(Vec::new(), |p| p.keys().collect());
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
    .to_string()
}

/// A tool definition.
fn tool(
    name: &str,
    description: &str,
    properties: Value,
    annotations: Annotations,
) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: description.into(),
        input_schema: schema(properties),
        output_schema: None,
        annotations,
    }
}

/// The definition of `echo`, also reused by the registration modes that
/// need a second or badly named tool.
pub fn echo_definition() -> ToolDefinition {
    tool(
        "echo",
        "Returns the message unchanged.",
        json!({"message": {"type": "string", "description": "The text to return."}}),
        READ_ONLY,
    )
}

/// The definitions of every `chaos` tool.
pub fn definitions() -> Vec<ToolDefinition> {
    let message = json!({"message": {"type": "string", "description": "The text to record."}});
    let none = json!({});
    vec![
        echo_definition(),
        tool(
            "record",
            "Appends the message to /state/calls.log.",
            message,
            NO_PROMISES,
        ),
        tool("trap", "Traps (panics).", none.clone(), NO_PROMISES),
        tool("spin", "Loops forever.", none.clone(), NO_PROMISES),
        tool(
            "recurse",
            "Recurses without end.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "alloc",
            "Allocates the given number of MiB and touches every page.",
            json!({"mib": {
                "type": "integer", "minimum": 1, "maximum": 4096,
                "description": "How many MiB to allocate."
            }}),
            NO_PROMISES,
        ),
        tool(
            "env",
            "Returns every environment variable the plugin sees.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "read_path",
            "Reads a file as text.",
            json!({"path": {"type": "string", "description": "The file to read."}}),
            NO_PROMISES,
        ),
        tool(
            "connect",
            "Opens a TCP connection.",
            json!({"addr": {"type": "string", "description": "host:port to connect to."}}),
            OPEN_WORLD,
        ),
        tool(
            "json",
            "Returns a text part and a JSON part.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "bad_json",
            "Returns a JSON part that is not JSON.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "fail",
            "Fails with a call error.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "is_error",
            "Returns an error result.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "forge",
            "Returns text that forges result delimiters.",
            none.clone(),
            NO_PROMISES,
        ),
        tool(
            "big",
            "Returns (or, with fail, fails with) a text of the given number of KiB.",
            json!({
                "kib": {"type": "integer", "minimum": 1, "maximum": 131072,
                        "description": "The size in KiB."},
                "fail": {"type": "boolean", "description": "Fail with the text as message."}
            }),
            READ_ONLY,
        ),
        tool(
            "fail_with",
            "Fails with a call error carrying the message.",
            json!({"message": {"type": "string", "description": "The error message."}}),
            NO_PROMISES,
        ),
        tool(
            "log",
            "Writes `stdout` and `stderr`, each `repeat` times, to its standard output and error.",
            json!({
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "repeat": {"type": "integer", "minimum": 1, "maximum": 1000000}
            }),
            READ_ONLY,
        ),
        tool(
            "parts",
            "Returns the given number of empty text parts.",
            json!({"count": {"type": "integer", "minimum": 0}}),
            READ_ONLY,
        ),
        tool(
            "aliased_parts",
            "Returns count text parts of kib KiB that all point at one buffer in \
             the plugin's memory.",
            json!({"count": {"type": "integer", "minimum": 0},
                   "kib": {"type": "integer", "minimum": 1}}),
            READ_ONLY,
        ),
        tool(
            "open_many",
            "Opens the file count times and keeps every handle open; returns how \
             many opened and the first error.",
            json!({"path": {"type": "string"}, "count": {"type": "integer", "minimum": 0}}),
            READ_ONLY,
        ),
        tool(
            "random",
            "Returns the instance's insecure random seed and its first insecure \
             random number, as two hex strings.",
            none,
            READ_ONLY,
        ),
        tool(
            "exec_as_told",
            "Runs a program with exactly the arguments and environment given, as a \
             plugin that trusts its caller would.",
            json!({
                "program": {"type": "string"},
                "args": {"type": "array", "items": {"type": "string"}},
                "env": {"type": "object", "additionalProperties": {"type": "string"}}
            }),
            NO_PROMISES,
        ),
        ToolDefinition {
            output_schema: Some(STRUCTURED_OUTPUT.into()),
            ..tool(
                "structured",
                "Returns the parts given (a string as a text part, anything else as a \
                 JSON part); declares an output schema they may or may not match.",
                json!({
                    "parts": {"type": "array", "description": "The parts to return."},
                    "is_error": {"type": "boolean", "description": "Mark the result an error."}
                }),
                READ_ONLY,
            )
        },
    ]
}
