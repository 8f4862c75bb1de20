//! OpenAI: Chat Completions (`POST /v1/chat/completions`) and Responses
//! (`POST /v1/responses`).
//!
//! Chat Completions:
//! - tools: `[{"type":"function","function":{"name","description","parameters"}}]`;
//! - calls: `choices[0].message.tool_calls[]`, each `{"id","type":"function",
//!   "function":{"name","arguments"}}` with `arguments` a JSON *text*;
//!   `tool_calls` absent or `null` means no calls;
//! - results: one `{"role":"tool","tool_call_id","content"}` message per
//!   call. The format has no error flag: the block's `status` attribute
//!   says it.
//!
//! Responses:
//! - tools: `[{"type":"function","name","description","parameters","strict":false}]`.
//!   `strict` is sent as `false` on purpose: the API defaults it to `true`,
//!   and strict mode accepts only a subset of JSON Schema (every property
//!   required, `additionalProperties: false` on every object, no
//!   `pattern`/`format`/... in some models), so an ordinary tool schema
//!   would be refused or would have to be rewritten. The host validates
//!   every call against the registered schema anyway.
//! - calls: the items of `output[]` with `"type":"function_call"`, each
//!   `{"call_id","name","arguments"}` (`arguments` a JSON text; the item's
//!   own `id`, `fc_...`, is not the call id); other items (messages,
//!   reasoning, built-in tool calls) are skipped;
//! - results: one `{"type":"function_call_output","call_id","output"}`
//!   input item per call. No error flag either.
//! - deferred tools (see `deferred`): a client-executed `tool_search_call`
//!   is the host's search, answered with a `tool_search_output` holding
//!   the definitions of the tools found (none when the search was
//!   refused); the tools the server's own search loaded are the functions
//!   of its `tool_search_output` items.

use serde_json::{Value, json};

use super::{
    CallKind, IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply,
    index, join,
};

/// One tool's entry in the Chat Completions `tools` array.
pub(crate) fn chat_entry(o: Offered<'_>) -> Value {
    let mut entry = json!({
        "type": "function",
        "function": {
            "name": o.wire_name,
            "description": o.tool.definition.description,
        },
    });
    entry["function"]["parameters"] = o.tool.definition.input_schema.clone();
    entry
}

/// One tool's entry in the Responses `tools` array.
pub(crate) fn responses_entry(o: Offered<'_>) -> Value {
    let mut entry = json!({
        "type": "function",
        "name": o.wire_name,
        "description": o.tool.definition.description,
        "strict": false,
    });
    entry["parameters"] = o.tool.definition.input_schema.clone();
    entry
}

/// The calls of a Chat Completions response.
pub(crate) fn chat_calls(response: &Value) -> Result<Vec<RawCall<'_>>, ProviderError> {
    let r = Reader {
        provider: Provider::OpenAiChat,
    };
    let choice = r.first(response, "", "choices")?;
    let message = r.field(choice, "choices[0]", "message")?;
    let at = "choices[0].message";
    if r.optional(message, at, "function_call")?.is_some() {
        return Err(ProviderError::Malformed {
            provider: Provider::OpenAiChat.as_str(),
            at: join(at, "function_call"),
            expected: "absent: the deprecated function_call is not read (the request offers tools, whose calls come in tool_calls)",
        });
    }
    let mut calls = Vec::new();
    for (i, call) in r
        .optional_array(message, at, "tool_calls")?
        .iter()
        .enumerate()
    {
        let at = index(&join(at, "tool_calls"), i);
        let kind = r.string(call, &at, "type")?;
        if kind != "function" {
            return Err(ProviderError::Malformed {
                provider: Provider::OpenAiChat.as_str(),
                at: join(&at, "type"),
                expected: "\"function\" (the only kind of tool offered)",
            });
        }
        let function = r.field(call, &at, "function")?;
        let function_at = join(&at, "function");
        calls.push(RawCall {
            id: r.string(call, &at, "id")?.to_owned(),
            origin: IdOrigin::Given,
            name: r.string(function, &function_at, "name")?,
            arguments: RawArguments::Text(r.string(function, &function_at, "arguments")?),
            protocol: None,
            kind: CallKind::Tool,
        });
    }
    Ok(calls)
}

/// The calls of a Responses response.
pub(crate) fn responses_calls(response: &Value) -> Result<Vec<RawCall<'_>>, ProviderError> {
    let r = Reader {
        provider: Provider::OpenAiResponses,
    };
    let mut calls = Vec::new();
    for (i, item) in r.array(response, "", "output")?.iter().enumerate() {
        let at = index("output", i);
        match r.string(item, &at, "type")? {
            "function_call" => {}
            // The model asks the client for a search: the host's, when the
            // request offered it (otherwise the call is refused as a call
            // of a tool not offered). A search the server ran is not ours.
            "tool_search_call" => {
                if r.optional(item, &at, "execution")?.and_then(Value::as_str) != Some("client") {
                    continue;
                }
                calls.push(RawCall {
                    id: r.string(item, &at, "call_id")?.to_owned(),
                    origin: IdOrigin::Given,
                    name: super::SEARCH_TOOL,
                    arguments: RawArguments::Value(r.field(item, &at, "arguments")?),
                    protocol: None,
                    kind: CallKind::ToolSearch,
                });
                continue;
            }
            // A call of a kind never offered (a custom or local tool) has
            // no result this adapter could give: refused, not skipped.
            "custom_tool_call" | "local_shell_call" | "apply_patch_call" => {
                return Err(ProviderError::Malformed {
                    provider: Provider::OpenAiResponses.as_str(),
                    at: join(&at, "type"),
                    expected: "\"function_call\" (the only kind of tool offered)",
                });
            }
            _ => continue,
        }
        calls.push(RawCall {
            id: r.string(item, &at, "call_id")?.to_owned(),
            origin: IdOrigin::Given,
            name: r.string(item, &at, "name")?,
            arguments: RawArguments::Text(r.string(item, &at, "arguments")?),
            protocol: None,
            kind: CallKind::Tool,
        });
    }
    Ok(calls)
}

/// One `tool` message per reply.
pub(crate) fn chat_results(replies: &[ToolReply]) -> Vec<Value> {
    replies
        .iter()
        .map(|reply| {
            json!({
                "role": "tool",
                "tool_call_id": reply.call_id,
                "content": reply.rendered,
            })
        })
        .collect()
}

/// The tools the server's own tool search loaded in a Responses
/// response: the function names of its `tool_search_output` items (those
/// in a namespace too).
pub(crate) fn responses_disclosed(response: &Value) -> Result<Vec<&str>, ProviderError> {
    let r = Reader {
        provider: Provider::OpenAiResponses,
    };
    let mut names = Vec::new();
    for (i, item) in r.array(response, "", "output")?.iter().enumerate() {
        let at = index("output", i);
        if r.string(item, &at, "type")? != "tool_search_output" {
            continue;
        }
        let tools_at = join(&at, "tools");
        for (j, tool) in r.array(item, &at, "tools")?.iter().enumerate() {
            let tool_at = index(&tools_at, j);
            match r.string(tool, &tool_at, "type")? {
                "function" => names.push(r.string(tool, &tool_at, "name")?),
                "namespace" => {
                    let inner_at = join(&tool_at, "tools");
                    for (k, inner) in r.array(tool, &tool_at, "tools")?.iter().enumerate() {
                        names.push(r.string(inner, &index(&inner_at, k), "name")?);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(names)
}

/// One `function_call_output` item per reply, and a `tool_search_output`
/// (the found tools' definitions) for each search of the host's.
pub(crate) fn responses_results(replies: &[ToolReply]) -> Vec<Value> {
    replies
        .iter()
        .map(|reply| match reply.kind {
            CallKind::ToolSearch => json!({
                "type": "tool_search_output",
                "call_id": reply.call_id,
                "execution": "client",
                "status": "completed",
                "tools": reply.found.clone().unwrap_or_default(),
            }),
            _ => json!({
                "type": "function_call_output",
                "call_id": reply.call_id,
                "output": reply.rendered,
            }),
        })
        .collect()
}
