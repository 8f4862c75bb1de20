//! `tools --provider`: the tools as each provider is sent them.

use super::*;

#[test]
fn tools_show_wire_names_and_provider_definitions() {
    let dir = sandbox();
    let output = run_in(
        dir.path(),
        &["tools", "--provider", "openai-chat", "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 5);
    let read = tools
        .iter()
        .find(|t| t["name"] == "fs/workspace.read_file")
        .unwrap();
    assert_eq!(read["wire_name"], "fs__workspace__read_file");
    assert_eq!(read["definition"]["type"], "function");
    assert_eq!(
        read["definition"]["function"]["name"],
        "fs__workspace__read_file"
    );
    assert!(read["definition"]["function"]["parameters"]["properties"]["path"].is_object());

    // Gemini keeps the dots, and gets the schema unchanged in
    // parametersJsonSchema; with --gemini-subset, `parameters`, and what
    // the subset changed.
    let gemini = |extra: &[&str]| {
        let mut args = vec!["tools", "--provider", "gemini", "--json"];
        args.extend(extra);
        let output = run_in(dir.path(), &args, None);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let tools: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "fs/workspace.read_file")
            .unwrap()
            .clone()
    };
    let read = gemini(&[]);
    assert_eq!(read["wire_name"], "fs__workspace.read_file");
    assert_eq!(read["definition"]["name"], "fs__workspace.read_file");
    assert_eq!(read["schema_field"], "parametersJsonSchema");
    assert_eq!(
        read["definition"]["parametersJsonSchema"]["additionalProperties"], false,
        "unchanged: {read}"
    );
    assert!(read.get("schema_rewrites").is_none(), "{read}");
    assert!(read["definition"].get("parameters").is_none());
    let read = gemini(&["--gemini-subset"]);
    assert_eq!(read["schema_field"], "parameters");
    let rewrites = read["schema_rewrites"].as_array().unwrap();
    assert!(
        rewrites
            .iter()
            .any(|r| r["pointer"] == "/additionalProperties"),
        "{rewrites:?}"
    );
    assert!(
        read["definition"]["parameters"]
            .get("additionalProperties")
            .is_none()
    );
    let output = run_in(dir.path(), &["tools", "--gemini-subset"], None);
    assert_eq!(output.status.code(), Some(2), "the flag needs --provider");

    let output = run_in(dir.path(), &["tools", "--provider", "anthropic"], None);
    let text = stdout(&output);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("fs/workspace.stat") && l.ends_with("fs__workspace__stat")),
        "{text}"
    );

    let output = run_in(dir.path(), &["tools", "--provider", "nope"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("use openai-chat, openai-responses"));
}
