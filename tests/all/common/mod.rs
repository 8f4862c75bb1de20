//! Shared fixtures: where the built plugins are, and hosts made of them.

pub mod mcp;
pub mod npm;
pub mod procs;
pub mod py;
pub mod venv;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tiny_harness_host::{
    CallOutcome, ContentPart, DirGrant, DirMode, Host, HostBuilder, Limits, PluginSpec, ToolCall,
    ToolResult,
};

/// The directory the host's build script leaves the plugins in.
pub fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/wasm-plugins/wasm32-wasip2/release")
}

/// The built component of plugin `name` (`fs`, `hello`, `hostile`, `not_a_plugin`).
pub fn plugin_wasm(name: &str) -> PathBuf {
    let path = plugin_dir().join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: the host build script builds it",
        path.display()
    );
    path
}

/// A spec for `wasm` under `name` that grants nothing.
pub fn spec(name: &str, wasm: &str) -> PluginSpec {
    PluginSpec::new(name, plugin_wasm(wasm))
}

/// The hostile test plugin in registration `mode`.
pub fn hostile(mode: &str) -> PluginSpec {
    let mut spec = spec("hostile", "hostile");
    spec.config = serde_json::json!({ "mode": mode });
    spec
}

/// The fs plugin with one directory granted at `/workspace`.
pub fn fs_over(dir: &Path, mode: DirMode) -> PluginSpec {
    let mut spec = spec("fs", "fs");
    spec.grants
        .add_dir(DirGrant::new(dir, "/workspace", mode).unwrap())
        .unwrap();
    spec
}

/// Limits short enough for tests that hit them on purpose.
pub fn tight_limits() -> Limits {
    let mut limits = Limits::default();
    limits.memory_bytes = 32 << 20;
    limits.timeout = Duration::from_millis(300);
    limits
}

/// A host with exactly these plugins.
pub async fn host(specs: Vec<PluginSpec>) -> Host {
    let mut builder = HostBuilder::new();
    for spec in specs {
        builder = builder.plugin(spec);
    }
    builder
        .build()
        .await
        .unwrap_or_else(|e| panic!("loading: {e}"))
}

/// The inode of the file at `path`, if there is one: an atomic write (of
/// the lock, say) gives the path a new one, so an unchanged inode means
/// the file was not written.
pub fn inode(path: &Path) -> Option<u64> {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).ok()?).into()
}

/// Calls `name` with `arguments`.
pub async fn call(host: &Host, name: &str, arguments: serde_json::Value) -> CallOutcome {
    host.invoke(&ToolCall {
        id: "test-call".into(),
        name: name.into(),
        arguments,
    })
    .await
}

/// The result of a call that must have produced one.
pub fn result_of(outcome: &CallOutcome) -> &ToolResult {
    outcome
        .result
        .as_ref()
        .unwrap_or_else(|e| panic!("expected a result, got {} error: {e}", e.code()))
}

/// The text of every text part, concatenated.
pub fn text_of(outcome: &CallOutcome) -> String {
    result_of(outcome)
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The first JSON part's document.
pub fn json_of(outcome: &CallOutcome) -> serde_json::Value {
    result_of(outcome)
        .content
        .iter()
        .find_map(|p| match p {
            ContentPart::Json { data, .. } => Some(data.clone()),
            _ => None,
        })
        .expect("a JSON part")
}

/// The error code of a failed call.
pub fn error_code(outcome: &CallOutcome) -> &'static str {
    match &outcome.result {
        Ok(r) => panic!("expected an error, got a result: {r:?}"),
        Err(e) => e.code(),
    }
}

/// A subscriber that takes everything and keeps nothing: the host's log
/// listened to.
pub struct Listening;

impl tracing::Subscriber for Listening {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
