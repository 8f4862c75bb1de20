//! The validating invoker: unknown names and bad arguments never run a
//! plugin; good calls come back as typed results.

use tiny_harness_host::{CallError, ContentPart, DirGrant, DirMode};

use crate::common::{call, error_code, host, hostile, json_of, text_of};

/// Hostile with `/state` granted read-write over `dir`, so `record` leaves
/// a trace of every call that reaches the plugin.
fn recording(dir: &std::path::Path) -> tiny_harness_host::PluginSpec {
    let mut spec = hostile("normal");
    spec.grants
        .add_dir(DirGrant::new(dir, "/state", DirMode::ReadWrite).unwrap())
        .unwrap();
    spec
}

#[tokio::test]
async fn an_unknown_tool_runs_nothing() {
    let state = tempfile::tempdir().unwrap();
    let host = host(vec![recording(state.path())]).await;
    for name in [
        "hostile/chaos.nope",
        "hostile/chaos.record ",
        "HOSTILE/chaos.record",
        "chaos.record",
        "record",
        "",
    ] {
        let outcome = call(&host, name, serde_json::json!({"message": "x"})).await;
        assert_eq!(error_code(&outcome), "unknown_tool", "{name:?}");
        assert!(
            matches!(&outcome.result, Err(CallError::UnknownTool { name: n }) if n == name),
            "{name:?}"
        );
        let block = outcome.render();
        assert!(block.contains("code=\"unknown_tool\""), "{block}");
    }
    assert!(!state.path().join("calls.log").exists());
}

#[tokio::test]
async fn arguments_that_fail_the_schema_never_reach_the_plugin() {
    let state = tempfile::tempdir().unwrap();
    let log = state.path().join("calls.log");
    let host = host(vec![recording(state.path())]).await;

    let cases = [
        (serde_json::json!({"message": 7}), "/message"),
        (serde_json::json!({}), ""),
        (serde_json::json!({"message": "hi", "extra": true}), ""),
        (serde_json::json!("message"), ""),
    ];
    for (arguments, pointer) in cases {
        let outcome = call(&host, "hostile/chaos.record", arguments.clone()).await;
        assert_eq!(error_code(&outcome), "invalid_arguments", "{arguments}");
        let Err(CallError::InvalidArguments { violations }) = &outcome.result else {
            panic!("{arguments}: {:?}", outcome.result);
        };
        assert!(
            violations.iter().any(|v| v.instance_path == pointer),
            "{arguments}: {violations:?}"
        );
        let json = outcome.to_json();
        assert_eq!(json["error"]["code"], "invalid_arguments", "{json}");
        assert!(!log.exists(), "{arguments}: the plugin ran");
    }

    // The same tool with good arguments does run: the log is the proof.
    let outcome = call(
        &host,
        "hostile/chaos.record",
        serde_json::json!({"message": "one"}),
    )
    .await;
    assert_eq!(text_of(&outcome), "recorded");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\n");
}

#[tokio::test]
async fn violations_carry_json_pointers_into_nested_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(vec![crate::common::fs_over(dir.path(), DirMode::ReadOnly)]).await;
    let outcome = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "a", "offset": 0, "limit": "ten"}),
    )
    .await;
    let Err(CallError::InvalidArguments { violations }) = &outcome.result else {
        panic!("{:?}", outcome.result);
    };
    let mut paths: Vec<&str> = violations
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect();
    paths.sort();
    assert_eq!(paths, ["/limit", "/offset"], "{violations:?}");
    assert!(
        violations
            .iter()
            .all(|v| v.schema_path.starts_with("/properties/"))
    );
}

#[tokio::test]
async fn results_carry_text_and_json_parts() {
    let host = host(vec![hostile("normal")]).await;

    let outcome = call(
        &host,
        "hostile/chaos.echo",
        serde_json::json!({"message": "hi"}),
    )
    .await;
    assert!(!outcome.is_error());
    assert_eq!(text_of(&outcome), "hi");

    let outcome = call(&host, "hostile/chaos.json", serde_json::json!({})).await;
    let result = outcome.result.as_ref().unwrap();
    assert_eq!(result.content.len(), 2);
    assert!(matches!(&result.content[0], ContentPart::Text { text } if text == "here is data"));
    assert_eq!(json_of(&outcome), serde_json::json!({"ok": true, "n": 1}));
    let json = outcome.to_json();
    assert_eq!(json["result"]["content"][1]["data"]["n"], 1, "{json}");
}

#[tokio::test]
async fn tool_failures_are_typed() {
    let host = host(vec![hostile("normal")]).await;

    let outcome = call(&host, "hostile/chaos.is_error", serde_json::json!({})).await;
    let result = outcome.result.as_ref().unwrap();
    assert!(result.is_error);
    assert!(outcome.is_error());
    assert!(outcome.render().contains("status=\"tool_error\""));

    let outcome = call(&host, "hostile/chaos.fail", serde_json::json!({})).await;
    assert!(matches!(&outcome.result, Err(CallError::Failed(m)) if m == "deliberate failure"));

    let outcome = call(&host, "hostile/chaos.bad_json", serde_json::json!({})).await;
    assert_eq!(error_code(&outcome), "invalid_output");
}

#[tokio::test]
async fn results_are_checked_against_the_output_schema() {
    let host = host(vec![hostile("normal")]).await;
    let structured = |parts: serde_json::Value, is_error: bool| {
        let host = &host;
        async move {
            call(
                host,
                "hostile/chaos.structured",
                serde_json::json!({ "parts": parts, "is_error": is_error }),
            )
            .await
        }
    };
    let tool = host
        .registry()
        .get("hostile/chaos.structured")
        .cloned()
        .expect("registered");
    assert!(tool.output_schema_hash().is_some());

    // Matching data passes, text parts before it included.
    let outcome = structured(serde_json::json!(["counted", {"count": 3}]), false).await;
    assert_eq!(json_of(&outcome)["count"], 3);
    assert_eq!(text_of(&outcome), "counted");

    // Only the first JSON part is the structured data.
    let outcome = structured(
        serde_json::json!([{"count": 1}, {"count": "not checked"}]),
        false,
    )
    .await;
    assert!(!outcome.is_error(), "{:?}", outcome.result);

    // Data that does not match never reaches the model as a result.
    let outcome = structured(
        serde_json::json!(["prefix", {"count": "three", "secret": 1}]),
        false,
    )
    .await;
    assert_eq!(error_code(&outcome), "invalid_output");
    let message = outcome.result.as_ref().unwrap_err().to_string();
    assert!(
        message.contains("part 2") && message.contains("/count"),
        "{message}"
    );
    assert!(!outcome.render().contains("prefix"));

    // A result without JSON data cannot satisfy the schema.
    let outcome = structured(serde_json::json!(["only text"]), false).await;
    assert_eq!(error_code(&outcome), "invalid_output");
    assert!(
        outcome
            .result
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("no JSON part")
    );

    // Error results are shown as they are.
    let outcome = structured(serde_json::json!(["it broke"]), true).await;
    assert!(outcome.result.as_ref().unwrap().is_error);
    assert_eq!(text_of(&outcome), "it broke");

    // A huge offending value is not echoed back whole.
    let huge = "x".repeat(100_000);
    let outcome = structured(serde_json::json!([{ "count": huge }]), false).await;
    assert_eq!(error_code(&outcome), "invalid_output");
    assert!(outcome.render().len() < 2_000, "{}", outcome.render().len());

    // Tools without an output schema are not checked.
    let outcome = call(&host, "hostile/chaos.json", serde_json::json!({})).await;
    assert!(!outcome.is_error());
}

#[tokio::test]
async fn results_over_the_size_limit_are_refused_whole() {
    let mut spec = hostile("normal");
    // The limit counts each part's framing too: room for one 64 KiB part.
    let limit = (64 << 10) + tiny_harness_core::tool::PART_FRAMING_BYTES;
    spec.limits.result_bytes = limit;
    let host = host(vec![spec]).await;
    let big = |kib: u32, fail: bool| {
        let host = &host;
        async move {
            call(
                host,
                "hostile/chaos.big",
                serde_json::json!({ "kib": kib, "fail": fail }),
            )
            .await
        }
    };

    let outcome = big(64, false).await;
    assert_eq!(
        text_of(&outcome).len(),
        64 << 10,
        "exactly the limit passes"
    );

    for fail in [false, true] {
        let outcome = big(65, fail).await;
        assert!(
            matches!(
                outcome.result,
                Err(CallError::TooLarge { limit: refused }) if refused == limit
            ),
            "fail={fail}: {:?}",
            outcome.result.as_ref().map(|r| r.content.len())
        );
        assert_eq!(error_code(&outcome), "too_large");
        let rendered = outcome.render();
        assert!(rendered.len() < 1_000, "nothing of it is shown");
        assert!(rendered.contains("ask for less"), "{rendered}");
    }

    // The default limit (1 MiB) applies when the config sets none.
    let host = crate::common::host(vec![hostile("normal")]).await;
    let outcome = call(
        &host,
        "hostile/chaos.big",
        serde_json::json!({ "kib": 1025, "fail": false }),
    )
    .await;
    assert_eq!(error_code(&outcome), "too_large");
}
