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
