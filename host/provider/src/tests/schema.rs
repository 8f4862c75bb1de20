//! The Gemini schema rewrite: what it removes, what it reports, and where
//! it stops.

use serde_json::{Value, json};

// The rewriting step itself; the settling of refused shapes after it has
// its tests in `gemini_shapes.rs` and below.
use crate::gemini_schema::{SchemaLimits, SchemaRewrite, rewrite_unsettled as rewrite};

/// Every key anywhere in `value`, with the pointer of its object.
fn keys(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                out.push((at.to_owned(), key.clone()));
                keys(child, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                keys(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn has_keyword(schema: &Value, keyword: &str) -> bool {
    let mut found = Vec::new();
    keys(schema, "", &mut found);
    // `properties` maps names to schemas: a property may be called anything.
    found
        .iter()
        .any(|(at, key)| key == keyword && !at.ends_with("/properties"))
}

fn pointers(notes: &[SchemaRewrite]) -> Vec<&str> {
    notes.iter().map(|n| n.pointer.as_str()).collect()
}

fn pet_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "pet": {"$ref": "#/$defs/Pet"},
            "mode": {"const": "fast"},
            "size": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["pet"],
        "additionalProperties": false,
        "$defs": {
            "Pet": {
                "oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}}},
                    {"type": "object", "properties": {"kind": {"const": "dog"}}, "patternProperties": {"^x-": {}}},
                ],
            },
        },
    })
}

#[test]
fn unsupported_keywords_are_rewritten_or_dropped_and_each_is_named() {
    let (out, notes) = rewrite(&pet_schema(), SchemaLimits::DEFAULT);
    for keyword in [
        "$ref",
        "$defs",
        "oneOf",
        "additionalProperties",
        "const",
        "patternProperties",
        "$schema",
        "exclusiveMinimum",
    ] {
        assert!(!has_keyword(&out, keyword), "{keyword} left in {out:#}");
    }
    let pet = &out["properties"]["pet"];
    assert_eq!(
        pet["anyOf"][0]["properties"]["kind"],
        json!({"enum": ["cat"]})
    );
    assert_eq!(
        pet["anyOf"][1]["properties"]["kind"],
        json!({"enum": ["dog"]})
    );
    assert_eq!(out["properties"]["mode"], json!({"enum": ["fast"]}));
    assert_eq!(
        out["properties"]["size"],
        json!({"type": "integer", "nullable": true, "minimum": 0})
    );
    assert_eq!(out["properties"]["tags"], json!({"type": "object"}));
    assert_eq!(out["required"], json!(["pet"]));
    let found = pointers(&notes);
    for pointer in [
        "/$schema",
        "/properties/pet/$ref",
        "/properties/pet/oneOf",
        "/properties/pet/oneOf/0/properties/kind/const",
        "/properties/pet/oneOf/1/properties/kind/const",
        "/properties/pet/oneOf/1/patternProperties",
        "/properties/mode/const",
        "/properties/size/type",
        "/properties/size/exclusiveMinimum",
        "/properties/tags/additionalProperties",
        "/additionalProperties",
        "/$defs",
    ] {
        assert!(
            found.contains(&pointer),
            "{pointer} not reported in {found:#?}"
        );
    }
    let lossy = |p: &str| notes.iter().find(|n| n.pointer == p).unwrap().lossy;
    assert!(lossy("/properties/pet/oneOf") && lossy("/additionalProperties"));
    assert!(!lossy("/properties/pet/$ref") && !lossy("/$defs") && !lossy("/properties/mode/const"));
    assert!(
        notes
            .iter()
            .all(|n| !n.what.is_empty() && !n.what.contains('\n'))
    );
}

#[test]
fn a_supported_schema_is_unchanged_and_unreported() {
    let schema = json!({
        "type": "object",
        "description": "Read a file.",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 2},
            "when": {"type": "string", "format": "date-time", "nullable": true},
            "mode": {"type": "string", "enum": ["text", "bytes"]},
        },
        "required": ["path"],
    });
    let (out, notes) = rewrite(&schema, SchemaLimits::DEFAULT);
    assert_eq!(out, schema);
    assert_eq!(notes, Vec::new());
}

#[test]
fn a_recursive_ref_is_cut_with_a_note() {
    let tree = json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        }},
    });
    let limits = SchemaLimits {
        max_ref_depth: 3,
        max_nodes: 1000,
    };
    let (out, notes) = rewrite(&tree, limits);
    assert!(!has_keyword(&out, "$ref"));
    // Three levels inlined, then any value.
    let mut node = &out["properties"]["root"];
    for _ in 0..2 {
        assert_eq!(node["properties"]["name"], json!({"type": "string"}));
        node = &node["properties"]["children"]["items"];
    }
    assert_eq!(node["properties"]["children"]["items"], json!({}));
    let cut: Vec<&SchemaRewrite> = notes.iter().filter(|n| n.what.contains("cut")).collect();
    assert_eq!(cut.len(), 1, "{notes:#?}");
    assert_eq!(
        cut[0].pointer,
        "/properties/root/properties/children/items/properties/children/items/properties/children/items/$ref"
    );
    assert!(cut[0].lossy && cut[0].what.contains("3 deep"));
}

#[test]
fn an_exponential_schema_is_bounded_by_size() {
    // Each level refers to the next twice: 2^20 objects if fully inlined.
    let mut defs = serde_json::Map::new();
    for i in 0..20 {
        let next = format!("#/$defs/L{}", i + 1);
        defs.insert(
            format!("L{i}"),
            json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next}}}),
        );
    }
    defs.insert("L20".into(), json!({"type": "string"}));
    let schema = json!({"$ref": "#/$defs/L0", "$defs": defs});
    let limits = SchemaLimits {
        max_ref_depth: 64,
        max_nodes: 500,
    };
    let (out, notes) = rewrite(&schema, limits);
    let mut found = Vec::new();
    keys(&out, "", &mut found);
    let objects = found.iter().filter(|(_, k)| k == "properties").count();
    assert!(objects <= 500 + 64 * 3, "{objects}");
    assert!(
        notes
            .iter()
            .any(|n| n.lossy && n.what.contains("500 schema objects"))
    );
}

#[test]
fn allof_members_merge_and_other_refs_are_dropped() {
    let schema = json!({
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "number"}}, "required": ["b"]},
        ],
        "properties": {"c": {"$ref": "https://example.com/c.json"}, "d": {"$ref": "#/nowhere"}},
    });
    let (out, notes) = rewrite(&schema, SchemaLimits::DEFAULT);
    assert_eq!(out["type"], "object");
    assert_eq!(out["required"], json!(["a", "b"]));
    for name in ["a", "b", "c", "d"] {
        assert!(out["properties"].get(name).is_some(), "{name}: {out}");
    }
    assert_eq!(out["properties"]["c"], json!({}));
    assert!(!has_keyword(&out, "allOf") && !has_keyword(&out, "$ref"));
    let found = pointers(&notes);
    assert!(
        found.contains(&"/allOf")
            && found.contains(&"/properties/c/$ref")
            && found.contains(&"/properties/d/$ref")
    );
}

#[test]
fn non_string_enums_and_false_schemas_are_reported_as_lossy() {
    let schema = json!({"type": "object", "properties": {
        "n": {"enum": [1, 2]},
        "never": false,
        "k": {"const": 3},
        "weird~/key": {"uniqueItems": true},
    }});
    let (out, notes) = rewrite(&schema, SchemaLimits::DEFAULT);
    assert_eq!(out["properties"]["n"], json!({}));
    assert_eq!(out["properties"]["never"], json!({}));
    for pointer in [
        "/properties/n/enum",
        "/properties/never",
        "/properties/k/const",
        "/properties/weird~0~1key/uniqueItems",
    ] {
        let note = notes
            .iter()
            .find(|n| n.pointer == pointer)
            .unwrap_or_else(|| panic!("{pointer}: {notes:#?}"));
        assert!(note.lossy, "{pointer}");
    }
}

/// Where `schema` (a subset rewrite's output) has a shape the Gemini API
/// is reported to refuse.
fn refused_shapes(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if let Some(branches) = map.get("anyOf").and_then(Value::as_array) {
        if map.contains_key("description") || map.contains_key("title") {
            out.push(format!("{at}: anyOf beside a description"));
        }
        for (i, branch) in branches.iter().enumerate() {
            refused_shapes(branch, &format!("{at}/anyOf/{i}"), out);
        }
        return;
    }
    match map.get("type").and_then(Value::as_str) {
        None => out.push(format!("{at}: no type")),
        Some("object") => match map.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                for (name, property) in properties {
                    refused_shapes(property, &format!("{at}/properties/{name}"), out);
                }
            }
            _ => out.push(format!("{at}: an object without properties")),
        },
        Some("array") => match map.get("items") {
            Some(items) => refused_shapes(items, &format!("{at}/items"), out),
            None => out.push(format!("{at}: an array without items")),
        },
        Some(_) => {}
    }
}

#[test]
fn the_subset_of_every_intrinsic_has_no_shape_gemini_refuses() {
    let mut settled = 0;
    for spec in tiny_harness_intrinsic::SPECS {
        let schema = spec.input_schema();
        let (raw, _) = rewrite(&schema, SchemaLimits::DEFAULT);
        let mut before = Vec::new();
        refused_shapes(&raw, "", &mut before);
        let (out, notes) = crate::gemini_schema::rewrite(&schema, SchemaLimits::DEFAULT);
        if out.is_null() {
            assert!(notes.iter().any(|n| n.pointer.is_empty()), "{}", spec.name);
            continue;
        }
        let mut after = Vec::new();
        refused_shapes(&out, "", &mut after);
        assert!(after.is_empty(), "{}: {after:?}\n{out:#}", spec.name);
        settled += before.len();
    }
    // Not vacuous: the unsettled rewrite had such shapes (emit_ui's
    // `version`, `set_participant_role`'s `role`, list_skills' root).
    assert!(settled >= 3, "{settled}");
}
