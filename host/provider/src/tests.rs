//! The adapters against the fixtures in `tests/fixtures/providers`, one
//! directory per provider, each holding `parallel.json` (three calls),
//! `malformed.json` (a good call, then two whose arguments are not an
//! object), `unknown.json` (a call to a tool not offered, then a good one)
//! and `none.json` (no calls).

mod encode;
mod null;
mod props;
mod results;
mod schema;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use tiny_harness_core::registry::RegistrationLimits;
use tiny_harness_core::source::{CallFuture, CallLimits, PendingTool, ToolSource};
use tiny_harness_core::tool::{Annotations, ToolDefinition};

pub(super) const READ: &str = "fs/workspace.read_file";
const WRITE: &str = "fs/workspace.write_file";
const RUN: &str = "shell/exec.run";

/// A source whose tools never run: these tests stop before the invoker.
#[derive(Debug)]
pub(super) struct Inert;

impl ToolSource for Inert {
    fn kind(&self) -> &'static str {
        "test"
    }
    fn call_limits(&self) -> CallLimits {
        CallLimits::new(Duration::from_secs(1), 1 << 20)
    }
    fn list_tools(&self) -> tiny_harness_core::source::ListFuture<'_> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn call<'a>(
        &'a self,
        _server: &'a str,
        _tool: &'a str,
        _arguments: &'a Value,
        _deadline: Instant,
    ) -> CallFuture<'a> {
        Box::pin(async { Err(CallError::Unavailable("inert test source".into())) })
    }
}

pub(super) fn pending(server: &str, name: &str, schema: Value) -> PendingTool {
    PendingTool {
        server: server.into(),
        definition: ToolDefinition {
            name: name.into(),
            title: None,
            description: format!("The {name} tool."),
            input_schema: schema,
            output_schema: None,
            annotations: Annotations::default(),
        },
    }
}

pub(super) fn path_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}

/// `fs/workspace.read_file`, `fs/workspace.write_file`, `shell/exec.run`.
pub(super) fn registry() -> Registry {
    let mut registry = Registry::new();
    let limits = RegistrationLimits::default();
    let write = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": false,
    });
    let fs = vec![
        pending("workspace", "read_file", path_schema()),
        pending("workspace", "write_file", write),
    ];
    registry
        .register("fs", fs, Arc::new(Inert), &limits)
        .unwrap();
    let run = json!({"type": "object", "properties": {"argv": {"type": "array", "items": {"type": "string"}}}});
    let shell = vec![pending("exec", "run", run)];
    registry
        .register("shell", shell, Arc::new(Inert), &limits)
        .unwrap();
    registry
}

pub(super) fn fixture(provider: Provider, name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/providers/{}/{name}.json",
        env!("CARGO_MANIFEST_DIR"),
        provider.as_str()
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub(super) fn decode(provider: Provider, name: &str) -> Vec<DecodedCall> {
    let request = provider.encode_registry(&registry());
    provider
        .decode_calls(&request.codec, &fixture(provider, name))
        .unwrap_or_else(|e| panic!("{provider} {name}: {e}"))
}

/// The ids of the three calls in each provider's `parallel.json`.
fn parallel_ids(provider: Provider) -> [&'static str; 3] {
    match provider {
        Provider::OpenAiChat => ["call_12345xyz", "call_67890abc", "call_99999def"],
        Provider::OpenAiResponses => [
            "call_unLAR8MvFNptuiZK6K6HCy5k",
            "call_2bKq9ZbXJ3cT0Yp6HdPq1xYv",
            "call_Zz81mC3pQe0uHh2L4a9sD0nB",
        ],
        Provider::Anthropic => [
            "toolu_01A09q90qw90lq917835lq9",
            "toolu_01B18r81rx81mr826724mr8",
            "toolu_01C27s72sy72ns735613ns7",
        ],
        // Gemini sent no ids: they are invented from the part index.
        Provider::Gemini => ["gemini-1", "gemini-2", "gemini-3"],
        Provider::Bedrock => [
            "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
            "tooluse_5wqXy2GqTzG0PRmL3xC9bA",
            "tooluse_Q1x2y3z4A5b6C7d8E9f0gH",
        ],
        // JSON-RPC ids 1, "req-2" and 3.
        Provider::Mcp => ["1", "req-2", "3"],
    }
}

/// Each offered tool's `(wire name, schema)` in a provider's payload.
fn offered(provider: Provider, tools: &Value) -> Vec<(String, Value)> {
    let entries: Vec<&Value> = match provider {
        Provider::Gemini => tools[0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .collect(),
        Provider::Bedrock | Provider::Mcp => tools["tools"].as_array().unwrap().iter().collect(),
        _ => tools.as_array().unwrap().iter().collect(),
    };
    entries
        .into_iter()
        .map(|entry| {
            let (name, schema) = match provider {
                Provider::OpenAiChat => {
                    (&entry["function"]["name"], &entry["function"]["parameters"])
                }
                Provider::OpenAiResponses => (&entry["name"], &entry["parameters"]),
                Provider::Anthropic => (&entry["name"], &entry["input_schema"]),
                Provider::Gemini => (&entry["name"], &entry["parametersJsonSchema"]),
                Provider::Bedrock => (
                    &entry["toolSpec"]["name"],
                    &entry["toolSpec"]["inputSchema"]["json"],
                ),
                Provider::Mcp => (&entry["name"], &entry["inputSchema"]),
            };
            (name.as_str().unwrap().to_owned(), schema.clone())
        })
        .collect()
}

#[test]
fn provider_names_are_the_cli_names() {
    let names: Vec<&str> = Provider::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "openai-chat",
            "openai-responses",
            "anthropic",
            "gemini",
            "bedrock",
            "mcp"
        ]
    );
    for provider in Provider::ALL {
        assert_eq!(provider.as_str().parse::<Provider>(), Ok(provider));
    }
    let err = "OpenAI".parse::<Provider>().unwrap_err();
    assert!(err.to_string().contains("openai-chat"), "{err}");
}

#[test]
fn every_offered_tool_appears_with_its_wire_name_and_schema() {
    let registry = registry();
    for provider in Provider::ALL {
        let request = provider.encode_registry(&registry);
        let offered = offered(provider, &request.tools);
        assert_eq!(offered.len(), 3, "{provider}");
        for ((wire, schema), tool) in offered.iter().zip(registry.tools()) {
            assert_eq!(
                Some(wire.as_str()),
                request.codec.encode(tool.name.as_str()),
                "{provider}"
            );
            assert!(provider.rule().check(wire), "{provider}: {wire}");
            // Every provider, Gemini included, gets the schema unchanged.
            assert_eq!(schema, &tool.definition.input_schema, "{provider}");
        }
        let wires: Vec<&str> = offered.iter().map(|(w, _)| w.as_str()).collect();
        let expected = match provider {
            Provider::Gemini | Provider::Mcp => [
                "fs__workspace.read_file",
                "fs__workspace.write_file",
                "shell__exec.run",
            ],
            _ => [
                "fs__workspace__read_file",
                "fs__workspace__write_file",
                "shell__exec__run",
            ],
        };
        assert_eq!(wires, expected, "{provider}");
    }
}

#[test]
fn tool_entries_have_the_documented_shape() {
    let registry = registry();
    let read = registry.get(READ).unwrap();
    let tools = |p: Provider| p.encode_tools([&**read]).tools;
    let description = "The read_file tool.";
    let wire = "fs__workspace__read_file";
    assert_eq!(
        tools(Provider::OpenAiChat),
        json!([{"type": "function", "function": {"name": wire, "description": description, "parameters": path_schema()}}])
    );
    // Responses defaults `strict` to true, which would refuse ordinary schemas.
    assert_eq!(
        tools(Provider::OpenAiResponses),
        json!([{"type": "function", "name": wire, "description": description, "parameters": path_schema(), "strict": false}])
    );
    assert_eq!(
        tools(Provider::Anthropic),
        json!([{"name": wire, "description": description, "input_schema": path_schema()}])
    );
    assert_eq!(
        tools(Provider::Gemini),
        json!([{"functionDeclarations": [{"name": "fs__workspace.read_file", "description": description, "parametersJsonSchema": path_schema()}]}])
    );
    assert_eq!(
        tools(Provider::Mcp),
        json!({"tools": [{
            "name": "fs__workspace.read_file",
            "description": description,
            "inputSchema": path_schema(),
            "annotations": {"readOnlyHint": false, "idempotentHint": false},
        }]})
    );
    assert_eq!(
        tools(Provider::Bedrock),
        json!({"tools": [{"toolSpec": {"name": wire, "description": description, "inputSchema": {"json": path_schema()}}}]})
    );
}

#[test]
fn a_tool_given_twice_is_offered_once() {
    let registry = registry();
    let read = registry.get(READ).unwrap();
    for provider in Provider::ALL {
        let request = provider.encode_tools([&**read, &**read]);
        assert_eq!(offered(provider, &request.tools).len(), 1, "{provider}");
        assert_eq!(request.codec.len(), 1);
    }
}

#[test]
fn parallel_calls_decode_in_order_with_ids_and_registry_names() {
    for provider in Provider::ALL {
        let calls = decode(provider, "parallel");
        let expected = [
            (READ, json!({"path": "README.md"})),
            (
                WRITE,
                json!({"path": "notes/todo.md", "content": "- ship the adapters\n"}),
            ),
            (READ, json!({"path": "Cargo.toml"})),
        ];
        assert_eq!(calls.len(), 3, "{provider}");
        for ((decoded, (name, arguments)), id) in
            calls.iter().zip(expected).zip(parallel_ids(provider))
        {
            let call = decoded
                .call
                .as_ref()
                .unwrap_or_else(|r| panic!("{provider}: {r:?}"));
            assert_eq!(
                (call.id.as_str(), decoded.id.as_str()),
                (id, id),
                "{provider}"
            );
            assert_eq!(call.name, name, "{provider}");
            assert_eq!(call.arguments, arguments, "{provider}");
            let origin = match provider {
                Provider::Gemini => IdOrigin::Invented,
                Provider::Mcp if id != "req-2" => IdOrigin::Number,
                _ => IdOrigin::Given,
            };
            assert_eq!(decoded.origin, origin, "{provider}");
            assert_eq!(
                decoded.call.as_ref().ok().map(|c| c.name.as_str()),
                Some(name)
            );
        }
    }
}

#[test]
fn arguments_that_are_not_an_object_are_refused() {
    for provider in Provider::ALL {
        let calls = decode(provider, "malformed");
        assert_eq!(calls.len(), 3, "{provider}");
        assert_eq!(
            calls[0].call.as_ref().unwrap().arguments,
            json!({"path": "README.md"})
        );
        for refused in &calls[1..] {
            let refusal = refused.call.as_ref().unwrap_err();
            assert_eq!(refusal.name.as_deref(), Some(READ), "{provider}");
            let CallError::InvalidArguments { violations } = &refusal.error else {
                panic!("{provider}: {:?}", refusal.error);
            };
            assert_eq!(violations.len(), 1, "{provider}");
            assert_eq!(violations[0].instance_path, "", "{provider}");
            assert!(
                violations[0].message.contains("JSON"),
                "{provider}: {}",
                violations[0].message
            );
            let outcome = refused.refusal_outcome().unwrap();
            assert_eq!(
                (outcome.call_id.as_str(), outcome.tool.as_str()),
                (refused.id.as_str(), READ)
            );
            assert!(outcome.render().contains("invalid_arguments"), "{provider}");
        }
    }
    // OpenAI sends a JSON text: broken text and a non-object say different things.
    let calls = decode(Provider::OpenAiChat, "malformed");
    let message = |i: usize| calls[i].call.as_ref().unwrap_err().error.to_string();
    assert!(message(1).contains("not valid JSON"), "{}", message(1));
    assert!(
        message(2).contains("a JSON array, not an object"),
        "{}",
        message(2)
    );
}

#[test]
fn names_not_offered_are_refused_as_unknown_and_never_guessed() {
    for provider in Provider::ALL {
        let calls = decode(provider, "unknown");
        assert_eq!(calls.len(), 2, "{provider}");
        let refusal = calls[0].call.as_ref().unwrap_err();
        assert_eq!(refusal.name, None, "{provider}");
        let CallError::UnknownTool { name } = &refusal.error else {
            panic!("{provider}: {:?}", refusal.error);
        };
        assert_eq!(name, &calls[0].wire_name, "{provider}");
        assert!(name.contains("delete_file"), "{provider}");
        assert_eq!(
            calls[0]
                .refusal_outcome()
                .unwrap()
                .result
                .unwrap_err()
                .code(),
            "unknown_tool"
        );
        assert_eq!(calls[1].call.as_ref().unwrap().name, READ, "{provider}");
        assert!(calls[1].refusal_outcome().is_none());
    }
    // The registry name itself is not a wire name, nor is a case variant.
    let codec = Provider::OpenAiChat.encode_registry(&registry()).codec;
    for name in [READ, "FS__WORKSPACE__READ_FILE", "fs__workspace__read_fil"] {
        let mut response = fixture(Provider::OpenAiChat, "parallel");
        response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = json!(name);
        let calls = Provider::OpenAiChat
            .decode_calls(&codec, &response)
            .unwrap();
        assert!(
            matches!(
                calls[0].call,
                Err(Refusal {
                    error: CallError::UnknownTool { .. },
                    ..
                })
            ),
            "{name}"
        );
    }
}

#[test]
fn responses_without_calls_give_none() {
    for provider in Provider::ALL {
        assert_eq!(decode(provider, "none"), Vec::new(), "{provider}");
    }
    // Gemini: a candidate stopped without content has no calls either.
    let codec = Provider::Gemini.encode_registry(&registry()).codec;
    let blocked = json!({"candidates": [{"finishReason": "SAFETY", "index": 0}]});
    assert_eq!(
        Provider::Gemini.decode_calls(&codec, &blocked).unwrap(),
        Vec::new()
    );
}

#[test]
fn malformed_responses_are_one_line_errors() {
    let codec = WireCodec::new(WireRule::Strict, [READ]);
    let cases = [
        (Provider::OpenAiChat, json!({}), "choices"),
        (Provider::OpenAiChat, json!({"choices": []}), "choices"),
        (
            Provider::OpenAiChat,
            json!({"choices": [{"message": {"tool_calls": [{"type": "function", "function": {"name": "x", "arguments": "{}"}}]}}]}),
            "choices[0].message.tool_calls[0].id",
        ),
        (
            Provider::OpenAiResponses,
            json!({"output": [{"type": "function_call", "name": "x", "arguments": "{}"}]}),
            "output[0].call_id",
        ),
        (Provider::OpenAiResponses, json!([]), "the response"),
        (
            Provider::Anthropic,
            json!({"content": [{"type": "tool_use", "id": "t", "name": "x"}]}),
            "content[0].input",
        ),
        (Provider::Gemini, json!({"candidates": []}), "candidates"),
        (
            Provider::Gemini,
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}),
            "candidates[0].content.parts[0].functionCall.name",
        ),
        (
            Provider::Bedrock,
            json!({"output": {"message": {"content": [{"toolUse": {"toolUseId": 7, "name": "x", "input": {}}}]}}}),
            "output.message.content[0].toolUse.toolUseId",
        ),
        (
            Provider::Bedrock,
            json!({"stopReason": "end_turn"}),
            "output",
        ),
        (
            Provider::Mcp,
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x"}}),
            "id",
        ),
        (
            Provider::Mcp,
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]),
            "[0].method",
        ),
        (
            Provider::Mcp,
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "x"}}),
            "id",
        ),
    ];
    for (provider, response, at) in cases {
        let err = provider.decode_calls(&codec, &response).unwrap_err();
        let ProviderError::Malformed { at: found, .. } = &err;
        assert_eq!(found, at, "{provider}: {err}");
        let text = err.to_string();
        assert!(
            !text.contains('\n') && text.contains(provider.as_str()),
            "{text}"
        );
    }
}

#[test]
fn gemini_rewrites_are_kept_per_tool_on_the_request() {
    // By default nothing is rewritten: the schema goes unchanged.
    assert!(
        Provider::Gemini
            .encode_registry(&registry())
            .rewrites
            .is_empty()
    );
    let subset = GeminiSchema::Subset(SchemaLimits::DEFAULT);
    let request = Provider::Gemini.encode_tools_with(registry().tools().map(|t| &**t), subset);
    // Only write_file has something Gemini lacks (additionalProperties).
    assert_eq!(request.rewrites.len(), 1, "{:?}", request.rewrites);
    assert_eq!(request.rewrites[0].tool, WRITE);
    let rewrites = &request.rewrites[0].rewrites;
    assert_eq!(rewrites.len(), 1);
    assert_eq!(rewrites[0].pointer, "/additionalProperties");
    assert!(rewrites[0].lossy);
    for provider in [Provider::OpenAiChat, Provider::Anthropic, Provider::Bedrock] {
        assert!(provider.encode_registry(&registry()).rewrites.is_empty());
    }
    // The registry still holds, and validates against, the original.
    let write = registry();
    let entry = write.get(WRITE).unwrap();
    assert_eq!(entry.definition.input_schema["additionalProperties"], false);
    assert!(
        entry
            .schema
            .validate(&json!({"path": "a", "content": "b", "extra": 1}))
            .is_err()
    );
    let _ = RUN;
}
