//! Amazon Bedrock Converse (`POST /model/{modelId}/converse`).
//!
//! - tools: the `toolConfig` object `{"tools":[{"toolSpec":{"name",
//!   "description","inputSchema":{"json":...}}}]}` (send it as the
//!   request's `toolConfig`, adding `toolChoice` if wanted);
//! - calls: the blocks of `output.message.content[]` holding a `toolUse`
//!   object `{"toolUseId","name","input"}`; other blocks (`text`,
//!   `reasoningContent`) are skipped;
//! - results: one `{"role":"user","content":[...]}` message holding a
//!   `{"toolResult":{"toolUseId","content":[{"text":...}],"status"}}`
//!   block per call, `status` `success` or `error`. (Bedrock documents
//!   `status` as honoured by Anthropic Claude and Amazon Nova models; the
//!   block's own `status` attribute carries it for every model.)

use serde_json::{Value, json};

use super::{
    CallKind, IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply,
    index, join,
};

/// One tool's entry in the `tools` array of the `toolConfig` object.
pub(crate) fn entry(o: Offered<'_>) -> Value {
    let mut entry = json!({
        "toolSpec": {
            "name": o.wire_name,
            "description": o.tool.definition.description,
            "inputSchema": {},
        },
    });
    entry["toolSpec"]["inputSchema"]["json"] = o.tool.definition.input_schema.clone();
    entry
}

/// The calls of a Converse response.
pub(crate) fn calls(response: &Value) -> Result<Vec<RawCall<'_>>, ProviderError> {
    let r = Reader {
        provider: Provider::Bedrock,
    };
    let output = r.field(response, "", "output")?;
    let message = r.field(output, "output", "message")?;
    let mut calls = Vec::new();
    for (i, block) in r
        .array(message, "output.message", "content")?
        .iter()
        .enumerate()
    {
        let at = index("output.message.content", i);
        let Some(tool_use) = r.optional(block, &at, "toolUse")? else {
            // A call spelled another way (`tool_use`, `ToolUse`) is not
            // read: refused, not taken for a block without a call.
            let misspelt = super::read::present_keys(block)
                .find(|k| k.to_ascii_lowercase().replace('_', "") == "tooluse");
            if let Some(key) = misspelt {
                return Err(ProviderError::Malformed {
                    provider: Provider::Bedrock.as_str(),
                    at: join(&at, key),
                    expected: "toolUse (the Converse API's spelling)",
                });
            }
            continue;
        };
        let at = join(&at, "toolUse");
        calls.push(RawCall {
            id: r.string(tool_use, &at, "toolUseId")?.to_owned(),
            origin: IdOrigin::Given,
            name: r.string(tool_use, &at, "name")?,
            arguments: RawArguments::Value(r.field(tool_use, &at, "input")?),
            protocol: None,
            kind: CallKind::Tool,
        });
    }
    Ok(calls)
}

/// One user message with every result.
pub(crate) fn results(replies: &[ToolReply]) -> Vec<Value> {
    super::user_message(replies, |reply| {
        json!({
            "toolResult": {
                "toolUseId": reply.call_id,
                "content": [{"text": reply.rendered}],
                "status": if reply.is_error { "error" } else { "success" },
            },
        })
    })
}
