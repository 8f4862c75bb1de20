//! Which parameters of an input schema the index reads: their names and
//! descriptions, breadth first, the top-level ones first.
//!
//! Invariant: the walk is bounded whatever the schema: at most
//! [`MAX_PARAMETERS`] parameters, none deeper than
//! [`MAX_PARAMETER_DEPTH`], and at most [`MAX_SCHEMA_NODES`] subschemas
//! looked at, so neither a wide combinator nor a `$ref` cycle makes it
//! longer. No recursion.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use serde_json::Value;

/// The most parameters (properties of the input schema, nested ones
/// included) whose names and descriptions are indexed, in breadth-first
/// order: the top-level ones first.
pub const MAX_PARAMETERS: usize = 64;

/// How deep the parameters read go: the top-level properties are depth 0,
/// the properties of an object-valued property depth 1, and so on; depth
/// 3 and below are not read.
pub const MAX_PARAMETER_DEPTH: usize = 3;

/// The most subschemas the walk for parameters looks at (properties,
/// `items`, the members of `allOf`/`anyOf`/`oneOf`, local `$ref`
/// targets), so that neither a wide combinator nor a `$ref` cycle makes it
/// longer.
pub const MAX_SCHEMA_NODES: usize = 256;

/// Each parameter of the input schema `root`, as (name, description),
/// breadth first, within [`MAX_PARAMETERS`], [`MAX_PARAMETER_DEPTH`] and
/// [`MAX_SCHEMA_NODES`]; stops when `each` breaks. Follows `items`, the
/// members of `allOf`/`anyOf`/`oneOf` and `$ref`s within the schema
/// (without deepening), so that the fields of a nested model count.
pub(super) fn parameters<'a>(
    root: &'a Value,
    mut each: impl FnMut(&'a str, Option<&'a str>) -> ControlFlow<()>,
) {
    let mut queue: VecDeque<(&'a Value, usize)> = VecDeque::from([(root, 0)]);
    let mut queued = 1;
    let mut found = 0;
    while let Some((node, depth)) = queue.pop_front() {
        let Value::Object(schema) = node else {
            continue;
        };
        let mut push = |child: &'a Value, depth: usize| {
            if queued < MAX_SCHEMA_NODES {
                queued += 1;
                queue.push_back((child, depth));
            }
        };
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            push(target, depth);
        }
        for key in ["allOf", "anyOf", "oneOf", "items"] {
            match schema.get(key) {
                Some(Value::Array(members)) => {
                    members
                        .iter()
                        .take(MAX_SCHEMA_NODES)
                        .for_each(|m| push(m, depth));
                }
                Some(member @ Value::Object(_)) => push(member, depth),
                _ => {}
            }
        }
        if depth >= MAX_PARAMETER_DEPTH {
            continue;
        }
        let Some(Value::Object(properties)) = schema.get("properties") else {
            continue;
        };
        for (name, property) in properties {
            if found >= MAX_PARAMETERS {
                return;
            }
            found += 1;
            let description = property.get("description").and_then(Value::as_str);
            if each(name, description).is_break() {
                return;
            }
            push(property, depth + 1);
        }
    }
}
