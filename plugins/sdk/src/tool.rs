//! Tools, servers and the plugin: what `register` answers and how `call`
//! finds the function to run.
//!
//! Invariants:
//! - A [`Tool`] is plain data and function pointers: listing a plugin's
//!   servers derives no schema, so `call` (which lists them again to find
//!   its tool) pays only for the list; schemas are derived in `register`.
//! - `register` refuses, with the tool's name, a tool whose schema cannot
//!   be derived as the host needs it, rather than sending one the host
//!   would refuse with a less precise message.

use serde::de::DeserializeOwned;

use crate::bindings::tiny_harness::plugin::types::{
    Annotations, McpSource, ServerDefinition, ToolDefinition,
};
use crate::bindings::{CallError, CallResult, Registration};

/// The plugin's config: its `[plugins.NAME.config]` table from the host
/// config, as JSON text (`{}` when there is none).
#[derive(Debug, Clone, Copy)]
pub struct Config<'a> {
    json: &'a str,
}

impl<'a> Config<'a> {
    /// The config as it came, JSON text.
    pub fn json(&self) -> &'a str {
        self.json
    }

    /// The config as `T`, or serde's message of why it is not one.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_str(self.json).map_err(|err| format!("invalid config: {err}"))
    }
}

/// What a tool function may ask about its call: the config, and the
/// server and tool it was called as.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The plugin's config.
    pub config: Config<'a>,
    /// The server's name.
    pub server: &'a str,
    /// The tool's name.
    pub tool: &'a str,
}

/// One tool: its name, description, hints, and how to derive its schemas
/// and run it. Made by `#[tool]`; list them with `tools![...]`.
#[derive(Clone, Copy)]
pub struct Tool {
    name: &'static str,
    description: &'static str,
    annotations: Annotations,
    derived: bool,
    input_schema: fn() -> Result<serde_json::Value, String>,
    output_schema: fn() -> Option<serde_json::Value>,
    run: fn(&Context<'_>, &str) -> Result<CallResult, CallError>,
}

impl Tool {
    /// What `#[tool]` expands to; not part of the API.
    #[doc(hidden)]
    pub fn __new(
        name: &'static str,
        description: &'static str,
        annotations: Annotations,
        derived: bool,
        input_schema: fn() -> Result<serde_json::Value, String>,
        output_schema: fn() -> Option<serde_json::Value>,
        run: fn(&Context<'_>, &str) -> Result<CallResult, CallError>,
    ) -> Tool {
        Tool {
            name,
            description,
            annotations,
            derived,
            input_schema,
            output_schema,
            run,
        }
    }

    /// Its name within its server.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its behaviour hints.
    pub fn annotations(&self) -> Annotations {
        self.annotations
    }

    /// Its definition as `register` returns it: the schemas derived now
    /// (or as written, with `input_schema = ...`). The description is the
    /// function's doc comment, or else the argument type's.
    pub fn definition(&self) -> Result<ToolDefinition, String> {
        let mut input =
            (self.input_schema)().map_err(|why| format!("tool {}: {why}", self.name))?;
        let from_type = if self.derived {
            input
                .as_object_mut()
                .and_then(|object| object.remove("description"))
                .and_then(|d| d.as_str().map(str::to_owned))
        } else {
            None
        };
        let description = if self.description.is_empty() {
            from_type.unwrap_or_default()
        } else {
            self.description.to_owned()
        };
        Ok(ToolDefinition {
            name: self.name.to_owned(),
            description,
            input_schema: input.to_string(),
            output_schema: (self.output_schema)().map(|schema| schema.to_string()),
            annotations: self.annotations,
        })
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("annotations", &self.annotations)
            .finish_non_exhaustive()
    }
}

/// A function marked `#[tool]`, as a type; not implemented by hand.
pub trait ToolFn {
    /// The tool.
    fn tool() -> Tool;
}

/// A named group of tools: the middle part of `<plugin>/<server>.<tool>`.
#[derive(Debug, Clone)]
pub struct Server {
    name: String,
    tools: Vec<Tool>,
}

impl Server {
    /// The server `name` (1 to 64 characters of `[a-z0-9_-]`) with
    /// `tools`, in the order given.
    pub fn new(name: impl Into<String>, tools: Vec<Tool>) -> Server {
        Server {
            name: name.into(),
            tools,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its tools.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }
}

/// A plugin: the servers it supplies for a config, and the MCP servers it
/// asks the host to reach. `export!(Type)` makes it the component.
pub trait Plugin {
    /// The servers and tools for `config`, or what is wrong with the
    /// config (the host then registers nothing of the plugin). Called by
    /// `register`, and again by every `call` to find its tool, so it
    /// should only check the config and list.
    fn servers(config: &Config<'_>) -> Result<Vec<Server>, String>;

    /// The MCP servers the host should reach for the plugin under its
    /// grants (called by `register` only). None by default.
    fn mcp_sources(config: &Config<'_>) -> Result<Vec<McpSource>, String> {
        let _ = config;
        Ok(Vec::new())
    }
}

/// `register` for plugin `P`.
pub fn register<P: Plugin>(config: &str) -> Result<Registration, String> {
    let config = Config { json: config };
    let servers = P::servers(&config)?
        .iter()
        .map(|server| {
            let tools = server
                .tools
                .iter()
                .map(Tool::definition)
                .collect::<Result<Vec<_>, String>>()
                .map_err(|why| format!("server {}: {why}", server.name))?;
            Ok(ServerDefinition {
                name: server.name.clone(),
                tools,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Registration {
        servers,
        mcp_sources: P::mcp_sources(&config)?,
    })
}

/// `call` for plugin `P`: finds `server`.`tool` among its servers and runs
/// it with `arguments`.
pub fn call<P: Plugin>(
    config: &str,
    server: &str,
    tool: &str,
    arguments: &str,
) -> Result<CallResult, CallError> {
    let config = Config { json: config };
    let servers = P::servers(&config).map_err(CallError::Failed)?;
    let found = servers
        .iter()
        .find(|s| s.name == server)
        .and_then(|s| s.tools.iter().find(|t| t.name == tool));
    let Some(found) = found else {
        return Err(CallError::UnknownTool(format!(
            "this plugin has no tool {server}.{tool}"
        )));
    };
    let cx = Context {
        config,
        server,
        tool,
    };
    (found.run)(&cx, arguments)
}
