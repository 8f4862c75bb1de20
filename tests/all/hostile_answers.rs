//! Hostile answers from a stdio MCP server (`tests/mcp/servers/hostile.py`):
//! each is answered at once with a typed result or error, never waited out,
//! never retried when it is not transient, and a listing that fails says
//! why (the limit passed, how the program ended), not "Transport closed".

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness_host::{ContentPart, Host};
use tiny_harness_mcp::State;

use crate::common::mcp::marker;
use crate::common::{call, error_code, py, result_of};

/// The hostile server with `env` and a file that counts its calls.
async fn hostile(env: &[(&str, &str)], calls: &Path, marker: &str) -> Host {
    let mut env = env.to_vec();
    env.push(("CALLS_FILE", py::path_str(calls)));
    py::host_of(py::plugin(
        json!({ "h": py::stdio("hostile", &[], &env, marker) }),
    ))
    .await
}

fn calls(file: &Path) -> usize {
    py::lines(file).len()
}

#[tokio::test]
async fn an_unknown_part_is_a_placeholder_beside_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls");
    let marker = marker("answers-unknown");
    let host = hostile(&[("RESULT", "unknown-part")], &file, &marker).await;
    let outcome = call(&host, "mcp/h.weird", json!({})).await;
    let result = result_of(&outcome);
    assert_eq!(result.content.len(), 2, "{result:?}");
    assert!(
        matches!(&result.content[0], ContentPart::Text { text } if text == "known"),
        "{result:?}"
    );
    assert!(
        matches!(&result.content[1], ContentPart::Text { text } if text.contains("\"hologram\"")),
        "{result:?}"
    );
    assert_eq!(calls(&file), 1);
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn a_content_that_is_not_a_list_is_invalid_output_and_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls");
    let marker = marker("answers-not-a-list");
    let host = hostile(&[("RESULT", "not-a-list")], &file, &marker).await;
    let outcome = call(&host, "mcp/h.weird", json!({})).await;
    assert_eq!(error_code(&outcome), "invalid_output", "{outcome:?}");
    assert!(py::message(&outcome).contains("content is not a list"));
    // Read-only, so retried if it were transient: it is not.
    assert_eq!(calls(&file), 1);
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn an_answer_nested_too_deep_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls");
    let marker = marker("answers-deep");
    let host = hostile(&[("RESULT", "deep")], &file, &marker).await;
    let started = Instant::now();
    let outcome = call(&host, "mcp/h.weird", json!({})).await;
    assert_eq!(error_code(&outcome), "invalid_output", "{outcome:?}");
    assert!(
        py::message(&outcome).contains("nested more than 127 levels deep"),
        "{outcome:?}"
    );
    // Not waited out (the call's timeout is 30 s), and not retried.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(calls(&file), 1);
    // The next call starts a new session.
    let outcome = call(&host, "mcp/h.echo", json!({})).await;
    assert_eq!(crate::common::text_of(&outcome), "echo");
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn an_answer_under_the_id_as_a_string_answers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls");
    let marker = marker("answers-string-id");
    let mut spec = py::plugin(json!({ "h": py::stdio("hostile", &[], &[
        ("RESULT", "string-id"),
        ("CALLS_FILE", py::path_str(&file)),
    ], &marker) }));
    spec.config["mcpServers"]["h"]["timeout_ms"] = json!(1500);
    let host = py::host_of(spec).await;
    let outcome = call(&host, "mcp/h.weird", json!({})).await;
    assert_eq!(error_code(&outcome), "timeout", "{outcome:?}");
    py::finish(host, &marker).await;
}

#[tokio::test]
async fn a_listing_that_fails_says_why() {
    for (env, want) in [
        (vec![("LIST", "deep")], "nested more than 127 levels deep"),
        (vec![("LIST", "exit")], "the program exited"),
        (
            // Past the 16 MiB every stdio session allows.
            vec![("LIST", "huge"), ("LIST_BYTES", "17000000")],
            "over the host's limit of",
        ),
    ] {
        let marker = marker("answers-listing");
        let spec = py::plugin(json!({ "h": py::stdio("hostile", &[], &env, &marker) }));
        let host = py::host_of(spec).await;
        let State::Failed(why) = py::status(&host, "h").state else {
            panic!("{env:?}: the listing must fail")
        };
        assert!(why.contains(want), "{env:?}: {why}");
        py::finish(host, &marker).await;
    }
}

/// A server that answers `server/discover` with something that is no
/// discover result (an empty result, another result, only versions no
/// client speaks) is reached again with `initialize` at 2025-11-25, and
/// `plugins` says why that generation was agreed. One that answers with
/// an error (rmcp's own fallback) says so too.
#[tokio::test]
async fn a_discover_answer_that_is_no_discover_result_falls_back_to_initialize() {
    for (how, because) in [
        (
            "empty",
            "server/discover with an empty result, so initialize",
        ),
        (
            "other",
            "server/discover with a result that is not a discover result, so initialize",
        ),
        (
            "future",
            "server/discover with only versions the host does not speak (2099-01-01), so initialize",
        ),
        (
            "error",
            "server/discover with an error or not at all, so initialize",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        let marker = marker(&format!("hostile-discover-{how}"));
        let host = hostile(
            &[("DISCOVER", how), ("STARTS_FILE", py::path_str(&starts))],
            &dir.path().join("calls"),
            &marker,
        )
        .await;
        let status = py::status(&host, "h");
        assert_eq!(status.state, State::Connected, "{how}: {:?}", status.state);
        assert_eq!(status.protocol.as_deref(), Some("2025-11-25"), "{how}");
        let said = status.protocol_because.unwrap_or_default();
        assert!(said.contains(because), "{how}: {said}");
        // The fallback needs a fresh transport: the program is started
        // again, once; rmcp's own fallback reuses the first.
        let expected = if how == "error" { 1 } else { 2 };
        assert_eq!(py::lines(&starts).len(), expected, "{how}");
        let outcome = call(&host, "mcp/h.echo", json!({})).await;
        assert_eq!(crate::common::text_of(&outcome), "echo", "{how}");
        py::finish(host, &marker).await;
    }
}

/// `mcp doctor` opens its session the way every session opens: a server
/// that answers `server/discover` with an empty result is started again
/// for `initialize` (both starts traced), one that answers with an error
/// once, and each then lists its tools; nothing it started is left.
#[tokio::test]
async fn the_doctor_opens_its_session_as_every_session_does() {
    for (how, expected) in [("empty", 2), ("error", 1)] {
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        let marker = marker(&format!("hostile-doctor-{how}"));
        let host = hostile(
            &[("DISCOVER", how), ("STARTS_FILE", py::path_str(&starts))],
            &dir.path().join("calls"),
            &marker,
        )
        .await;
        let before = py::lines(&starts).len();
        let sources = host.mcp_sources();
        let source = &sources.iter().find(|(_, s)| s.server() == "h").unwrap().1;
        let diagnosis = tiny_harness_cli::tooling::doctor::diagnose(source)
            .await
            .unwrap();
        assert!(diagnosis.listed, "{how}: {}", diagnosis.ended);
        assert!(
            diagnosis.ended.contains("it listed its tools"),
            "{how}: {}",
            diagnosis.ended
        );
        assert_eq!(py::lines(&starts).len() - before, expected, "{how}");
        drop(sources);
        py::finish(host, &marker).await;
    }
}
