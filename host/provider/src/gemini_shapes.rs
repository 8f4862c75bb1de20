//! The last pass of Gemini's subset rewrite: shapes the subset can spell
//! but the API refuses, settled so that a declaration is accepted.
//!
//! | shape                                         | becomes                                   | loses |
//! |-----------------------------------------------|-------------------------------------------|-------|
//! | `enum` without `type` (from a `const`)        | the same with `"type": "string"`          | nothing |
//! | `anyOf` with a sibling `description`/`title`  | each moved into the branches without one  | nothing |
//! | an object without properties (a free-form map) | dropped from its parent (and `required`) | the property |
//! | a schema without `type` or `anyOf` (any value) | dropped from its parent                  | the property |
//! | an array whose items are dropped, or without `items` | dropped from its parent            | the property |
//! | the root, if it is dropped                    | no `parameters` at all                    | the arguments, if it had any |
//!
//! Each change is one [`SchemaRewrite`], its pointer into the rewritten
//! schema. The pass visits each node once.

use serde_json::{Map, Value};

/// One change the rewrite made (here, or in `gemini_schema.rs` before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRewrite {
    /// JSON pointer (RFC 6901) to the keyword, as `gemini_schema.rs`'s
    /// header says.
    pub pointer: String,
    /// What was done, and what that loses.
    pub what: String,
    /// Whether the hint now says less than the original schema.
    pub lossy: bool,
}

/// `schema` (the subset rewrite's output) with the refused shapes
/// settled; `None` when nothing of it can be sent.
pub(super) fn settle(schema: Value, notes: &mut Vec<SchemaRewrite>) -> Option<Value> {
    node(schema, "", notes)
}

fn note(notes: &mut Vec<SchemaRewrite>, pointer: &str, what: &str, lossy: bool) {
    notes.push(SchemaRewrite {
        pointer: pointer.to_owned(),
        what: what.to_owned(),
        lossy,
    });
}

fn node(schema: Value, at: &str, notes: &mut Vec<SchemaRewrite>) -> Option<Value> {
    let Value::Object(mut map) = schema else {
        return Some(schema);
    };
    if let Some(branches) = map.remove("anyOf") {
        return any_of(map, branches, at, notes);
    }
    match map.get("type").and_then(Value::as_str) {
        Some("object") => object(map, at, notes),
        Some("array") => array(map, at, notes),
        Some(_) => Some(Value::Object(map)),
        None if map.contains_key("enum") => {
            map.insert("type".into(), "string".into());
            note(
                notes,
                at,
                "type: string added beside enum (Gemini enums are strings and need it)",
                false,
            );
            Some(Value::Object(map))
        }
        None => {
            note(
                notes,
                at,
                "dropped: a schema of any value, which Gemini cannot describe without a type",
                true,
            );
            None
        }
    }
}

fn any_of(
    mut map: Map<String, Value>,
    branches: Value,
    at: &str,
    notes: &mut Vec<SchemaRewrite>,
) -> Option<Value> {
    let Value::Array(branches) = branches else {
        return Some(Value::Object(map));
    };
    let mut kept: Vec<Value> = branches
        .into_iter()
        .enumerate()
        .filter_map(|(i, branch)| node(branch, &format!("{at}/anyOf/{i}"), notes))
        .collect();
    if kept.is_empty() {
        note(
            notes,
            at,
            "dropped: no branch of anyOf is one Gemini takes",
            true,
        );
        return None;
    }
    for key in ["description", "title"] {
        if let Some(text) = map.remove(key) {
            for branch in &mut kept {
                if let Some(branch) = branch.as_object_mut() {
                    branch.entry(key).or_insert_with(|| text.clone());
                }
            }
            note(
                notes,
                &format!("{at}/{key}"),
                &format!("{key} moved into each anyOf branch (Gemini takes none beside anyOf)"),
                false,
            );
        }
    }
    map.insert("anyOf".into(), Value::Array(kept));
    Some(Value::Object(map))
}

fn object(mut map: Map<String, Value>, at: &str, notes: &mut Vec<SchemaRewrite>) -> Option<Value> {
    let properties = match map.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    let mut kept = Map::new();
    let mut dropped = Vec::new();
    for (name, schema) in properties {
        let pointer = format!("{at}/properties/{}", escape(&name));
        match node(schema, &pointer, notes) {
            Some(schema) => {
                kept.insert(name, schema);
            }
            None => dropped.push(name),
        }
    }
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|r| !dropped.iter().any(|d| Some(d.as_str()) == r.as_str()));
        if required.is_empty() {
            map.remove("required");
        }
    }
    if kept.is_empty() {
        let what = if at.is_empty() {
            "no parameters: Gemini refuses an object without properties"
        } else {
            "dropped: an object without properties (a free-form map), which Gemini refuses"
        };
        note(notes, at, what, !at.is_empty() || !dropped.is_empty());
        return None;
    }
    map.insert("properties".into(), Value::Object(kept));
    Some(Value::Object(map))
}

fn array(mut map: Map<String, Value>, at: &str, notes: &mut Vec<SchemaRewrite>) -> Option<Value> {
    let Some(items) = map.remove("items") else {
        note(
            notes,
            at,
            "dropped: an array without item schema, which Gemini refuses",
            true,
        );
        return None;
    };
    let items = node(items, &format!("{at}/items"), notes)?;
    map.insert("items".into(), items);
    Some(Value::Object(map))
}

/// A property name as a JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::settle;

    #[test]
    fn refused_shapes_are_settled_and_reported() {
        let schema = json!({"type": "object", "properties": {
            "version": {"enum": ["v0.9"]},
            "role": {"description": "Who", "anyOf": [{"type": "string", "enum": ["admin"]}, {"type": "string"}]},
            "headers": {"type": "object"},
            "value": {},
            "tags": {"type": "array", "items": {}},
            "name": {"type": "string"},
        }, "required": ["name", "headers", "value"]});
        let mut notes = Vec::new();
        let out = settle(schema, &mut notes).unwrap();
        assert_eq!(
            out["properties"]["version"],
            json!({"enum": ["v0.9"], "type": "string"})
        );
        assert_eq!(out["properties"]["role"]["anyOf"][0]["description"], "Who");
        assert!(out["properties"]["role"].get("description").is_none());
        for gone in ["headers", "value", "tags"] {
            assert!(out["properties"].get(gone).is_none(), "{gone}");
        }
        assert_eq!(out["required"], json!(["name"]));
        let mut lossy: Vec<&str> = notes
            .iter()
            .filter(|n| n.lossy)
            .map(|n| n.pointer.as_str())
            .collect();
        lossy.sort_unstable();
        assert_eq!(
            lossy,
            [
                "/properties/headers",
                "/properties/tags/items",
                "/properties/value"
            ]
        );

        let mut notes = Vec::new();
        let empty = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert_eq!(settle(empty, &mut notes), None, "no parameters at all");
        assert!(!notes[0].lossy);
    }
}
