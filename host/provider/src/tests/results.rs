//! Result formatting against the fixtures: one result per call, in the
//! calls' order, the rendered block verbatim, the error flag where the
//! format has one.

use serde_json::{Value, json};

use super::{READ, decode};
use crate::*;
use tiny_harness_core::tool::{ContentPart, ToolResult};

/// The outcomes the harness would have for `malformed.json`: the good call
/// succeeds, the other two are refusals.
fn outcomes(calls: &[DecodedCall]) -> Vec<CallOutcome> {
    calls
        .iter()
        .map(|decoded| match &decoded.call {
            Ok(call) => CallOutcome::new(
                call.id.clone(),
                call.name.clone(),
                Ok(ToolResult {
                    content: vec![ContentPart::text("# tiny-harness\n")],
                    is_error: false,
                }),
            ),
            Err(_) => decoded.refusal_outcome().unwrap(),
        })
        .collect()
}

#[test]
fn results_are_one_per_call_in_order_with_the_block_verbatim() {
    for provider in Provider::ALL {
        let calls = decode(provider, "malformed");
        let outcomes = outcomes(&calls);
        let replies: Vec<ToolReply> = calls
            .iter()
            .zip(&outcomes)
            .map(|(c, o)| c.reply(o))
            .collect();
        let formatted = provider.format_results(&replies);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        let rendered: Vec<&str> = outcomes.iter().map(|o| o.render()).collect();
        assert!(
            rendered[0].contains("# tiny-harness\n") && rendered[1].contains("invalid_arguments")
        );
        assert_eq!(outcomes[1].tool, READ, "{provider}");
        let errors = [false, true, true];
        // (id, content, error flag if the format has one) of each result.
        let results: Vec<(Value, Value, Option<Value>)> = match provider {
            Provider::OpenAiChat => {
                assert_eq!(formatted.len(), 3);
                formatted
                    .iter()
                    .map(|m| {
                        assert_eq!(m["role"], "tool");
                        (m["tool_call_id"].clone(), m["content"].clone(), None)
                    })
                    .collect()
            }
            Provider::OpenAiResponses => {
                assert_eq!(formatted.len(), 3);
                formatted
                    .iter()
                    .map(|m| {
                        assert_eq!(m["type"], "function_call_output");
                        (m["call_id"].clone(), m["output"].clone(), None)
                    })
                    .collect()
            }
            Provider::Anthropic => {
                assert_eq!(formatted.len(), 1);
                assert_eq!(formatted[0]["role"], "user");
                formatted[0]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| {
                        assert_eq!(b["type"], "tool_result");
                        (
                            b["tool_use_id"].clone(),
                            b["content"].clone(),
                            Some(b["is_error"].clone()),
                        )
                    })
                    .collect()
            }
            Provider::Gemini => {
                assert_eq!(formatted.len(), 1);
                assert_eq!(formatted[0]["role"], "user");
                formatted[0]["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        let r = &p["functionResponse"];
                        assert_eq!(r["name"], "fs__workspace.read_file");
                        let (content, error) = match r["response"].get("error") {
                            Some(e) => (e.clone(), true),
                            None => (r["response"]["output"].clone(), false),
                        };
                        assert_eq!(r["response"].as_object().unwrap().len(), 1);
                        (r["id"].clone(), content, Some(json!(error)))
                    })
                    .collect()
            }
            Provider::Mcp => {
                assert_eq!(formatted.len(), 3);
                formatted
                    .iter()
                    .map(|m| {
                        assert_eq!(m["jsonrpc"], "2.0");
                        // The ids were numbers and go back as numbers.
                        let id = m["id"].as_u64().unwrap().to_string();
                        let result = &m["result"];
                        assert_eq!(result["content"].as_array().unwrap().len(), 1);
                        assert_eq!(result["content"][0]["type"], "text");
                        (
                            json!(id),
                            result["content"][0]["text"].clone(),
                            Some(result["isError"].clone()),
                        )
                    })
                    .collect()
            }
            Provider::Bedrock => {
                assert_eq!(formatted.len(), 1);
                assert_eq!(formatted[0]["role"], "user");
                formatted[0]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| {
                        let r = &b["toolResult"];
                        assert_eq!(r["content"].as_array().unwrap().len(), 1);
                        let error = match r["status"].as_str().unwrap() {
                            "error" => true,
                            "success" => false,
                            other => panic!("status {other}"),
                        };
                        (
                            r["toolUseId"].clone(),
                            r["content"][0]["text"].clone(),
                            Some(json!(error)),
                        )
                    })
                    .collect()
            }
        };
        assert_eq!(results.len(), 3, "{provider}");
        for (i, (id, content, error)) in results.into_iter().enumerate() {
            assert_eq!(id, json!(ids[i]), "{provider} {i}");
            assert_eq!(content, json!(rendered[i]), "{provider} {i}: not verbatim");
            if let Some(error) = error {
                assert_eq!(error, json!(errors[i]), "{provider} {i}");
            }
        }
        assert_eq!(
            provider.format_results(&[]),
            Vec::<Value>::new(),
            "{provider}"
        );
    }
}

#[test]
fn gemini_echoes_only_ids_it_was_given() {
    let calls = decode(Provider::Gemini, "parallel");
    let outcomes = outcomes(&calls);
    let replies: Vec<ToolReply> = calls
        .iter()
        .zip(&outcomes)
        .map(|(c, o)| c.reply(o))
        .collect();
    let formatted = Provider::Gemini.format_results(&replies);
    for part in formatted[0]["parts"].as_array().unwrap() {
        assert!(part["functionResponse"].get("id").is_none(), "{part}");
    }
    // An unknown name is answered under the name the model sent.
    let calls = decode(Provider::Gemini, "unknown");
    let outcome = calls[0].refusal_outcome().unwrap();
    let formatted = Provider::Gemini.format_results(&[calls[0].reply(&outcome)]);
    let response = &formatted[0]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "fs__workspace.delete_file");
    assert_eq!(response["response"]["error"], json!(outcome.render()));
}

#[test]
fn mcp_ids_go_back_with_their_json_type() {
    let calls = decode(Provider::Mcp, "parallel");
    let replies: Vec<ToolReply> = calls
        .iter()
        .map(|c| {
            let outcome = CallOutcome::new(c.id.clone(), READ, Err(CallError::Denied("no".into())));
            c.reply(&outcome)
        })
        .collect();
    let ids: Vec<Value> = Provider::Mcp
        .format_results(&replies)
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!("req-2"), json!(3)]);
}
