//! The call journal: one whole JSON line per call, with hashes that prove
//! what ran and what the model was shown, even for concurrent calls.

use std::sync::Arc;

use serde_json::json;
use sha2::{Digest, Sha256};
use tiny_harness_core::schema::SchemaHash;
use tiny_harness_host::{HostBuilder, Journal, ToolCall};

use crate::common::hostile;

async fn host_with(journal: Arc<Journal>) -> tiny_harness_host::Host {
    HostBuilder::new()
        .recorder(journal)
        .plugin(hostile("normal"))
        .build()
        .await
        .unwrap()
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is whole JSON"))
        .collect()
}

#[tokio::test]
async fn each_call_is_one_line_that_proves_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let journal = Arc::new(Journal::open(&path, false).unwrap());
    let host = host_with(journal.clone()).await;
    let call = ToolCall {
        id: "c1".into(),
        name: "hostile/chaos.echo".into(),
        arguments: json!({"message": "hi"}),
    };
    let outcome = host.invoke_as(&call, Some("hostile__chaos__echo")).await;
    let unknown = ToolCall {
        id: "c2".into(),
        name: "hostile/chaos.nope".into(),
        arguments: json!({}),
    };
    host.invoke(&unknown).await;
    assert!(journal.take_error().is_none());

    let lines = lines(&path);
    assert_eq!(lines.len(), 2);
    let line = &lines[0];
    assert_eq!(line["call_id"], "c1");
    assert_eq!(line["tool"], "hostile/chaos.echo");
    assert_eq!(line["wire_name"], "hostile__chaos__echo");
    assert_eq!(line["outcome"], "ok");
    assert_eq!(
        line["arguments_sha256"],
        SchemaHash::of(&json!({"message": "hi"})).as_str()
    );
    let registered = host.registry().get("hostile/chaos.echo").cloned().unwrap();
    assert_eq!(
        line["definition_sha256"],
        registered.definition_hash.as_str()
    );
    // The hash is of the very block the model is sent.
    let shown = hex::encode(Sha256::digest(outcome.render().as_bytes()));
    assert_eq!(line["rendered_sha256"], shown.as_str());
    assert!(line.get("arguments").is_none() && line.get("rendered").is_none());
    assert!(line["time"].as_str().unwrap().ends_with('Z'));

    assert_eq!(lines[1]["outcome"], "unknown_tool");
    assert!(lines[1]["definition_sha256"].is_null());
}

#[tokio::test]
async fn concurrent_calls_never_interleave_and_full_keeps_the_texts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let journal = Arc::new(Journal::open(&path, true).unwrap());
    let host = host_with(journal).await;
    // Large enough that interleaved writes would show.
    let message = "x".repeat(64 << 10);
    let calls = (0..40).map(|i| {
        let host = host.clone();
        let message = message.clone();
        tokio::spawn(async move {
            let call = ToolCall {
                id: format!("c{i}"),
                name: "hostile/chaos.echo".into(),
                arguments: json!({ "message": message }),
            };
            host.invoke(&call).await.render().to_owned()
        })
    });
    let mut rendered = Vec::new();
    for call in calls {
        rendered.push(call.await.unwrap());
    }
    let lines = lines(&path);
    assert_eq!(lines.len(), 40);
    for line in &lines {
        assert_eq!(
            line["arguments"]["message"].as_str().unwrap().len(),
            64 << 10
        );
        let text = line["rendered"].as_str().unwrap();
        assert!(
            rendered.iter().any(|r| r == text),
            "a block no call returned"
        );
    }
}

/// Every call of a model's reply reaches the recorder, those refused while
/// the reply was decoded (a name nobody was offered, arguments that are
/// not JSON) included, with their codes, in the reply's order of ids.
#[tokio::test]
async fn a_turns_calls_refused_while_decoding_reach_the_recorder_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let journal = Arc::new(Journal::open(&path, false).unwrap());
    let host = host_with(journal.clone()).await;
    host.begin_iteration();
    let request = host.offer(tiny_harness_host::Provider::OpenAiChat);
    let echo = request
        .codec
        .encode("hostile/chaos.echo")
        .unwrap()
        .to_owned();
    let call = |id: &str, name: &str, arguments: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
    let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        call("c1", &echo, r#"{"message": "hi"}"#),
        call("c2", "nobody_offered_this", "{}"),
        call("c3", &echo, r#"{"message": 7}"#),
        call("c4", &echo, "{not json"),
        call("c5", &echo, r#"{"message": "bye"}"#),
    ]}}]});
    let turn = host.run_calls(&request, &response).await.unwrap();
    assert_eq!(turn.outcomes.len(), 5);
    let mut seen: Vec<(String, String)> = lines(&path)
        .iter()
        .map(|line| {
            (
                line["call_id"].as_str().unwrap_or_default().to_owned(),
                line["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    seen.sort();
    let expected = [
        ("c1", "ok"),
        ("c2", "unknown_tool"),
        ("c3", "invalid_arguments"),
        ("c4", "invalid_arguments"),
        ("c5", "ok"),
    ];
    assert_eq!(
        seen,
        expected.map(|(id, code)| (id.to_owned(), code.to_owned())),
        "{:?}",
        lines(&path)
    );
}

/// `Host::offer_with` asks for Gemini's OpenAPI subset (`parameters`);
/// `Host::offer` sends JSON Schema (`parametersJsonSchema`).
#[tokio::test]
async fn a_host_offers_gemini_the_subset_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Journal::open(&dir.path().join("calls.jsonl"), false).unwrap());
    let host = host_with(journal).await;
    let declarations = |request: &tiny_harness_host::EncodedRequest| {
        request.tools[0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .clone()
    };
    let subset = tiny_harness_host::GeminiSchema::Subset(tiny_harness_host::SchemaLimits::DEFAULT);
    let asked = host.offer_with(tiny_harness_host::Provider::Gemini, subset);
    let plain = host.offer(tiny_harness_host::Provider::Gemini);
    // A tool whose schema takes nothing has no `parameters` at all.
    let asked = declarations(&asked);
    assert!(
        asked.iter().any(|d| d.get("parameters").is_some()),
        "{asked:?}"
    );
    for declaration in &asked {
        assert!(
            declaration.get("parametersJsonSchema").is_none(),
            "{declaration}"
        );
    }
    for declaration in declarations(&plain) {
        assert!(
            declaration.get("parametersJsonSchema").is_some(),
            "{declaration}"
        );
    }
}
