//! The contract test: the committed documents under
//! `docs/a2a/ext/intrinsics/` are exactly what the code generates, and
//! every schema is closed and accepted by the registry.
//!
//! To rewrite the documents after an intended change:
//! `TINY_HARNESS_BLESS=1 cargo test -p tiny-harness-host --lib intrinsic::tests::contract`

use std::path::PathBuf;

use serde_json::Value;

use crate::{SPECS, schemas};

const BLESS: &str =
    "TINY_HARNESS_BLESS=1 cargo test -p tiny-harness-host --lib intrinsic::tests::contract";

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/a2a/ext/intrinsics")
}

/// A line diff of `old` and `new` (longest common subsequence), the
/// changed lines marked `-` and `+`, with a line of context.
fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("{:>5} + {}\n", j + 1, b[j]));
            j += 1;
        } else {
            out.push_str(&format!("{:>5} - {}\n", i + 1, a[i]));
            i += 1;
        }
    }
    out
}

#[test]
fn committed_schemas_match_the_code() {
    let dir = dir();
    let bless = std::env::var_os("TINY_HARNESS_BLESS").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for spec in &SPECS {
        let path = dir.join(format!("{}.json", spec.name));
        let want = schemas::document_text(spec);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(have) if have == want => {}
            Ok(have) => failures.push(format!("{}:\n{}", path.display(), diff(&have, &want))),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    let extra: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| !SPECS.iter().any(|s| format!("{}.json", s.name) == *n))
                .collect()
        })
        .unwrap_or_default();
    if !extra.is_empty() && !bless {
        failures.push(format!("files of no intrinsic: {extra:?}"));
    }
    assert!(
        failures.is_empty(),
        "the committed intrinsic schemas differ from the code:\n{}\nIf the change is intended, \
         rewrite them with:\n    {BLESS}",
        failures.join("\n")
    );
}

/// Every object schema in `schema` closes its properties, except where
/// A2UI leaves the shape to a component catalog (see `a2ui`).
fn assert_closed(schema: &Value, at: &str) {
    match schema {
        Value::Object(object) => {
            let is_object = object.get("type") == Some(&Value::from("object"));
            let catalog = object
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| d.contains("catalog"))
                || at.ends_with("/theme");
            if is_object && !catalog {
                assert_eq!(
                    object.get("additionalProperties"),
                    Some(&Value::Bool(false)),
                    "{at} is an open object schema"
                );
            }
            for (key, value) in object {
                assert_closed(value, &format!("{at}/{key}"));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                assert_closed(item, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

#[test]
fn every_schema_is_closed_and_registers() {
    for spec in &SPECS {
        assert_closed(&spec.input_schema(), &format!("{}/input", spec.name));
        assert_closed(&spec.output_schema(), &format!("{}/output", spec.name));
    }
    let mut registry = tiny_harness_core::registry::Registry::new();
    let source = std::sync::Arc::new(crate::IntrinsicSource::new(crate::Skills::none()));
    let count = registry
        .register_bare(
            "intrinsic",
            crate::IntrinsicSource::pending(),
            source,
            &Default::default(),
        )
        .unwrap();
    assert_eq!(count, 12);
    let idempotent: Vec<&str> = SPECS
        .iter()
        .filter(|s| !s.idempotent)
        .map(|s| s.name)
        .collect();
    assert_eq!(
        idempotent,
        [
            "spawn_subtask",
            "ask_participant",
            "create_task_for_participant",
            "emit_ui"
        ]
    );
}

/// The example of each intrinsic in `docs/intrinsics.md`: the first JSON
/// block after its `### \`name\`` heading.
fn examples() -> Vec<(String, Value)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/intrinsics.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for section in text.split("\n### `").skip(1) {
        let name = section.split('`').next().unwrap().to_owned();
        let block = section
            .split("```json\n")
            .nth(1)
            .and_then(|b| b.split("\n```").next())
            .unwrap_or_else(|| panic!("{name} has no JSON example"));
        out.push((name, serde_json::from_str(block).unwrap()));
    }
    out
}

#[test]
fn committed_schemas_take_the_documented_examples_and_nothing_extra() {
    let examples = examples();
    assert_eq!(examples.len(), SPECS.len(), "one example per intrinsic");
    for (name, example) in examples {
        let text = std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap();
        let document: Value = serde_json::from_str(&text).unwrap();
        let schema =
            tiny_harness_core::schema::CompiledSchema::compile_default(&document["input_schema"])
                .unwrap();
        assert!(
            schema.validate(&example).is_ok(),
            "{name}: {:?}",
            schema.validate(&example)
        );
        let mut extra = example.clone();
        extra["unexpected"] = Value::Bool(true);
        assert!(
            schema.validate(&extra).is_err(),
            "{name} took an extra property"
        );
        assert_eq!(document["execution"], "intrinsic");
    }
}
