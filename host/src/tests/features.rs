//! What a host built without a feature does with a plugin that needs it:
//! refuses it at load, in one line naming the feature. These run only in
//! such a build (`cargo test -p tiny-harness-host --no-default-features
//! --features bundled --lib`, and with `mcp` too, as CI does: they load the
//! bundled plugins); with the default features the same plugins load.

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

#[cfg(all(feature = "mcp", not(feature = "oauth")))]
#[tokio::test]
async fn without_oauth_a_server_that_wants_a_login_fails_naming_the_feature() {
    use crate::mcp::State;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    // A server on loopback that asks every request for a login.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0u8; 64 << 10];
                let _ = stream.read(&mut request).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"t\"\r\n\
                          Content-Length: 0\r\nConnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    let mut spec = PluginSpec::new("mcp", "builtin:mcp");
    spec.config = serde_json::json!({ "mcpServers": {
        "asks": { "url": url },
        "declares": { "url": url, "oauth": { "client_id": "tiny-harness" } },
    }});
    spec.grants
        .add_net(crate::NetGrant::parse("http://127.0.0.1:*").unwrap())
        .unwrap();
    let host = HostBuilder::new()
        .compile_cache(None)
        .plugin(spec)
        .build()
        .await
        .unwrap();
    let sources = host.mcp_sources();
    for (server, says) in [
        (
            "asks",
            "server asks asks for an OAuth login, and this host was built without the oauth feature",
        ),
        (
            "declares",
            "it declares an OAuth login (oauth), and this host was built without the oauth feature",
        ),
    ] {
        let (_, source) = sources.iter().find(|(_, s)| s.server() == server).unwrap();
        let State::Failed(why) = source.status().state else {
            panic!("{server}: {:?}", source.status().state)
        };
        assert!(why.contains(says), "{server}: {why}");
        assert!(!why.contains('\n'), "{why}");
    }
    assert!(host.registry().is_empty());
}

#[cfg(not(feature = "oci"))]
#[tokio::test]
async fn without_oci_a_component_missing_from_the_store_is_refused_and_one_there_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-harness.toml");
    let fs = crate::plugin::builtin::component("fs").unwrap();
    let hex = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(fs))
    };
    let reference = format!("oci://127.0.0.1:9/plugins/fs:1@sha256:{}", "cd".repeat(32));
    std::fs::write(
        &path,
        format!("[plugins.fs]\npath = \"{reference}\"\nsha256 = \"{hex}\"\n"),
    )
    .unwrap();
    let config = crate::Config::load(&path).unwrap();
    let build = || {
        HostBuilder::new()
            .config(&config)
            .compile_cache(None)
            .build()
    };
    let err = build().await.unwrap_err();
    assert!(
        matches!(&err, crate::HostError::Unsupported { feature: "oci", .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&reference) && message.contains("without the oci feature"),
        "{message}"
    );
    assert!(!message.contains('\n'));
    // In the store, it runs: no fetching needed.
    let stored = crate::oci_store(&path)
        .join("sha256")
        .join(format!("{hex}.wasm"));
    std::fs::create_dir_all(stored.parent().unwrap()).unwrap();
    std::fs::write(&stored, fs).unwrap();
    let host = build().await.unwrap();
    assert_eq!(host.registry().len(), 5);
}
