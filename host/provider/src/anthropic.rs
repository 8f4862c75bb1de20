//! Anthropic Messages (`POST /v1/messages`).
//!
//! - tools: `[{"name","description","input_schema"}]`;
//! - calls: the blocks of `content[]` with `"type":"tool_use"`, each
//!   `{"id","name","input"}` with `input` a JSON value (an object when
//!   well formed); other blocks (`text`, `thinking`, and `server_tool_use`,
//!   which Anthropic runs itself) are skipped;
//! - results: one `{"role":"user","content":[...]}` message holding a
//!   `{"type":"tool_result","tool_use_id","content","is_error"}` block per
//!   call, in order (the API wants every result of a turn in the one user
//!   message that follows it).

use serde_json::{Value, json};

use super::{
    IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply, index,
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
        });
    }
    Ok(calls)
}

/// One user message with every result.
pub(crate) fn results(replies: &[ToolReply]) -> Vec<Value> {
    super::user_message(replies, |reply| {
        json!({
            "type": "tool_result",
            "tool_use_id": reply.call_id,
            "content": reply.rendered,
            "is_error": reply.is_error,
        })
    })
}
