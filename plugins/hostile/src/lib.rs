//! `hostile`: a tiny-harness plugin that misbehaves on purpose, so the host's
//! tests can check that the host contains it.
//!
//! It supplies one server, `chaos`, whose tools trap, spin forever, allocate
//! without bound, probe the sandbox (environment, files, sockets), return
//! malformed JSON and forge result delimiters. Its `register` can also be
//! told, through the `mode` key of its config, to refuse, trap, or return a
//! registration the host must reject (a bad input or output schema, a duplicate or badly
//! named tool, a badly named server) or one that declares an MCP source.
//!
//! Guarantees: every misbehaviour is selected explicitly, by the config mode
//! or the tool called, and nothing happens at random; the plugin never
//! misbehaves except in the ways its modes and tools name. `call` ignores
//! the config, so every tool works whatever the mode.

mod tools;

use serde::Deserialize;

/// Bindings generated from `wit/plugin.wit`. Clippy is silenced here only:
/// the generated export glue has a function with more arguments than it likes.
#[allow(clippy::too_many_arguments)]
mod bindings {
    wit_bindgen::generate!({ world: "plugin", path: "../../wit" });
}

use bindings::tiny_harness::plugin::types::{
    Annotations, McpSource, McpStdio, McpTransport, ServerDefinition, ToolDefinition,
};
use bindings::{CallError, CallResult, Guest, Registration};

/// The server every tool of this plugin belongs to.
const SERVER: &str = "chaos";

/// The plugin's config, as the host passes it to `register` and `call`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// How `register` misbehaves (default `normal`); see `Hostile::register`.
    mode: Option<String>,
}

/// The component's implementation of the `plugin` world.
struct Hostile;

impl Guest for Hostile {
    /// Returns the `chaos` server, altered or refused as `mode` says.
    fn register(config: String) -> Result<Registration, String> {
        let config: Config = serde_json::from_str(&config)
            .map_err(|err| format!("invalid hostile plugin config: {err}"))?;
        let mode = config.mode.as_deref().unwrap_or("normal");
        let mut tools = tools::definitions();
        let mut mcp_sources = Vec::new();
        let mut server = SERVER.to_string();
        match mode {
            "normal" => {}
            "register-error" => return Err("register refused: mode register-error".into()),
            "bad-schema" => tools.push(broken_tool(r#"{"type": 12}"#)),
            "not-json-schema" => tools.push(broken_tool("{not json")),
            "bad-output-schema" => tools.push(ToolDefinition {
                name: "typo".into(),
                output_schema: Some(r#"{"type": "objekt"}"#.into()),
                ..tools::echo_definition()
            }),
            "duplicate" => {
                let mut echo = tools::echo_definition();
                echo.description = "A second tool named echo.".into();
                tools.push(echo);
            }
            "bad-name" => {
                let mut bad = tools::echo_definition();
                bad.name = "bad name!".into();
                tools.push(bad);
            }
            "bad-server" => {
                server = "Chaos!".into();
                tools = vec![tools::echo_definition()];
            }
            "trap" => panic!("register trapped on purpose"),
            "mcp-source" => mcp_sources.push(McpSource {
                name: "everything".into(),
                transport: McpTransport::Stdio(McpStdio {
                    command: "npx".into(),
                    args: vec![
                        "-y".into(),
                        "@modelcontextprotocol/server-everything".into(),
                    ],
                }),
            }),
            other => {
                return Err(format!(
                    "unknown hostile plugin mode {other:?}: use normal, register-error, \
                     bad-schema, not-json-schema, bad-output-schema, duplicate, bad-name, \
                     bad-server, trap or mcp-source"
                ));
            }
        }
        Ok(Registration {
            servers: vec![ServerDefinition {
                name: server,
                tools,
            }],
            mcp_sources,
        })
    }

    /// Runs one `chaos` tool; the config is ignored.
    fn call(
        _config: String,
        server: String,
        tool: String,
        arguments: String,
    ) -> Result<CallResult, CallError> {
        if server != SERVER {
            return Err(CallError::UnknownTool(format!(
                "the hostile plugin has no server {server:?}"
            )));
        }
        tools::call(&tool, &arguments)
    }
}

/// A tool named `broken` whose input schema is `schema`, verbatim.
fn broken_tool(schema: &str) -> ToolDefinition {
    ToolDefinition {
        name: "broken".into(),
        description: "A tool whose input schema the host must refuse.".into(),
        input_schema: schema.into(),
        output_schema: None,
        annotations: Annotations {
            read_only: true,
            idempotent: true,
            destructive: false,
            open_world: false,
        },
    }
}

bindings::export!(Hostile with_types_in bindings);
