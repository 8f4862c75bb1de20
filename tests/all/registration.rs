//! Registration and naming: what a registry holds, and what it refuses.

use tiny_harness_host::{HostBuilder, HostError, LoadError, Registry, RegistryError};

use crate::common::{fs_over, host, hostile, spec};

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

#[tokio::test]
async fn a_schema_that_does_not_compile_refuses_the_plugin() {
    let err = refused("bad-schema").await;
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::InvalidSchema { name, .. },
                ..
            } if name == "hostile/chaos.broken"
        ),
        "{err:?}"
    );

    let err = refused("not-json-schema").await;
    assert!(err.to_string().contains("broken"), "{err}");

    let err = refused("bad-output-schema").await;
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::InvalidSchema { name, which: "output", .. },
                ..
            } if name == "hostile/chaos.typo"
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("invalid output schema"), "{err}");
}

#[tokio::test]
async fn duplicate_and_badly_named_tools_are_refused() {
    let err = refused("duplicate").await;
    assert!(
        matches!(
            &err,
            HostError::Registry { source: RegistryError::Duplicate(name), .. }
                if name == "hostile/chaos.echo"
        ),
        "{err:?}"
    );

    let err = refused("bad-name").await;
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::InvalidName { what: "tool", .. },
                ..
            }
        ),
        "{err:?}"
    );

    let err = refused("bad-server").await;
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::InvalidName { what: "server", .. },
                ..
            }
        ),
        "{err:?}"
    );
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
