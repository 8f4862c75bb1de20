//! Compiling, admitting and validating: the schema module's own tests.

use super::*;
use serde_json::json;

/// Admitting a value whose size is known decides as a full walk does,
/// on both sides of every shortcut: a deep nest just short of and past
/// the depth serde_json parses, costly and cheap schemas.
#[test]
fn admitting_by_known_size_decides_as_the_walk_does() {
    let nest = |levels: usize| {
        let mut value = json!(1);
        for _ in 0..levels {
            value = json!([value]);
        }
        value
    };
    let recursive = json!({"$defs": {"n": {"anyOf": [{"type": "integer"},
        {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}, "$ref": "#/$defs/n"});
    let costly = json!({"type": "array", "items": {"anyOf": [
        {"pattern": "^a+$"}, {"pattern": "^b+$"}, {"pattern": "^c+$"}]}});
    let schemas = [json!({}), json!({"type": "object"}), recursive, costly];
    let values = [
        json!({"name": "bench"}),
        json!([]),
        nest(60),
        nest(127),
        nest(128),
        nest(129),
        nest(500),
        json!(vec!["x".repeat(100); 400]),
    ];
    for schema in &schemas {
        let compiled = CompiledSchema::compile(schema, u64::MAX / 4).unwrap();
        for value in &values {
            let len = crate::tool::compact_json_len(value, usize::MAX);
            assert_eq!(
                compiled.admit_sized(value, Some(len)),
                compiled.admit(value),
                "{schema} over a value of {len} bytes"
            );
        }
    }
    // The deepest nest serde_json parses is admitted; one level more
    // is not, known size or not.
    let plain = CompiledSchema::compile(&json!({}), 1000).unwrap();
    let len = |v: &serde_json::Value| crate::tool::compact_json_len(v, usize::MAX);
    assert!(plain.admit_sized(&nest(128), Some(len(&nest(128)))).is_ok());
    assert!(
        plain
            .admit_sized(&nest(129), Some(len(&nest(129))))
            .is_err()
    );
}

#[test]
fn hash_ignores_key_order_and_number_spelling() {
    let a: serde_json::Value = serde_json::from_str(r#"{"b":1.0,"a":[1e2]}"#).unwrap();
    let b: serde_json::Value = serde_json::from_str(r#"{"a":[100],"b":1}"#).unwrap();
    assert_eq!(SchemaHash::of(&a), SchemaHash::of(&b));
    assert_ne!(
        SchemaHash::of(&a),
        SchemaHash::of(&json!({"a": [100], "b": 2}))
    );
    assert_eq!(SchemaHash::of(&a).as_str().len(), 64);
}

#[test]
fn violations_carry_json_pointers() {
    let schema = CompiledSchema::compile_default(&json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["items"]
    }))
    .unwrap();
    assert!(schema.validate(&json!({"items": [1, 2]})).is_ok());
    let violations = schema.validate(&json!({"items": [1, "two"]})).unwrap_err();
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].instance_path, "/items/1");
    assert!(
        violations[0].schema_path.ends_with("/type"),
        "{violations:?}"
    );
}

#[test]
fn draft_2020_12_is_the_default() {
    // `prefixItems` exists only from 2020-12 on.
    let schema = CompiledSchema::compile_default(&json!({
        "type": "array", "prefixItems": [{"type": "string"}]
    }))
    .unwrap();
    assert!(schema.validate(&json!([1])).is_err());
    // Draft 7 ignores `prefixItems`, honouring `$schema`.
    let draft7 = CompiledSchema::compile_default(&json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array", "prefixItems": [{"type": "string"}]
    }))
    .unwrap();
    assert!(draft7.validate(&json!([1])).is_ok());
}

#[test]
fn invalid_schemas_and_remote_refs_are_refused() {
    assert!(CompiledSchema::compile_default(&json!({"type": 12})).is_err());
    assert!(CompiledSchema::compile_default(&json!("object")).is_err());
    let err = CompiledSchema::compile_default(&json!({"$ref": "https://example.com/schema.json"}))
        .unwrap_err();
    assert!(err.to_string().contains("not allowed"), "{err}");
}

#[test]
fn backtracking_patterns_run_in_linear_time() {
    // Exponential under a backtracking engine; the linear engine answers
    // at once (a regression would hang here, not fail).
    let schema = CompiledSchema::compile_default(&json!({"pattern": "^(a+)+$"})).unwrap();
    let evil = format!("{}!", "a".repeat(40));
    assert!(schema.validate(&json!(evil)).is_err());
    assert!(schema.validate(&json!("a".repeat(40))).is_ok());
    let keys = CompiledSchema::compile_default(&json!({
        "patternProperties": {"^(a|aa)+$": {"type": "integer"}}
    }))
    .unwrap();
    assert!(keys.validate(&json!({evil: "x"})).is_ok());
}

#[test]
fn patterns_the_linear_engine_cannot_run_are_refused_at_compile() {
    for (schema, at) in [
        (json!({"pattern": "^(?=.*[0-9]).{8,}$"}), "/pattern"),
        (
            json!({"properties": {"p": {"pattern": "(a)\\1"}}}),
            "/properties/p/pattern",
        ),
        (
            json!({"patternProperties": {"^(?!x)": {}}}),
            "/patternProperties",
        ),
    ] {
        let err = CompiledSchema::compile_default(&schema).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, SchemaError::Invalid { .. }), "{message}");
        assert!(
            message.contains("regex") && message.contains(at),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }
}

#[test]
fn format_regex_is_an_annotation_by_default_and_bounded_when_asserted() {
    let annotation = CompiledSchema::compile_default(&json!({"format": "regex"})).unwrap();
    assert!(annotation.validate(&json!("^(a")).is_ok());
    let asserted = CompiledSchema::compile_default(&json!({
        "$schema": "http://json-schema.org/draft-07/schema#", "format": "regex"
    }))
    .unwrap();
    assert!(asserted.validate(&json!("^a+$")).is_ok());
    assert!(asserted.validate(&json!("^(a")).is_err());
    // Named groups make the syntax check quadratic: long strings are refused.
    let long: String = (0..200).map(|i| format!("(?<g{i}>a)")).collect();
    assert!(long.len() > MAX_FORMAT_REGEX_LEN);
    assert!(asserted.validate(&json!(long)).is_err());
}

#[test]
fn costly_schemas_are_refused_with_limit_and_cost() {
    let mut defs = serde_json::Map::new();
    for i in 1..40 {
        let next = format!("#/$defs/a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("a40".into(), json!({"type": "string"}));
    let bomb = json!({"$defs": defs, "$ref": "#/$defs/a1"});
    let err = CompiledSchema::compile(&bomb, 1_000).unwrap_err();
    let SchemaError::TooCostly {
        limit,
        cost,
        reason,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*limit, 1_000);
    assert!(*cost > 1_000 && reason.contains("/anyOf"), "{err}");
    assert!(!err.to_string().contains('\n'));
    // An in-place cycle is invalid, not costly.
    let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    let err = CompiledSchema::compile_default(&cycle).unwrap_err();
    assert!(
        matches!(&err, SchemaError::Invalid { reason } if reason.contains("/$defs/a/$ref")),
        "{err}"
    );
    let tree = json!({"properties": {"kids": {"items": {"$ref": "#"}}}});
    assert_eq!(CompiledSchema::compile(&tree, 10).unwrap().cost(), 4);
}

#[test]
fn every_real_schema_compiles_far_below_the_default_cost() {
    // The host's plugins (fs, hostile), GitHub's, Notion's and
    // Playwright's MCP servers, and Pydantic models.
    let real: serde_json::Value =
        serde_json::from_str(include_str!("testdata/real_schemas.json")).unwrap();
    let real = real.as_object().unwrap();
    assert!(real.len() > 30);
    for (name, schema) in real {
        let compiled =
            CompiledSchema::compile_default(schema).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            compiled.cost() * 20 <= DEFAULT_SCHEMA_COST,
            "{name}: {}",
            compiled.cost()
        );
    }
}
