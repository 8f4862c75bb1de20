//! The host the `invoke` and `layers` benches call through: the `hello`
//! plugin, and the same tool in process.

use std::time::Instant;

use serde_json::json;
use tiny_harness_host::{
    CallFuture, Host, HostBuilder, ListFuture, PendingTool, PluginEngine, PluginSpec,
    ToolDefinition, ToolResult, ToolSource, boxed,
};

/// `hello.greet` without the plugin: answers at once, in process.
#[derive(Debug)]
pub struct Greeter;

impl ToolSource for Greeter {
    fn list_tools(&self) -> ListFuture<'_> {
        let greet = ToolDefinition::new(
            "greet",
            "Greets someone by name.",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": false
            }),
        );
        boxed(async move { Ok(vec![PendingTool::new("hello", greet)]) })
    }

    fn call<'a>(
        &'a self,
        _server: &'a str,
        _tool: &'a str,
        _arguments: &'a serde_json::Value,
        _deadline: Instant,
    ) -> CallFuture<'a> {
        boxed(async { Ok(ToolResult::text("Hello, bench!")) })
    }
}

/// A host with the `hello` plugin and, as `mem`, [`Greeter`].
pub async fn hello_host(engine: PluginEngine) -> Host {
    HostBuilder::new()
        .engine(engine)
        .plugin(PluginSpec::new("hello", super::bare::hello_wasm()))
        .source("mem", std::sync::Arc::new(Greeter))
        .build()
        .await
        .expect("load")
}
