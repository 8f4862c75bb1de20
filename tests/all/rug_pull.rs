//! Definition pins against a server that changes its tools under the host
//! (`tests/mcp/servers/changing.py`): within a run, through
//! `begin_iteration` and `tools/list_changed`, and across runs, through the
//! lock file.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness_host::{CallError, Host, HostBuilder, HostError};
use tiny_harness_mcp::State;

use crate::common::mcp::marker;
use crate::common::py;
use crate::common::{call, error_code, text_of};

fn changing(state: &Path, marker: &str) -> tiny_harness_host::PluginSpec {
    py::plugin(json!({
        "changing": py::stdio("changing", &[], &[("STATE_FILE", &state.display().to_string())], marker)
    }))
}

async fn host_with(state: &Path, lock: Option<(&Path, bool)>) -> Result<Host, HostError> {
    let mut builder = HostBuilder::new().plugin(changing(state, &marker("rug")));
    if let Some((path, locked)) = lock {
        builder = builder.lock_file(path).locked(locked);
    }
    builder.build().await
}

fn fields_of(outcome: &tiny_harness_host::CallOutcome) -> (Option<String>, Vec<&'static str>) {
    match &outcome.result {
        Err(CallError::SchemaChanged {
            current, fields, ..
        }) => (current.clone(), fields.clone()),
        other => panic!("expected schema_changed, got {other:?}"),
    }
}

async fn wait_stale(host: &Host) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, source) = &host.mcp_sources()[0];
        if source.status().state == State::Stale {
            return;
        }
        assert!(
            Instant::now() < until,
            "tools/list_changed never marked the source stale"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn every_change_is_refused_within_a_run_until_the_server_is_registered_again() {
    let variants = [
        ("schema", Some("input_schema")),
        ("description", Some("description")),
        ("annotations", Some("annotations")),
        ("removed", None),
    ];
    for (variant, field) in variants {
        for notify in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let state = dir.path().join("state");
            let host = host_with(&state, None).await.unwrap();
            assert_eq!(
                text_of(&call(&host, "mcp/changing.target", json!({})).await),
                "target"
            );
            let outcome = call(
                &host,
                "mcp/changing.mutate",
                json!({"to": variant, "notify": notify}),
            )
            .await;
            assert_eq!(text_of(&outcome), "mutated");
            if notify {
                // The notification marks the source stale at once: the very
                // next call lists again, in the same iteration.
                wait_stale(&host).await;
            } else {
                // Without it, the change is seen at the next iteration.
                assert_eq!(
                    text_of(&call(&host, "mcp/changing.target", json!({})).await),
                    "target",
                    "{variant}: re-listed more than once per iteration"
                );
                host.begin_iteration();
            }
            let outcome = call(&host, "mcp/changing.target", json!({})).await;
            assert_eq!(
                error_code(&outcome),
                "schema_changed",
                "{variant} notify={notify}"
            );
            let (current, fields) = fields_of(&outcome);
            match field {
                Some(field) => {
                    assert_eq!(fields, vec![field], "{variant}");
                    assert!(current.is_some());
                }
                None => assert!(current.is_none() && fields.is_empty()),
            }
            assert!(outcome.render().contains("schema_changed"));
            // Other tools of the server are unaffected.
            assert_eq!(
                text_of(&call(&host, "mcp/changing.stable", json!({})).await),
                "stable"
            );
            let drift = host.drift(Some("mcp/changing")).await.unwrap();
            assert_eq!(drift[0].1.changed.len(), 1, "{variant}");

            // Registering the server again accepts what it offers now.
            host.reregister(Some("mcp/changing")).await.unwrap();
            let outcome = call(&host, "mcp/changing.target", json!({"y": 1})).await;
            if variant == "removed" {
                assert_eq!(error_code(&outcome), "unknown_tool");
            } else {
                assert_eq!(text_of(&outcome), "target", "{variant}");
            }
            if variant == "annotations" {
                let tool = host.registry().get("mcp/changing.target").cloned().unwrap();
                assert!(
                    !tool.definition.annotations.read_only,
                    "the new pin is in the registry"
                );
            }
            host.shutdown().await;
        }
    }
}

#[tokio::test]
async fn a_new_tool_is_not_callable_until_registration() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let host = host_with(&state, None).await.unwrap();
    call(&host, "mcp/changing.mutate", json!({"to": "added"})).await;
    host.begin_iteration();
    assert_eq!(
        text_of(&call(&host, "mcp/changing.target", json!({})).await),
        "target"
    );
    // Offered, but new since the pins: the answer names what to do.
    let refused = call(&host, "mcp/changing.newcomer", json!({})).await;
    assert_eq!(error_code(&refused), "not_pinned");
    assert!(
        refused.render().contains("pins update"),
        "{}",
        refused.render()
    );
    assert_eq!(
        error_code(&call(&host, "mcp/changing.nobody", json!({})).await),
        "unknown_tool"
    );
    let drift = host.drift(None).await.unwrap();
    let (_, drift) = drift.iter().find(|(s, _)| s == "mcp/changing").unwrap();
    assert_eq!(
        drift
            .added
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["newcomer"]
    );
    host.reregister(Some("mcp/changing")).await.unwrap();
    assert_eq!(
        text_of(&call(&host, "mcp/changing.newcomer", json!({})).await),
        "newcomer"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_change_between_two_runs_is_refused_through_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let lock = dir.path().join("tiny-harness.lock");
    let first = host_with(&state, Some((&lock, false))).await.unwrap();
    let written = crate::common::inode(&lock).expect("the first run writes the lock");
    first.shutdown().await;
    drop(first);

    // Between the runs, the server changes its description.
    std::fs::write(&state, "description").unwrap();
    let second = host_with(&state, Some((&lock, false))).await.unwrap();
    let (_, source) = &second.mcp_sources()[0];
    assert_eq!(
        source.status().state,
        State::NotStarted,
        "registered from the lock"
    );
    let outcome = call(&second, "mcp/changing.target", json!({})).await;
    assert_eq!(fields_of(&outcome).1, vec!["description"]);
    // The model still sees the pinned description, never the new one.
    let registry = second.registry();
    let shown = &registry
        .get("mcp/changing.target")
        .unwrap()
        .definition
        .description;
    assert_eq!(shown, "Returns target.");
    drop(registry);
    assert_eq!(
        crate::common::inode(&lock),
        Some(written),
        "nothing new to pin"
    );
    second.shutdown().await;

    // --locked with the server started at load refuses the host.
    let mut spec = changing(&state, &marker("locked"));
    spec.config["mcpServers"]["changing"]["eager"] = json!(true);
    let error = HostBuilder::new()
        .lock_file(&lock)
        .locked(true)
        .plugin(spec)
        .build()
        .await
        .expect_err("refused");
    let message = error.to_string();
    assert!(
        message.contains("changed since it was pinned (description)")
            && message.contains("--locked"),
        "{message}"
    );
    assert!(!message.contains('\n'));
}

#[tokio::test]
async fn the_notification_marks_the_source_stale_in_both_protocol_generations() {
    for (era, protocol) in [("auto", "2026-07-28"), ("handshake", "2025-11-25")] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().display().to_string() + "/state";
        let spec = py::plugin(json!({
            "changing": py::stdio("changing", &[], &[("STATE_FILE", &state), ("MCP_ERA", era)], &marker("era"))
        }));
        let host = HostBuilder::new().plugin(spec).build().await.unwrap();
        let (_, source) = &host.mcp_sources()[0];
        assert_eq!(source.status().protocol.as_deref(), Some(protocol), "{era}");
        call(
            &host,
            "mcp/changing.mutate",
            json!({"to": "description", "notify": true}),
        )
        .await;
        wait_stale(&host).await;
        let outcome = call(&host, "mcp/changing.target", json!({})).await;
        assert_eq!(fields_of(&outcome).1, vec!["description"], "{era}");
        host.shutdown().await;
    }
}
