//! Deferred tools through the SDKs: with `[search]` deferring fs and net,
//! what `tools --provider P --json` prints (the deferred entries, the
//! search, the namespaces) passes each SDK's request types, and so do the
//! results of a replayed exchange in which the model searches and then
//! calls the tool it found: the host's search for every provider, and
//! Anthropic's and OpenAI's own searches.

use std::path::Path;

use serde_json::{Value, json};

use super::super::{run_in, stderr};
use super::{four_plugins, said, validate};

const PROVIDERS: [&str; 5] = [
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "bedrock",
];

/// `four_plugins` with fs and net deferred and the search in `form`.
fn deferring(form: &str) -> tempfile::TempDir {
    let dir = four_plugins();
    let config = dir.path().join("tiny-harness.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[search]\ndefer = [\"fs/*\", \"net/*\"]\nform = {form:?}\n"
    ));
    std::fs::write(&config, text).unwrap();
    dir
}

/// `tools --provider P --json` in `dir`, validated; returns its rows.
fn definitions_pass(dir: &Path, provider: &str) -> Vec<Value> {
    definitions_pass_with(dir, provider, &[])
}

/// [`definitions_pass`], with more arguments to `tools`.
fn definitions_pass_with(dir: &Path, provider: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["tools", "--provider", provider, "--json"];
    args.extend(extra);
    let output = run_in(dir, &args, None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{provider}: {}",
        stderr(&output)
    );
    let path = dir.join(format!("{provider}.deferred.json"));
    std::fs::write(&path, &output.stdout).unwrap();
    let checked = validate(&["definitions", provider, &path.display().to_string()]);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{provider}: {}",
        said(&checked)
    );
    serde_json::from_slice::<Vec<Value>>(&output.stdout).unwrap()
}

#[test]
fn deferred_definitions_and_every_search_form_pass_the_sdks() {
    for form in ["host", "provider", "provider-regex"] {
        let dir = deferring(form);
        for provider in PROVIDERS {
            let rows = definitions_pass(dir.path(), provider);
            let read = rows
                .iter()
                .find(|r| r["name"] == "fs/workspace.read_file")
                .unwrap();
            assert_eq!(read["deferred"], true, "{form} {provider}");
            let search: Vec<&Value> = rows.iter().filter(|r| r["offered"] == "search").collect();
            assert_eq!(search.len(), 1, "{form} {provider}: {rows:?}");
            let listed = !read["definition"].is_null();
            let lists_deferred =
                provider == "anthropic" || (provider == "openai-responses" && form != "host");
            assert_eq!(listed, lists_deferred, "{form} {provider}");
            let hello = rows
                .iter()
                .find(|r| r["name"] == "hello/hello.greet")
                .unwrap();
            assert!(!hello["definition"].is_null() && hello.get("deferred").is_none());
        }
        // Gemini's subset: the search's schema is rewritten into it too.
        let rows = definitions_pass_with(dir.path(), "gemini", &["--gemini-subset"]);
        let search = rows.iter().find(|r| r["offered"] == "search").unwrap();
        assert!(search["definition"]["parameters"].is_object(), "{search}");
    }
}

/// A model's response calling the host's search for reading a file.
fn search(provider: &str) -> Value {
    let query = json!({"query": "read the text of a file"});
    match provider {
        "openai-chat" => json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_s", "type": "function", "function": {"name": "search_tools", "arguments": query.to_string()}}
        ]}}]}),
        "openai-responses" => json!({"output": [
            {"type": "tool_search_call", "id": "ts_1", "call_id": "call_s", "execution": "client",
             "status": "completed", "arguments": query}
        ]}),
        "anthropic" => json!({"content": [
            {"type": "tool_use", "id": "toolu_s", "name": "search_tools", "input": query}
        ]}),
        "gemini" => json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": "g_s", "name": "search_tools", "args": query}}
        ]}}]}),
        _ => json!({"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "tooluse_s", "name": "search_tools", "input": query}}
        ]}}}),
    }
}

/// A model's response calling fs's read_file (`wire`) on the README.
fn read(provider: &str, wire: &str) -> Value {
    let args = json!({"path": "README.md"});
    match provider {
        "openai-chat" => json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_r", "type": "function", "function": {"name": wire, "arguments": args.to_string()}}
        ]}}]}),
        "openai-responses" => json!({"output": [
            {"type": "function_call", "call_id": "call_r", "name": wire, "arguments": args.to_string()}
        ]}),
        "anthropic" => json!({"content": [
            {"type": "tool_use", "id": "toolu_r", "name": wire, "input": args}
        ]}),
        "gemini" => json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": "g_r", "name": wire, "args": args}}
        ]}}]}),
        _ => json!({"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "tooluse_r", "name": wire, "input": args}}
        ]}}}),
    }
}

/// Replays `turns` (one response per line) as `provider` in `dir`,
/// validates the results, and returns the report.
fn replay_passes(dir: &Path, provider: &str, tag: &str, turns: &[Value]) -> Vec<Value> {
    let file = dir.join(format!("{tag}.jsonl"));
    let lines: Vec<String> = turns.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let output = run_in(
        dir,
        &[
            "replay",
            &file.display().to_string(),
            "--provider",
            provider,
            "--json",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{tag}: {}", stderr(&output));
    let path = dir.join(format!("{tag}.replay.json"));
    std::fs::write(&path, &output.stdout).unwrap();
    let checked = validate(&["results", provider, &path.display().to_string()]);
    assert_eq!(checked.status.code(), Some(0), "{tag}: {}", said(&checked));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_replayed_search_and_call_of_the_found_tool_passes_the_sdks() {
    let dir = deferring("host");
    for provider in PROVIDERS {
        let rows = definitions_pass(dir.path(), provider);
        let row = rows
            .iter()
            .find(|r| r["name"] == "fs/workspace.read_file")
            .unwrap();
        let wire = row["wire_name"].as_str().unwrap();
        let report = replay_passes(
            dir.path(),
            provider,
            provider,
            &[search(provider), read(provider, wire)],
        );
        assert_eq!(
            report[0]["found"][0], "fs/workspace.read_file",
            "{provider}: {report:?}"
        );
        assert_eq!(
            report[1]["calls"][0]["tool"], "fs/workspace.read_file",
            "{provider}"
        );
        assert_eq!(report[1]["calls"][0]["outcome"], "ok", "{provider}");
        let first = report[0]["results"].to_string();
        match provider {
            "anthropic" => assert!(first.contains("\"tool_reference\""), "{first}"),
            "openai-responses" => assert!(first.contains("\"tool_search_output\""), "{first}"),
            _ => assert!(first.contains(wire), "{first}"),
        }
    }

    // The providers' own searches: what they found is checked and kept,
    // and the found tool's call runs.
    let dir = deferring("provider");
    let wire = "fs__workspace__read_file";
    let anthropic = json!({"content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25",
         "input": {"query": "read a file"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": wire}]}},
        {"type": "tool_use", "id": "toolu_r", "name": wire, "input": {"path": "README.md"}}
    ]});
    let report = replay_passes(dir.path(), "anthropic", "anthropic-server", &[anthropic]);
    assert_eq!(report[0]["found"], json!(["fs/workspace.read_file"]));
    assert_eq!(report[0]["calls"][0]["outcome"], "ok");
    let responses = json!({"output": [
        {"type": "tool_search_call", "id": "ts_1", "call_id": null, "execution": "server",
         "status": "completed", "arguments": {"query": "read a file"}},
        {"type": "tool_search_output", "id": "tso_1", "execution": "server", "status": "completed",
         "tools": [{"type": "namespace", "name": "fs__workspace", "description": "fs",
                    "tools": [{"type": "function", "name": wire, "parameters": {}, "strict": false,
                               "defer_loading": true}]}]},
        {"type": "function_call", "call_id": "call_r", "name": wire, "namespace": "fs__workspace",
         "arguments": "{\"path\":\"README.md\"}"}
    ]});
    let report = replay_passes(
        dir.path(),
        "openai-responses",
        "responses-server",
        &[responses],
    );
    assert_eq!(report[0]["found"], json!(["fs/workspace.read_file"]));
    assert_eq!(report[0]["calls"][0]["outcome"], "ok");
}
