//! Encoding a request: the payload's text is its value's, entries are kept
//! per tool and shared by later requests, a new entry is encoded from its
//! own definition, and a clash sends the codec's name rather than a kept
//! entry's.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Inert, pending, registry};
use crate::cache::ToolCache;
use crate::wire::HashLens;
use crate::*;
use tiny_harness_core::registry::RegistrationLimits;
use tiny_harness_core::tool::Annotations;

/// [`registry`] and a tool with everything a definition may hold: a
/// title, an output schema, every hint, and a schema Gemini rewrites.
fn rich_registry() -> Registry {
    let mut registry = registry();
    let mut tool = pending(
        "kv",
        "put",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"key": {"$ref": "#/$defs/key"}, "value": {"type": ["string", "null"]}},
            "$defs": {"key": {"type": "string", "pattern": "^[a-z]+$"}},
            "required": ["key"],
        }),
    );
    tool.definition.title = Some("Put \"quoted\" \u{e9}".into());
    tool.definition.description = "Stores a value.\nLine two, \\ and \u{1F600}.".into();
    tool.definition.output_schema = Some(json!({"type": "object"}));
    tool.definition.annotations = Annotations {
        read_only: false,
        idempotent: true,
        destructive: true,
        open_world: true,
    };
    let limits = RegistrationLimits::default();
    registry
        .register("store", vec![tool], Arc::new(Inert), &limits)
        .unwrap();
    registry
}

#[test]
fn the_payload_writes_exactly_the_json_of_its_value() {
    let registry = rich_registry();
    for provider in Provider::ALL {
        // Cold (entries built now), then warm (entries and text kept).
        for round in ["cold", "warm"] {
            let request = provider.encode_registry(&registry);
            // A clone builds the value on its own, leaving `request.tools`
            // to write from its entries.
            let value: Value = request.tools.clone().into();
            let compact = serde_json::to_string(&value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            assert_eq!(request.tools.to_string(), compact, "{provider} {round}");
            let mut written = Vec::new();
            request.tools.write_json(&mut written).unwrap();
            assert_eq!(written, compact.as_bytes(), "{provider} {round}");
            assert_eq!(
                serde_json::to_string(&request.tools).unwrap(),
                compact,
                "{provider} {round}"
            );
            assert_eq!(
                serde_json::to_string_pretty(&request.tools).unwrap(),
                pretty,
                "{provider} {round}"
            );
            assert_eq!(format!("{:#}", request.tools), pretty, "{provider} {round}");
            assert_eq!(serde_json::to_value(&request.tools).unwrap(), value);
            assert_eq!(request.entries().len(), registry.len(), "{provider}");
        }
    }
}

#[test]
fn an_empty_request_has_the_empty_payload_of_its_provider() {
    for provider in Provider::ALL {
        let request = provider.encode_tools([]);
        let expected = match provider {
            Provider::Gemini => json!([{"functionDeclarations": []}]),
            Provider::Bedrock | Provider::Mcp => json!({"tools": []}),
            _ => json!([]),
        };
        assert_eq!(
            request.tools.to_string(),
            expected.to_string(),
            "{provider}"
        );
        assert_eq!(request.tools, expected, "{provider}");
    }
}

#[test]
fn a_payload_changed_through_its_value_writes_the_change() {
    let registry = registry();
    let mut request = Provider::Anthropic.encode_registry(&registry);
    let web_search = json!({"type": "web_search_20250305", "name": "web_search"});
    request
        .tools
        .as_array_mut()
        .unwrap()
        .push(web_search.clone());
    let written: Value = serde_json::from_str(&request.tools.to_string()).unwrap();
    assert_eq!(written.as_array().unwrap().len(), 4);
    assert_eq!(written[3], web_search);
    assert_eq!(serde_json::to_value(&request.tools).unwrap(), written);
    assert_eq!(request.entries().len(), 4);
    // The tools' kept entries are untouched.
    let again = Provider::Anthropic.encode_registry(&registry);
    assert_eq!(again.entries().len(), 3);
}

#[test]
fn a_later_request_shares_the_entries_of_the_first() {
    let registry = rich_registry();
    for provider in Provider::ALL {
        let first = provider.encode_registry(&registry);
        let second = provider.encode_registry(&registry);
        assert!(
            first.tools.shares_entries_with(&second.tools),
            "{provider}: the second request built its entries again"
        );
        assert_eq!(first.rewrites, second.rewrites, "{provider}");
        assert_eq!(first.tools.to_string(), second.tools.to_string());
    }
    // Gemini's subset is not the kept entry: rewritten each time, within
    // the bounds given; the kept one is the schema unchanged.
    let limits = SchemaLimits {
        max_ref_depth: 0,
        ..SchemaLimits::DEFAULT
    };
    let tools = || registry.tools().map(|tool| &**tool);
    let kept = Provider::Gemini.encode_registry(&registry);
    let subset =
        Provider::Gemini.encode_tools_with(tools(), GeminiSchema::Subset(SchemaLimits::DEFAULT));
    let cut = Provider::Gemini.encode_tools_with(tools(), GeminiSchema::Subset(limits));
    let put = |request: &EncodedRequest, field: &str| {
        let entries = request.entries();
        let put = entries.iter().find(|e| e["name"] == "store__kv.put");
        put.expect("store/kv.put is offered")[field].clone()
    };
    let original = &registry
        .get("store/kv.put")
        .unwrap()
        .definition
        .input_schema;
    assert_eq!(&put(&kept, "parametersJsonSchema"), original);
    assert_eq!(
        put(&kept, "parameters"),
        Value::Null,
        "one field, never both"
    );
    assert!(kept.rewrites.is_empty(), "nothing rewritten");
    assert_eq!(put(&subset, "parametersJsonSchema"), Value::Null);
    assert_ne!(put(&subset, "parameters"), put(&cut, "parameters"));
    assert!(!subset.tools.shares_entries_with(&kept.tools));
    assert_eq!(
        put(&cut, "parameters"),
        put(
            &Provider::Gemini.encode_tools_with(tools(), GeminiSchema::Subset(limits)),
            "parameters"
        )
    );
    assert_eq!(
        put(&kept, "parametersJsonSchema"),
        put(
            &Provider::Gemini.encode_registry(&registry),
            "parametersJsonSchema"
        )
    );
}

#[test]
fn a_replaced_tool_is_encoded_from_its_new_definition() {
    let before = registry();
    let old = Provider::OpenAiChat.encode_registry(&before);
    let mut changed = pending("workspace", "read_file", json!({"type": "object"}));
    changed.definition.description = "Reads, differently.".into();
    let keep = pending("workspace", "write_file", json!({"type": "object"}));
    let after = before
        .with_server_replaced(
            "fs",
            "workspace",
            vec![changed, keep],
            &RegistrationLimits::default(),
        )
        .unwrap();
    for provider in Provider::ALL {
        let request = provider.encode_registry(&after);
        let text = request.tools.to_string();
        assert!(text.contains("Reads, differently."), "{provider}: {text}");
        assert!(!text.contains("The read_file tool."), "{provider}: {text}");
    }
    // The old snapshot still encodes as it did.
    let again = Provider::OpenAiChat.encode_registry(&before);
    assert_eq!(again.tools.to_string(), old.tools.to_string());
    assert!(old.tools.to_string().contains("The read_file tool."));
}

#[test]
fn a_tool_whose_name_moved_on_in_a_clash_is_sent_under_the_codecs_name() {
    // Forty names sharing the first 60 characters are hashed under the
    // strict rule; with one base32 character of hash (32 values) some
    // clash and move on to longer hashes or the fallback.
    let long = "x".repeat(70);
    let tools = (0..40)
        .map(|i| pending("ws", &format!("{long}{i}"), json!({"type": "object"})))
        .collect();
    let mut registry = Registry::new();
    registry
        .register("fs", tools, Arc::new(Inert), &RegistrationLimits::default())
        .unwrap();
    for provider in [Provider::OpenAiChat, Provider::Bedrock, Provider::Gemini] {
        let rule = provider.rule();
        // Each tool's own entry, kept.
        let own = provider.encode_registry(&registry);
        let tools: Vec<&RegisteredTool> = registry.tools().map(|tool| &**tool).collect();
        let caches: Vec<&ToolCache> = tools.iter().map(|tool| ToolCache::of(tool)).collect();
        let names = tools.iter().map(|tool| tool.name.as_str());
        let codec = WireCodec::with_lens(rule, names, HashLens::new(1, 2));
        assert!(!codec.all_own());
        let request = encode::assemble(
            provider,
            &tools,
            &caches,
            codec.clone(),
            GeminiSchema::JsonSchema,
        );
        let mut moved = 0;
        for (entry, tool) in request.entries().into_iter().zip(&tools) {
            let sent = match provider {
                Provider::Bedrock => &entry["toolSpec"]["name"],
                Provider::OpenAiChat => &entry["function"]["name"],
                _ => &entry["name"],
            };
            let sent = sent.as_str().unwrap();
            assert_eq!(Some(sent), codec.encode(tool.name.as_str()), "{provider}");
            assert_eq!(codec.decode(sent), Ok(tool.name.as_str()), "{provider}");
            moved += usize::from(sent != rule.wire_name(tool.name.as_str()));
        }
        assert_eq!(moved, tools.len(), "{provider}: every name is hashed");
        // What is kept is still each tool's own entry.
        let again = provider.encode_registry(&registry);
        assert_eq!(again.tools.to_string(), own.tools.to_string(), "{provider}");
    }
}
