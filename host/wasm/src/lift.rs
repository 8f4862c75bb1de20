//! Taking what a plugin returns, within its limits.
//!
//! The canonical ABI hands the host lists and strings as (pointer, length)
//! pairs into guest memory, and nothing stops a guest from pointing a
//! hundred thousand strings at the same megabyte: lifting such a value
//! copies each one, so a host that trusted the guest's memory limit to
//! bound its answer would copy a hundred gigabytes out of a 64 MiB guest.
//! wasmtime meters what one lift may copy ("hostcall fuel"); [`fuel`] sets
//! it per call from the plugin's limits, so an answer that would copy more
//! fails before it is copied. What is then lifted is checked against the
//! limits exactly (parts, framing, counts and sizes) before anything is
//! parsed or rendered.
//!
//! Invariant: the host holds at most the fuel's worth of a plugin's answer
//! (documented in `docs/security.md`), and parses JSON (results, schemas)
//! only once the text is within its limit, since a parsed document can take
//! many times its text in memory.

use super::bindings;
use super::limits::Limits;
use tiny_harness_core::declaration::{Declaration, Http, Stdio, Transport};
use tiny_harness_core::display;
use tiny_harness_core::registry::{RegistrationLimit, RegistrationLimits, RegistryError};
use tiny_harness_core::source::PendingTool;
use tiny_harness_core::tool::{
    Annotations, CallError, ContentPart, ResultBudget, ToolDefinition, ToolResult,
};

/// The least hostcall fuel a call gets, whatever its limits: the guest's
/// own calls into WASI (a large write, say) are metered by the same fuel.
pub const MIN_FUEL: usize = 16 << 20;

/// The hostcall fuel for one call or `register` of a plugin with `limits`:
/// room for the largest answer the limits allow, each list element at its
/// size in the host, and never less than [`MIN_FUEL`].
pub(crate) fn fuel(limits: &Limits, registering: bool) -> usize {
    let answer = if registering {
        let r = &limits.registration;
        r.total_bytes
            .saturating_add(
                r.tools
                    .saturating_mul(size_of::<bindings::ToolDefinition>()),
            )
            .saturating_add(
                r.servers
                    .saturating_mul(size_of::<bindings::ServerDefinition>()),
            )
    } else {
        limits.result_bytes.saturating_add(
            limits
                .result_parts
                .saturating_mul(size_of::<bindings::ContentPart>()),
        )
    };
    answer.max(MIN_FUEL)
}

/// Whether `error` is wasmtime refusing to copy more than the fuel allows
/// (its `HostcallFuelExhausted`, known only by its message).
pub(crate) fn is_out_of_fuel(error: &wasmtime::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .to_string()
            .starts_with("too much data is being copied")
    })
}

/// Checks a call's outcome against `budget` (parts first, then each part
/// with its framing) and only then parses its JSON parts.
pub(crate) fn call_outcome(
    outcome: Result<bindings::CallResult, bindings::CallError>,
    mut budget: ResultBudget,
) -> Result<ToolResult, CallError> {
    let result = match outcome {
        Ok(result) => result,
        Err(error) => {
            let (message, wrap): (String, fn(String) -> CallError) = match error {
                bindings::CallError::UnknownTool(m) => (m, |m| {
                    CallError::Failed(format!("the plugin does not recognise this tool: {m}"))
                }),
                bindings::CallError::InvalidArguments(m) => (m, CallError::RejectedArguments),
                bindings::CallError::Denied(m) => (m, CallError::Denied),
                bindings::CallError::Failed(m) => (m, CallError::Failed),
            };
            budget.admit(message.len())?;
            return Err(wrap(display::one_line(&message).into_owned()));
        }
    };
    budget.admit_parts(result.content.len())?;
    for part in &result.content {
        budget.admit_part(match part {
            bindings::ContentPart::Text(text) => text.len(),
            bindings::ContentPart::Json(json) => json.media_type.len() + json.data.len(),
        })?;
    }
    let content = result
        .content
        .into_iter()
        .enumerate()
        .map(|(index, part)| match part {
            bindings::ContentPart::Text(text) => Ok(ContentPart::Text { text }),
            bindings::ContentPart::Json(json) => serde_json::from_str(&json.data)
                .map(|data| ContentPart::Json {
                    media_type: json.media_type,
                    data,
                })
                .map_err(|e| {
                    CallError::InvalidOutput(format!("part {} is not valid JSON: {e}", index + 1))
                }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ToolResult {
        content,
        is_error: result.is_error,
    })
}

/// The longest `register` error message kept; the rest is cut.
pub const MAX_REGISTER_MESSAGE: usize = 4096;

/// Why a registration was refused.
#[derive(Debug)]
pub(crate) enum RegistrationRefused {
    /// `register` returned this error message (one line, maybe cut).
    Plugin(String),
    /// The registration is over a limit.
    Limit(RegistryError),
    /// The registration is malformed (a schema that is not JSON, an MCP
    /// source this host cannot reach).
    Invalid(String),
}

/// Checks `register`'s answer against `limits` (counts, then each string
/// and the total) and only then parses its schemas. Returns the plugin's
/// own tools and the MCP servers it declares.
pub(crate) fn registration(
    outcome: Result<bindings::Registration, String>,
    plugin: &str,
    limits: &RegistrationLimits,
) -> Result<(Vec<PendingTool>, Vec<Declaration>), RegistrationRefused> {
    let registration = match outcome {
        Ok(registration) => registration,
        Err(message) => {
            let cut = truncate(&message, MAX_REGISTER_MESSAGE);
            return Err(RegistrationRefused::Plugin(
                display::one_line(cut).into_owned(),
            ));
        }
    };
    check_sizes(&registration, plugin, limits).map_err(RegistrationRefused::Limit)?;
    let declarations = declarations(&registration)?;
    let mut tools = Vec::new();
    for server in registration.servers {
        for tool in server.tools {
            let parse = |which: &str, text: &str| {
                serde_json::from_str(text).map_err(|e| {
                    RegistrationRefused::Invalid(format!(
                        "tool {:?} has an {which} schema that is not JSON: {e}",
                        truncate(&tool.name, 128)
                    ))
                })
            };
            let input_schema = parse("input", &tool.input_schema)?;
            let output_schema = tool
                .output_schema
                .as_deref()
                .map(|text| parse("output", text))
                .transpose()?;
            let a = tool.annotations;
            tools.push(PendingTool {
                server: server.name.clone(),
                definition: ToolDefinition {
                    name: tool.name,
                    title: None,
                    description: tool.description,
                    input_schema,
                    output_schema,
                    annotations: Annotations {
                        read_only: a.read_only,
                        idempotent: a.idempotent,
                        destructive: a.destructive,
                        open_world: a.open_world,
                    },
                },
            });
        }
    }
    Ok((tools, declarations))
}

/// The MCP servers a registration declares, each named like a server and
/// unique among the plugin's servers and sources.
fn declarations(
    registration: &bindings::Registration,
) -> Result<Vec<Declaration>, RegistrationRefused> {
    let mut names: std::collections::BTreeSet<&str> = registration
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let mut declarations = Vec::new();
    for source in &registration.mcp_sources {
        tiny_harness_core::registry::check_segment("server", &source.name)
            .map_err(|e| RegistrationRefused::Invalid(format!("MCP source: {e}")))?;
        if !names.insert(&source.name) {
            return Err(RegistrationRefused::Invalid(format!(
                "MCP source {:?} has the name of another server or source of the plugin",
                source.name
            )));
        }
        let transport = match &source.transport {
            bindings::McpTransport::Stdio(stdio) => Transport::Stdio(Stdio {
                command: stdio.command.clone(),
                args: stdio.args.clone(),
                env: stdio.env.clone(),
                cwd: stdio.cwd.clone(),
            }),
            bindings::McpTransport::StreamableHttp(http) => Transport::Http(Http {
                url: http.url.clone(),
                headers: http.headers.clone(),
                oauth: http.oauth.as_ref().map(|o| {
                    use tiny_harness_core::declaration::{Grant, IdentityProvider, OAuth};
                    // Non-exhaustive: filled field by field.
                    let mut oauth = OAuth::default();
                    oauth.grant = match o.grant {
                        bindings::OauthGrant::AuthorizationCode => Grant::AuthorizationCode,
                        bindings::OauthGrant::ClientCredentials => Grant::ClientCredentials,
                        bindings::OauthGrant::Enterprise => Grant::Enterprise,
                    };
                    oauth.client_id = o.client_id.clone();
                    oauth.client_secret = o.client_secret.clone();
                    oauth.private_key = o.private_key.clone();
                    oauth.signing_algorithm = o.signing_algorithm.clone();
                    oauth.client_metadata_url = o.client_metadata_url.clone();
                    oauth.scopes = o.scopes.clone();
                    oauth.callback_port = o.callback_port;
                    oauth.identity_provider = o.identity_provider.as_ref().map(|i| {
                        let mut provider = IdentityProvider::default();
                        provider.issuer = i.issuer.clone();
                        provider.token_endpoint = i.token_endpoint.clone();
                        provider.client_id = i.client_id.clone();
                        provider.client_secret = i.client_secret.clone();
                        provider.id_token = i.id_token.clone();
                        provider
                    });
                    Box::new(oauth)
                }),
            }),
        };
        declarations.push(Declaration {
            name: source.name.clone(),
            transport,
            timeout: source
                .timeout_ms
                .map(|ms| std::time::Duration::from_millis(u64::from(ms.max(1)))),
            start_timeout: source
                .start_timeout_ms
                .map(|ms| std::time::Duration::from_millis(u64::from(ms.max(1)))),
            eager: source.eager,
            roots: source.roots.clone(),
        });
    }
    Ok(declarations)
}

/// Applies the registration limits to the text as the plugin sent it. The
/// registry applies them again to what it registers (for every kind of
/// source); here they keep oversized schemas from being parsed at all.
fn check_sizes(
    registration: &bindings::Registration,
    plugin: &str,
    limits: &RegistrationLimits,
) -> Result<(), RegistryError> {
    let over = |what: &str, limit, amount: usize, at_least| {
        limits.refusal(plugin, what, limit, amount as u64, at_least)
    };
    let within = |limit, amount: usize| amount as u64 <= limits.max(limit);
    let servers = registration.servers.len() + registration.mcp_sources.len();
    if !within(RegistrationLimit::Servers, servers) {
        return Err(over(
            "the registration",
            RegistrationLimit::Servers,
            servers,
            false,
        ));
    }
    let tools = registration.servers.iter().map(|s| s.tools.len()).sum();
    if !within(RegistrationLimit::Tools, tools) {
        return Err(over(
            "the registration",
            RegistrationLimit::Tools,
            tools,
            false,
        ));
    }
    let mut total = 0usize;
    for source in &registration.mcp_sources {
        let pairs = |pairs: &[(String, String)]| -> usize {
            pairs.iter().map(|(k, v)| k.len() + v.len()).sum()
        };
        let size = source.name.len()
            + source.roots.iter().map(String::len).sum::<usize>()
            + match &source.transport {
                bindings::McpTransport::Stdio(s) => {
                    s.command.len()
                        + s.args.iter().map(String::len).sum::<usize>()
                        + pairs(&s.env)
                        + s.cwd.as_ref().map_or(0, String::len)
                }
                bindings::McpTransport::StreamableHttp(h) => {
                    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
                    h.url.len()
                        + pairs(&h.headers)
                        + h.oauth.as_ref().map_or(0, |o| {
                            text(&o.client_id)
                                + text(&o.client_secret)
                                + text(&o.private_key)
                                + text(&o.signing_algorithm)
                                + text(&o.client_metadata_url)
                                + o.scopes.iter().map(String::len).sum::<usize>()
                                + o.identity_provider.as_ref().map_or(0, |i| {
                                    i.issuer.len()
                                        + i.token_endpoint.len()
                                        + i.client_id.len()
                                        + text(&i.client_secret)
                                        + i.id_token.len()
                                })
                        })
                }
            };
        total = total.saturating_add(size);
    }
    if !within(RegistrationLimit::Total, total) {
        return Err(over(
            "the registration",
            RegistrationLimit::Total,
            total,
            true,
        ));
    }
    for server in &registration.servers {
        total = total.saturating_add(server.name.len());
        for tool in &server.tools {
            let name = truncate(&tool.name, 128);
            let what = |item: &str| format!("tool {plugin}/{}.{name}: the {item}", server.name);
            let texts = [
                (
                    "description",
                    RegistrationLimit::Description,
                    Some(&tool.description),
                ),
                (
                    "input schema",
                    RegistrationLimit::Schema,
                    Some(&tool.input_schema),
                ),
                (
                    "output schema",
                    RegistrationLimit::Schema,
                    tool.output_schema.as_ref(),
                ),
            ];
            total = total.saturating_add(tool.name.len());
            for (item, limit, text) in texts {
                let Some(text) = text else { continue };
                if !within(limit, text.len()) {
                    return Err(over(&what(item), limit, text.len(), false));
                }
                total = total.saturating_add(text.len());
            }
            if !within(RegistrationLimit::Total, total) {
                return Err(over(
                    "the registration",
                    RegistrationLimit::Total,
                    total,
                    true,
                ));
            }
        }
    }
    Ok(())
}

/// The longest prefix of `text` of at most `max` bytes that ends on a
/// character boundary.
fn truncate(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}
