//! The definition of the `exec` server's one tool, `run`: its description,
//! input and output schemas and behaviour hints.
//!
//! The output schema describes exactly the JSON part a successful result
//! holds (closed: no other keys), so the host checks every such result
//! against it.

use serde_json::{Value, json};

use crate::bindings::tiny_harness::plugin::types::{Annotations, ToolDefinition};

/// The longest `timeout_ms` a call may ask for: an hour, the host's own
/// maximum for a call.
pub const MAX_TIMEOUT_MS: u32 = 3_600_000;

/// Hints for `run`: a program may change or delete anything its grants
/// reach, running it twice may do so twice, and it is another process.
const RUNS_PROGRAMS: Annotations = Annotations {
    read_only: false,
    idempotent: false,
    destructive: true,
    open_world: true,
};

/// The definitions of every `exec` tool.
pub fn definitions() -> Vec<ToolDefinition> {
    vec![run()]
}

/// `run`.
fn run() -> ToolDefinition {
    ToolDefinition {
        name: "run".into(),
        description: "Runs one program and waits for it to end. No shell is involved: \
                      `args` reach the program exactly as given (no globbing, quoting, \
                      pipes or variables; run `sh` with `-c` for those, if it is granted). \
                      Only programs the host config grants may run, confined to the \
                      plugin's granted directories. Returns a line of text, then JSON \
                      {exit_code, signal, stdout, stderr, truncated, timed_out}: exit_code \
                      is null when a signal ended it; stdout and stderr are UTF-8 (invalid \
                      bytes replaced); truncated means some output was cut; timed_out means \
                      it was killed at its timeout. A non-zero exit is an error result."
            .into(),
        input_schema: document(input()),
        output_schema: Some(document(output())),
        annotations: RUNS_PROGRAMS,
    }
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

/// The output schema of `run`: the JSON part of every successful result.
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
fn document(mut schema: Value) -> String {
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
    schema.to_string()
}
