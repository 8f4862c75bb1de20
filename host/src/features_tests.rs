//! What a host built without a feature does with a plugin that needs it:
//! refuses it at load, in one line naming the feature. These run only in
//! such a build (`cargo test -p tiny-harness-host --no-default-features
//! --lib`, as CI does); with the default features the same plugins load.

use crate::{HostBuilder, PluginSpec};

#[cfg(not(feature = "mcp"))]
#[tokio::test]
async fn without_mcp_a_plugin_that_declares_a_server_is_refused() {
    let mut spec = PluginSpec::new("mcp", "builtin:mcp");
    spec.config = serde_json::json!({
        "mcpServers": { "everything": { "command": "npx", "args": ["-y", "x"] } }
    });
    let host = HostBuilder::new()
        .compile_cache(None)
        .build()
        .await
        .unwrap();
    let err = host.load_plugin(spec).await.unwrap_err();
    assert!(
        matches!(&err, crate::HostError::Unsupported { feature: "mcp", .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "plugin mcp: it declares the MCP server \"everything\", and this host was built without \
         the mcp feature"
    );
    assert!(host.registry().is_empty());

    // The same plugin declaring none loads (it has no tools of its own).
    let mut none = PluginSpec::new("mcp", "builtin:mcp");
    none.config = serde_json::json!({ "mcpServers": {} });
    host.load_plugin(none).await.unwrap();
}

#[cfg(not(feature = "http"))]
#[tokio::test]
async fn without_http_a_component_that_imports_wasi_http_is_refused() {
    let host = HostBuilder::new()
        .compile_cache(None)
        .build()
        .await
        .unwrap();
    let err = host
        .load_plugin(PluginSpec::new("net", "builtin:net"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            crate::HostError::Load(crate::LoadError::WrongWorld { .. })
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("wasi:http") && message.contains("enable the http feature"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");

    // A component without it loads and serves calls.
    host.load_plugin(PluginSpec::new("fs", "builtin:fs"))
        .await
        .unwrap();
    assert!(host.registry().get("fs/workspace.read_file").is_some());
}

#[cfg(not(feature = "intrinsics"))]
#[tokio::test]
async fn without_intrinsics_a_config_with_skills_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(
        &path,
        "[skills]\nroot = \"skills\"\nskill_kib = 64\n\n[plugins.fs]\npath = \"builtin:fs\"\n",
    )
    .unwrap();
    let config = crate::Config::load(&path).unwrap();
    let host = crate::Host::from_config(&config).await.unwrap();
    assert!(host.registry().get("create_plan").is_none());
    assert!(host.registry().get("fs/workspace.read_file").is_some());
}
