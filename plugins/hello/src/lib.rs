//! `hello`: the smallest useful tiny-harness plugin, and the example the
//! README's plugin-writing guide walks through.
//!
//! One server, `hello`, with one tool, `greet`, which returns a greeting for
//! the name it is given. It needs no grants. Being minimal, it is also what
//! the benchmark calls to measure the host's own cost per call.

use schemars::JsonSchema;
use serde::Deserialize;
use tiny_harness_plugin::{Config, Plugin, Server, ToolError, tool, tools};

/// The arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// Greets someone by name.
#[tool(read_only, idempotent)]
fn greet(args: Greet) -> Result<String, ToolError> {
    Ok(format!("Hello, {}!", args.name))
}

/// The plugin: one server, whatever the config.
struct Hello;

impl Plugin for Hello {
    fn servers(_config: &Config) -> Result<Vec<Server>, String> {
        Ok(vec![Server::new("hello", tools![greet])])
    }
}

tiny_harness_plugin::export!(Hello);
