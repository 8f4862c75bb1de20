//! Tools of the harness's own, running in its process, beside the
//! sandboxed plugins: a `memory` tool set that remembers and recalls
//! notes. Registered with `HostBuilder::source`, its tools are named
//! `app/memory.remember` and `app/memory.recall`, validated, offered to
//! every provider, recorded, and pinned in the lock like a plugin's: a
//! later build whose tools differ is refused until `Host::reregister`.
//!
//! ```sh
//! cargo run -p tiny-harness-host --example own_tools -- /tmp/own-tools.lock
//! ```

// An example that cannot set up has nothing to show: it stops at once,
// saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::error::Error;
use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use tiny_harness_host::{
    Annotations, CallFuture, Host, HostBuilder, HostError, ListFuture, PendingTool, Provider,
    ToolCall, ToolDefinition, ToolResult, ToolSource, boxed,
};

/// Notes kept in memory, by key.
#[derive(Debug, Default)]
struct Memory {
    notes: tokio::sync::Mutex<BTreeMap<String, String>>,
}

impl ToolSource for Memory {
    fn list_tools(&self) -> ListFuture<'_> {
        let mut remember = ToolDefinition::new(
            "remember",
            "Keeps a note under a key, replacing any note it had.",
            json!({
                "type": "object",
                "properties": {
                    "key": {"type": "string", "maxLength": 64},
                    "note": {"type": "string", "maxLength": 4096}
                },
                "required": ["key", "note"],
                "additionalProperties": false
            }),
        );
        remember.annotations = Annotations {
            idempotent: true,
            ..Annotations::default()
        };
        let mut recall = ToolDefinition::new(
            "recall",
            "The note kept under a key.",
            json!({
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
                "additionalProperties": false
            }),
        );
        recall.annotations.read_only = true;
        let tools = [remember, recall]
            .into_iter()
            .map(|tool| PendingTool::new("memory", tool))
            .collect();
        boxed(async move { Ok(tools) })
    }

    fn call<'a>(
        &'a self,
        _server: &'a str,
        tool: &'a str,
        arguments: &'a Value,
        _deadline: Instant,
    ) -> CallFuture<'a> {
        // The arguments were checked against the input schema already.
        boxed(async move {
            let key = arguments["key"].as_str().unwrap_or_default();
            let mut notes = self.notes.lock().await;
            Ok(match tool {
                "remember" => {
                    let note = arguments["note"].as_str().unwrap_or_default();
                    notes.insert(key.to_owned(), note.to_owned());
                    ToolResult::text(format!("kept a note under {key:?}"))
                }
                _ => match notes.get(key) {
                    Some(note) => ToolResult::text(note.clone()),
                    None => ToolResult::error(format!("no note is kept under {key:?}")),
                },
            })
        })
    }
}

/// A host with the memory tools, pinned in the lock at `lock`.
async fn host_with_memory(lock: &Path) -> Result<Host, HostError> {
    HostBuilder::new()
        .lock_file(lock)
        .source("app", std::sync::Arc::new(Memory::default()))
        .build()
        .await
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let lock = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "own-tools.lock".into());
    let host = host_with_memory(lock.as_ref()).await?;
    let offered = host.offer(Provider::OpenAiResponses).tools.to_string();
    eprintln!("offering OpenAI Responses {} bytes of tools", offered.len());
    for (id, (name, arguments)) in [
        (
            "app/memory.remember",
            json!({"key": "milk", "note": "2 litres"}),
        ),
        ("app/memory.recall", json!({"key": "milk"})),
        ("app/memory.recall", json!({"key": 7})),
    ]
    .into_iter()
    .enumerate()
    {
        let outcome = host.invoke(&call(&id.to_string(), name, arguments)).await;
        println!("{}", outcome.render());
    }
    eprintln!("pinned in {lock}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_tools_run_validated_and_pinned_in_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("own-tools.lock");
        let host = host_with_memory(&lock).await.unwrap();
        let kept = host
            .invoke(&call(
                "1",
                "app/memory.remember",
                json!({"key": "k", "note": "n"}),
            ))
            .await;
        assert!(!kept.is_error(), "{}", kept.render());
        let recalled = host
            .invoke(&call("2", "app/memory.recall", json!({"key": "k"})))
            .await;
        assert!(recalled.render().contains('n'), "{}", recalled.render());
        let refused = host
            .invoke(&call("3", "app/memory.recall", json!({"key": 7})))
            .await;
        assert_eq!(refused.result.unwrap_err().code(), "invalid_arguments");
        let offered = host.offer(Provider::OpenAiResponses).tools.to_string();
        assert!(offered.contains("Keeps a note under a key"), "{offered}");
        let pins = std::fs::read_to_string(&lock).unwrap();
        assert!(pins.contains("\"remember\""), "{pins}");
    }
}
