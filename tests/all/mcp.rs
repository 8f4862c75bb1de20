//! MCP sources against real servers: npm's server-everything over stdio
//! and streamable HTTP, and programs that are not MCP servers at all.

use std::time::Duration;

use serde_json::json;
use tiny_harness_host::{Host, HostBuilder, PluginSpec};
use tiny_harness_mcp::{State, Status};

use crate::common::mcp::{
    HttpServer, everything_js, everything_stdio, exec, gone, marker, mcp_plugin, net, pids_with,
};
use crate::common::{call, error_code, text_of};

async fn host_of(spec: PluginSpec) -> Host {
    HostBuilder::new()
        .plugin(spec)
        .build()
        .await
        .expect("the mcp plugin loads")
}

fn status(host: &Host, server: &str) -> Status {
    host.mcp_sources()
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.server() == server)
        .map(|s| s.status())
        .unwrap_or_else(|| panic!("no source {server}"))
}

fn everything(marker: &str) -> PluginSpec {
    let mut spec = mcp_plugin(json!({ "everything": everything_stdio(marker) }));
    spec.grants.add_exec(exec("node")).unwrap();
    spec
}

#[tokio::test]
async fn stdio_tools_are_registered_with_their_annotations_and_called() {
    let marker = marker("stdio");
    let host = host_of(everything(&marker)).await;
    let registry = host.registry();
    let echo = registry
        .get("mcp/everything.echo")
        .expect("echo is registered");
    assert_eq!(echo.definition.title.as_deref(), Some("Echo Tool"));
    assert!(
        echo.definition.annotations.retry_safe(),
        "echo is read-only and idempotent"
    );
    let sum = registry.get("mcp/everything.get-sum").expect("get-sum");
    assert!(sum.definition.annotations.retry_safe());
    let toggle = registry
        .get("mcp/everything.toggle-simulated-logging")
        .expect("toggle-simulated-logging");
    assert!(
        !toggle.definition.annotations.retry_safe(),
        "neither read-only nor idempotent"
    );

    let outcome = call(
        &host,
        "mcp/everything.echo",
        json!({"message": "hello over stdio"}),
    )
    .await;
    assert_eq!(text_of(&outcome), "Echo: hello over stdio");
    let outcome = call(&host, "mcp/everything.get-sum", json!({"a": 2, "b": 40})).await;
    assert!(text_of(&outcome).contains("42"), "{}", text_of(&outcome));

    let status = status(&host, "everything");
    assert_eq!(status.transport, "stdio");
    assert_eq!(status.protocol.as_deref(), Some("2025-11-25"));
    assert!(
        matches!(status.state, State::Connected | State::Stale),
        "{:?}",
        status.state
    );
    assert!(status.tools.iter().any(|t| t == "echo"));
    assert_eq!(
        pids_with(&marker).len(),
        1,
        "one persistent session, one process"
    );
    // A snapshot keeps its sources alive; the last one gone, so is the server.
    drop(registry);
    drop(host);
    assert!(gone(&marker).await, "the server outlived the host");
}

#[tokio::test]
async fn arguments_are_validated_before_the_server_is_contacted() {
    let host = host_of(everything(&marker("validate"))).await;
    let outcome = call(&host, "mcp/everything.echo", json!({"message": 7})).await;
    assert_eq!(error_code(&outcome), "invalid_arguments");
    let outcome = call(&host, "mcp/everything.get-sum", json!({"a": 1})).await;
    assert_eq!(error_code(&outcome), "invalid_arguments");
}

#[tokio::test]
async fn streamable_http_is_reached_when_its_url_is_granted() {
    let server = HttpServer::start();
    let mut spec = mcp_plugin(json!({ "remote": { "url": server.url } }));
    spec.grants.add_net(net("http://127.0.0.1:*")).unwrap();
    let host = host_of(spec).await;
    let outcome = call(&host, "mcp/remote.echo", json!({"message": "over http"})).await;
    assert_eq!(text_of(&outcome), "Echo: over http");
    let status = status(&host, "remote");
    assert_eq!(status.transport, "streamable-http");
    assert!(status.protocol.is_some());
    host.shutdown().await;
}

#[tokio::test]
async fn a_source_its_grants_refuse_fails_alone_and_says_what_to_grant() {
    let server = HttpServer::start();
    let mut spec = mcp_plugin(json!({
        "local": everything_stdio(&marker("refused")),
        "remote": { "url": server.url },
        "granted": { "url": server.url.replace("127.0.0.1", "localhost") },
    }));
    spec.grants.add_net(net("http://localhost:*")).unwrap();
    let host = host_of(spec).await;
    let Status { state, .. } = status(&host, "local");
    let State::Failed(why) = state else {
        panic!("an ungranted program must not start: {state:?}")
    };
    assert!(why.contains("exec = [{ program = \"node\" }]"), "{why}");
    assert!(!why.contains('\n'));
    let State::Failed(why) = status(&host, "remote").state else {
        panic!("an ungranted URL must not be reached")
    };
    assert!(why.contains("net = [\"http://127.0.0.1:"), "{why}");
    assert!(host.registry().get("mcp/local.echo").is_none());
    assert!(host.registry().get("mcp/remote.echo").is_none());
    let outcome = call(&host, "mcp/granted.echo", json!({"message": "still here"})).await;
    assert_eq!(text_of(&outcome), "Echo: still here");
}

#[tokio::test]
async fn the_environment_holds_only_the_baseline_and_what_is_declared() {
    let marker = marker("env");
    // SAFETY: tests in this binary do not read this variable concurrently.
    unsafe { std::env::set_var("TINY_HARNESS_TEST_SECRET", "s3cret-value") };
    let mut servers = everything_stdio(&marker);
    servers["env"]["FROM_HOST"] = json!("${TINY_HARNESS_TEST_SECRET}");
    let mut spec = mcp_plugin(json!({ "everything": servers }));
    spec.grants.add_exec(exec("node")).unwrap();
    spec.grants.add_env("TINY_HARNESS_TEST_SECRET").unwrap();
    let host = host_of(spec).await;
    let pid = *pids_with(&marker).first().expect("the server runs");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let mut names: Vec<String> = environ
        .split(|&b| b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert!(
        names.contains(&"FROM_HOST=s3cret-value".to_owned()),
        "{names:?}"
    );
    names.retain(|v| !v.starts_with("FROM_HOST=") && !v.starts_with("TINY_HARNESS_TEST_MARKER="));
    let allowed = tiny_harness_mcp::BASELINE_ENV;
    for var in &names {
        let name = var.split('=').next().unwrap();
        assert!(
            allowed.contains(&name),
            "{name} leaked into the server's environment"
        );
    }
    let shown = format!("{:?} {:?}", status(&host, "everything"), host.mcp_sources());
    assert!(
        !shown.contains("s3cret-value"),
        "a secret was shown: {shown}"
    );

    // A reference to a variable that is not granted is refused, by name.
    let mut servers = everything_stdio(&marker);
    servers["env"]["FROM_HOST"] = json!("${HOME}");
    let mut spec = mcp_plugin(json!({ "everything": servers }));
    spec.grants.add_exec(exec("node")).unwrap();
    let host = host_of(spec).await;
    let State::Failed(why) = status(&host, "everything").state else {
        panic!("an ungranted variable must refuse the source")
    };
    assert!(why.contains("env = [\"HOME\"]"), "{why}");
}

#[tokio::test]
async fn no_server_process_is_left_after_shutdown() {
    let marker = marker("shutdown");
    let host = host_of(everything(&marker)).await;
    assert_eq!(pids_with(&marker).len(), 1);
    host.shutdown().await;
    assert!(gone(&marker).await, "shutdown left the server running");
    let status = status(&host, "everything");
    assert_eq!(status.state, State::NotStarted);
}

#[tokio::test]
async fn what_a_server_starts_in_a_session_of_its_own_goes_with_it_at_shutdown() {
    let marker = marker("shutdown-setsid");
    let mut declared = everything_stdio(&marker);
    let js = declared["args"][0].as_str().unwrap().to_owned();
    // The server's program leaves a sleeper in a new session (out of its
    // process group), then becomes the server.
    declared["command"] = json!("sh");
    declared["args"] = json!([
        "-c",
        format!("setsid sleep 30 < /dev/null > /dev/null 2>&1 & exec node '{js}' stdio"),
    ]);
    let mut spec = mcp_plugin(json!({ "everything": declared }));
    spec.grants.add_exec(exec("node")).unwrap();
    spec.grants.add_exec(exec("sh")).unwrap();
    let host = host_of(spec).await;
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while pids_with(&marker).len() < 2 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pids_with(&marker).len(), 2, "the server and its sleeper");
    host.shutdown().await;
    assert!(
        gone(&marker).await,
        "shutdown left running: {:?}",
        pids_with(&marker)
    );
}

#[tokio::test]
async fn a_killed_server_is_reconnected_and_only_idempotent_calls_are_retried() {
    let marker = marker("killed");
    let host = host_of(everything(&marker)).await;
    let kill = |marker: &str| {
        for pid in pids_with(marker) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    };
    let first = pids_with(&marker);
    kill(&marker);
    assert!(gone(&marker).await);
    // echo is idempotent: the broken session is replaced and it is retried.
    let outcome = call(&host, "mcp/everything.echo", json!({"message": "again"})).await;
    assert_eq!(text_of(&outcome), "Echo: again");
    let second = pids_with(&marker);
    assert_eq!(second.len(), 1);
    assert_ne!(first, second, "a new server process");

    kill(&marker);
    assert!(gone(&marker).await);
    // toggle-simulated-logging is not: its failure is its result.
    let outcome = call(&host, "mcp/everything.toggle-simulated-logging", json!({})).await;
    assert_eq!(error_code(&outcome), "unavailable");
    let message = outcome.result.as_ref().unwrap_err().to_string();
    assert!(message.contains("not retried"), "{message}");
    // The next call reconnects.
    let outcome = call(&host, "mcp/everything.echo", json!({"message": "back"})).await;
    assert_eq!(text_of(&outcome), "Echo: back");
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled_and_the_session_survives() {
    let marker = marker("timeout");
    let mut servers = everything_stdio(&marker);
    servers["timeout_ms"] = json!(1500);
    let mut spec = mcp_plugin(json!({ "everything": servers }));
    spec.grants.add_exec(exec("node")).unwrap();
    let host = host_of(spec).await;
    let started = std::time::Instant::now();
    let outcome = call(
        &host,
        "mcp/everything.trigger-long-running-operation",
        json!({"duration": 30, "steps": 3}),
    )
    .await;
    assert_eq!(error_code(&outcome), "timeout");
    assert!(started.elapsed() < Duration::from_secs(10));
    let outcome = call(&host, "mcp/everything.echo", json!({"message": "alive"})).await;
    assert_eq!(text_of(&outcome), "Echo: alive");
    assert_eq!(pids_with(&marker).len(), 1, "the same session");
}

#[tokio::test]
async fn programs_that_are_not_mcp_servers_fail_their_source_in_one_line() {
    let cases = [
        (
            "exits",
            json!({"command": "sh", "args": ["-c", "echo dying words >&2; exit 3"]}),
        ),
        (
            "garbage",
            json!({"command": "sh", "args": ["-c", "echo this is not json; sleep 30"], "start_timeout_ms": 2000}),
        ),
        (
            "silent",
            json!({"command": "sh", "args": ["-c", "sleep 30"], "start_timeout_ms": 1000}),
        ),
    ];
    let servers: serde_json::Map<_, _> = cases
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.clone()))
        .collect();
    let mut spec = mcp_plugin(serde_json::Value::Object(servers));
    spec.grants.add_exec(exec("sh")).unwrap();
    let started = std::time::Instant::now();
    let host = host_of(spec).await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "load waited too long"
    );
    for (name, _) in cases {
        let State::Failed(why) = status(&host, name).state else {
            panic!("{name} must fail")
        };
        assert!(!why.contains('\n'), "{why}");
        assert!(!why.is_empty());
        if name == "exits" {
            assert!(why.contains("dying words"), "{why}");
        }
        if name == "silent" {
            assert!(
                why.contains("did not finish starting within 1000 ms (its start_timeout_ms)"),
                "{why}"
            );
        }
    }
    assert!(host.registry().is_empty());
}

#[tokio::test]
async fn a_slow_start_is_bounded_by_the_start_timeout_not_the_call_timeout() {
    let js = everything_js().display().to_string();
    // Two seconds to start, then a server whose calls take milliseconds:
    // the call timeout (500 ms) must not bound the start.
    let slow = json!({
        "command": "sh",
        "args": ["-c", format!("sleep 2; exec node '{js}' stdio")],
        "timeout_ms": 500,
    });
    let mut spec = mcp_plugin(json!({ "slow": slow }));
    spec.grants.add_exec(exec("sh")).unwrap();
    let host = host_of(spec).await;
    let state = status(&host, "slow").state;
    assert!(!matches!(state, State::Failed(_)), "{state:?}");
    assert_eq!(host.registry().len(), 13, "every tool listed");
    let outcome = call(&host, "mcp/slow.echo", json!({"message": "late"})).await;
    assert!(!outcome.is_error(), "{}", outcome.render());
}

#[tokio::test]
async fn an_entry_with_neither_command_nor_url_refuses_the_plugin() {
    let spec = mcp_plugin(json!({ "broken": { "args": ["x"] } }));
    let error = HostBuilder::new()
        .plugin(spec)
        .build()
        .await
        .expect_err("refused")
        .to_string();
    assert!(error.contains("mcpServers.broken"), "{error}");
    assert!(
        error.contains("command") && error.contains("url"),
        "{error}"
    );
    assert!(!error.contains('\n'));
    let _ = everything_js();
}

#[tokio::test]
async fn roots_are_the_declared_granted_directories_and_none_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut entry = everything_stdio(&marker("roots"));
    entry["roots"] = json!([root]);
    let mut spec = mcp_plugin(json!({ "everything": entry }));
    spec.grants.add_exec(exec("node")).unwrap();
    spec.grants
        .add_dir(
            tiny_harness_host::DirGrant::new(
                root.clone(),
                "/workspace",
                tiny_harness_host::DirMode::ReadOnly,
            )
            .unwrap(),
        )
        .unwrap();
    let host = host_of(spec).await;
    // server-everything adds `get-roots-list` once it knows the client
    // offers roots, and says so with tools/list_changed: a new tool, which
    // becomes callable when the server is registered again.
    host.reregister(Some("mcp/everything")).await.unwrap();
    let outcome = call(&host, "mcp/everything.get-roots-list", json!({})).await;
    let text = text_of(&outcome);
    let uri = url::Url::from_directory_path(&root).unwrap();
    assert!(text.contains(uri.as_str()), "{text}");
    host.shutdown().await;

    // Without roots the host does not offer the capability at all.
    let host = host_of(everything(&marker("no-roots"))).await;
    host.reregister(Some("mcp/everything")).await.unwrap();
    let outcome = call(&host, "mcp/everything.get-roots-list", json!({})).await;
    assert_eq!(error_code(&outcome), "unknown_tool");
    host.shutdown().await;

    // A root outside every granted directory refuses the source.
    let mut entry = everything_stdio(&marker("bad-root"));
    entry["roots"] = json!([root]);
    let mut spec = mcp_plugin(json!({ "everything": entry }));
    spec.grants.add_exec(exec("node")).unwrap();
    let host = host_of(spec).await;
    let State::Failed(why) = status(&host, "everything").state else {
        panic!("an ungranted root must refuse the source")
    };
    assert!(why.contains("dirs = [{ host ="), "{why}");
}

#[tokio::test]
async fn each_server_everything_tool_is_retried_exactly_when_its_hints_allow() {
    // server-everything 2026.8.31's own hints: (tool, readOnlyHint,
    // idempotentHint). A tool is idempotent iff either is true.
    let hints = [
        ("echo", true, true),
        ("get-annotated-message", true, true),
        ("get-env", true, true),
        ("get-resource-links", true, true),
        ("get-resource-reference", true, true),
        ("get-structured-content", true, true),
        ("get-sum", true, true),
        ("get-tiny-image", true, true),
        ("gzip-file-as-resource", false, true),
        ("toggle-simulated-logging", false, false),
        ("toggle-subscriber-updates", false, false),
        ("trigger-long-running-operation", true, true),
        ("simulate-research-query", false, false),
    ];
    let host = host_of(everything(&marker("hints"))).await;
    let registry = host.registry();
    for (tool, read_only, idempotent) in hints {
        let entry = registry
            .get(&format!("mcp/everything.{tool}"))
            .unwrap_or_else(|| panic!("{tool} is registered"));
        let annotations = entry.definition.annotations;
        assert_eq!(annotations.read_only, read_only, "{tool}");
        assert_eq!(annotations.idempotent, idempotent, "{tool}");
        assert_eq!(annotations.retry_safe(), read_only || idempotent, "{tool}");
    }
    drop(registry);
    host.shutdown().await;
}

#[tokio::test]
async fn a_stdio_server_runs_confined_to_the_plugins_grants() {
    let secret = tempfile::tempdir().unwrap();
    let canary = secret.path().join("canary");
    std::fs::write(&canary, "the-canary-secret").unwrap();
    // A "server" that tries to read the canary and says what it got.
    let reader = |marker: &str| {
        json!({
            "command": "sh",
            "args": ["-c", format!("cat {} >&2; exit 3", canary.display())],
            "env": { "TINY_HARNESS_TEST_MARKER": marker },
        })
    };
    let mut spec = mcp_plugin(json!({ "reader": reader(&marker("confined")) }));
    spec.grants.add_exec(exec("sh")).unwrap();
    let host = host_of(spec).await;
    let State::Failed(why) = status(&host, "reader").state else {
        panic!("not an MCP server")
    };
    assert!(
        !why.contains("the-canary-secret"),
        "a confined program read the canary: {why}"
    );
    assert!(why.contains("Permission denied"), "{why}");

    // Unconfined (only when a config says so), the same program reads it:
    // the assertion above can fail.
    let mut spec = mcp_plugin(json!({ "reader": reader(&marker("unconfined")) }));
    spec.grants.add_exec(exec("sh")).unwrap();
    spec.grants.confinement = tiny_harness_sandbox::confine::Mode::None;
    let host = host_of(spec).await;
    let State::Failed(why) = status(&host, "reader").state else {
        panic!("not an MCP server")
    };
    assert!(why.contains("the-canary-secret"), "{why}");
}
