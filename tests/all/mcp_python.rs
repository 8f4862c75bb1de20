//! MCP sources against a second implementation: servers written with PyPI's
//! `mcp` SDK (`tests/mcp/servers`), each misbehaving in one way a client
//! must survive: dying mid-call, never answering, flooding, listing broken
//! tools, sending every kind of content, asking for what the host does not
//! give. The SDK speaks both the stateless 2026-07-28 revision (reached by
//! rmcp's `server/discover` probe) and the 2025-11-25 handshake (with
//! `MCP_ERA=handshake`, the probe is refused and rmcp falls back).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_harness_host::ContentPart;
use tiny_harness_host::{CallOutcome, Host};
use tiny_harness_mcp::{McpSource, State};

use crate::common::mcp::{marker, mcp_plugin, net, pids_with};
use crate::common::py::{
    self, eventually, finish, host_of, lines, message, path_str, status, with_source,
};
use crate::common::{call, error_code, result_of, text_of};

/// The `MCP_ERA` that makes a server refuse the 2026-07-28 probe.
const HANDSHAKE: (&str, &str) = ("MCP_ERA", "handshake");

#[tokio::test]
async fn the_sdk_is_reached_at_2026_07_28_and_at_2025_11_25() {
    let marker = marker("py-eras");
    let host = host_of(py::plugin(json!({
        "modern": py::stdio("hang", &[], &[], &marker),
        "legacy": py::stdio("hang", &[], &[HANDSHAKE], &marker),
    })))
    .await;
    for (server, protocol) in [("modern", "2026-07-28"), ("legacy", "2025-11-25")] {
        let status = status(&host, server);
        assert_eq!(
            status.protocol.as_deref(),
            Some(protocol),
            "{server}: {status:?}"
        );
        assert_eq!(status.transport, "stdio");
        let outcome = call(&host, &format!("mcp/{server}.quick"), json!({})).await;
        assert_eq!(text_of(&outcome), "quick", "{server}");
    }
    finish(host, &marker).await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_retried_only_for_an_idempotent_tool() {
    let marker = marker("py-crashy");
    let dir = tempfile::tempdir().unwrap();
    let (calls, crash) = (dir.path().join("calls"), dir.path().join("crash"));
    let env = [
        ("CALLS_FILE", path_str(&calls)),
        ("CRASH_ONCE", path_str(&crash)),
    ];
    let host = host_of(py::plugin(
        json!({ "crashy": py::stdio("crashy", &[], &env, &marker) }),
    ))
    .await;
    assert!(
        host.registry()
            .get("mcp/crashy.read_slowly")
            .unwrap()
            .definition
            .annotations
            .retry_safe()
    );
    assert!(
        !host
            .registry()
            .get("mcp/crashy.write_once")
            .unwrap()
            .definition
            .annotations
            .retry_safe()
    );
    let first = pids_with(&marker);
    assert_eq!(first.len(), 1);

    // read_slowly is read-only: the server dies under it, the session is
    // replaced, and the call reaches the new server.
    std::fs::write(&crash, "").unwrap();
    let outcome = call(&host, "mcp/crashy.read_slowly", json!({"ms": 10})).await;
    assert_eq!(text_of(&outcome), "read");
    assert_eq!(
        lines(&calls),
        ["read_slowly", "read_slowly"],
        "it reached the server twice"
    );
    assert!(!crash.exists(), "the crash happened");
    let second = pids_with(&marker);
    assert_eq!(second.len(), 1);
    assert_ne!(first, second, "a new server process");

    // write_once is not idempotent: one attempt, and the failure says so.
    std::fs::write(&crash, "").unwrap();
    let outcome = call(&host, "mcp/crashy.write_once", json!({})).await;
    assert_eq!(error_code(&outcome), "unavailable");
    assert!(
        message(&outcome).contains("not retried"),
        "{}",
        message(&outcome)
    );
    assert_eq!(
        lines(&calls),
        ["read_slowly", "read_slowly", "write_once"],
        "one attempt"
    );
    assert!(
        eventually(|| pids_with(&marker).is_empty()).await,
        "the dead server is reaped"
    );

    // The next call reconnects.
    let outcome = call(&host, "mcp/crashy.write_once", json!({})).await;
    assert_eq!(text_of(&outcome), "written");
    assert_eq!(lines(&calls).len(), 4);
    assert_eq!(status(&host, "crashy").state, State::Connected);
    finish(host, &marker).await;
}

#[tokio::test]
async fn a_source_whose_server_died_is_not_shown_connected() {
    let marker = marker("py-crash-status");
    let dir = tempfile::tempdir().unwrap();
    let crash = dir.path().join("crash");
    let env = [("CRASH_ONCE", path_str(&crash))];
    let host = host_of(py::plugin(
        json!({ "crashy": py::stdio("crashy", &[], &env, &marker) }),
    ))
    .await;
    std::fs::write(&crash, "").unwrap();
    let outcome = call(&host, "mcp/crashy.write_once", json!({})).await;
    assert_eq!(error_code(&outcome), "unavailable");
    assert!(eventually(|| pids_with(&marker).is_empty()).await);
    // No session is open and no server runs: `State::Connected` ("a
    // session is open") would tell `tiny-harness plugins` otherwise.
    let state = status(&host, "crashy").state;
    assert!(
        !matches!(state, State::Connected | State::Stale),
        "shown {state} with no server running"
    );
    finish(host, &marker).await;
}

#[tokio::test]
async fn an_idempotent_call_is_attempted_at_most_three_times() {
    let marker = marker("py-crash-always");
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let env = [("CALLS_FILE", path_str(&calls)), ("CRASH_ALWAYS", "1")];
    let host = host_of(py::plugin(
        json!({ "crashy": py::stdio("crashy", &[], &env, &marker) }),
    ))
    .await;
    let outcome = call(&host, "mcp/crashy.read_slowly", json!({"ms": 0})).await;
    assert_eq!(error_code(&outcome), "unavailable");
    assert_eq!(
        lines(&calls),
        ["read_slowly"; tiny_harness_mcp::MAX_ATTEMPTS as usize],
        "every attempt reached a server, and no more than {}",
        tiny_harness_mcp::MAX_ATTEMPTS
    );
    finish(host, &marker).await;
}

/// `hang` past its timeout, on a server in `env`'s era. The timeout also
/// bounds the server's start and listing, and a Python server may take
/// seconds to start on a loaded machine: 1 s would fail the source itself
/// now and then, so it is 5 s.
async fn a_hung_call_is_cancelled(test: &str, env: &[(&str, &str)]) {
    let marker = marker(test);
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events");
    let mut env = env.to_vec();
    env.push(("EVENTS_FILE", path_str(&events)));
    let mut server = py::stdio("hang", &[], &env, &marker);
    server["timeout_ms"] = json!(5000);
    let host = host_of(py::plugin(json!({ "hang": server }))).await;
    let state = status(&host, "hang").state;
    assert_eq!(state, State::Connected, "{state}");
    let pids = pids_with(&marker);

    let started = Instant::now();
    let outcome = call(&host, "mcp/hang.hang", json!({})).await;
    assert_eq!(error_code(&outcome), "timeout");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(
        eventually(|| lines(&events).contains(&"cancelled".to_owned())).await,
        "the server was not told to cancel: {:?}",
        lines(&events)
    );
    assert_eq!(
        lines(&events),
        ["started", "cancelled"],
        "one attempt (not idempotent)"
    );

    let outcome = call(&host, "mcp/hang.quick", json!({})).await;
    assert_eq!(text_of(&outcome), "quick");
    assert_eq!(pids_with(&marker), pids, "the same session");
    finish(host, &marker).await;
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled_on_the_server_at_2026_07_28() {
    a_hung_call_is_cancelled("py-hang-modern", &[]).await;
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled_on_the_server_at_2025_11_25() {
    a_hung_call_is_cancelled("py-hang-legacy", &[HANDSHAKE]).await;
}

#[tokio::test]
async fn a_listing_of_a_hundred_thousand_tools_fails_its_source_alone() {
    let marker = marker("py-many");
    let mut server = py::stdio("flood", &["many-tools", "100000"], &[], &marker);
    server["timeout_ms"] = json!(20_000);
    let started = Instant::now();
    let host = host_of(py::plugin(json!({ "many": server }))).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let State::Failed(why) = status(&host, "many").state else {
        panic!("the listing must be refused")
    };
    assert!(why.contains("limits.tools"), "{why}");
    assert!(!why.contains('\n'), "{why}");
    assert!(host.registry().is_empty(), "nothing of it is registered");
    assert!(host.registry().get("mcp/many.t0").is_none());
    finish(host, &marker).await;
}

#[tokio::test]
async fn a_listing_over_limits_tools_is_refused_without_reading_every_page() {
    let marker = marker("py-pages");
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("pages");
    let env = [("PAGES_FILE", path_str(&pages))];
    let host = host_of(py::plugin(json!({
        "many": py::stdio("flood", &["many-tools", "100000"], &env, &marker),
    })))
    .await;
    let State::Failed(why) = status(&host, "many").state else {
        panic!("the listing must be refused")
    };
    assert!(why.contains("limits.tools"), "{why}");
    // 500 tools a page: the third page passes the default 1024. Reading on
    // (here 200 pages; at most MAX_PAGES of up to the message limit each)
    // holds the whole listing in memory first.
    let fetched = lines(&pages).len();
    assert!(fetched <= 3, "{fetched} pages were read");
    finish(host, &marker).await;
}

#[tokio::test]
async fn a_result_of_ten_megabytes_is_too_large() {
    let marker = marker("py-big");
    let host = host_of(py::plugin(json!({
        "big": py::stdio("flood", &["big-result", "10000000"], &[], &marker),
    })))
    .await;
    let outcome = call(&host, "mcp/big.big", json!({})).await;
    assert_eq!(
        error_code(&outcome),
        "too_large",
        "{:?}",
        outcome.result.as_ref().err()
    );
    assert!(!message(&outcome).contains('\n'));
    finish(host, &marker).await;
}

#[tokio::test]
async fn a_result_over_the_message_limit_is_too_large_at_once() {
    let marker = marker("py-huge");
    // 20 MB: over the 16 MiB the stdio transport takes in one message.
    let mut server = py::stdio("flood", &["big-result", "20000000"], &[], &marker);
    server["timeout_ms"] = json!(20_000);
    let host = host_of(py::plugin(json!({ "huge": server }))).await;
    let started = Instant::now();
    let outcome = call(&host, "mcp/huge.big", json!({})).await;
    let took = started.elapsed();
    assert_eq!(
        error_code(&outcome),
        "too_large",
        "after {took:?}: {}",
        message(&outcome)
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    finish(host, &marker).await;
}

#[tokio::test]
async fn broken_tools_are_skipped_with_reasons_and_the_good_one_registered() {
    let marker = marker("py-bad");
    let host = host_of(py::plugin(json!({
        "bad": py::stdio("flood", &["bad-tools"], &[], &marker),
    })))
    .await;
    let status = status(&host, "bad");
    assert_eq!(status.state, State::Connected, "{:?}", status.state);
    let outcome = call(&host, "mcp/bad.ok", json!({})).await;
    assert_eq!(text_of(&outcome), "called ok");

    for name in ["bad name!", "bad_schema", "no_schema", "dup"] {
        let skipped = status
            .skipped
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} is not skipped: {:?}", status.skipped));
        assert!(
            !skipped.reason.is_empty() && !skipped.reason.contains('\n'),
            "{skipped:?}"
        );
        assert!(
            !status.tools.contains(&name.to_owned()) || name == "dup",
            "{name}"
        );
    }
    let reason = |name: &str| {
        let skipped = status.skipped.iter().find(|s| s.name == name).unwrap();
        skipped.reason.clone()
    };
    assert!(
        reason("bad_schema").contains("input schema"),
        "{}",
        reason("bad_schema")
    );
    assert!(
        reason("no_schema").contains("no input schema"),
        "{}",
        reason("no_schema")
    );
    assert!(
        reason("dup").contains("more than once"),
        "{}",
        reason("dup")
    );
    assert!(
        status.tools.iter().filter(|t| *t == "dup").count() <= 1,
        "{:?}",
        status.tools
    );
    let registry = host.registry();
    let dups = registry
        .tools()
        .filter(|t| t.name.as_str() == "mcp/bad.dup")
        .count();
    assert!(dups <= 1, "dup is registered {dups} times");
    assert!(registry.get("mcp/bad.bad_schema").is_none());
    assert!(registry.get("mcp/bad.no_schema").is_none());
    drop(registry);
    finish(host, &marker).await;
}

#[tokio::test]
async fn every_kind_of_content_arrives_as_its_part_and_structured_output_is_checked() {
    let marker = marker("py-media");
    let host = host_of(py::plugin(json!({
        "media": py::stdio("flood", &["media"], &[], &marker),
    })))
    .await;
    let outcome = call(&host, "mcp/media.media", json!({})).await;
    let parts = &result_of(&outcome).content;
    assert_eq!(parts.len(), 5, "{parts:?}");
    let ContentPart::Media { media_type, data } = &parts[0] else {
        panic!("an image: {:?}", parts[0])
    };
    assert_eq!(media_type, "image/png");
    assert!(data.starts_with("iVBORw0KGgo"), "PNG data, base64");
    let ContentPart::Media { media_type, data } = &parts[1] else {
        panic!("audio: {:?}", parts[1])
    };
    assert!(media_type.starts_with("audio/"), "{media_type}");
    assert!(data.starts_with("UklGR"), "WAV data, base64");
    let ContentPart::ResourceLink {
        uri,
        name,
        description,
        media_type,
    } = &parts[2]
    else {
        panic!("a resource link: {:?}", parts[2])
    };
    assert_eq!(
        (uri.as_str(), name.as_str()),
        ("file:///srv/report.txt", "report")
    );
    assert_eq!(description.as_deref(), Some("A linked report."));
    assert_eq!(media_type.as_deref(), Some("text/plain"));
    let ContentPart::Resource {
        uri, text, blob, ..
    } = &parts[3]
    else {
        panic!("a text resource: {:?}", parts[3])
    };
    assert_eq!(uri, "memo://note");
    assert_eq!(
        (text.as_deref(), blob.as_deref()),
        (Some("an embedded note"), None)
    );
    let ContentPart::Resource {
        uri,
        media_type,
        text,
        blob,
    } = &parts[4]
    else {
        panic!("a blob resource: {:?}", parts[4])
    };
    assert_eq!(uri, "memo://blob");
    assert_eq!(media_type.as_deref(), Some("application/octet-stream"));
    assert_eq!((text.as_deref(), blob.as_deref()), (None, Some("AAEC")));

    let outcome = call(&host, "mcp/media.structured", json!({})).await;
    assert_eq!(crate::common::json_of(&outcome), json!({"n": 1}));
    let outcome = call(&host, "mcp/media.structured_wrong", json!({})).await;
    assert_eq!(error_code(&outcome), "invalid_output");
    assert!(
        message(&outcome).contains("output schema"),
        "{}",
        message(&outcome)
    );
    finish(host, &marker).await;
}

/// The `log-flood` server in `era`, speaking `protocol`: its 5000 log
/// messages of one call all reach the session's count, and the session
/// survives them. With `asked` (2026-07-28), the server logs only for a
/// request whose `_meta` asks (`logLevel`), and the host asks only when
/// its log is listened to: a first call, with nothing listening, gets none.
async fn five_thousand_logs_counted(test: &str, era: &[(&str, &str)], protocol: &str, asked: bool) {
    let marker = marker(test);
    let host = host_of(py::plugin(json!({
        "logs": py::stdio("flood", &["log-flood"], era, &marker),
    })))
    .await;
    assert_eq!(status(&host, "logs").protocol.as_deref(), Some(protocol));
    if asked {
        let outcome = call(&host, "mcp/logs.noisy", json!({})).await;
        assert_eq!(text_of(&outcome), "done");
        // What a server logs before its answer is counted before the call
        // returns (`owed`): had the call asked, all 5000 would be here.
        assert_eq!(with_source(&host, "logs", McpSource::log_messages), 0);
    }
    // Listened to on this test's thread. (The call above also registered
    // the host's check with `tracing` from this thread: a check first
    // reached on another thread, while the only subscriber is this
    // thread's, would be judged by that thread's none and cached so.)
    let listening = asked.then(|| tracing::subscriber::set_default(crate::common::Listening));
    let outcome = call(&host, "mcp/logs.noisy", json!({})).await;
    assert_eq!(text_of(&outcome), "done");
    assert!(
        eventually(|| with_source(&host, "logs", McpSource::log_messages) == 5000).await,
        "counted {}",
        with_source(&host, "logs", McpSource::log_messages)
    );
    let outcome = call(&host, "mcp/logs.noisy", json!({})).await;
    drop(listening);
    assert_eq!(text_of(&outcome), "done", "the session survives the flood");
    finish(host, &marker).await;
}

#[tokio::test]
async fn five_thousand_log_messages_are_counted_and_the_call_returns() {
    // The handshake era sends every log, asked or not.
    five_thousand_logs_counted("py-logs", &[HANDSHAKE], "2025-11-25", false).await;
}

#[tokio::test]
async fn at_2026_07_28_calls_ask_for_logs_only_when_something_listens() {
    five_thousand_logs_counted("py-logs-modern", &[], "2026-07-28", true).await;
}

/// Calls each `ask_*` tool of the `asks` server; every call must come back
/// well before the source's 20 s timeout.
async fn ask_all(host: &Host) -> Vec<(&'static str, CallOutcome)> {
    let mut outcomes = Vec::new();
    for tool in ["ask_sampling", "ask_elicitation", "ask_roots"] {
        let started = Instant::now();
        let outcome = call(host, &format!("mcp/asks.{tool}"), json!({})).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{tool}: {:?}",
            started.elapsed()
        );
        if let Err(error) = &outcome.result {
            assert_ne!(error.code(), "timeout", "{tool}");
        }
        outcomes.push((tool, outcome));
    }
    outcomes
}

fn asks(marker: &str, env: &[(&str, &str)]) -> Value {
    let mut server = py::stdio("flood", &["asks"], env, marker);
    server["timeout_ms"] = json!(20_000);
    json!({ "asks": server })
}

#[tokio::test]
async fn sampling_and_elicitation_are_refused_and_roots_are_empty_at_2025_11_25() {
    let marker = marker("py-asks-legacy");
    let host = host_of(py::plugin(asks(&marker, &[HANDSHAKE]))).await;
    assert_eq!(
        status(&host, "asks").protocol.as_deref(),
        Some("2025-11-25")
    );
    let outcomes = ask_all(&host).await;
    // The server got the host's answer and says what it was.
    let said = |i: usize| text_of(&outcomes[i].1);
    assert!(
        said(0).starts_with("error:") && said(0).contains("does not offer sampling"),
        "{}",
        said(0)
    );
    assert!(
        said(1).starts_with("error:") && said(1).contains("does not offer elicitation"),
        "{}",
        said(1)
    );
    assert_eq!(said(2), r#"result: {"roots":[]}"#);
    finish(host, &marker).await;
}

#[tokio::test]
async fn an_input_required_result_is_refused_at_once_at_2026_07_28() {
    let marker = marker("py-asks-modern");
    let host = host_of(py::plugin(asks(&marker, &[]))).await;
    assert_eq!(
        status(&host, "asks").protocol.as_deref(),
        Some("2026-07-28")
    );
    for (tool, outcome) in ask_all(&host).await {
        assert_eq!(error_code(&outcome), "failed", "{tool}");
        assert!(
            message(&outcome).contains("asked for input"),
            "{tool}: {}",
            message(&outcome)
        );
    }
    finish(host, &marker).await;
}

#[tokio::test]
async fn the_python_sdk_is_reached_over_streamable_http() {
    let marker = marker("py-http");
    let server = py::http_server(&marker);
    // Reached, not started: a net grant and no exec grant.
    let mut spec = mcp_plugin(json!({ "remote": { "url": server.url } }));
    spec.grants.add_net(net("http://127.0.0.1:*")).unwrap();
    let host = host_of(spec).await;
    let status = status(&host, "remote");
    assert_eq!(status.transport, "streamable-http");
    assert_eq!(status.state, State::Connected, "{:?}", status.state);
    // The SDK serves 2026-07-28 over HTTP statelessly, one POST a request.
    assert_eq!(status.protocol.as_deref(), Some("2026-07-28"));
    let outcome = call(&host, "mcp/remote.echo", json!({"message": "over http"})).await;
    assert_eq!(text_of(&outcome), "Echo: over http");
    let outcome = call(&host, "mcp/remote.quick", json!({})).await;
    assert_eq!(text_of(&outcome), "quick");
    host.shutdown().await;
    drop(server);
    finish(host, &marker).await;
}
