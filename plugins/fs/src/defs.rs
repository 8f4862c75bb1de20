//! The definitions (names, descriptions, input and output schemas and
//! behaviour hints) of the `workspace` server's tools.
//!
//! Every tool returns its structured data as its first JSON part, and the
//! output schema here describes exactly that object (closed: no other keys),
//! so the host checks each successful result against it.

use serde_json::{Map, Value, json};

use crate::bindings::tiny_harness::plugin::types::{Annotations, ToolDefinition};

/// Hints for a tool that only reads the granted directories.
const READ_ONLY: Annotations = Annotations {
    read_only: true,
    idempotent: true,
    destructive: false,
    open_world: false,
};

/// Hints for `write_file`, which overwrites files.
const OVERWRITES: Annotations = Annotations {
    read_only: false,
    idempotent: true,
    destructive: true,
    open_world: false,
};

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

/// A tool definition whose input schema is a closed object with these
/// properties, of which `required` must be present, and whose structured
/// result matches `output`.
fn tool(
    name: &str,
    description: &str,
    properties: Map<String, Value>,
    required: &[&str],
    output: Value,
    annotations: Annotations,
) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: description.into(),
        input_schema: document(object(properties, required)),
        output_schema: Some(document(output)),
        annotations,
    }
}

/// A schema as a JSON document naming its draft.
fn document(mut schema: Value) -> String {
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
    schema.to_string()
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

/// The definitions of every `workspace` tool.
pub fn definitions() -> Vec<ToolDefinition> {
    vec![read_file(), write_file(), list_dir(), stat(), search()]
}

/// `read_file`.
fn read_file() -> ToolDefinition {
    tool(
        "read_file",
        "Reads lines of a text file. Returns the selected lines exactly as in the file, \
         then JSON {path, first_line, last_line, total_lines, truncated}; truncated means \
         more lines follow (read them with a larger offset). At most 256 KiB of text is \
         returned per call. Binary files are refused.",
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
        object(
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
        ),
        READ_ONLY,
    )
}

/// `write_file`.
fn write_file() -> ToolDefinition {
    tool(
        "write_file",
        "Writes a text file, creating it or replacing all of its content. Returns a \
         line of text, then JSON {path, bytes_written}.",
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
        object(
            properties([("path", path_string()), ("bytes_written", count())]),
            &["path", "bytes_written"],
        ),
        OVERWRITES,
    )
}

/// `list_dir`.
fn list_dir() -> ToolDefinition {
    tool(
        "list_dir",
        "Lists a directory. Returns JSON {path, entries: [{path, type, size}], truncated}: \
         entry paths are relative to the listed directory and sorted; type is file, dir, \
         symlink or other. Recursive listing does not follow symlinks. truncated means \
         more entries follow: the listing stops at max_entries or at about 256 KiB.",
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
        object(
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
        ),
        READ_ONLY,
    )
}

/// `stat`.
fn stat() -> ToolDefinition {
    tool(
        "stat",
        "Describes a file, directory or symlink (a symlink itself, not its target). \
         Returns JSON {path, type, size, modified, readonly}; modified is in seconds \
         since the Unix epoch, or null when unknown; readonly says whether this tool \
         set may not write the file (null for anything but a regular file).",
        properties([("path", path_property("The path to describe"))]),
        &["path"],
        object(
            properties([
                ("path", path_string()),
                ("type", entry_type()),
                ("size", count()),
                ("modified", json!({"type": ["number", "null"]})),
                ("readonly", json!({"type": ["boolean", "null"]})),
            ]),
            &["path", "type", "size", "modified", "readonly"],
        ),
        READ_ONLY,
    )
}

/// `search`.
fn search() -> ToolDefinition {
    tool(
        "search",
        "Searches text files for lines matching a regular expression. Returns JSON \
         {matches: [{path, line, text}], files_searched, truncated}; paths are relative to \
         the searched directory; text is cut to 500 characters. Symlinks are not followed; \
         binary files and files over 4 MiB are skipped. truncated means more matches \
         follow: the search stops at max_results or at about 256 KiB of matches.",
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
        object(
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
        ),
        READ_ONLY,
    )
}
