//! Files that are not plugins, and pins that do not match, are refused at
//! load with a one-line error naming the plugin and what to fix.

use tiny_harness_host::{HostBuilder, HostError, LoadError, PluginSpec};

use crate::common::{plugin_wasm, spec};

async fn load(spec: PluginSpec) -> Result<(), String> {
    let host = HostBuilder::new().build().await.unwrap();
    let outcome = host.load_plugin(spec).await.map(|_| ());
    if outcome.is_err() {
        assert!(
            host.registry().is_empty(),
            "a refused plugin left tools behind"
        );
    }
    outcome.map_err(|err| {
        let message = err.to_string();
        assert!(!message.contains('\n'), "not one line: {message}");
        assert!(
            message.starts_with("plugin p: "),
            "does not name the plugin: {message}"
        );
        match err {
            HostError::Load(_) => message,
            other => panic!("not a load error: {other:?}"),
        }
    })
}

fn spec_at(path: std::path::PathBuf) -> PluginSpec {
    let mut spec = spec("p", "hostile");
    spec.wasm = path;
    spec
}

#[tokio::test]
async fn a_missing_file_is_refused() {
    let message = load(spec_at("/nonexistent/plugin.wasm".into()))
        .await
        .unwrap_err();
    assert!(
        message.contains("cannot read /nonexistent/plugin.wasm"),
        "{message}"
    );
}

#[tokio::test]
async fn files_that_are_not_components_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.wasm");
    std::fs::write(&text, "this is text, not WebAssembly").unwrap();
    let message = load(spec_at(text)).await.unwrap_err();
    assert!(
        message.contains("is not a WebAssembly component"),
        "{message}"
    );

    // A core module (the wasm header with version 1) is not a component.
    let module = dir.path().join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let message = load(spec_at(module)).await.unwrap_err();
    assert!(message.contains("core WebAssembly module"), "{message}");

    // A component header with a truncated body.
    let truncated = dir.path().join("truncated.wasm");
    let bytes = std::fs::read(plugin_wasm("hostile")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let message = load(spec_at(truncated)).await.unwrap_err();
    assert!(message.contains("truncated.wasm"), "{message}");
}

#[tokio::test]
async fn a_component_of_another_world_is_refused() {
    let err = HostBuilder::new()
        .plugin(spec_at(plugin_wasm("not_a_plugin")))
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(err, HostError::Load(LoadError::WrongWorld { .. })),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("tiny-harness:plugin"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

#[tokio::test]
async fn a_sha256_pin_must_match() {
    let wasm = plugin_wasm("hostile");
    let actual = tiny_harness_wasm::file_sha256(&wasm).unwrap();

    let mut pinned = spec_at(wasm.clone());
    pinned.sha256 = Some(actual.clone());
    load(pinned).await.unwrap();

    let mut upper = spec_at(wasm.clone());
    upper.sha256 = Some(actual.to_uppercase());
    load(upper).await.unwrap();

    let wrong = "0".repeat(64);
    let mut mismatched = spec_at(wasm.clone());
    mismatched.sha256 = Some(wrong.clone());
    let message = load(mismatched).await.unwrap_err();
    assert!(message.contains("sha256 mismatch"), "{message}");
    assert!(
        message.contains(&wrong) && message.contains(&actual),
        "{message}"
    );

    // A file swapped after pinning is refused too.
    let dir = tempfile::tempdir().unwrap();
    let swapped = dir.path().join("swapped.wasm");
    std::fs::copy(plugin_wasm("fs"), &swapped).unwrap();
    let mut spec = spec_at(swapped);
    spec.sha256 = Some(actual);
    let message = load(spec).await.unwrap_err();
    assert!(message.contains("sha256 mismatch"), "{message}");
}
