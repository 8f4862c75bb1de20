//! Decoding never panics, whatever a provider (or anything posing as one)
//! sends.

use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::Provider;
use crate::wire::WireCodec;

/// Field names of every provider's response, so that generated documents
/// reach deep into each decoder rather than failing at the top.
const KEYS: &[&str] = &[
    "choices",
    "message",
    "tool_calls",
    "type",
    "function",
    "name",
    "arguments",
    "id",
    "output",
    "call_id",
    "content",
    "input",
    "candidates",
    "parts",
    "functionCall",
    "args",
    "toolUse",
    "toolUseId",
    "function_call",
    "tool_use",
    "fs__workspace__read_file",
];

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(KEYS).prop_map(Value::from),
        prop_oneof![
            Just("{}"),
            Just("{\"path\":1}"),
            Just("[1"),
            Just(""),
            Just("null")
        ]
        .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

proptest! {
    #[test]
    fn decoding_arbitrary_json_never_panics(response in json()) {
        for provider in Provider::ALL {
            let codec = WireCodec::new(provider.rule(), ["fs/workspace.read_file"]);
            if let Ok(calls) = provider.decode_calls(&codec, &response) {
                for call in &calls {
                    prop_assert_eq!(call.call.is_err(), call.refusal_outcome().is_some());
                }
            }
        }
    }

    #[test]
    fn the_gemini_rewrite_never_panics_and_leaves_no_ref(schema in json()) {
        let (out, _) = crate::gemini_schema::rewrite(&schema, crate::SchemaLimits::DEFAULT);
        prop_assert!(!out.to_string().contains("\"$ref\""));
    }
}
