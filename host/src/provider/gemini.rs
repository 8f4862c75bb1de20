//! Gemini `generateContent` (`POST /v1beta/models/{model}:generateContent`).
//!
//! - tools: `[{"functionDeclarations":[{"name","description","parameters"}]}]`,
//!   `parameters` being the input schema rewritten into Gemini's OpenAPI
//!   subset by [`super::gemini_schema`] (what each rewrite loses is kept on
//!   the [`super::EncodedRequest`]; the host validates against the
//!   original schema);
//! - calls: the parts of `candidates[0].content.parts[]` holding a
//!   `functionCall` object `{"name","args","id"?}`. `args` absent means no
//!   arguments (`{}`: the API omits an empty `Struct`). A call without an
//!   `id` (the Gemini Developer API often sends none) gets the invented id
//!   `gemini-<index of its part>`, stable for the response, marked
//!   [`IdOrigin::Invented`] and never sent back. A candidate
//!   without `content` (stopped for safety, say) or without `parts` has no
//!   calls; a response without candidates is malformed.
//! - results: one `{"role":"user","parts":[...]}` content holding a
//!   `{"functionResponse":{"name","id"?,"response":{...}}}` part per call,
//!   `name` the wire name as the model sent it, `id` only when the model
//!   gave one. Gemini reads the keys `output` and `error` of `response`:
//!   the rendered block goes under `output` for a success and under
//!   `error` for an error, which is Gemini's only error flag.

use serde_json::{Value, json};

use super::gemini_schema::{self, SchemaLimits, SchemaRewrite};
use super::{
    IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply, index,
    join,
};

/// One tool's function declaration, with what its schema rewrite changed.
pub(crate) fn entry(o: Offered<'_>, limits: SchemaLimits) -> (Value, Vec<SchemaRewrite>) {
    let (parameters, notes) = gemini_schema::rewrite(&o.tool.definition.input_schema, limits);
    let mut entry = json!({
        "name": o.wire_name,
        "description": o.tool.definition.description,
    });
    entry["parameters"] = parameters;
    (entry, notes)
}

/// The empty arguments an absent `args` stands for.
static EMPTY_ARGS: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!({}));

/// The calls of a `generateContent` response.
pub(crate) fn calls(response: &Value) -> Result<Vec<RawCall<'_>>, ProviderError> {
    let r = Reader {
        provider: Provider::Gemini,
    };
    let candidate = r.first(response, "", "candidates")?;
    let Some(content) = r.optional(candidate, "candidates[0]", "content")? else {
        return Ok(Vec::new());
    };
    let at = "candidates[0].content";
    let mut calls = Vec::new();
    for (i, part) in r.optional_array(content, at, "parts")?.iter().enumerate() {
        let at = index(&join(at, "parts"), i);
        let Some(call) = r.optional(part, &at, "functionCall")? else {
            continue;
        };
        let at = join(&at, "functionCall");
        let (id, origin) = match r.optional(call, &at, "id")? {
            Some(_) => (r.string(call, &at, "id")?.to_owned(), IdOrigin::Given),
            None => (format!("gemini-{i}"), IdOrigin::Invented),
        };
        calls.push(RawCall {
            id,
            origin,
            name: r.string(call, &at, "name")?,
            arguments: RawArguments::Value(r.optional(call, &at, "args")?.unwrap_or(&EMPTY_ARGS)),
        });
    }
    Ok(calls)
}

/// One user content with every function response.
pub(crate) fn results(replies: &[ToolReply]) -> Vec<Value> {
    if replies.is_empty() {
        return Vec::new();
    }
    let parts: Vec<Value> = replies
        .iter()
        .map(|reply| {
            let key = if reply.is_error { "error" } else { "output" };
            let mut response = json!({
                "name": reply.wire_name,
                "response": { key: reply.rendered },
            });
            if reply.origin != IdOrigin::Invented {
                response["id"] = json!(reply.call_id);
            }
            json!({ "functionResponse": response })
        })
        .collect();
    vec![json!({"role": "user", "parts": parts})]
}
