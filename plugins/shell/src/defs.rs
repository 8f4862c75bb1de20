//! The schemas of the `exec` server's one tool, `run` (its description and
//! hints are on the function, in `lib.rs`).
//!
//! The output schema describes exactly the JSON part a successful result
//! holds (closed: no other keys), so the host checks every such result
//! against it.

use serde_json::{Value, json};

/// The longest `timeout_ms` a call may ask for: an hour, the host's own
/// maximum for a call.
pub const MAX_TIMEOUT_MS: u32 = 3_600_000;

/// The input schema of `run`, as a document naming its draft.
pub fn input_document() -> Value {
    document(input())
}

/// The output schema of `run`: the JSON part of every successful result.
pub fn output_document() -> Value {
    document(output())
}

/// The input schema of `run`.
fn input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "program": {
                "type": "string",
                "minLength": 1,
                "description": "The program: a bare name looked up on the host's PATH \
                                (`python3`) or an absolute path (`/usr/bin/git`).",
            },
            "args": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Its arguments, each passed as it is.",
            },
            "cwd": {
                "type": "string",
                "description": "Its working directory: a path inside one of the granted \
                                directories, as this plugin sees them (`/workspace/src`). \
                                Default: a private empty directory.",
            },
            "stdin": {
                "type": "string",
                "default": "",
                "description": "What it reads on its standard input (then end of file).",
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
                "description": "The longest it may run, in milliseconds; then it and \
                                every process it started are killed. Default: what \
                                remains of the call's own timeout.",
            },
        },
        "required": ["program"],
        "additionalProperties": false,
    })
}

/// The output schema of `run`.
fn output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "exit_code": {"type": ["integer", "null"]},
            "signal": {"type": ["integer", "null"]},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "truncated": {"type": "boolean"},
            "timed_out": {"type": "boolean"},
        },
        "required": ["exit_code", "signal", "stdout", "stderr", "truncated", "timed_out"],
        "additionalProperties": false,
    })
}

/// A schema as a JSON document naming its draft.
fn document(mut schema: Value) -> Value {
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
    schema
}
