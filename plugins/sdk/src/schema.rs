//! Schemas derived from Rust types, as the host and the model providers
//! read them.
//!
//! Invariants:
//! - Draft 2020-12 with no `$schema` keyword (the host's default) and
//!   subschemas inlined (several providers cannot follow a `$ref`; only a
//!   recursive type keeps one).
//! - Every object schema that has `properties` and says nothing about
//!   `additionalProperties` gets `false`: a model's stray key is refused
//!   by the host before the plugin runs, naming it.
//! - The root's `title` (the Rust type's name) is dropped; its
//!   `description` stays for the tool to take.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

/// The generator both schemas come from, for deserialising (input) or
/// serialising (output).
fn generator(serialize: bool) -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    if serialize {
        settings.for_serialize().into_generator()
    } else {
        settings.for_deserialize().into_generator()
    }
}

/// The input schema of argument type `A`, as derived. A type whose
/// schema is not an object's (`String`, a number, a list) is registered
/// as it is, and the host refuses that tool alone, saying why (a tool's
/// arguments are one JSON object: take a struct with named fields); the
/// plugin's other tools load.
pub fn input<A: JsonSchema>() -> Result<Value, String> {
    let mut schema = generator(false).into_root_schema_for::<A>().to_value();
    close(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    Ok(schema)
}

/// [`input`], for a tool's argument type. A map in it keyed by a type
/// that JSON object keys cannot spell compiles, but no call could ever
/// give one ([`crate::keys`]): the schema then carries the refusal
/// (`x-tiny-harness-refused`, with what to take instead), and the host
/// refuses that tool alone, saying so; the plugin's other tools load.
pub fn input_checked<A: JsonSchema + serde::de::DeserializeOwned>() -> Result<Value, String> {
    if let Some((path, asked)) = crate::keys::bad_map_key::<A>() {
        let why = format!(
            "{path} is a map keyed by {asked}, and JSON object keys are strings, so no call \
             could give one: key it by String, an integer or an enum of unit variants, or take \
             a list of {{key, value}} objects"
        );
        return Ok(serde_json::json!({ "type": "object", "x-tiny-harness-refused": why }));
    }
    input::<A>()
}

/// The output schema of `T`.
pub fn output<T: JsonSchema>() -> Value {
    let mut schema = generator(true).into_root_schema_for::<T>().to_value();
    close(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    schema
}

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is a list of subschemas.
const LIST: &[&str] = &["prefixItems", "allOf", "anyOf", "oneOf"];

/// Keywords whose value maps names to subschemas.
const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords beside which `additionalProperties` would not see every
/// property the object allows.
const COMBINED: &[&str] = &["allOf", "anyOf", "oneOf", "if", "$ref"];

/// Adds `additionalProperties: false` to every object schema in `schema`
/// that has `properties` and no `additionalProperties`, walking only where
/// subschemas are (never into `default`, `enum`, `const` or `examples`, nor
/// into a property map as if it were a schema).
fn close(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    close_one(object);
    for (key, value) in object.iter_mut() {
        let key = key.as_str();
        match value {
            Value::Object(_) if ONE.contains(&key) => close(value),
            Value::Array(items) if LIST.contains(&key) => items.iter_mut().for_each(close),
            Value::Object(named) if MAP.contains(&key) => named.values_mut().for_each(close),
            _ => {}
        }
    }
}

fn close_one(object: &mut Map<String, Value>) {
    let combined = COMBINED.iter().any(|key| object.contains_key(*key));
    if object.contains_key("properties")
        && !object.contains_key("additionalProperties")
        && !combined
    {
        object.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
}
