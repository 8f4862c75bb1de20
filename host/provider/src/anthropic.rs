//! Anthropic Messages (`POST /v1/messages`).
//!
//! - tools: `[{"name","description","input_schema"}]`;
//! - calls: the blocks of `content[]` with `"type":"tool_use"`, each
//!   `{"id","name","input"}` with `input` a JSON value (an object when
//!   well formed); other blocks (`text`, `thinking`, and `server_tool_use`,
//!   which Anthropic runs itself) are skipped; the tools Anthropic's own
//!   tool search found are the `tool_reference`s of its
//!   `tool_search_tool_result` blocks;
//! - results: one `{"role":"user","content":[...]}` message holding a
//!   `{"type":"tool_result","tool_use_id","content","is_error"}` block per
//!   call, in order (the API wants every result of a turn in the one user
//!   message that follows it). A search of the host's that found tools
//!   answers with a `tool_reference` block per tool instead of text.

use serde_json::{Value, json};

use super::{
    CallKind, IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply,
    index,
};

/// One tool's entry in the `tools` array.
pub(crate) fn entry(o: Offered<'_>) -> Value {
    let mut entry = json!({
        "name": o.wire_name,
        "description": o.tool.definition.description,
    });
    entry["input_schema"] = o.tool.definition.input_schema.clone();
    entry
}

/// The calls of a Messages response.
pub(crate) fn calls(response: &Value) -> Result<Vec<RawCall<'_>>, ProviderError> {
    let r = Reader {
        provider: Provider::Anthropic,
    };
    let mut calls = Vec::new();
    for (i, block) in r.array(response, "", "content")?.iter().enumerate() {
        let at = index("content", i);
        if r.string(block, &at, "type")? != "tool_use" {
            continue;
        }
        calls.push(RawCall {
            id: r.string(block, &at, "id")?.to_owned(),
            origin: IdOrigin::Given,
            name: r.string(block, &at, "name")?,
            arguments: RawArguments::Value(r.field(block, &at, "input")?),
            protocol: None,
            kind: CallKind::Tool,
        });
    }
    Ok(calls)
}

/// The tools Anthropic's own tool search found in a response: the
/// `tool_name` of each `tool_reference` in its `tool_search_tool_result`
/// blocks (an error result finds none).
pub(crate) fn disclosed(response: &Value) -> Result<Vec<&str>, ProviderError> {
    let r = Reader {
        provider: Provider::Anthropic,
    };
    let mut names = Vec::new();
    for (i, block) in r.array(response, "", "content")?.iter().enumerate() {
        let at = index("content", i);
        if r.string(block, &at, "type")? != "tool_search_tool_result" {
            continue;
        }
        let content_at = super::join(&at, "content");
        let content = r.field(block, &at, "content")?;
        if r.string(content, &content_at, "type")? != "tool_search_tool_search_result" {
            continue;
        }
        let refs_at = super::join(&content_at, "tool_references");
        for (j, reference) in r
            .array(content, &content_at, "tool_references")?
            .iter()
            .enumerate()
        {
            names.push(r.string(reference, &index(&refs_at, j), "tool_name")?);
        }
    }
    Ok(names)
}

/// One user message with every result. A search of the host's that found
/// tools answers with their `tool_reference` blocks.
pub(crate) fn results(replies: &[ToolReply]) -> Vec<Value> {
    super::user_message(replies, |reply| {
        let content = match &reply.found {
            Some(found) if !found.is_empty() && !reply.is_error => Value::Array(found.clone()),
            _ => Value::from(reply.rendered.as_str()),
        };
        json!({
            "type": "tool_result",
            "tool_use_id": reply.call_id,
            "content": content,
            "is_error": reply.is_error,
        })
    })
}
