//! MCP (Model Context Protocol, 2025-06-18 to 2026-07-28): our tools as an
//! MCP server offers them, for a gateway that serves an MCP client.
//!
//! - tools: the `tools/list` result `{"tools":[{"name","title"?,
//!   "description","inputSchema","outputSchema"?,"annotations"}]}`.
//!   `annotations` always holds `readOnlyHint` and `idempotentHint`;
//!   `destructiveHint` and `openWorldHint` only when true, because MCP
//!   reads their absence as true, the cautious reading, and our
//!   [`tiny_harness_core::tool::Annotations`] cannot tell "said false" from "said
//!   nothing".
//! - calls: a JSON-RPC `tools/call` request `{"jsonrpc":"2.0","id",
//!   "method":"tools/call","params":{"name","arguments"?}}`, or a batch
//!   (an array) of them. The id is a string or a number
//!   ([`IdOrigin::Number`] keeps which); absent `arguments` means `{}`.
//!   A request of 2026-07-28 names its revision in
//!   `params._meta["io.modelcontextprotocol/protocolVersion"]`, kept as the
//!   call's [`super::DecodedCall::protocol`].
//!   Anything else (a notification, another method) is malformed here:
//!   the gateway routes other methods before it gets to tools.
//! - results: one JSON-RPC response per call, `{"jsonrpc":"2.0","id",
//!   "result":{"content":[{"type":"text","text"}],"structuredContent"?,
//!   "isError","resultType"?}}`. `content` is the untrusted block, always;
//!   `structuredContent` is the result's JSON part as the tool's
//!   `outputSchema` admitted it (the host checked it), present exactly when
//!   the tool has one and the call succeeded, as the spec requires of a
//!   server that declares one; `resultType` is `"complete"` for a request
//!   of 2026-07-28 or later, which requires it, and absent before. Refusals
//!   (an unknown tool, bad arguments) are sent as `isError` results too,
//!   not as JSON-RPC errors, so the model sees the untrusted block and can
//!   correct itself.

use serde_json::{Value, json};

use super::{
    CallKind, IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply,
    index, join,
};

/// One tool's entry in the `tools` array of the `tools/list` result.
pub(crate) fn entry(o: Offered<'_>) -> Value {
    let definition = &o.tool.definition;
    let hints = &definition.annotations;
    let mut annotations = json!({
        "readOnlyHint": hints.read_only,
        "idempotentHint": hints.idempotent,
    });
    if hints.destructive {
        annotations["destructiveHint"] = json!(true);
    }
    if hints.open_world {
        annotations["openWorldHint"] = json!(true);
    }
    let mut tool = json!({
        "name": o.wire_name,
        "description": definition.description,
    });
    tool["inputSchema"] = definition.input_schema.clone();
    tool["annotations"] = annotations;
    if let Some(title) = &definition.title {
        tool["title"] = json!(title);
    }
    if let Some(schema) = &definition.output_schema {
        tool["outputSchema"] = schema.clone();
    }
    tool
}

/// The empty arguments an absent `arguments` stands for.
static EMPTY_ARGS: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!({}));

/// The calls of a `tools/call` request or a batch of them.
pub(crate) fn calls(message: &Value) -> Result<Vec<RawCall<'_>>, ProviderError> {
    match message {
        Value::Array(batch) => batch
            .iter()
            .enumerate()
            .map(|(i, request)| call(request, &index("", i)))
            .collect(),
        request => Ok(vec![call(request, "")?]),
    }
}

fn call<'v>(request: &'v Value, at: &str) -> Result<RawCall<'v>, ProviderError> {
    let r = Reader {
        provider: Provider::Mcp,
    };
    let malformed = |key: &str, expected| ProviderError::Malformed {
        provider: Provider::Mcp.as_str(),
        at: join(at, key),
        expected,
    };
    if r.string(request, at, "method")? != "tools/call" {
        return Err(malformed("method", "\"tools/call\""));
    }
    let (id, origin) = match r.field(request, at, "id")? {
        Value::String(id) => (id.clone(), IdOrigin::Given),
        Value::Number(id) => (id.to_string(), IdOrigin::Number),
        _ => return Err(malformed("id", "a string or a number")),
    };
    let params = r.field(request, at, "params")?;
    let params_at = join(at, "params");
    let protocol = match r.optional(params, &params_at, "_meta")? {
        Some(meta) => match meta.get(PROTOCOL_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::String(v)) if is_revision(v) => Some(v.clone()),
            Some(_) => {
                return Err(malformed(
                    "params._meta.io.modelcontextprotocol/protocolVersion",
                    "a revision such as \"2026-07-28\"",
                ));
            }
        },
        None => None,
    };
    Ok(RawCall {
        protocol,
        kind: CallKind::Tool,
        id,
        origin,
        name: r.string(params, &params_at, "name")?,
        arguments: RawArguments::Value(
            r.optional(params, &params_at, "arguments")?
                .unwrap_or(&EMPTY_ARGS),
        ),
    })
}

/// Where a 2026-07-28 request names its revision, in `params._meta`.
const PROTOCOL_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The first revision whose results carry `resultType`.
const RESULT_TYPE_SINCE: &str = "2026-07-28";

/// Whether `v` reads as a revision: `YYYY-MM-DD`.
fn is_revision(v: &str) -> bool {
    v.len() == 10
        && v.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// One JSON-RPC response per reply.
pub(crate) fn results(replies: &[ToolReply]) -> Vec<Value> {
    replies
        .iter()
        .map(|reply| {
            let id = match reply.origin {
                IdOrigin::Number => serde_json::from_str::<serde_json::Number>(&reply.call_id)
                    .map_or_else(|_| json!(reply.call_id), Value::Number),
                _ => json!(reply.call_id),
            };
            let mut result = json!({
                "content": [{"type": "text", "text": reply.rendered}],
                "isError": reply.is_error,
            });
            if let Some(data) = &reply.structured {
                result["structuredContent"] = data.clone();
            }
            if reply
                .protocol
                .as_deref()
                .is_some_and(|p| p >= RESULT_TYPE_SINCE)
            {
                result["resultType"] = json!("complete");
            }
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        })
        .collect()
}
