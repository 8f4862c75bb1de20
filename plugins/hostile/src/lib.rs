//! `hostile`: a tiny-harness plugin that misbehaves on purpose, so the host's
//! tests can check that the host contains it.
//!
//! It supplies one server, `chaos`, whose tools trap, spin forever, allocate
//! without bound, probe the sandbox (environment, files, sockets), return
//! malformed JSON and forge result delimiters. Its `register` can also be
//! told, through the `mode` key of its config, to refuse, trap, or return a
//! registration the host must reject (a bad input or output schema, a duplicate or badly
//! named tool, a badly named server), one that declares an MCP source, or one that
//! costs the host too much (too many tools or servers, huge descriptions or schemas,
//! descriptions that all alias one buffer, schemas that backtrack or fan out).
//!
//! Guarantees: every misbehaviour is selected explicitly, by the config mode
//! or the tool called, and nothing happens at random; the plugin never
//! misbehaves except in the ways its modes and tools name. `call` ignores
//! the config, so every tool works whatever the mode.

mod definitions;
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
    /// How many tools or servers the `many-tools` and `many-servers` modes
    /// register, and how many tools share one description in `aliased`.
    count: Option<usize>,
    /// The size in KiB of the description (`big-description`, `aliased`) or
    /// schema (`big-schema`) those modes register.
    kib: Option<usize>,
    /// The message `register-error` returns, and the description
    /// `control-chars` gives `echo`.
    message: Option<String>,
    /// The servers the `custom` mode registers, verbatim: a list of
    /// `{name, tools: [{name, description, input_schema, output_schema?}]}`
    /// whose schemas are strings, passed through unparsed.
    servers: Option<Vec<CustomServer>>,
}

/// A server of the `custom` mode.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomServer {
    name: String,
    tools: Vec<CustomTool>,
}

/// A tool of the `custom` mode.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomTool {
    name: String,
    description: String,
    input_schema: String,
    output_schema: Option<String>,
}

/// The component's implementation of the `plugin` world.
struct Hostile;

impl Guest for Hostile {
    /// Returns the `chaos` server, altered or refused as `mode` says.
    fn register(config: String) -> Result<Registration, String> {
        let config: Config = serde_json::from_str(&config)
            .map_err(|err| format!("invalid hostile plugin config: {err}"))?;
        let mode = config.mode.as_deref().unwrap_or("normal");
        let count = config.count.unwrap_or(1);
        let kib = config.kib.unwrap_or(1);
        let mut tools = definitions::definitions();
        let mut mcp_sources = Vec::new();
        let mut server = SERVER.to_string();
        match mode {
            "normal" => {}
            "register-error" => {
                return Err(config
                    .message
                    .unwrap_or_else(|| "register refused: mode register-error".into()));
            }
            "exit" => std::process::exit(3),
            "custom" => {
                let servers = config.servers.unwrap_or_default();
                return Ok(Registration {
                    servers: servers
                        .into_iter()
                        .map(|server| ServerDefinition {
                            name: server.name,
                            tools: server
                                .tools
                                .into_iter()
                                .map(|tool| ToolDefinition {
                                    name: tool.name,
                                    description: tool.description,
                                    input_schema: tool.input_schema,
                                    output_schema: tool.output_schema,
                                    ..definitions::echo_definition()
                                })
                                .collect(),
                        })
                        .collect(),
                    mcp_sources,
                });
            }
            "control-chars" => {
                tools[0].description = config.message.unwrap_or_else(|| {
                    "Echoes \u{1b}[31mred\u{1b}[0m text.\nSECOND LINE\r\u{202e}desrever".into()
                });
            }
            "many-tools" => tools.extend((0..count).map(|i| ToolDefinition {
                name: format!("t{i}"),
                ..definitions::echo_definition()
            })),
            "many-servers" => {
                let extra = (0..count).map(|i| ServerDefinition {
                    name: format!("s{i}"),
                    tools: vec![definitions::echo_definition()],
                });
                let mut servers = vec![ServerDefinition {
                    name: SERVER.into(),
                    tools,
                }];
                servers.extend(extra);
                return Ok(Registration {
                    servers,
                    mcp_sources,
                });
            }
            "big-description" => tools[0].description = "d".repeat(kib * 1024),
            "big-schema" => tools.push(ToolDefinition {
                name: "big_schema".into(),
                input_schema: format!(
                    r#"{{"type": "object", "description": "{}"}}"#,
                    "s".repeat(kib * 1024)
                ),
                ..definitions::echo_definition()
            }),
            "aliased" => {
                let descriptions = tools::aliased(count, kib * 1024);
                tools.extend(descriptions.into_iter().enumerate().map(|(i, description)| {
                    ToolDefinition {
                        name: format!("a{i}"),
                        description,
                        ..definitions::echo_definition()
                    }
                }));
            }
            "pattern-bomb" => tools.push(ToolDefinition {
                name: "pattern_bomb".into(),
                input_schema: r#"{"type": "object", "properties": {"text": {"type": "string", "pattern": "^(a+)+$"}},
                    "patternProperties": {"^(b+)+$": {"type": "integer"}}}"#
                    .into(),
                ..definitions::echo_definition()
            }),
            "lookaround" => tools.push(broken_tool(
                r#"{"type": "string", "pattern": "^(?=a)a+$"}"#,
            )),
            "fanout-bomb" => tools.push(broken_tool(&fanout_bomb(40))),
            "ref-cycle" => tools.push(broken_tool(
                r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}"##,
            )),
            "bad-schema" => tools.push(broken_tool(r#"{"type": 12}"#)),
            // What a Rust tool taking a `String` derives.
            "string-args" => tools.push(broken_tool(r#"{"type": "string"}"#)),
            "not-json-schema" => tools.push(broken_tool("{not json")),
            "bad-output-schema" => tools.push(ToolDefinition {
                name: "typo".into(),
                output_schema: Some(r#"{"type": "objekt"}"#.into()),
                ..definitions::echo_definition()
            }),
            "duplicate" => {
                let mut echo = definitions::echo_definition();
                echo.description = "A second tool named echo.".into();
                tools.push(echo);
            }
            "bad-name" => {
                let mut bad = definitions::echo_definition();
                bad.name = "bad name!".into();
                tools.push(bad);
            }
            "bad-server" => {
                server = "Chaos!".into();
                tools = vec![definitions::echo_definition()];
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
                    env: Vec::new(),
                    cwd: None,
                }),
                timeout_ms: None,
                start_timeout_ms: None,
                eager: false,
                roots: Vec::new(),
            }),
            other => {
                return Err(format!(
                    "unknown hostile plugin mode {other:?}: use normal, register-error, \
                     bad-schema, not-json-schema, bad-output-schema, duplicate, bad-name, \
                     bad-server, trap, exit, custom, control-chars, many-tools, many-servers, \
                     big-description, big-schema, aliased, pattern-bomb, lookaround, \
                     fanout-bomb, ref-cycle or mcp-source"
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

/// A schema whose evaluation fans out `2^levels` times: `$defs` `d0` is
/// `anyOf [d1, d1]`, `d1` is `anyOf [d2, d2]`, and so on.
fn fanout_bomb(levels: usize) -> String {
    let defs: serde_json::Map<String, serde_json::Value> = (0..levels)
        .map(|i| {
            let next = format!("#/$defs/d{}", i + 1);
            let def = if i + 1 == levels {
                serde_json::json!({"type": "integer"})
            } else {
                serde_json::json!({"anyOf": [{"$ref": next}, {"$ref": next}]})
            };
            (format!("d{i}"), def)
        })
        .collect();
    serde_json::json!({"$defs": defs, "$ref": "#/$defs/d0"}).to_string()
}

bindings::export!(Hostile with_types_in bindings);
