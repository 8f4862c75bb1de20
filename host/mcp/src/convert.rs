//! MCP's JSON to the host's data: tool definitions from `tools/list`,
//! results from `tools/call`.
//!
//! Invariants:
//! - A tool that cannot be registered (a bad name, a duplicate, a schema
//!   that is not an object, does not compile or is over a limit) is skipped
//!   with its reason; the server's other tools are unaffected.
//! - A result is checked against the result budget part by part before it
//!   is kept, so nothing over the limits is copied into the host's data.

use std::collections::BTreeSet;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};

use tiny_harness_core::registry::{RegistrationLimits, check_tool_name};
use tiny_harness_core::schema::CompiledSchema;
use tiny_harness_core::tool::{
    Annotations, CallError, ContentPart, ResultBudget, ToolDefinition, ToolResult,
};

/// A tool the server listed that is not registered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The name as listed (made safe for one line, cut to 128 characters).
    pub name: String,
    /// Why it is skipped.
    pub reason: String,
}

/// The tools of one listing: those to register, and those skipped.
#[derive(Debug, Default)]
pub struct Listing {
    /// Definitions to register, in the server's order.
    pub tools: Vec<ToolDefinition>,
    /// Tools left out, with reasons.
    pub skipped: Vec<Skipped>,
}

/// Why a whole listing is refused (a tool that cannot be used is left out
/// with its reason, not refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingError {
    /// More tools than the plugin's `limits.tools`.
    #[error("it lists {count} tools, more than the {max} allowed (raise limits.tools)")]
    TooManyTools {
        /// How many the server listed.
        count: usize,
        /// The most allowed.
        max: usize,
    },
}

/// Converts the listed `tools` (JSON objects, as the server sent them).
/// Refuses the whole listing only when it holds more tools than
/// `limits.tools`.
pub fn listing(tools: Vec<Value>, limits: &RegistrationLimits) -> Result<Listing, ListingError> {
    if tools.len() > limits.tools {
        return Err(ListingError::TooManyTools {
            count: tools.len(),
            max: limits.tools,
        });
    }
    let mut listing = Listing::default();
    let mut seen = BTreeSet::new();
    for tool in tools {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .map(|n| {
                tiny_harness_core::display::one_line(&n.chars().take(128).collect::<String>())
                    .into_owned()
            })
            .unwrap_or_else(|| "(no name)".to_owned());
        match definition(tool, limits) {
            Ok(def) if !seen.insert(def.name.clone()) => listing.skipped.push(Skipped {
                name,
                reason: "the server lists this name more than once".to_owned(),
            }),
            Ok(def) => listing.tools.push(def),
            Err(reason) => listing.skipped.push(Skipped { name, reason }),
        }
    }
    Ok(listing)
}

fn definition(tool: Value, limits: &RegistrationLimits) -> Result<ToolDefinition, String> {
    let Value::Object(mut tool) = tool else {
        return Err("the entry is not a JSON object".to_owned());
    };
    let name = match tool.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err("it has no name".to_owned()),
    };
    check_tool_name(&name).map_err(|e| e.to_string())?;
    let text = |tool: &mut Map<String, Value>, key: &str| match tool.remove(key) {
        Some(Value::String(s)) => Ok(Some(s)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(format!("its {key} is not a string")),
    };
    let description = text(&mut tool, "description")?.unwrap_or_default();
    if description.len() > limits.description_bytes {
        return Err(format!(
            "its description is {} bytes, more than the {} allowed (limits.description_kib)",
            description.len(),
            limits.description_bytes
        ));
    }
    let annotations = match tool.remove("annotations") {
        Some(Value::Object(a)) => a,
        _ => Map::new(),
    };
    let hint = |key: &str, default: bool| {
        annotations
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    let title = match text(&mut tool, "title")? {
        Some(title) => Some(title),
        None => annotations
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    if let Some(title) = &title
        && title.len() > limits.title_bytes
    {
        return Err(format!(
            "its title is {} bytes, more than the {} allowed (limits.title_kib)",
            title.len(),
            limits.title_bytes
        ));
    }
    let schema = |tool: &mut Map<String, Value>,
                  key: &str,
                  which: &str|
     -> Result<Option<Value>, String> {
        match tool.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(schema @ Value::Object(_)) => {
                let size = tiny_harness_core::tool::compact_json_len(&schema, limits.schema_bytes);
                if size > limits.schema_bytes {
                    return Err(format!(
                        "its {which} schema is over the {} bytes allowed (limits.schema_kib)",
                        limits.schema_bytes
                    ));
                }
                let depth = tiny_harness_core::tool::json_nesting(&schema);
                if depth > tiny_harness_core::tool::MAX_SCHEMA_DEPTH {
                    return Err(format!(
                        "its {which} schema nests {depth} levels of arrays and objects, more than the {} a tool may (so that its pin fits the lock file)",
                        tiny_harness_core::tool::MAX_SCHEMA_DEPTH
                    ));
                }
                CompiledSchema::compile(&schema, limits.schema_cost)
                    .map_err(|e| format!("its {which} schema is refused: {e}"))?;
                Ok(Some(schema))
            }
            Some(_) => Err(format!("its {which} schema is not a JSON object")),
        }
    };
    let input_schema = schema(&mut tool, "inputSchema", "input")?
        .ok_or_else(|| "it has no input schema".to_owned())?;
    let output_schema = schema(&mut tool, "outputSchema", "output")?;
    Ok(ToolDefinition {
        name,
        title,
        description,
        input_schema,
        output_schema,
        annotations: Annotations {
            read_only: hint("readOnlyHint", false),
            idempotent: hint("idempotentHint", false),
            destructive: hint("destructiveHint", true),
            open_world: hint("openWorldHint", true),
        },
    })
}

/// Converts a `tools/call` result (as JSON) into the host's result, within
/// `budget`. `structuredContent` becomes a JSON part after the content, so
/// that the invoker checks it against the tool's output schema.
pub fn result(result: Value, budget: ResultBudget) -> Result<ToolResult, CallError> {
    let Value::Object(mut result) = result else {
        return Err(CallError::InvalidOutput(
            "the result is not a JSON object".to_owned(),
        ));
    };
    let content = match result.remove("content") {
        Some(Value::Array(content)) => content,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return Err(CallError::InvalidOutput(
                "its content is not a list".to_owned(),
            ));
        }
    };
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let count = content.len();
    let parts = content.into_iter().map(content_part);
    assemble(
        parts,
        count,
        result.remove("structuredContent"),
        is_error,
        budget,
    )
}

/// A result rmcp decoded as a `CallToolResult`, as [`result`] would take
/// its JSON, without making the JSON. (Where rmcp reads a resource with
/// both `text` and `blob`, which MCP does not allow, as text, only the
/// text is kept.)
pub fn typed_result(result: CallToolResult, budget: ResultBudget) -> Result<ToolResult, CallError> {
    let count = result.content.len();
    let parts = result.content.into_iter().map(block_part);
    let is_error = result.is_error.unwrap_or(false);
    assemble(parts, count, result.structured_content, is_error, budget)
}

/// The host's result from a result's `count` parts, its structured
/// content and its error flag, each part admitted by `budget` before it is
/// kept.
fn assemble(
    parts: impl Iterator<Item = Result<ContentPart, String>>,
    count: usize,
    structured: Option<Value>,
    is_error: bool,
    mut budget: ResultBudget,
) -> Result<ToolResult, CallError> {
    budget.admit_parts(count + usize::from(structured.is_some()))?;
    let mut content = Vec::with_capacity(count + 1);
    for (index, part) in parts.enumerate() {
        let part =
            part.map_err(|e| CallError::InvalidOutput(format!("part {}: {e}", index + 1)))?;
        budget.admit_part(part.size())?;
        content.push(part);
    }
    if let Some(data) = structured {
        let part = ContentPart::Json {
            media_type: "application/json".to_owned(),
            data,
        };
        budget.admit_part(part.size())?;
        content.push(part);
    }
    Ok(ToolResult { content, is_error })
}

/// One content block as rmcp decoded it, as [`content_part`] would take
/// its JSON.
fn block_part(block: ContentBlock) -> Result<ContentPart, String> {
    Ok(match block {
        ContentBlock::Text(text) => ContentPart::Text { text: text.text },
        ContentBlock::Image(image) => ContentPart::Media {
            media_type: image.mime_type,
            data: image.data,
        },
        ContentBlock::Audio(audio) => ContentPart::Media {
            media_type: audio.mime_type,
            data: audio.data,
        },
        ContentBlock::ResourceLink(link) => ContentPart::ResourceLink {
            uri: link.uri,
            name: link.name,
            description: link.description,
            media_type: link.mime_type,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => ContentPart::Resource {
                uri,
                media_type: mime_type,
                text: Some(text),
                blob: None,
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => ContentPart::Resource {
                uri,
                media_type: mime_type,
                text: None,
                blob: Some(blob),
            },
            other => return content_part(resource_json(&other)?),
        },
        // A kind of block this host does not know by its type.
        other => return content_part(serde_json::to_value(&other).map_err(|e| e.to_string())?),
    })
}

/// An embedded resource of a kind rmcp added, as the block's JSON.
fn resource_json(resource: &ResourceContents) -> Result<Value, String> {
    let resource = serde_json::to_value(resource).map_err(|e| e.to_string())?;
    Ok(serde_json::json!({"type": "resource", "resource": resource}))
}

fn content_part(block: Value) -> Result<ContentPart, String> {
    let Value::Object(mut block) = block else {
        return Err("it is not a JSON object".to_owned());
    };
    let mut string = |key: &str| match block.remove(key) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(format!("it has no {key} string")),
    };
    let kind = string("type")?;
    match kind.as_str() {
        "text" => Ok(ContentPart::Text {
            text: string("text")?,
        }),
        "image" | "audio" => {
            let data = string("data")?;
            let media_type = string("mimeType")?;
            Ok(ContentPart::Media { media_type, data })
        }
        "resource_link" => {
            let uri = string("uri")?;
            let name = string("name")?;
            Ok(ContentPart::ResourceLink {
                uri,
                name,
                description: string("description").ok(),
                media_type: string("mimeType").ok(),
            })
        }
        "resource" => {
            let Some(Value::Object(mut resource)) = block.remove("resource") else {
                return Err("its resource is not a JSON object".to_owned());
            };
            let mut string = |key: &str| match resource.remove(key) {
                Some(Value::String(s)) => Some(s),
                _ => None,
            };
            Ok(ContentPart::Resource {
                uri: string("uri").ok_or("its resource has no uri")?,
                media_type: string("mimeType"),
                text: string("text"),
                blob: string("blob"),
            })
        }
        other => Ok(ContentPart::Text {
            text: format!(
                "[a part of type {:?}, which this host does not show]",
                tiny_harness_core::display::one_line(&other.chars().take(64).collect::<String>())
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result of every kind of part, with structured content, as rmcp
    /// decodes it.
    fn every_kind() -> CallToolResult {
        let link = rmcp::model::Resource::new("file:///a", "a")
            .with_description("the a")
            .with_mime_type("text/plain");
        let mut result = CallToolResult::error(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("aW1n", "image/png"),
            ContentBlock::audio("YXVk", "audio/wav"),
            ContentBlock::ResourceLink(link),
            ContentBlock::embedded_text("file:///t", "text"),
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: "file:///b".to_owned(),
                mime_type: Some("application/octet-stream".to_owned()),
                blob: "YmxvYg==".to_owned(),
                meta: None,
            }),
        ]);
        result.structured_content = Some(serde_json::json!({"n": 1}));
        result
    }

    #[test]
    fn a_typed_result_converts_as_its_json_does_within_the_same_budget() {
        let result = every_kind();
        let json = serde_json::to_value(&result).unwrap();
        for (bytes, parts) in [(1 << 20, 16), (1 << 20, 6), (40, 16)] {
            let budget = || ResultBudget::new(bytes, parts);
            let typed = typed_result(result.clone(), budget());
            let from_json = super::result(json.clone(), budget());
            assert_eq!(
                format!("{typed:?}"),
                format!("{from_json:?}"),
                "{bytes} bytes, {parts} parts"
            );
        }
        let whole = typed_result(result, ResultBudget::new(1 << 20, 16)).unwrap();
        assert!(whole.is_error);
        assert_eq!(whole.content.len(), 7, "{whole:?}");
    }

    #[test]
    fn a_listing_past_the_tool_limit_is_refused_whole_and_typed() {
        let mut limits = RegistrationLimits::default();
        limits.tools = 2;
        let tool =
            |name: &str| serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        let three = vec![tool("a"), tool("b"), tool("c")];
        let refused = listing(three, &limits).unwrap_err();
        assert_eq!(refused, ListingError::TooManyTools { count: 3, max: 2 });
        assert_eq!(
            refused.to_string(),
            "it lists 3 tools, more than the 2 allowed (raise limits.tools)"
        );
        let two = listing(vec![tool("a"), tool("b")], &limits).unwrap();
        assert_eq!(two.tools.len(), 2);
    }
}
