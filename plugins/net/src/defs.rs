//! The definitions of the `http` server's tools, `get` and `request`:
//! descriptions, input and output schemas, behaviour hints.
//!
//! Both tools return the same JSON (closed: no other keys), described by
//! one output schema, so the host checks every successful result.

use serde_json::{Value, json};

use crate::bindings::tiny_harness::plugin::types::{Annotations, ToolDefinition};

/// The most headers one call may set.
pub const MAX_HEADERS: usize = 64;

/// Hints for `get`: it reads, a repeat reads again, and it reaches the
/// network.
const READS_THE_WEB: Annotations = Annotations {
    read_only: true,
    idempotent: true,
    destructive: false,
    open_world: true,
};

/// Hints for `request`: any method, so it may change what a server holds.
const CHANGES_THE_WEB: Annotations = Annotations {
    read_only: false,
    idempotent: false,
    destructive: true,
    open_world: true,
};

const RETURNS: &str = "Returns a line of text, then JSON {url, status, headers, body, \
                       body_encoding, truncated, redirects}: url is the last URL requested; \
                       headers maps each lowercased name to its value (repeated headers \
                       joined with \", \"); body is the response body as text when it is \
                       UTF-8 (body_encoding \"text\"), else base64 (\"base64\"); truncated \
                       means the body was cut at the plugin's limit; redirects lists the URLs \
                       redirected to, in order. A status of 400 or more is an error result. \
                       Only hosts the host config grants can be reached.";

/// The definitions of every `http` tool.
pub fn definitions() -> Vec<ToolDefinition> {
    vec![get(), request()]
}

fn get() -> ToolDefinition {
    ToolDefinition {
        name: "get".into(),
        description: format!(
            "Fetches a URL with HTTP GET, following redirects (each one is checked against \
             the grants again). {RETURNS}"
        ),
        input_schema: document(json!({
            "type": "object",
            "properties": {
                "url": url_schema(),
                "headers": headers_schema(),
            },
            "required": ["url"],
            "additionalProperties": false,
        })),
        output_schema: Some(document(output())),
        annotations: READS_THE_WEB,
    }
}

fn request() -> ToolDefinition {
    ToolDefinition {
        name: "request".into(),
        description: format!(
            "Sends one HTTP request with any method and an optional body. Redirects are \
             not followed: a 3xx response is returned as it is. {RETURNS}"
        ),
        input_schema: document(json!({
            "type": "object",
            "properties": {
                "method": {
                    "type": "string",
                    "pattern": "^[A-Za-z]{1,16}$",
                    "description": "The method: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, ...",
                },
                "url": url_schema(),
                "headers": headers_schema(),
                "body": {
                    "type": "string",
                    "description": "The request body, sent as UTF-8 text. Set a content-type \
                                    header to say what it is.",
                },
            },
            "required": ["method", "url"],
            "additionalProperties": false,
        })),
        output_schema: Some(document(output())),
        annotations: CHANGES_THE_WEB,
    }
}

fn url_schema() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 8192,
        "description": "An absolute http:// or https:// URL.",
    })
}

fn headers_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": {"type": "string"},
        "maxProperties": MAX_HEADERS,
        "default": {},
        "description": "Request headers, name to value (host, connection and other \
                        hop-by-hop headers are refused).",
    })
}

/// The JSON part of every successful result.
fn output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "status": {"type": "integer"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"type": "string"},
            "body_encoding": {"enum": ["text", "base64"]},
            "truncated": {"type": "boolean"},
            "redirects": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["url", "status", "headers", "body", "body_encoding", "truncated", "redirects"],
        "additionalProperties": false,
    })
}

/// A schema as a JSON document naming its draft.
fn document(mut schema: Value) -> String {
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
    schema.to_string()
}
