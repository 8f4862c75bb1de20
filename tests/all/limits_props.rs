//! Property tests: random registrations and random results, through the
//! real host and the hostile plugin. Whatever a plugin sends, the host never
//! panics, never keeps more than its limits allow, and every refusal is one
//! line with no raw control character.

use proptest::prelude::*;
use serde_json::{Value, json};
use tiny_harness_core::tool::PART_FRAMING_BYTES;
use tiny_harness_host::{HostBuilder, ToolCall};
use tiny_harness_wasm::{CompileCache, PluginEngine};

use crate::common::hostile;
use crate::hardening::assert_one_clean_line;

/// Text with the characters that break terminals and parsers mixed in.
fn nasty_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => any::<char>().prop_map(String::from),
            1 => Just("\u{1b}[2J".to_owned()),
            1 => Just("\n".to_owned()),
            1 => Just("\r".to_owned()),
            1 => Just("\u{202e}".to_owned()),
            1 => Just("\u{9b}".to_owned()),
        ],
        0..max,
    )
    .prop_map(|parts| parts.concat())
}

/// A name: usually valid, sometimes anything.
fn name(valid: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![12 => valid, 1 => nasty_text(12)]
}

/// A schema's text: valid, invalid, not JSON, a pattern, or a fan-out of
/// random depth.
fn schema_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just(r#"{"type": "object"}"#.to_owned()),
        1 => Just(r#"{"type": 12}"#.to_owned()),
        1 => nasty_text(40),
        2 => nasty_text(20).prop_map(|p| json!({"type": "string", "pattern": p}).to_string()),
        2 => (1usize..40).prop_map(|depth| {
            let defs: serde_json::Map<String, Value> = (0..depth)
                .map(|i| {
                    let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
                    let def = if i + 1 == depth {
                        json!({"type": "integer"})
                    } else {
                        json!({"anyOf": [next.clone(), next]})
                    };
                    (format!("d{i}"), def)
                })
                .collect();
            json!({"$defs": defs, "$ref": "#/$defs/d0"}).to_string()
        }),
        2 => (0usize..2000).prop_map(|n| json!({"description": "d".repeat(n)}).to_string()),
    ]
}

fn tool() -> impl Strategy<Value = Value> {
    (
        name("[A-Za-z0-9_.-]{1,10}"),
        prop_oneof![4 => nasty_text(60), 1 => (0usize..3000).prop_map(|n| "x".repeat(n))],
        schema_text(),
        proptest::option::of(schema_text()),
    )
        .prop_map(|(name, description, input, output)| {
            json!({"name": name, "description": description, "input_schema": input,
                   "output_schema": output})
        })
}

fn servers() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        (name("[a-z0-9_-]{1,8}"), prop::collection::vec(tool(), 0..5))
            .prop_map(|(name, tools)| json!({"name": name, "tools": tools})),
        1..4,
    )
}

/// One engine for every case, with a compile cache, so that a case costs
/// an instantiation rather than a compilation.
fn engine() -> PluginEngine {
    use std::sync::OnceLock;
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    PluginEngine::with_compile_cache(Some(CompileCache::new(dir.path().to_owned()))).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_registrations_are_bounded_or_refused_in_one_line(
        servers in servers(),
        tools in 1usize..16,
        server_limit in 1usize..6,
        description in 16usize..4096,
        schema in 64usize..4096,
        total in 256usize..20_000,
    ) {
        let mut spec = hostile("custom");
        spec.config = json!({"mode": "custom", "servers": servers});
        let r = &mut spec.limits.registration;
        (r.tools, r.servers, r.description_bytes, r.schema_bytes, r.total_bytes) =
            (tools, server_limit, description, schema, total);
        let limits = spec.limits.registration;
        runtime().block_on(async {
            let host = HostBuilder::new().engine(engine()).build().await.unwrap();
            match host.load_plugin(spec).await {
                Ok(count) => {
                    let registry = host.registry();
                    prop_assert!(count <= limits.tools);
                    let servers: std::collections::BTreeSet<&str> =
                        registry.tools().map(|t| t.name.server()).collect();
                    prop_assert!(servers.len() <= limits.servers);
                    let mut sum = 0;
                    for t in registry.tools() {
                        prop_assert!(t.definition.description.len() <= limits.description_bytes);
                        let size = t.definition.input_schema.to_string().len();
                        prop_assert!(size <= limits.schema_bytes);
                        prop_assert!(t.schema.cost() <= limits.schema_cost);
                        sum += t.definition.description.len() + size;
                    }
                    prop_assert!(sum <= limits.total_bytes);
                }
                Err(err) => {
                    prop_assert!(host.registry().is_empty());
                    assert_one_clean_line(&err.to_string());
                }
            }
            Ok(())
        })?;
    }

    #[test]
    fn random_results_are_bounded_or_refused_in_one_line(
        parts in prop::collection::vec(
            prop_oneof![
                nasty_text(200).prop_map(Value::String),
                any::<i64>().prop_map(|n| json!({"count": n})),
                nasty_text(50).prop_map(|s| json!({"count": 1, "note": s})),
            ],
            0..12,
        ),
        is_error in any::<bool>(),
        result_bytes in 256usize..8192,
        result_parts in 1usize..10,
    ) {
        let mut spec = hostile("normal");
        spec.limits.result_bytes = result_bytes;
        spec.limits.result_parts = result_parts;
        runtime().block_on(async {
            let host = HostBuilder::new().engine(engine()).plugin(spec).build().await.unwrap();
            let outcome = host.invoke(&ToolCall {
                id: "p".into(),
                name: "hostile/chaos.structured".into(),
                arguments: json!({"parts": parts, "is_error": is_error}),
            }).await;
            let rendered = outcome.render();
            match &outcome.result {
                Ok(result) => {
                    prop_assert!(result.content.len() <= result_parts);
                    let cost: usize = result
                        .content
                        .iter()
                        .map(|p| p.size() + PART_FRAMING_BYTES)
                        .sum();
                    prop_assert!(cost <= result_bytes, "{cost} > {result_bytes}");
                }
                Err(error) => {
                    assert_one_clean_line(&error.to_string());
                    prop_assert!(rendered.len() < 4096 + 1024);
                }
            }
            Ok(())
        })?;
    }
}
