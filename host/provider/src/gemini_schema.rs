//! Gemini's schema subset: a JSON Schema rewritten into the OpenAPI 3.0
//! subset that Gemini's `FunctionDeclaration.parameters` accepts, with a
//! report of every rewrite and what it loses.
//!
//! Invariants:
//! - **A hint, never the check.** The rewritten schema only tells the model
//!   what to send; the invoker validates every call against the tool's
//!   original, registered schema. A lossy rewrite makes the hint weaker
//!   (the model may send something the tool then refuses), never the
//!   validation.
//! - **Every change is reported.** Each keyword rewritten or dropped gives
//!   one [`SchemaRewrite`]: a JSON pointer to it and what was done, marked
//!   [`SchemaRewrite::lossy`] when the hint says less than the original.
//!   The pointer is into the *original* schema with each inlined `$ref`
//!   read as its target in place: a `oneOf` inside `#/$defs/Pet`, reached
//!   through `/properties/pet/$ref`, is reported at `/properties/pet/oneOf`.
//! - **Bounded output.** `$ref`s are inlined at most
//!   [`SchemaLimits::max_ref_depth`] deep, and none is inlined once
//!   [`SchemaLimits::max_nodes`] schema objects have been written; a `$ref`
//!   not inlined becomes "any value" with a lossy note. A recursive schema
//!   is therefore cut, never expanded without bound: the output holds at
//!   most `max_nodes + max_ref_depth * (nodes of the original)` objects.
//!
//! | keyword                          | sent as                                   | loses                                  |
//! |----------------------------------|-------------------------------------------|----------------------------------------|
//! | `type`, `title`, `description`, `nullable`, `properties`, `required`, `items` (a schema), `anyOf`, `minItems`, `maxItems`, `minLength`, `maxLength`, `minProperties`, `maxProperties`, `minimum`, `maximum`, `pattern`, `default`, `example`, `propertyOrdering` | kept (subschemas rewritten) | nothing |
//! | `$ref` to `#...` in the same schema | its target, inlined in place (siblings win on conflict) | nothing; past the depth or size bound: cut to any value |
//! | `$ref` elsewhere, or unresolvable | dropped                                   | the whole referenced constraint        |
//! | `$defs`, `definitions`           | dropped                                   | nothing (their uses are inlined)       |
//! | `oneOf`                          | `anyOf` (dropped if `anyOf` is present)   | "exactly one": overlaps are allowed     |
//! | `allOf`                          | members merged into the schema            | conflicting keywords of later members  |
//! | `const` (a string)               | `enum: [value]`                           | nothing                                |
//! | `const` (not a string), `enum` with non-strings | dropped (Gemini enums are strings) | the allowed values          |
//! | `enum` of strings and `null`     | `enum` of the strings, `nullable: true`   | nothing                                |
//! | `type: [t, "null"]`              | `type: t`, `nullable: true`               | nothing                                |
//! | `type: [t1, t2, ...]`            | `anyOf: [{type: t1}, ...]`                | nothing (dropped if `anyOf`/`oneOf` present) |
//! | `exclusiveMinimum`/`exclusiveMaximum` (numbers) | `minimum`/`maximum`        | strictness of the bound                |
//! | `format` other than `date-time`, `enum`, `int32`, `int64`, `float`, `double` | dropped | the format |
//! | `items` as an array (tuples)     | dropped                                   | the item schemas                       |
//! | `$schema`, `$id`, `$comment`, `$anchor`, `$dynamicAnchor`, `$vocabulary`, `examples`, `deprecated`, `readOnly`, `writeOnly` | dropped | nothing (annotations) |
//! | `true`                           | `{}`                                      | nothing                                |
//! | `false`                          | `{}`                                      | that nothing is valid                  |
//! | anything else (`additionalProperties`, `patternProperties`, `propertyNames`, `unevaluated*`, `dependent*`, `if`/`then`/`else`, `not`, `contains`, `prefixItems`, `uniqueItems`, `multipleOf`, ...) | dropped | its constraint |

use serde_json::{Map, Value};

/// Bounds on the rewrite's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaLimits {
    /// How many `$ref`s deep inlining goes (a `$ref` inside an inlined
    /// target is one deeper). Recursive schemas are cut here.
    pub max_ref_depth: usize,
    /// No `$ref` is inlined once this many schema objects have been
    /// written.
    pub max_nodes: usize,
}

impl SchemaLimits {
    /// 5 levels of `$ref` and 2,000 schema objects: deep enough for the
    /// nested models tool schemas use, small enough that a recursive or
    /// exponential schema costs the request a few tens of kilobytes.
    pub const DEFAULT: SchemaLimits = SchemaLimits {
        max_ref_depth: 5,
        max_nodes: 2_000,
    };
}

impl Default for SchemaLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

pub use super::gemini_shapes::SchemaRewrite;

/// `schema` in Gemini's subset, with every rewrite in schema order, and
/// the shapes the API refuses settled last (`provider/gemini_shapes.rs`):
/// `Value::Null` when nothing of it can be sent (the declaration then has
/// no `parameters`).
pub fn rewrite(schema: &Value, limits: SchemaLimits) -> (Value, Vec<SchemaRewrite>) {
    let (out, mut notes) = rewrite_unsettled(schema, limits);
    let out = super::gemini_shapes::settle(out, &mut notes).unwrap_or(Value::Null);
    (out, notes)
}

/// The rewrite into the subset, before the refused shapes are settled.
pub(super) fn rewrite_unsettled(
    schema: &Value,
    limits: SchemaLimits,
) -> (Value, Vec<SchemaRewrite>) {
    let mut rewriter = Rewriter {
        root: schema,
        limits,
        nodes: 0,
        notes: Vec::new(),
    };
    let out = rewriter.schema(schema, "", 0);
    (out, rewriter.notes)
}

/// Kept as they are.
const KEPT: &[&str] = &[
    "title",
    "description",
    "nullable",
    "required",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "pattern",
    "default",
    "example",
    "propertyOrdering",
];

/// Dropped without loss: annotations that constrain nothing.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "$dynamicAnchor",
    "$vocabulary",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The formats Gemini accepts.
const FORMATS: &[&str] = &["date-time", "enum", "int32", "int64", "float", "double"];

/// The types Gemini knows.
const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "array", "object", "null",
];

struct Rewriter<'a> {
    root: &'a Value,
    limits: SchemaLimits,
    nodes: usize,
    notes: Vec<SchemaRewrite>,
}

impl Rewriter<'_> {
    fn note(&mut self, pointer: String, lossy: bool, what: impl Into<String>) {
        self.notes.push(SchemaRewrite {
            pointer,
            what: what.into(),
            lossy,
        });
    }

    fn schema(&mut self, schema: &Value, at: &str, depth: usize) -> Value {
        match schema {
            Value::Object(map) => Value::Object(self.object(map, at, depth)),
            Value::Bool(true) => {
                self.note(at.to_owned(), false, "the schema `true` sent as {}");
                Value::Object(Map::new())
            }
            Value::Bool(false) => {
                self.note(
                    at.to_owned(),
                    true,
                    "the schema `false` (nothing is valid) sent as {} (anything is)",
                );
                Value::Object(Map::new())
            }
            other => {
                let kind = super::json_kind(other);
                self.note(
                    at.to_owned(),
                    true,
                    format!("a {kind} is not a schema; sent as {{}}"),
                );
                Value::Object(Map::new())
            }
        }
    }

    fn object(&mut self, map: &Map<String, Value>, at: &str, depth: usize) -> Map<String, Value> {
        self.nodes += 1;
        let mut out = Map::new();
        let target = map.get("$ref").and_then(|r| self.reference(r, at, depth));
        for (key, value) in map {
            let here = push(at, key);
            match key.as_str() {
                "$ref" | "allOf" => {}
                k if KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if ANNOTATIONS.contains(&k) => {
                    self.note(here, false, format!("{k} dropped (an annotation)"));
                }
                "$defs" | "definitions" => {
                    self.note(here, false, format!("{key} dropped (local $refs are inlined)"));
                }
                "type" => self.kind(value, here, map, &mut out),
                "format" => match value.as_str() {
                    Some(f) if FORMATS.contains(&f) => {
                        out.insert(key.clone(), value.clone());
                    }
                    _ => self.note(
                        here,
                        true,
                        format!("format {value} dropped: Gemini takes only {}", FORMATS.join(", ")),
                    ),
                },
                "enum" => self.enumeration(value, here, &mut out),
                "const" => match value.as_str() {
                    Some(_) if !map.contains_key("enum") => {
                        out.insert("enum".into(), Value::Array(vec![value.clone()]));
                        self.note(here, false, "const sent as a one-value enum");
                    }
                    _ => self.note(
                        here,
                        true,
                        "const dropped: Gemini enums hold strings only (or an enum is present); \
                         the hint no longer names the value",
                    ),
                },
                "properties" => match value.as_object() {
                    Some(properties) => {
                        let rewritten = properties
                            .iter()
                            .map(|(name, schema)| {
                                (name.clone(), self.schema(schema, &push(&here, name), depth))
                            })
                            .collect();
                        out.insert(key.clone(), Value::Object(rewritten));
                    }
                    None => self.note(here, true, "properties is not an object; dropped"),
                },
                "items" => match value {
                    Value::Array(_) => self.note(
                        here,
                        true,
                        "items as an array (a tuple) dropped: the item schemas are not hinted",
                    ),
                    schema => {
                        let items = self.schema(schema, &here, depth);
                        out.insert(key.clone(), items);
                    }
                },
                "anyOf" | "oneOf" => {
                    if key == "oneOf" && map.contains_key("anyOf") {
                        self.note(here, true, "oneOf dropped (anyOf is present): its alternatives are not hinted");
                        continue;
                    }
                    let Some(alternatives) = value.as_array() else {
                        self.note(here, true, format!("{key} is not an array; dropped"));
                        continue;
                    };
                    if key == "oneOf" {
                        self.note(
                            here.clone(),
                            true,
                            "oneOf sent as anyOf: a value matching several alternatives is not \
                             excluded",
                        );
                    }
                    let rewritten = alternatives
                        .iter()
                        .enumerate()
                        .map(|(i, s)| self.schema(s, &push(&here, &i.to_string()), depth))
                        .collect();
                    out.insert("anyOf".into(), Value::Array(rewritten));
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let bound = if key == "exclusiveMinimum" { "minimum" } else { "maximum" };
                    if value.is_number() && !map.contains_key(bound) {
                        out.insert(bound.into(), value.clone());
                        self.note(here, true, format!("{key} sent as {bound}: the bound is hinted as inclusive"));
                    } else {
                        self.note(here, true, format!("{key} dropped: the bound is not hinted"));
                    }
                }
                other => self.note(
                    here,
                    true,
                    format!("{other} is not in Gemini's schema subset; dropped, so the hint no longer carries it"),
                ),
            }
        }
        if let Some(members) = map.get("allOf") {
            let here = push(at, "allOf");
            match members.as_array() {
                Some(members) => {
                    self.note(here.clone(), false, "allOf members merged into the schema");
                    for (i, member) in members.iter().enumerate() {
                        let member_at = push(&here, &i.to_string());
                        if let Value::Object(member) = self.schema(member, &member_at, depth) {
                            self.merge(&mut out, member, &member_at);
                        }
                    }
                }
                None => self.note(here, true, "allOf is not an array; dropped"),
            }
        }
        if let Some(Value::Object(target)) = target {
            self.merge(&mut out, target, &push(at, "$ref"));
        }
        out
    }

    /// Inlines a local reference, or notes why not.
    fn reference(&mut self, reference: &Value, at: &str, depth: usize) -> Option<Value> {
        let here = push(at, "$ref");
        let Some(text) = reference.as_str() else {
            self.note(here, true, "$ref is not a string; dropped");
            return None;
        };
        let Some(fragment) = text.strip_prefix('#') else {
            self.note(here, true, format!("$ref {text:?} is not local and cannot be inlined; dropped: the hint is any value"));
            return None;
        };
        if depth >= self.limits.max_ref_depth {
            self.note(
                here,
                true,
                format!(
                    "$ref {text:?} cut: not inlined more than {} deep (recursive or deeply nested); \
                     the hint below here is any value",
                    self.limits.max_ref_depth
                ),
            );
            return None;
        }
        if self.nodes >= self.limits.max_nodes {
            self.note(
                here,
                true,
                format!(
                    "$ref {text:?} cut: the rewritten schema reached {} schema objects; the hint \
                     below here is any value",
                    self.limits.max_nodes
                ),
            );
            return None;
        }
        let Some(target) = self.root.pointer(fragment) else {
            self.note(
                here,
                true,
                format!("$ref {text:?} does not resolve in the schema; dropped"),
            );
            return None;
        };
        self.note(here, false, format!("$ref {text:?} inlined"));
        Some(self.schema(target, at, depth + 1))
    }

    /// Writes `type`, rewriting a list of types.
    fn kind(
        &mut self,
        value: &Value,
        here: String,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
    ) {
        let known = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
        match value {
            Value::String(_) if known(value) => {
                out.insert("type".into(), value.clone());
            }
            Value::Array(types) if !types.is_empty() && types.iter().all(known) => {
                let null = Value::String("null".into());
                let rest: Vec<&Value> = types.iter().filter(|t| **t != null).collect();
                let nullable = rest.len() < types.len();
                match rest.as_slice() {
                    [] => {
                        out.insert("type".into(), null);
                    }
                    [one] => {
                        out.insert("type".into(), (*one).clone());
                    }
                    many if !map.contains_key("anyOf") && !map.contains_key("oneOf") => {
                        let alternatives = many
                            .iter()
                            .map(|t| serde_json::json!({ "type": t }))
                            .collect();
                        out.insert("anyOf".into(), Value::Array(alternatives));
                    }
                    _ => {
                        self.note(
                            here,
                            true,
                            "type list dropped (anyOf/oneOf is present): the types are not hinted",
                        );
                        return;
                    }
                }
                if nullable && !rest.is_empty() {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                self.note(
                    here,
                    false,
                    format!("type {value} sent as a single type, nullable or anyOf"),
                );
            }
            _ => self.note(
                here,
                true,
                format!("type {value} is not one Gemini knows; dropped"),
            ),
        }
    }

    /// Writes `enum` when its values are strings (and perhaps `null`).
    fn enumeration(&mut self, value: &Value, here: String, out: &mut Map<String, Value>) {
        let Some(values) = value.as_array() else {
            self.note(here, true, "enum is not an array; dropped");
            return;
        };
        let strings: Vec<Value> = values.iter().filter(|v| v.is_string()).cloned().collect();
        let nulls = values.iter().filter(|v| v.is_null()).count();
        if strings.len() + nulls != values.len() || strings.is_empty() {
            self.note(
                here,
                true,
                "enum dropped: Gemini enums hold strings only; the allowed values are not hinted",
            );
            return;
        }
        out.insert("enum".into(), Value::Array(strings));
        if nulls > 0 {
            out.insert("nullable".into(), Value::Bool(true));
            self.note(here, false, "null in enum sent as nullable");
        }
    }

    /// Fills `out` with `from`'s keywords: `properties` and `required` are
    /// combined, other keywords already present are kept and noted.
    fn merge(&mut self, out: &mut Map<String, Value>, from: Map<String, Value>, at: &str) {
        for (key, value) in from {
            match (out.get_mut(&key), value) {
                (None, value) => {
                    out.insert(key, value);
                }
                (Some(Value::Object(mine)), Value::Object(theirs)) if key == "properties" => {
                    for (name, schema) in theirs {
                        if mine.get(&name).is_some_and(|m| *m != schema) {
                            self.note(
                                push(&push(at, &key), &name),
                                true,
                                "a conflicting property schema from a merged schema dropped",
                            );
                        } else {
                            mine.insert(name, schema);
                        }
                    }
                }
                (Some(Value::Array(mine)), Value::Array(theirs)) if key == "required" => {
                    for name in theirs {
                        if !mine.contains(&name) {
                            mine.push(name);
                        }
                    }
                }
                (Some(mine), value) => {
                    if *mine != value {
                        self.note(
                            push(at, &key),
                            true,
                            format!(
                                "{key} of a merged schema conflicts with the schema's own; dropped"
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// `at/key`, with `key` escaped per RFC 6901.
fn push(at: &str, key: &str) -> String {
    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"))
}
