//! A2UI v0.9 server-to-client messages, as `emit_ui` takes them.
//!
//! Invariant: a message is accepted only if it has exactly the shape the
//! v0.9 specification gives it: an object of exactly two members,
//! `"version": "v0.9"` and one of `createSurface`, `updateComponents`,
//! `updateDataModel` or `deleteSurface`, whose object has a string
//! `surfaceId` and only the members the specification lists. What A2UI
//! leaves to a component catalog (a component's properties, a theme, a
//! data-model value) is passed on as it is, within the size bound.
//! Whether a surface exists is the workflow's to check, not this module's.

use serde_json::{Map, Value, json};

use super::limits::{MAX_NAME, MAX_UI_MESSAGE_BYTES, MAX_UI_MESSAGES};

/// The protocol version every message must carry.
pub const VERSION: &str = "v0.9";

/// Which of the four messages one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiKind {
    /// `createSurface`.
    Create,
    /// `updateComponents`.
    UpdateComponents,
    /// `updateDataModel`.
    UpdateDataModel,
    /// `deleteSurface`.
    Delete,
}

/// A checked message: its kind, its surface and (for `createSurface`) its
/// catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiMessage {
    /// Which message.
    pub kind: UiKind,
    /// The surface it is for.
    pub surface_id: String,
    /// The catalog, for `createSurface`.
    pub catalog_id: Option<String>,
}

/// Checks one message's structure.
pub(crate) fn check(message: &Value) -> Result<UiMessage, String> {
    let size = tiny_harness_core::tool::compact_json_len(message, MAX_UI_MESSAGE_BYTES);
    if size > MAX_UI_MESSAGE_BYTES {
        return Err(format!(
            "it is more than {MAX_UI_MESSAGE_BYTES} bytes; split the components over several \
             updateComponents messages"
        ));
    }
    let Value::Object(object) = message else {
        return Err("it is not a JSON object".into());
    };
    match object.get("version") {
        Some(Value::String(v)) if v == VERSION => {}
        Some(other) => return Err(format!("version is {other}, not \"{VERSION}\"")),
        None => return Err(format!("it has no \"version\": \"{VERSION}\"")),
    }
    let kinds = [
        ("createSurface", UiKind::Create),
        ("updateComponents", UiKind::UpdateComponents),
        ("updateDataModel", UiKind::UpdateDataModel),
        ("deleteSurface", UiKind::Delete),
    ];
    let mut found = None;
    for key in object.keys() {
        if key == "version" {
            continue;
        }
        match kinds.iter().find(|(name, _)| name == key) {
            Some(&(name, kind)) if found.is_none() => found = Some((name, kind)),
            Some(_) => return Err("it holds more than one message; send one per entry".into()),
            None => {
                return Err(format!(
                    "member {:?} is not allowed; a message is version and one of createSurface, \
                     updateComponents, updateDataModel, deleteSurface",
                    tiny_harness_core::display::one_line(key)
                ));
            }
        }
    }
    let Some((name, kind)) = found else {
        return Err(
            "it holds no createSurface, updateComponents, updateDataModel or deleteSurface".into(),
        );
    };
    let Some(Value::Object(body)) = object.get(name) else {
        return Err(format!("{name} is not an object"));
    };
    let allowed: &[&str] = match kind {
        UiKind::Create => &["surfaceId", "catalogId", "theme", "sendDataModel"],
        UiKind::UpdateComponents => &["surfaceId", "components"],
        UiKind::UpdateDataModel => &["surfaceId", "path", "value"],
        UiKind::Delete => &["surfaceId"],
    };
    if let Some(key) = body.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "{name}.{} is not allowed; {name} takes {}",
            tiny_harness_core::display::one_line(key),
            allowed.join(", ")
        ));
    }
    let surface_id = id(body, name, "surfaceId")?.ok_or(format!("{name}.surfaceId is missing"))?;
    let mut catalog_id = None;
    match kind {
        UiKind::Create => {
            catalog_id =
                Some(id(body, name, "catalogId")?.ok_or(format!("{name}.catalogId is missing"))?);
            if let Some(theme) = body.get("theme")
                && !theme.is_object()
            {
                return Err(format!("{name}.theme is not an object"));
            }
            if let Some(send) = body.get("sendDataModel")
                && !send.is_boolean()
            {
                return Err(format!("{name}.sendDataModel is not a boolean"));
            }
        }
        UiKind::UpdateComponents => components(body, name)?,
        UiKind::UpdateDataModel => {
            if let Some(path) = body.get("path") {
                match path {
                    Value::String(p) if p.is_empty() || p.starts_with('/') => {}
                    Value::String(_) => {
                        return Err(format!(
                            "{name}.path must be a JSON pointer starting with '/'"
                        ));
                    }
                    _ => return Err(format!("{name}.path is not a string")),
                }
            }
        }
        UiKind::Delete => {}
    }
    Ok(UiMessage {
        kind,
        surface_id,
        catalog_id,
    })
}

/// A non-empty identifier member, if present.
fn id(body: &Map<String, Value>, name: &str, key: &str) -> Result<Option<String>, String> {
    match body.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_NAME as usize => {
            Ok(Some(s.clone()))
        }
        Some(Value::String(_)) => Err(format!("{name}.{key} must be 1 to {MAX_NAME} bytes")),
        Some(_) => Err(format!("{name}.{key} is not a string")),
    }
}

/// `updateComponents.components`: a non-empty list of objects, each with
/// a unique string `id` and a string `component` (its catalog type).
fn components(body: &Map<String, Value>, name: &str) -> Result<(), String> {
    let Some(list) = body.get("components") else {
        return Err(format!("{name}.components is missing"));
    };
    let Value::Array(list) = list else {
        return Err(format!("{name}.components is not an array"));
    };
    if list.is_empty() {
        return Err(format!(
            "{name}.components is empty; send at least one component"
        ));
    }
    let mut ids = std::collections::HashSet::new();
    for (i, component) in list.iter().enumerate() {
        let Value::Object(component) = component else {
            return Err(format!("{name}.components[{i}] is not an object"));
        };
        let at = format!("{name}.components[{i}]");
        let id = id(component, &at, "id")?.ok_or(format!("{at}.id is missing"))?;
        match component.get("component") {
            Some(Value::String(c)) if !c.is_empty() => {}
            Some(_) => return Err(format!("{at}.component is not a component type name")),
            None => return Err(format!("{at}.component is missing")),
        }
        if !ids.insert(id.clone()) {
            return Err(format!("{at}.id {id:?} appears twice"));
        }
    }
    Ok(())
}

/// The JSON Schema of `emit_ui`'s `messages`: the v0.9 message shapes,
/// every object the specification closes closed here too.
pub fn messages_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let surface = json!({"type": "string", "minLength": 1, "maxLength": MAX_NAME});
    let version = json!({"const": VERSION});
    let message = |key: &str, body: Value| {
        json!({
            "type": "object",
            "properties": {"version": version, key: body},
            "required": ["version", key],
            "additionalProperties": false,
        })
    };
    let create = message(
        "createSurface",
        json!({
            "type": "object",
            "properties": {
                "surfaceId": surface,
                "catalogId": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                "theme": {"type": "object"},
                "sendDataModel": {"type": "boolean"},
            },
            "required": ["surfaceId", "catalogId"],
            "additionalProperties": false,
        }),
    );
    let components = message(
        "updateComponents",
        json!({
            "type": "object",
            "properties": {
                "surfaceId": surface,
                "components": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "description": "A component of the surface's catalog: its id, its \
                                        catalog type, and the type's own properties.",
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                            "component": {"type": "string", "minLength": 1},
                        },
                        "required": ["id", "component"],
                    },
                },
            },
            "required": ["surfaceId", "components"],
            "additionalProperties": false,
        }),
    );
    let data = message(
        "updateDataModel",
        json!({
            "type": "object",
            "properties": {
                "surfaceId": surface,
                "path": {"type": "string"},
                "value": {},
            },
            "required": ["surfaceId"],
            "additionalProperties": false,
        }),
    );
    let delete = message(
        "deleteSurface",
        json!({
            "type": "object",
            "properties": {"surfaceId": surface},
            "required": ["surfaceId"],
            "additionalProperties": false,
        }),
    );
    let schema = json!({
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_UI_MESSAGES,
        "items": {"oneOf": [create, components, data, delete]},
    });
    schemars::Schema::try_from(schema).unwrap_or_default()
}
