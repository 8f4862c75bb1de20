//! `replay FILE --provider P`: recorded model responses run against the
//! sandboxed plugins, one loop iteration per turn.

use super::*;

fn fixture(provider: &str, name: &str) -> String {
    workspace_root()
        .join(format!("tests/fixtures/providers/{provider}/{name}.json"))
        .display()
        .to_string()
}

/// The sandbox, with the files the recorded responses read.
fn workspace() -> tempfile::TempDir {
    let dir = sandbox();
    std::fs::write(dir.path().join("work/README.md"), "# replayed\n").unwrap();
    std::fs::write(dir.path().join("work/Cargo.toml"), "[workspace]\n").unwrap();
    dir
}

#[test]
fn a_recorded_response_runs_every_call_in_order_and_prints_the_provider_results() {
    let dir = workspace();
    for provider in [
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "bedrock",
        "mcp",
    ] {
        let file = fixture(provider, "parallel");
        let output = run_in(
            dir.path(),
            &["replay", &file, "--provider", provider, "--json"],
            None,
        );
        // The write is refused (the grant is read-only): an error result.
        assert_eq!(
            output.status.code(),
            Some(1),
            "{provider}: {}",
            stderr(&output)
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let turn = &report[0];
        assert_eq!(turn["turn"], 1);
        let outcomes: Vec<&str> = turn["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(outcomes, ["ok", "denied", "ok"], "{provider}");
        assert_eq!(turn["calls"][0]["tool"], "fs/workspace.read_file");
        let results = turn["results"].to_string();
        assert!(results.contains("# replayed"), "{provider}: {results}");
    }
    // Anthropic: one user message with one tool_result per call, in order.
    let output = run_in(
        dir.path(),
        &[
            "replay",
            &fixture("anthropic", "parallel"),
            "--provider",
            "anthropic",
            "--json",
        ],
        None,
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let message = &report[0]["results"][0];
    assert_eq!(message["role"], "user");
    let blocks = message["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[0]["tool_use_id"], "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(blocks[1]["is_error"], true);
}

#[test]
fn json_lines_are_one_iteration_per_turn_and_text_output_shows_each_block() {
    let dir = workspace();
    let parallel = std::fs::read_to_string(fixture("openai-chat", "parallel")).unwrap();
    let none = std::fs::read_to_string(fixture("openai-chat", "none")).unwrap();
    let compact = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text)
            .unwrap()
            .to_string()
    };
    std::fs::write(
        dir.path().join("turns.jsonl"),
        format!("{}\n\n{}\n", compact(&parallel), compact(&none)),
    )
    .unwrap();
    let output = run_in(
        dir.path(),
        &[
            "replay",
            "turns.jsonl",
            "--provider",
            "openai-chat",
            "--json",
        ],
        None,
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report.as_array().unwrap().len(), 2);
    assert_eq!(report[1]["calls"].as_array().unwrap().len(), 0);

    let output = run_in(
        dir.path(),
        &["replay", "turns.jsonl", "--provider", "openai-chat"],
        None,
    );
    let text = stdout(&output);
    assert!(text.starts_with("turn 1: 3 calls\n"), "{text}");
    assert!(
        text.contains("call call_12345xyz fs__workspace__read_file -> fs/workspace.read_file: ok"),
        "{text}"
    );
    assert!(text.contains("<tool-result-"), "{text}");
    assert!(text.contains("turn 2: 0 calls"), "{text}");
}

#[test]
fn unknown_names_and_bad_arguments_become_error_results_and_bad_files_errors() {
    let dir = workspace();
    let output = run_in(
        dir.path(),
        &[
            "replay",
            &fixture("anthropic", "unknown"),
            "--provider",
            "anthropic",
            "--json",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let outcomes: Vec<&str> = report[0]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert!(outcomes.contains(&"unknown_tool"), "{outcomes:?}");

    std::fs::write(
        dir.path().join("garbage.txt"),
        "{\"not\": \"closed\"\nnot json\n",
    )
    .unwrap();
    let output = run_in(
        dir.path(),
        &["replay", "garbage.txt", "--provider", "anthropic"],
        None,
    );
    one_error_line(&output, &["garbage.txt", "line 1 is not JSON"]);

    std::fs::write(dir.path().join("shape.json"), r#"{"content": 7}"#).unwrap();
    let output = run_in(
        dir.path(),
        &["replay", "shape.json", "--provider", "anthropic"],
        None,
    );
    one_error_line(
        &output,
        &["shape.json turn 1", "malformed anthropic response"],
    );
}

#[test]
fn mcp_results_carry_the_checked_data_and_the_revisions_result_type() {
    let dir = workspace();
    let meta = serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let calls = serde_json::json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "fs__workspace.read_file", "arguments": {"path": "README.md"}, "_meta": meta}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "fs__workspace.read_file", "arguments": {"path": "README.md"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "fs__workspace.write_file", "arguments": {"path": "x", "content": "y"}, "_meta": meta}},
    ]);
    std::fs::write(dir.path().join("calls.json"), calls.to_string()).unwrap();
    let output = run_in(
        dir.path(),
        &["replay", "calls.json", "--provider", "mcp", "--json"],
        None,
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let results = &report[0]["results"];
    // A tool with an output schema: its checked JSON part, beside the block.
    let first = &results[0]["result"];
    assert!(
        first["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("# replayed")
    );
    let data = &first["structuredContent"];
    assert!(data.is_object(), "{first}");
    assert_eq!(data["path"], "/workspace/README.md", "{data}");
    assert_eq!(data["total_lines"], 1, "{data}");
    assert_eq!(first["resultType"], "complete", "a 2026-07-28 request");
    let second = &results[1]["result"];
    assert_eq!(second["structuredContent"], *data);
    assert!(
        second.get("resultType").is_none(),
        "an older request: {second}"
    );
    // An error has no structured content.
    let third = &results[2]["result"];
    assert_eq!(third["isError"], true);
    assert!(third.get("structuredContent").is_none(), "{third}");
    assert_eq!(third["resultType"], "complete");

    // A revision that is not one is a malformed request, named.
    let bad = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fs__workspace.read_file", "arguments": {}, "_meta": {"io.modelcontextprotocol/protocolVersion": 7}}});
    std::fs::write(dir.path().join("bad.json"), bad.to_string()).unwrap();
    let output = run_in(
        dir.path(),
        &["replay", "bad.json", "--provider", "mcp"],
        None,
    );
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("params._meta.io.modelcontextprotocol/protocolVersion"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_gemini_response_in_the_sdks_spelling_runs_and_an_unreadable_call_is_named() {
    let dir = workspace();
    // As google-genai's `to_json_dict()` writes a response: snake_case.
    let sdk = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [
        {"function_call": {"name": "fs__workspace.read_file", "args": {"path": "README.md"}, "id": "c1"}}
    ]}, "finish_reason": "STOP"}]});
    std::fs::write(dir.path().join("sdk.json"), sdk.to_string()).unwrap();
    let output = run_in(
        dir.path(),
        &["replay", "sdk.json", "--provider", "gemini", "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report[0]["calls"].as_array().unwrap().len(), 1);
    assert!(report[0]["results"].to_string().contains("# replayed"));

    // A call under a key the adapter does not read is an error naming
    // it, never a response without calls.
    for (provider, response, field) in [
        (
            "gemini",
            serde_json::json!({"candidates": [{"content": {"parts": [
            {"functionCalls": [{"name": "fs__workspace.read_file"}]}]}}]}),
            "candidates[0].content.parts[0].functionCalls",
        ),
        (
            "openai-chat",
            serde_json::json!({"choices": [{"message": {"role": "assistant",
            "function_call": {"name": "fs__workspace__read_file", "arguments": "{}"}}}]}),
            "choices[0].message.function_call",
        ),
        (
            "openai-responses",
            serde_json::json!({"output": [{"type": "custom_tool_call",
            "call_id": "c", "name": "x", "input": "y"}]}),
            "output[0].type",
        ),
        (
            "bedrock",
            serde_json::json!({"output": {"message": {"role": "assistant", "content": [
            {"tool_use": {"toolUseId": "t", "name": "x", "input": {}}}]}}}),
            "output.message.content[0].tool_use",
        ),
    ] {
        std::fs::write(dir.path().join("r.json"), response.to_string()).unwrap();
        let output = run_in(
            dir.path(),
            &["replay", "r.json", "--provider", provider],
            None,
        );
        assert_ne!(output.status.code(), Some(0), "{provider}");
        let said = stderr(&output);
        assert!(
            said.contains(field) && said.lines().count() == 1,
            "{provider}: {said}"
        );
    }
}
