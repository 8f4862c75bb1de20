//! What an older shape of the world registers and returns, in today's
//! types: each record rebuilt field by field (the compiler checks that no
//! field is forgotten), a field the older shape lacks set to "not set".

/// The conversions for one older shape whose types live at `$types`;
/// `$http` makes today's `mcp-http` of its `h`; `$extra` are helpers it
/// needs.
macro_rules! lift_shape {
    ($module:ident, $($types:ident)::+, |$h:ident| $http:expr, $($extra:item)*) => {
        pub(super) mod $module {
            use $($types)::+ as old;
            use crate::bindings::tiny_harness::plugin::types as new;
            use crate::bindings::{CallError, CallResult, Registration};

            $($extra)*

            pub(crate) fn registration(r: old::Registration) -> Registration {
                Registration {
                    servers: r.servers.into_iter().map(server).collect(),
                    mcp_sources: r.mcp_sources.into_iter().map(source).collect(),
                }
            }

            fn server(s: old::ServerDefinition) -> new::ServerDefinition {
                new::ServerDefinition {
                    name: s.name,
                    tools: s.tools.into_iter().map(tool).collect(),
                }
            }

            fn tool(t: old::ToolDefinition) -> new::ToolDefinition {
                let a = t.annotations;
                new::ToolDefinition {
                    name: t.name,
                    description: t.description,
                    input_schema: t.input_schema,
                    output_schema: t.output_schema,
                    annotations: new::Annotations {
                        read_only: a.read_only,
                        idempotent: a.idempotent,
                        destructive: a.destructive,
                        open_world: a.open_world,
                    },
                }
            }

            fn source(s: old::McpSource) -> new::McpSource {
                new::McpSource {
                    name: s.name,
                    transport: match s.transport {
                        old::McpTransport::Stdio(s) => new::McpTransport::Stdio(new::McpStdio {
                            command: s.command,
                            args: s.args,
                            env: s.env,
                            cwd: s.cwd,
                        }),
                        old::McpTransport::StreamableHttp($h) => {
                            new::McpTransport::StreamableHttp($http)
                        }
                    },
                    timeout_ms: s.timeout_ms,
                    start_timeout_ms: s.start_timeout_ms,
                    eager: s.eager,
                    roots: s.roots,
                }
            }

            pub(crate) fn answer(
                answer: Result<old::CallResult, old::CallError>,
            ) -> Result<CallResult, CallError> {
                match answer {
                    Ok(r) => Ok(CallResult {
                        content: r
                            .content
                            .into_iter()
                            .map(|part| match part {
                                old::ContentPart::Text(text) => new::ContentPart::Text(text),
                                old::ContentPart::Json(j) => new::ContentPart::Json(new::JsonData {
                                    media_type: j.media_type,
                                    data: j.data,
                                }),
                            })
                            .collect(),
                        is_error: r.is_error,
                    }),
                    Err(old::CallError::UnknownTool(m)) => Err(CallError::UnknownTool(m)),
                    Err(old::CallError::InvalidArguments(m)) => Err(CallError::InvalidArguments(m)),
                    Err(old::CallError::Denied(m)) => Err(CallError::Denied(m)),
                    Err(old::CallError::Failed(m)) => Err(CallError::Failed(m)),
                }
            }
        }
    };
}

lift_shape!(
    v020,
    crate::worlds::v0_2_0::tiny_harness::plugin::types,
    |h| new::McpHttp {
        url: h.url,
        headers: h.headers,
        oauth: None,
    },
);

lift_shape!(
    v030_first,
    crate::worlds::v0_3_0_first::tiny_harness::plugin::types,
    |h| new::McpHttp {
        url: h.url,
        headers: h.headers,
        oauth: h.oauth.map(oauth),
    },
    fn oauth(o: old::McpOauth) -> new::McpOauth {
        new::McpOauth {
            grant: match o.grant {
                old::OauthGrant::AuthorizationCode => new::OauthGrant::AuthorizationCode,
                old::OauthGrant::ClientCredentials => new::OauthGrant::ClientCredentials,
            },
            client_id: o.client_id,
            client_secret: o.client_secret,
            private_key: o.private_key,
            signing_algorithm: o.signing_algorithm,
            client_metadata_url: o.client_metadata_url,
            scopes: o.scopes,
            callback_port: o.callback_port,
            identity_provider: None,
        }
    }
);

pub(super) use v020::{answer as answer_020, registration as registration_020};
pub(super) use v030_first::{answer as answer_030_first, registration as registration_030_first};
