//! The input and output schemas of the `workspace` server's tools, written
//! by hand and sent exactly as written (each tool's name, description and
//! hints are on its function, in `files.rs` and `tree.rs`).
//!
//! Every tool returns its structured data as its first JSON part, and the
//! output schema here describes exactly that object (closed: no other keys),
//! so the host checks each successful result against it.

use serde_json::{Map, Value, json};

/// The schema of a `path` property.
fn path_property(what: &str) -> Value {
    json!({
        "type": "string",
        "description": format!(
            "{what}. A relative path is taken from the workspace root; an absolute \
             path is used as given."
        ),
    })
}

/// An integer property in `min..=max` with a default.
fn integer_property(description: &str, min: u64, max: Option<u64>, default: u64) -> Value {
    let mut property = json!({
        "type": "integer",
        "minimum": min,
        "default": default,
        "description": description,
    });
    if let Some(max) = max {
        property["maximum"] = max.into();
    }
    property
}

/// A boolean property with a default.
fn boolean_property(description: &str, default: bool) -> Value {
    json!({"type": "boolean", "default": default, "description": description})
}

/// A closed object schema with these properties, of which `required` must
/// be present.
fn object(properties: Map<String, Value>, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A schema as a JSON document naming its draft.
fn document(mut schema: Value) -> Value {
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
    schema
}

/// A closed object schema, as a document, with these properties, of which
/// `required` must be present.
fn closed(properties: Map<String, Value>, required: &[&str]) -> Value {
    document(object(properties, required))
}

/// The output schema of a non-negative integer.
fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

/// The output schema of an entry type.
fn entry_type() -> Value {
    json!({"enum": ["file", "dir", "symlink", "other"]})
}

/// The output schema of a path string.
fn path_string() -> Value {
    json!({"type": "string"})
}

/// Builds a property map from `(name, schema)` pairs.
fn properties<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema))
        .collect()
}

/// The input schema of `read_file`.
pub fn read_file_input() -> Value {
    closed(
        properties([
            ("path", path_property("The file to read")),
            (
                "offset",
                integer_property("The first line to return, counting from 1.", 1, None, 1),
            ),
            (
                "limit",
                integer_property("The most lines to return.", 1, Some(10_000), 2_000),
            ),
        ]),
        &["path"],
    )
}

/// The output schema of `read_file`.
pub fn read_file_output() -> Value {
    closed(
        properties([
            ("path", path_string()),
            ("first_line", json!({"type": "integer", "minimum": 1})),
            ("last_line", count()),
            ("total_lines", count()),
            ("truncated", json!({"type": "boolean"})),
            ("last_line_cut", json!({"const": true})),
        ]),
        &[
            "path",
            "first_line",
            "last_line",
            "total_lines",
            "truncated",
        ],
    )
}

/// The input schema of `write_file`.
pub fn write_file_input() -> Value {
    closed(
        properties([
            ("path", path_property("The file to write")),
            (
                "content",
                json!({"type": "string", "description": "The file's new content, in full."}),
            ),
            (
                "create_dirs",
                boolean_property("Create missing parent directories first.", false),
            ),
        ]),
        &["path", "content"],
    )
}

/// The output schema of `write_file`.
pub fn write_file_output() -> Value {
    closed(
        properties([("path", path_string()), ("bytes_written", count())]),
        &["path", "bytes_written"],
    )
}

/// The input schema of `list_dir`.
pub fn list_dir_input() -> Value {
    closed(
        properties([
            (
                "path",
                json!({
                    "type": "string",
                    "default": ".",
                    "description": "The directory to list (default: the workspace root). \
                        A relative path is taken from the workspace root; an absolute \
                        path is used as given.",
                }),
            ),
            (
                "recursive",
                boolean_property("Also list the contents of subdirectories.", false),
            ),
            (
                "max_entries",
                integer_property("The most entries to return.", 1, Some(10_000), 1_000),
            ),
        ]),
        &[],
    )
}

/// The output schema of `list_dir`.
pub fn list_dir_output() -> Value {
    closed(
        properties([
            ("path", path_string()),
            (
                "entries",
                json!({
                    "type": "array",
                    "items": object(
                        properties([
                            ("path", path_string()),
                            ("type", entry_type()),
                            ("size", json!({"type": ["integer", "null"], "minimum": 0})),
                        ]),
                        &["path", "type", "size"],
                    ),
                }),
            ),
            ("truncated", json!({"type": "boolean"})),
        ]),
        &["path", "entries", "truncated"],
    )
}

/// The input schema of `stat`.
pub fn stat_input() -> Value {
    closed(
        properties([("path", path_property("The path to describe"))]),
        &["path"],
    )
}

/// The output schema of `stat`.
pub fn stat_output() -> Value {
    closed(
        properties([
            ("path", path_string()),
            ("type", entry_type()),
            ("size", count()),
            ("modified", json!({"type": ["number", "null"]})),
            ("readonly", json!({"type": ["boolean", "null"]})),
        ]),
        &["path", "type", "size", "modified", "readonly"],
    )
}

/// The input schema of `search`.
pub fn search_input() -> Value {
    closed(
        properties([
            (
                "pattern",
                json!({
                    "type": "string",
                    "description": "The regular expression (Rust regex syntax) a line must \
                        match.",
                }),
            ),
            (
                "path",
                json!({
                    "type": "string",
                    "default": ".",
                    "description": "The directory (or single file) to search (default: the \
                        workspace root).",
                }),
            ),
            (
                "case_insensitive",
                boolean_property("Ignore letter case when matching.", false),
            ),
            (
                "max_results",
                integer_property("The most matching lines to return.", 1, Some(10_000), 200),
            ),
            (
                "include",
                json!({
                    "type": "string",
                    "description": "Only search files whose name matches this pattern, in \
                        which `*` matches any run of characters (e.g. \"*.rs\"). A pattern \
                        containing `/` is matched against the path relative to the \
                        searched directory instead.",
                }),
            ),
        ]),
        &["pattern"],
    )
}

/// The output schema of `search`.
pub fn search_output() -> Value {
    closed(
        properties([
            (
                "matches",
                json!({
                    "type": "array",
                    "items": object(
                        properties([
                            ("path", path_string()),
                            ("line", json!({"type": "integer", "minimum": 1})),
                            ("text", json!({"type": "string"})),
                        ]),
                        &["path", "line", "text"],
                    ),
                }),
            ),
            ("files_searched", count()),
            ("truncated", json!({"type": "boolean"})),
        ]),
        &["matches", "files_searched", "truncated"],
    )
}
