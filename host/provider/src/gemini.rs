//! Gemini `generateContent` (`POST /v1beta/models/{model}:generateContent`).
//!
//! - tools: `[{"functionDeclarations":[{"name","description",
//!   "parametersJsonSchema"}]}]`, the input schema unchanged (the API
//!   takes JSON Schema there); or, where [`GeminiSchema::Subset`] is
//!   chosen, `"parameters"`: the schema rewritten into Gemini's OpenAPI
//!   subset by [`super::gemini_schema`] (what each rewrite loses is kept on
//!   the [`super::EncodedRequest`]; the host validates against the
//!   original schema either way);
//! - calls: the parts of `candidates[0].content.parts[]` holding a
//!   `functionCall` object `{"name","args","id"?}`, or `function_call`, as
//!   the Python SDK's `to_json_dict()` writes it. Any other key of a part
//!   that names a call (`functionCalls`, `toolCall`, ...) is malformed,
//!   never skipped: a call the adapter cannot read must not look like a
//!   response without calls. `args` absent means no
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
    CallKind, IdOrigin, Offered, Provider, ProviderError, RawArguments, RawCall, Reader, ToolReply,
    index, join,
};

/// How a tool's input schema is sent to Gemini.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GeminiSchema {
    /// `parametersJsonSchema`: the schema as registered, unchanged.
    #[default]
    JsonSchema,
    /// `parameters`: the schema rewritten into Gemini's OpenAPI subset
    /// within these bounds, for a model or endpoint that takes only that.
    Subset(SchemaLimits),
}

impl GeminiSchema {
    /// The declaration's field the schema goes in.
    pub const fn field(self) -> &'static str {
        match self {
            GeminiSchema::JsonSchema => "parametersJsonSchema",
            GeminiSchema::Subset(_) => "parameters",
        }
    }
}

/// One tool's function declaration, with what its schema rewrite changed
/// (nothing, unless the subset is chosen).
pub(crate) fn entry(o: Offered<'_>, schema: GeminiSchema) -> (Value, Vec<SchemaRewrite>) {
    let mut entry = json!({
        "name": o.wire_name,
        "description": o.tool.definition.description,
    });
    match schema {
        GeminiSchema::JsonSchema => {
            entry["parametersJsonSchema"] = o.tool.definition.input_schema.clone();
            (entry, Vec::new())
        }
        GeminiSchema::Subset(limits) => {
            let (parameters, notes) =
                gemini_schema::rewrite(&o.tool.definition.input_schema, limits);
            if !parameters.is_null() {
                entry["parameters"] = parameters;
            }
            (entry, notes)
        }
    }
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
        let (key, call) = match r.optional(part, &at, "functionCall")? {
            Some(call) => ("functionCall", call),
            None => match r.optional(part, &at, "function_call")? {
                Some(call) => ("function_call", call),
                None => {
                    if let Some(unread) = unread_call(part) {
                        return Err(ProviderError::Malformed {
                            provider: Provider::Gemini.as_str(),
                            at: join(&at, unread),
                            expected: "functionCall (or function_call): a call under another key cannot be read",
                        });
                    }
                    continue;
                }
            },
        };
        let at = join(&at, key);
        let (id, origin) = match r.optional(call, &at, "id")? {
            Some(_) => (r.string(call, &at, "id")?.to_owned(), IdOrigin::Given),
            None => (format!("gemini-{i}"), IdOrigin::Invented),
        };
        calls.push(RawCall {
            id,
            origin,
            name: r.string(call, &at, "name")?,
            arguments: RawArguments::Value(r.optional(call, &at, "args")?.unwrap_or(&EMPTY_ARGS)),
            protocol: None,
            kind: CallKind::Tool,
        });
    }
    Ok(calls)
}

/// A key of `part` that names a call but is not one the adapter reads.
fn unread_call(part: &Value) -> Option<&str> {
    super::read::present_keys(part).find(|key| {
        let lower = key.to_ascii_lowercase();
        lower.contains("call") && !matches!(lower.as_str(), "functioncall" | "function_call")
    })
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
