//! Registration and naming: what a registry holds, and what it refuses.

use serde_json::json;
use tiny_harness_host::{
    HostBuilder, HostError, LoadError, RegistrationLimit, Registry, RegistryError,
};

use crate::common::{call, fs_over, host, hostile, spec, text_of};

const FS_TOOLS: [&str; 5] = [
    "fs/workspace.list_dir",
    "fs/workspace.read_file",
    "fs/workspace.search",
    "fs/workspace.stat",
    "fs/workspace.write_file",
];

#[tokio::test]
async fn a_host_without_plugins_has_no_tools() {
    assert!(Registry::new().is_empty());
    let host = host(vec![]).await;
    assert_eq!(host.registry().len(), 0);
    assert_eq!(host.registry().tools().count(), 0);
    // Not even the fs tools exist until the fs plugin is loaded.
    assert!(host.registry().get("fs/workspace.read_file").is_none());
}

#[tokio::test]
async fn the_fs_plugin_supplies_exactly_its_five_tools() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(vec![fs_over(
        dir.path(),
        tiny_harness_host::DirMode::ReadOnly,
    )])
    .await;
    let names: Vec<String> = host
        .registry()
        .tools()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, FS_TOOLS);

    let read = host
        .registry()
        .get("fs/workspace.read_file")
        .cloned()
        .unwrap();
    assert_eq!(read.name.plugin(), "fs");
    assert_eq!(read.name.server(), "workspace");
    assert_eq!(read.name.tool(), "read_file");
    assert!(read.definition.annotations.read_only);
    assert!(read.definition.annotations.idempotent);
    assert_eq!(read.schema_hash().as_str().len(), 64);

    let write = host
        .registry()
        .get("fs/workspace.write_file")
        .cloned()
        .unwrap();
    assert!(!write.definition.annotations.read_only);
    assert!(write.definition.annotations.destructive);

    // Every fs tool promises the shape of its structured result, so the
    // host checks each one (the fs_tools tests exercise them all).
    for tool in host.registry().tools() {
        assert!(tool.output_schema.is_some(), "{}", tool.name.as_str());
    }
}

#[tokio::test]
async fn the_plugin_name_comes_from_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = fs_over(dir.path(), tiny_harness_host::DirMode::ReadOnly);
    files.name = "files".into();
    let mut chaos = hostile("normal");
    chaos.name = "fs".into(); // a hostile plugin loaded under the name "fs"
    let host = host(vec![files, chaos]).await;
    assert!(host.registry().get("files/workspace.read_file").is_some());
    // The "fs" plugin here is the hostile one: its tools, none of the fs tools.
    assert!(host.registry().get("fs/chaos.echo").is_some());
    assert!(host.registry().get("fs/workspace.read_file").is_none());
}

#[tokio::test]
async fn one_plugin_name_cannot_be_loaded_twice() {
    let host = HostBuilder::new().build().await.unwrap();
    host.load_plugin(hostile("normal")).await.unwrap();
    let before = host.registry().len();
    let err = host.load_plugin(hostile("normal")).await.unwrap_err();
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::DuplicatePlugin(name),
                ..
            } if name == "hostile"
        ),
        "{err:?}"
    );
    assert_eq!(host.registry().len(), before);
}

#[tokio::test]
async fn a_bad_plugin_name_in_the_config_is_refused() {
    for bad in ["Fs", "f s", "", "fs/x", "fs.x"] {
        let host = HostBuilder::new().build().await.unwrap();
        let mut spec = spec(bad, "hostile");
        spec.config = serde_json::json!({});
        let err = host.load_plugin(spec).await.unwrap_err();
        assert!(
            matches!(
                &err,
                HostError::Registry {
                    source: RegistryError::InvalidName { what: "plugin", .. },
                    ..
                }
            ),
            "{bad:?}: {err:?}"
        );
        assert!(host.registry().is_empty());
    }
}

/// Loads hostile in `mode` after a good plugin; returns the one-line error
/// and checks that nothing of the bad plugin remains.
async fn refused(mode: &str) -> HostError {
    let host = HostBuilder::new().build().await.unwrap();
    let mut good = hostile("normal");
    good.name = "good".into();
    let good_count = host.load_plugin(good).await.unwrap();
    let err = host.load_plugin(hostile(mode)).await.unwrap_err();
    let message = err.to_string();
    assert!(!message.contains('\n'), "{mode}: not one line: {message}");
    assert!(
        message.contains("hostile"),
        "{mode}: does not name the plugin: {message}"
    );
    let registry = host.registry();
    assert_eq!(registry.len(), good_count, "{mode}: partial registration");
    assert!(
        registry.tools().all(|t| t.name.plugin() == "good"),
        "{mode}"
    );
    // The name is still free: the same plugin in a good mode now loads.
    host.load_plugin(hostile("normal")).await.unwrap();
    err
}

#[tokio::test]
async fn register_errors_are_reported_and_leave_nothing_behind() {
    let err = refused("register-error").await;
    assert!(
        matches!(err, HostError::Load(LoadError::Register { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("register refused: mode register-error")
    );

    let err = refused("trap").await;
    assert!(
        matches!(err, HostError::Load(LoadError::Register { .. })),
        "{err:?}"
    );
}

/// Loads hostile in `mode` after a good plugin, into a host with a lock
/// file; checks that it loads with exactly the tool `bad` left out and
/// recorded (never registered, pinned or shown as drift), and that its
/// other `kept` tools are registered and pinned. Returns why `bad` was
/// left out.
async fn left_out(mode: &str, bad: &str, kept: usize) -> RegistryError {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("pins.lock");
    let host = HostBuilder::new().lock_file(&lock).build().await.unwrap();
    let mut good = hostile("normal");
    good.name = "good".into();
    let good_count = host.load_plugin(good).await.unwrap();
    assert!(host.refused_tools().is_empty(), "{mode}");

    let added = host
        .load_plugin(hostile(mode))
        .await
        .unwrap_or_else(|e| panic!("{mode}: the plugin is refused whole: {e}"));
    assert_eq!(added, kept, "{mode}");
    let registry = host.registry();
    assert_eq!(registry.len(), good_count + kept, "{mode}");
    assert!(
        host.plugins().iter().any(|(name, _)| name == "hostile"),
        "{mode}: the plugin is loaded"
    );

    let refused = host.refused_tools();
    let [one] = refused.as_slice() else {
        panic!("{mode}: one tool left out: {refused:?}")
    };
    assert_eq!(one.plugin, "hostile", "{mode}");
    assert_eq!(one.name, bad, "{mode}");
    // (A duplicate's name is registered: by the first tool of that name.)
    if !matches!(one.error, RegistryError::Duplicate(_)) {
        assert!(registry.get(bad).is_none(), "{mode}: {bad} is registered");
    }
    let why = one.error.to_string();
    assert!(!why.contains('\n'), "{mode}: not one line: {why}");

    // What is registered is pinned; what is left out is not, and is no
    // drift (not a tool new since the pins).
    assert!(
        host.known_drift().is_empty(),
        "{mode}: {:?}",
        host.known_drift()
    );
    let pins: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    let pinned: usize = pins["plugins"]["hostile"]["servers"]
        .as_object()
        .map(|servers| {
            servers
                .values()
                .map(|s| s["tools"].as_object().map_or(0, |t| t.len()))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(pinned, kept, "{mode}: {pins}");
    if kept > 0 {
        let echo = call(
            &host,
            "hostile/chaos.echo",
            json!({"message": "still here"}),
        )
        .await;
        assert_eq!(text_of(&echo), "still here", "{mode}");
    }
    one.error.clone()
}

/// How many tools hostile registers in mode `normal`.
async fn normal_count() -> usize {
    host(vec![hostile("normal")]).await.registry().len()
}

#[tokio::test]
async fn a_tool_whose_schema_does_not_compile_is_left_out_and_the_others_load() {
    let normal = normal_count().await;
    let err = left_out("bad-schema", "hostile/chaos.broken", normal).await;
    assert!(
        matches!(
            &err,
            RegistryError::InvalidSchema { name, which: "input", .. } if name == "hostile/chaos.broken"
        ),
        "{err:?}"
    );

    let err = left_out("bad-output-schema", "hostile/chaos.typo", normal).await;
    assert!(
        matches!(
            &err,
            RegistryError::InvalidSchema { name, which: "output", .. } if name == "hostile/chaos.typo"
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("invalid output schema"), "{err}");

    // A schema for something other than an object (what a Rust tool that
    // takes a `String` derives): such a tool could never be called.
    let err = left_out("string-args", "hostile/chaos.broken", normal).await;
    assert!(
        matches!(&err, RegistryError::InvalidSchema { which: "input", .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(
            "its type is \"string\", not \"object\": a tool's arguments are a JSON object"
        ),
        "{err}"
    );

    // A schema that is not JSON at all is refused by the loader, before
    // the registry: the whole plugin, as before.
    let err = refused("not-json-schema").await;
    assert!(
        matches!(err, HostError::Load(LoadError::InvalidRegistration { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("broken"), "{err}");
}

#[tokio::test]
async fn a_duplicate_or_badly_named_tool_is_left_out_and_the_others_load() {
    let normal = normal_count().await;
    // The first `echo` stays; the second is left out.
    let err = left_out("duplicate", "hostile/chaos.echo", normal).await;
    assert!(
        matches!(&err, RegistryError::Duplicate(name) if name == "hostile/chaos.echo"),
        "{err:?}"
    );
    let host = host(vec![hostile("duplicate")]).await;
    let echo = host.registry().get("hostile/chaos.echo").cloned().unwrap();
    assert_ne!(echo.definition.description, "A second tool named echo.");

    let err = left_out("bad-name", "hostile/chaos.bad name!", normal).await;
    assert!(
        matches!(&err, RegistryError::InvalidName { what: "tool", name, .. } if name == "bad name!"),
        "{err:?}"
    );

    // Its one tool is under a bad server name: the plugin loads with none.
    let err = left_out("bad-server", "hostile/Chaos!.echo", 0).await;
    assert!(
        matches!(&err, RegistryError::InvalidName { what: "server", name, .. } if name == "Chaos!"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_plugin_refused_whole_leaves_no_tool_behind_as_left_out() {
    let host = HostBuilder::new().build().await.unwrap();
    // Its tools are screened (the broken one left out), then the whole
    // registration is over its total: the plugin is refused, and nothing
    // it told stays.
    let mut tools: Vec<serde_json::Value> = (0..100)
        .map(|i| json!({"name": format!("t{i:02}"), "description": "d", "input_schema": "{}"}))
        .collect();
    tools.push(json!({"name": "broken", "description": "d", "input_schema": r#"{"type":12}"#}));
    let mut spec = hostile("custom");
    spec.config = json!({"mode": "custom", "servers": [{"name": "chaos", "tools": tools}]});
    // The text the plugin sends is within it; the full names are not.
    spec.limits.registration.total_bytes = 1000;
    let err = host.load_plugin(spec).await.unwrap_err();
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::OverLimit {
                    limit: RegistrationLimit::Total,
                    ..
                },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(host.registry().is_empty());
    assert!(
        host.refused_tools().is_empty(),
        "{:?}",
        host.refused_tools()
    );

    // Too many tools, and a bad plugin name: refused whole as before.
    let mut spec = hostile("bad-schema");
    spec.limits.registration.tools = 2;
    let err = host.load_plugin(spec).await.unwrap_err();
    assert!(err.to_string().contains("limits.tools"), "{err}");
    let mut spec = hostile("bad-schema");
    spec.name = "Bad".into();
    let err = host.load_plugin(spec).await.unwrap_err();
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::InvalidName { what: "plugin", .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(host.registry().is_empty());
    assert!(
        host.refused_tools().is_empty(),
        "{:?}",
        host.refused_tools()
    );

    // The same plugin, within its limits, loads and tells its one bad tool.
    host.load_plugin(hostile("bad-schema")).await.unwrap();
    let refused = host.refused_tools();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].name, "hostile/chaos.broken");
}

#[tokio::test]
async fn an_mcp_source_without_its_exec_grant_fails_and_the_plugin_still_loads() {
    let host = host(vec![hostile("mcp-source")]).await;
    // The plugin's own tools are registered; its MCP source is not started.
    assert!(host.registry().get("hostile/chaos.echo").is_some());
    let sources = host.mcp_sources();
    let [(plugin, source)] = sources.as_slice() else {
        panic!("one source: {sources:?}")
    };
    assert_eq!(plugin, "hostile");
    let state = source.status().state.to_string();
    assert!(
        state.contains("program \"npx\"") && state.contains("exec = [{ program = \"npx\" }]"),
        "{state}"
    );
}
