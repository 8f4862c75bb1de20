//! The official MCP conformance suite's server scenarios against
//! `tiny-harness serve --http`. The suite calls test tools by bare names
//! (`test_simple_text`, `test_tool_with_logging`, ...): they come from an
//! upstream MCP server of ours (`tests/mcp/servers/conformance.py`) that
//! the `mcp` plugin declares, under those names through the anonymous
//! client's `rename` table, so every answer the suite checks went through
//! the host's validation, pins and rendering. What the gateway does not
//! offer, or refuses by design, is listed with why under `server` in
//! `tests/conformance/expected-failures.yml`; any other failure, or a
//! listed scenario that passes, fails the test.
//!
//! Also here: an upstream server's log messages reach the client of the
//! call, at the level it asked, over stdio and both HTTP revisions.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::conformance::{checks, conformance_dir, installed};
use super::super::{npm, shared_cache, venv};
use super::{Gateway, client};

/// The tools `conformance.py` serves, which the suite calls by name.
const TOOLS: [&str; 11] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "json_schema_2020_12_tool",
];

/// Writes `dir/tiny-harness.toml`: the mcp plugin with `conformance.py`
/// as server `conformance`, and each of its tools under its bare name for
/// the anonymous and stdio clients.
fn config(dir: &Path) -> PathBuf {
    let python = venv::python().display().to_string();
    let servers = npm::servers_dir().canonicalize().unwrap();
    let script = servers.join("servers/conformance.py").display().to_string();
    let rename: Vec<String> = TOOLS
        .iter()
        .map(|tool| format!("{tool} = \"mcp/conformance.{tool}\""))
        .collect();
    let rename = rename.join("\n");
    let config = dir.join("tiny-harness.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins.mcp]\npath = \"builtin:mcp\"\n\n[plugins.mcp.grants]\n\
             exec = [{{ program = {python:?}, read = [{servers:?}] }}]\n\n\
             [plugins.mcp.config.mcpServers.conformance]\ncommand = {python:?}\nargs = [{script:?}]\n\n\
             [serve.clients.anonymous.rename]\n{rename}\n\n[serve.clients.stdio.rename]\n{rename}\n",
            servers = servers.display().to_string(),
        ),
    )
    .unwrap();
    config
}

#[test]
fn the_official_conformance_suite_passes_every_server_scenario_but_those_not_offered() {
    let (node, suite) = installed();
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let gateway = Gateway::start(dir.path(), &[]);
    let results = tempfile::tempdir().unwrap();
    let expected = conformance_dir().join("expected-failures.yml");
    let url = gateway.url();
    // Every server scenario, pending ones included (json-schema-2020-12
    // and server-sse-polling are pending in this version of the suite).
    let output = std::process::Command::new(&node)
        .arg(&suite)
        .args([
            "server",
            "--url",
            &url,
            "--suite",
            "all",
            "--expected-failures",
        ])
        .arg(&expected)
        .arg("-o")
        .arg(results.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the conformance suite failed:\n{}\n{}\n{}",
        stdout
            .lines()
            .filter(|l| l.starts_with('✓') || l.starts_with('✗') || l.contains("xpected"))
            .collect::<Vec<_>>()
            .join("\n"),
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    // Not vacuous: every scenario about tools, ping, logging and DNS
    // rebinding ran, and each check of each passed.
    let mut found = Vec::new();
    checks(results.path(), "", &mut found);
    let must_pass = [
        "server-initialize",
        "ping",
        "logging-set-level",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-logging",
        "tools-call-error",
        "tools-call-with-progress",
        "json-schema-2020-12",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ];
    for scenario in must_pass {
        let ran = found
            .iter()
            .find(|(name, _)| name.ends_with(scenario) && name.contains("server-"));
        let Some((_, statuses)) = ran else {
            panic!("{scenario} did not run: {found:?}")
        };
        assert!(
            !statuses.is_empty() && statuses.iter().all(|s| !s.starts_with("FAILURE")),
            "{scenario}: {statuses:?}"
        );
    }
}

/// The calls of the log tests: the tool that logs three `info` messages.
fn logging_call(steps: &[Value]) -> Value {
    let mut all = steps.to_vec();
    all.push(json!(["call", "test_tool_with_logging", {}]));
    Value::Array(all)
}

/// The log messages the client got during its last step's call.
fn logs(answer: &Value) -> Vec<Value> {
    let steps = answer["steps"].as_array().unwrap();
    let call = steps.last().unwrap();
    assert_eq!(call["is_error"], false, "{answer}");
    call["logs"].as_array().unwrap().clone()
}

#[test]
fn an_upstream_servers_log_messages_reach_the_client_of_the_call_at_its_level() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let gateway = Gateway::start(dir.path(), &[]);
    let info = |said: &str| json!(["info", said]);
    let all_three = vec![
        info("Tool execution started"),
        info("Tool processing data"),
        info("Tool execution completed"),
    ];
    let stdio = json!([
        env!("CARGO_BIN_EXE_tiny-harness"),
        "serve",
        "--config",
        config.display().to_string()
    ]);
    let env = json!({"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()});
    // 2025-11-25 (stdio and HTTP): every level until the client sets one,
    // then only at or above it.
    for transport in [
        json!({"command": stdio, "env": env}),
        json!({"url": gateway.url()}),
    ] {
        let mut request = transport.clone();
        request["mode"] = json!("legacy");
        request["steps"] = logging_call(&[]);
        let answer = client(request.clone());
        assert_eq!(logs(&answer), all_three, "{transport}: {answer}");
        request["steps"] = logging_call(&[json!(["set_level", "warning"])]);
        let answer = client(request.clone());
        assert_eq!(logs(&answer), Vec::<Value>::new(), "{transport}: {answer}");
        request["steps"] = logging_call(&[json!(["set_level", "info"])]);
        let answer = client(request);
        assert_eq!(logs(&answer), all_three, "{transport}: {answer}");
    }
    // 2026-07-28: only when the request asks, at the level it asks.
    for (level, expected) in [
        (json!(null), vec![]),
        (json!("info"), all_three.clone()),
        (json!("error"), vec![]),
    ] {
        let answer = client(json!({
            "mode": "2026-07-28", "url": gateway.url(), "log_level": level,
            "steps": logging_call(&[]),
        }));
        assert_eq!(answer["version"], "2026-07-28", "{answer}");
        assert_eq!(
            logs(&answer),
            expected,
            "{level}: {answer}\n{}",
            gateway.log()
        );
    }
}

/// An embedded text resource comes after the untrusted block as a
/// resource of its own whose text is inside an untrusted block too, with
/// the source's media type in `_meta`; an image as it came.
#[test]
fn an_embedded_resources_text_reaches_the_client_only_inside_an_untrusted_block() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let gateway = Gateway::start(dir.path(), &[]);
    let answer = client(json!({
        "mode": "legacy", "url": gateway.url(),
        "steps": [["call", "test_multiple_content_types", {}]],
    }));
    let call = &answer["steps"][0];
    assert_eq!(
        call["kinds"],
        json!(["text", "image", "resource"]),
        "{answer}"
    );
    let resource = &call["resource"];
    let text = resource["text"].as_str().unwrap();
    assert!(
        text.starts_with("<tool-result-") && text.contains(r#"{"test":"data","value":123}"#),
        "{resource}"
    );
    assert_eq!(resource["mime_type"], "text/plain", "{resource}");
    assert_eq!(
        resource["meta"]["io.tiny-harness/mimeType"], "application/json",
        "{resource}"
    );
}
