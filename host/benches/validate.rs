//! The worst validation the budget allows, against a typical one.
//!
//! A schema's cost bounds the work of validating one unit of a value (see
//! `host/src/schema/cost.rs`), and the invoker refuses arguments whose
//! units times the cost exceed `VALIDATION_BUDGET`. So the slowest
//! validation a call can trigger is a schema at the cost limit against the
//! largest value the budget then admits, or the largest schema against the
//! largest arguments; both on the error path (which collects violations)
//! as well as the success path.
//!
//! - `costliest_schema`: a `$defs` chain of `allOf [next, next]` as deep as
//!   `DEFAULT_SCHEMA_COST` allows, under `items`, against an array of as
//!   many items as the budget admits: integers (valid), and the same with
//!   the last item a string (invalid); then the same chain of `anyOf`,
//!   whose failures the validator explains branch by branch, against as
//!   many strings as `ERROR_DETAIL_BUDGET` lets it explain.
//! - `largest_schema`: an object schema of about 256 KiB (the default
//!   `schema_kib`): 2,000 properties with patterns, against the largest
//!   object the budget admits for its cost.
//! - `typical_write`: the fs plugin's `write_file` schema against 1 MiB of
//!   content (the default `arguments_kib`).
//!
//! Run: `cargo bench -p tiny-harness-host --bench validate`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tiny_harness_core::invoke::VALIDATION_BUDGET;
use tiny_harness_core::schema::{
    CompiledSchema, DEFAULT_SCHEMA_COST, ERROR_DETAIL_BUDGET, instance_units,
};

/// `{"type": "array", "items": d0}` with `d_i = combinator [d_{i+1}, d_{i+1}]`.
fn fan_out(combinator: &str, depth: usize) -> Value {
    let defs: serde_json::Map<String, Value> = (0..depth)
        .map(|i| {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            let def = if i + 1 == depth {
                json!({"type": "integer", "minimum": 0})
            } else {
                json!({ combinator: [next.clone(), next] })
            };
            (format!("d{i}"), def)
        })
        .collect();
    json!({"$defs": defs, "type": "array", "items": {"$ref": "#/$defs/d0"}})
}

/// The deepest fan-out within the default cost limit, compiled.
fn costliest(combinator: &str) -> CompiledSchema {
    let mut best = None;
    for depth in 1..40 {
        match CompiledSchema::compile(&fan_out(combinator, depth), DEFAULT_SCHEMA_COST) {
            Ok(schema) => best = Some(schema),
            Err(_) => break,
        }
    }
    best.expect("a fan-out within the limit")
}

/// An object schema of about 256 KiB: `n` properties with patterns.
fn largest() -> (CompiledSchema, Vec<String>) {
    let names: Vec<String> = (0..2000).map(|i| format!("property_{i:05}")).collect();
    let properties: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| {
            let p = json!({"type": "string", "pattern": "^[a-z]+[0-9]*$", "maxLength": 64,
                           "description": "x".repeat(30)});
            (name.clone(), p)
        })
        .collect();
    let schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
    let size = schema.to_string().len();
    assert!(size <= 256 << 10, "{size}");
    let compiled = CompiledSchema::compile(&schema, DEFAULT_SCHEMA_COST).expect("within limits");
    (compiled, names)
}

/// The most units the budget admits for `schema`.
fn admitted(schema: &CompiledSchema) -> u64 {
    VALIDATION_BUDGET / schema.cost().max(1)
}

/// An array of `items` whose units stay within `units`.
fn array_within(units: u64, item: Value) -> Value {
    let mut n = units;
    loop {
        let value = Value::Array(vec![item.clone(); n as usize]);
        if instance_units(&value, units) <= units {
            return value;
        }
        n -= n / 16 + 1;
    }
}

fn validate(c: &mut Criterion) {
    let mut group = c.benchmark_group("validation");

    // `allOf`: a valid value meets every branch, so each item costs the
    // whole fan-out; the invalid value fails only at its last item.
    let schema = costliest("allOf");
    let units = admitted(&schema);
    let valid = array_within(units, json!(1));
    let mut invalid = valid.clone();
    if let Some(last) = invalid.as_array_mut().and_then(|items| items.last_mut()) {
        *last = json!("x");
    }
    eprintln!(
        "costliest_schema: cost {}, {} items ({units} units admitted)",
        schema.cost(),
        valid.as_array().map_or(0, Vec::len)
    );
    assert!(schema.admit(&valid).is_ok());
    assert!(schema.validate(&valid).is_ok());
    assert!(schema.validate(&invalid).is_err());
    group.bench_function("costliest_schema/valid", |b| {
        b.iter(|| schema.validate(&valid))
    });
    group.bench_function("costliest_schema/invalid", |b| {
        b.iter(|| schema.validate(&invalid))
    });
    // `anyOf`, whose failures the validator explains branch by branch:
    // the most items the detail budget lets it explain.
    let schema = costliest("anyOf");
    // The array itself is one more value.
    let explained = ERROR_DETAIL_BUDGET / (schema.cost() * schema.depth_for(1)) - 1;
    let invalid = Value::Array(vec![json!("x"); explained as usize]);
    let violations = schema.validate(&invalid).unwrap_err();
    assert!(!violations[0].instance_path.is_empty(), "explained");
    eprintln!(
        "costliest_schema: anyOf, {explained} items explained, depth {}",
        schema.depth_for(1)
    );
    group.bench_function("costliest_schema/invalid_explained", |b| {
        b.iter(|| schema.validate(&invalid))
    });

    let (schema, names) = largest();
    let units = admitted(&schema);
    // Every property name is the same length: each adds the same units.
    let one = json!({ names[0].clone(): "abc123" });
    let per_property = instance_units(&one, u64::MAX) - instance_units(&json!({}), u64::MAX);
    let count = ((units - 1) / per_property) as usize;
    let object: serde_json::Map<String, Value> = names
        .iter()
        .take(count)
        .map(|name| (name.clone(), json!("abc123")))
        .collect();
    assert!(instance_units(&Value::Object(object.clone()), u64::MAX) <= units);
    let valid = Value::Object(object.clone());
    let invalid = Value::Object(
        object
            .keys()
            .map(|k| (k.clone(), json!("NOT-MATCHING!")))
            .collect(),
    );
    eprintln!(
        "largest_schema: cost {}, {} properties ({units} units admitted)",
        schema.cost(),
        object.len()
    );
    assert!(schema.validate(&valid).is_ok());
    assert!(schema.validate(&invalid).is_err());
    group.bench_function("largest_schema/valid", |b| {
        b.iter(|| schema.validate(&valid))
    });
    group.bench_function("largest_schema/invalid", |b| {
        b.iter(|| schema.validate(&invalid))
    });

    let write_file = CompiledSchema::compile(
        &json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "content": {"type": "string"},
                "create_dirs": {"type": "boolean"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
        DEFAULT_SCHEMA_COST,
    )
    .expect("compiles");
    let arguments = json!({"path": "notes.txt", "content": "x".repeat((1 << 20) - 64)});
    assert!(instance_units(&arguments, u64::MAX) * write_file.cost() <= VALIDATION_BUDGET);
    group.bench_function("typical_write/1MiB", |b| {
        b.iter(|| write_file.validate(&arguments))
    });
    group.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);
