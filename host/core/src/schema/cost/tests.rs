use super::*;
use serde_json::json;

const BUDGET: u64 = 20_000;

/// `$defs` a1 = anyOf[a2, a2], ..., a(n-1) = anyOf[an, an], an = `leaf`:
/// each value is checked 2^(n-1) times.
fn fan_out(n: usize, leaf: Value) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 1..n {
        let next = format!("#/$defs/a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("a{n}"), leaf);
    json!({"$defs": defs, "$ref": "#/$defs/a1"})
}

#[test]
fn exponential_ref_fan_out_is_refused_without_expanding_it() {
    // 2^39 paths: a walk that expanded them would hang this test.
    let err = evaluation_cost(&fan_out(40, json!({"type": "string"})), BUDGET).unwrap_err();
    let CostError::OverBudget { bound, budget, at } = &err else {
        panic!("{err}");
    };
    assert!(*bound > BUDGET && *budget == BUDGET, "{err}");
    assert!(
        at.starts_with("/$defs/a") && at.ends_with("/anyOf"),
        "{err}"
    );
    // Small fan-outs are exact: per level 2 (itself) + 2 * (2 (the hop) + next).
    assert_eq!(evaluation_cost(&fan_out(4, json!({})), BUDGET), Ok(52));
}

#[test]
fn nested_combinators_without_refs_are_refused() {
    // allOf of 6 branches, 4 levels deep: 1296 leaves, no reference at all.
    let mut schema = json!({"type": "integer"});
    for _ in 0..4 {
        schema = json!({"allOf": vec![schema; 6]});
    }
    let err = evaluation_cost(&schema, 1_000).unwrap_err();
    assert!(
        matches!(&err, CostError::OverBudget { at, .. } if at.ends_with("/allOf")),
        "{err}"
    );
    assert!(evaluation_cost(&schema, BUDGET).unwrap() > 1_296);
}

#[test]
fn in_place_cycles_are_refused_naming_the_reference() {
    let cases = [
        (
            json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            "/$defs/a/$ref",
        ),
        (
            json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
                   "$ref": "#/$defs/a"}),
            "/$defs/a/allOf/0/$ref",
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"$ref": "#"}]}),
            "/anyOf/1/$ref",
        ),
    ];
    for (schema, at) in cases {
        let err = evaluation_cost(&schema, BUDGET).unwrap_err();
        assert_eq!(err, CostError::InPlaceCycle { at: at.into() }, "{schema}");
        assert!(!err.to_string().contains('\n'));
    }
}

#[test]
fn recursion_through_children_gets_a_small_finite_cost() {
    let tree = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}}
        }
    });
    assert_eq!(evaluation_cost(&tree, BUDGET), Ok(6));
    // Draft 2020-12 dynamic recursion, resolved to every candidate.
    let dynamic = json!({
        "$dynamicAnchor": "node",
        "type": "object",
        "properties": {"kids": {"items": {"$dynamicRef": "#node"}}}
    });
    let cost = evaluation_cost(&dynamic, BUDGET);
    assert!(cost.as_ref().is_ok_and(|&c| c < 10), "{cost:?}");
    // But recursion that doubles per level is refused.
    let doubling = json!({"items": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}});
    let err = evaluation_cost(&doubling, BUDGET).unwrap_err();
    assert!(
        matches!(&err, CostError::OverBudget { at, .. } if at == "/items/allOf"),
        "{err}"
    );
}

#[test]
fn recursion_under_distinct_property_names_does_not_compound() {
    // Pydantic's shape for `Filter = Condition | And | Or | Not`.
    let filter = json!({
        "$defs": {
            "Condition": {"properties": {"field": {"type": "string"}}, "required": ["field"]},
            "And": {"properties": {"all": {"items": {"$ref": "#/$defs/Filter"}}}},
            "Or": {"properties": {"any": {"items": {"$ref": "#/$defs/Filter"}}}},
            "Not": {"properties": {"not": {"$ref": "#/$defs/Filter"}}},
            "Filter": {"anyOf": [{"$ref": "#/$defs/Condition"}, {"$ref": "#/$defs/And"},
                                 {"$ref": "#/$defs/Or"}, {"$ref": "#/$defs/Not"}]}
        },
        "$ref": "#/$defs/Filter"
    });
    assert!(evaluation_cost(&filter, BUDGET).unwrap() < 40);
}

#[test]
fn references_resolve_by_id_anchor_and_pointer_in_every_draft() {
    // Each target weighs differently, so a wrong resolution changes the sum.
    let enum_of = |n: usize| json!({"enum": (0..n).collect::<Vec<_>>()});
    let modern = json!({
        "$id": "https://example.com/root.json",
        "allOf": [{"$ref": "item.json"}, {"$ref": "item.json#it"}, {"$ref": "#/$defs/three"}],
        "$defs": {
            "item": {"$id": "item.json", "$defs": {"x": {"$anchor": "it", "enum": [0, 1, 2, 3, 4, 5, 6]}}, "enum": [0, 1, 2, 3, 4]},
            "three": enum_of(3)
        }
    });
    // root 1 + allOf 1; three branches 2 each; targets 6, 8 and 4.
    assert_eq!(evaluation_cost(&modern, BUDGET), Ok(2 + 6 + 6 + 8 + 4));
    let draft4 = json!({
        "$schema": "http://json-schema.org/draft-04/schema#",
        "id": "http://example.com/root.json",
        "properties": {"a": {"$ref": "#/definitions/a"}, "b": {"$ref": "other.json"}},
        "definitions": {"a": enum_of(30), "b": {"id": "other.json", "enum": [1]}}
    });
    assert_eq!(evaluation_cost(&draft4, BUDGET), Ok(31 + 2));
    let draft7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "items": {"$ref": "#/definitions/x"},
        "definitions": {"x": {"$id": "#x", "enum": enum_of(50)["enum"]}}
    });
    assert_eq!(evaluation_cost(&draft7, BUDGET), Ok(51 + 2));
}

#[test]
fn unresolvable_and_outside_references_are_refused() {
    let err = evaluation_cost(
        &json!({"properties": {"a": {"$ref": "#/$defs/none"}}}),
        BUDGET,
    )
    .unwrap_err();
    assert!(
        matches!(&err, CostError::Unresolvable { at, .. } if at == "/properties/a/$ref"),
        "{err}"
    );
    let meta = json!({"$ref": "https://json-schema.org/draft/2020-12/schema"});
    assert!(matches!(
        evaluation_cost(&meta, BUDGET),
        Err(CostError::Unresolvable { .. })
    ));
    // A reference only from an unused definition costs nothing.
    let unused = json!({"$defs": {"bad": {"$ref": "#/nowhere"}}, "type": "string"});
    assert_eq!(evaluation_cost(&unused, BUDGET), Ok(2));
}

#[test]
fn unevaluated_keywords_pay_for_rerunning_their_branches() {
    let branches = json!([{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {}}}]);
    let plain = evaluation_cost(&json!({"anyOf": branches}), BUDGET).unwrap();
    let rerun = json!({"anyOf": branches, "unevaluatedProperties": false});
    // local 3, branches 2 + 2: m = 7; rerun 3 * (3 + 2 + 2) = 21.
    assert_eq!((plain, evaluation_cost(&rerun, BUDGET)), (6, Ok(28)));
}

#[test]
fn regexes_weigh_what_their_automaton_costs_per_byte() {
    assert_eq!(regex_weight("^[a-z0-9_-]+$"), 1);
    assert_eq!(
        regex_weight(r"^[\p{L}\p{N}]{1,64}$"),
        1,
        "counted, not matched"
    );
    assert!(regex_weight("[ab]*a[ab]{500}c") > 20);
    let pattern = json!({"properties": {"a": {"pattern": "[ab]*a[ab]{500}c"}}});
    assert!(evaluation_cost(&pattern, BUDGET).unwrap() > 20);
}

#[test]
fn instance_units_count_values_and_bytes_and_stop_early() {
    assert_eq!(instance_units(&json!(null), 100), 1);
    assert_eq!(instance_units(&json!("abc"), 100), 4);
    // object 1, member "ab": 1 + 2, array 1, items 1 + 1.
    assert_eq!(instance_units(&json!({"ab": [1, true]}), 100), 7);
    let huge = Value::Array(vec![json!(0); 1_000_000]);
    assert_eq!(instance_units(&huge, 10), 11);
    let mut deep = json!(0);
    for _ in 0..=MAX_INSTANCE_DEPTH {
        deep = json!([deep]);
    }
    assert_eq!(instance_units(&deep, u64::MAX - 1), u64::MAX);
    assert_eq!(instance_units(&deep[0], u64::MAX - 1), 129);
}

/// A chain of `depth` one-branch `anyOf`s through `$ref`s: cheap per value
/// (4 units a link) but as deep as it is long.
fn ref_chain(depth: usize) -> Value {
    let defs: serde_json::Map<String, Value> = (0..depth)
        .map(|i| {
            let def = if i + 1 == depth {
                json!({"type": "integer"})
            } else {
                json!({"anyOf": [{"$ref": format!("#/$defs/d{}", i + 1)}]})
            };
            (format!("d{i}"), def)
        })
        .collect();
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

#[test]
fn schemas_that_nest_too_deep_for_the_stack_are_refused() {
    // 5,000 links overflowed a 2 MiB stack in the validator; within the
    // cost limit, so only the depth bound refuses it.
    let deep = ref_chain(5000);
    let err = evaluation_bounds(&deep, u64::MAX / 4).unwrap_err();
    assert!(matches!(err, CostError::TooDeep { max: 512, .. }), "{err}");
    assert!(err.to_string().contains("shorten the chain"), "{err}");
    // A short chain is fine, and as deep as it is long (two subschemas a link).
    let bounds = evaluation_bounds(&ref_chain(100), u64::MAX / 4).unwrap();
    assert!(
        (200..=202).contains(&bounds.depth_for(0)),
        "{}",
        bounds.depth_for(0)
    );
}

#[test]
fn recursive_schemas_nest_deeper_for_deeper_values() {
    let tree = json!({"type": "object", "properties": {"children": {
        "type": "array", "items": {"$ref": "#"}}}});
    let bounds = evaluation_bounds(&tree, 1000).unwrap();
    let (shallow, deep) = (bounds.depth_for(0), bounds.depth_for(100));
    assert!(shallow <= 3, "{shallow}");
    // Three subschemas for every two levels (object, then array).
    assert!((140..=MAX_EVALUATION_DEPTH).contains(&deep), "{deep}");
    // Past the deepest value serde_json parses, the last level holds.
    assert_eq!(
        bounds.depth_for(10_000),
        bounds.depth_for(MAX_INSTANCE_DEPTH)
    );
}

#[test]
fn instance_depth_counts_nesting_and_stops_early() {
    assert_eq!(instance_depth(&json!(1), 10), 0);
    assert_eq!(instance_depth(&json!([]), 10), 0);
    assert_eq!(instance_depth(&json!({"a": [1, {"b": [2]}]}), 10), 4);
    // Empty containers add no level; siblings after a deep branch are
    // still walked.
    assert_eq!(instance_depth(&json!([[]]), 10), 1);
    assert_eq!(instance_depth(&json!({"a": [], "b": {}}), 10), 1);
    assert_eq!(instance_depth(&json!([1, [2, [3]], {}]), 10), 3);
    assert_eq!(instance_depth(&json!([[1], [[[2]]]]), 10), 4);
    assert_eq!(
        instance_depth(&json!({"a": {"b": 1}, "c": [[[{"d": 1}]]]}), 10),
        5
    );
    let mut deep = json!(0);
    for _ in 0..1000 {
        deep = json!([deep]);
    }
    assert_eq!(instance_depth(&deep, 10), 11);
}
