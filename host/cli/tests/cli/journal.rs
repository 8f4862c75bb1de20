//! `--journal` and `--journal-full`: what a call leaves behind.

use super::*;

#[test]
fn a_call_appends_one_journal_line_matching_what_was_printed() {
    let dir = sandbox();
    let args = [
        "--journal",
        "calls.jsonl",
        "call",
        "--json",
        "fs/workspace.read_file",
        r#"{"path":"hello.txt"}"#,
    ];
    let output = run_in(dir.path(), &args, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rendered = printed["rendered"].as_str().unwrap();

    let text = std::fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(line["tool"], "fs/workspace.read_file");
    assert_eq!(line["call_id"], "cli-1");
    assert_eq!(line["outcome"], "ok");
    use sha2::Digest as _;
    let shown = hex::encode(sha2::Sha256::digest(rendered.as_bytes()));
    assert_eq!(line["rendered_sha256"], shown.as_str());
    assert_eq!(line["definition_sha256"].as_str().unwrap().len(), 64);
    assert!(line.get("rendered").is_none());

    // A second call appends; --journal-full keeps the texts too.
    let mut full = vec!["--journal-full"];
    full.extend(args);
    let output = run_in(dir.path(), &full, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[1]["arguments"],
        serde_json::json!({"path": "hello.txt"})
    );
    assert!(
        lines[1]["rendered"]
            .as_str()
            .unwrap()
            .contains("hello from the workspace")
    );

    // A journal that cannot be opened is a usage error before anything runs.
    let output = run_in(
        dir.path(),
        &[
            "--journal",
            "no/such/dir/calls.jsonl",
            "call",
            "fs/workspace.stat",
            "{}",
        ],
        None,
    );
    one_error_line(
        &output,
        &["cannot open the journal", "no/such/dir/calls.jsonl"],
    );
}
