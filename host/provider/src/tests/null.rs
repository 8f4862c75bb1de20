//! A key whose value is `null` is absent, for every provider's decoder:
//! responses as the SDKs' default dumps save them (every unset field kept
//! as `null`) decode as the same responses without those keys, and a
//! value other than `null` under a key the decoder does not read is still
//! refused.

use serde_json::{Value, json};

use super::{READ, fixture, registry};
use crate::*;

/// `response` as an SDK's default dump leaves it: every field of the
/// response's types that was not set is there, as `null`.
fn with_nulls(provider: Provider, mut response: Value) -> Value {
    fn add(target: &mut Value, keys: &[&str]) {
        if let Some(map) = target.as_object_mut() {
            for key in keys {
                map.entry(*key).or_insert(Value::Null);
            }
        }
    }
    fn each(items: &mut Value, keys: &[&str]) {
        for item in items.as_array_mut().into_iter().flatten() {
            add(item, keys);
        }
    }
    match provider {
        Provider::OpenAiChat => {
            let message = &mut response["choices"][0]["message"];
            add(
                message,
                &["function_call", "audio", "refusal", "annotations"],
            );
            for call in message["tool_calls"].as_array_mut().into_iter().flatten() {
                add(&mut call["function"], &["strict"]);
            }
        }
        Provider::OpenAiResponses => {
            add(
                &mut response,
                &["error", "incomplete_details", "instructions"],
            );
            each(&mut response["output"], &["status", "id", "namespace"]);
        }
        Provider::Anthropic => {
            add(&mut response, &["stop_sequence", "container"]);
            each(&mut response["content"], &["caller", "citations"]);
        }
        Provider::Gemini => {
            add(&mut response, &["usageMetadata", "promptFeedback"]);
            add(
                &mut response["candidates"][0],
                &["finishMessage", "citationMetadata"],
            );
            let parts = &mut response["candidates"][0]["content"]["parts"];
            each(
                parts,
                &[
                    "toolCall",
                    "functionResponse",
                    "function_call",
                    "thought",
                    "codeExecutionResult",
                    "executableCode",
                    "text",
                ],
            );
            for part in parts.as_array_mut().into_iter().flatten() {
                add(&mut part["functionCall"], &["willContinue", "partialArgs"]);
            }
        }
        Provider::Bedrock => {
            add(&mut response, &["trace", "performanceConfig"]);
            each(
                &mut response["output"]["message"]["content"],
                &[
                    "text",
                    "toolUse",
                    "tool_use",
                    "toolResult",
                    "reasoningContent",
                ],
            );
        }
        Provider::Mcp => {
            let requests = match response.as_array_mut() {
                Some(batch) => batch.iter_mut().collect::<Vec<_>>(),
                None => vec![&mut response],
            };
            for request in requests {
                add(&mut request["params"], &["_meta", "task"]);
            }
        }
    }
    response
}

#[test]
fn a_key_whose_value_is_null_is_absent_for_every_provider() {
    for provider in Provider::ALL {
        let request = provider.encode_registry(&registry());
        let plain = fixture(provider, "parallel");
        let nulled = with_nulls(provider, plain.clone());
        assert_ne!(plain, nulled, "{provider}: the dump adds nulls");
        let expected = provider.decode_calls(&request.codec, &plain).unwrap();
        let decoded = provider
            .decode_calls(&request.codec, &nulled)
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        assert_eq!(decoded, expected, "{provider}");
        assert_eq!(decoded.len(), 3, "{provider}");
    }
    // A required field that is null is missing, and says so.
    let codec = WireCodec::new(WireRule::Strict, [READ]);
    let err = Provider::Anthropic
        .decode_calls(
            &codec,
            &json!({"content": [{"type": "tool_use", "id": "t", "name": "x", "input": null}]}),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed anthropic response: content[0].input must be present"
    );
}

#[test]
fn a_call_under_an_unread_key_is_still_refused_when_it_holds_something() {
    let codec = WireCodec::new(WireRule::Strict, [READ]);
    let cases = [
        (
            Provider::Gemini,
            json!({"candidates": [{"content": {"parts": [{"functionCall": null, "toolCall": {"name": "x"}}]}}]}),
            "candidates[0].content.parts[0].toolCall",
        ),
        (
            Provider::OpenAiChat,
            json!({"choices": [{"message": {"tool_calls": null, "function_call": {"name": "x", "arguments": "{}"}}}]}),
            "choices[0].message.function_call",
        ),
        (
            Provider::Bedrock,
            json!({"output": {"message": {"content": [{"toolUse": null, "tool_use": {"toolUseId": "t"}}]}}}),
            "output.message.content[0].tool_use",
        ),
    ];
    for (provider, response, at) in cases {
        let err = provider.decode_calls(&codec, &response).unwrap_err();
        let ProviderError::Malformed { at: found, .. } = &err;
        assert_eq!(found, at, "{provider}: {err}");
    }
}
