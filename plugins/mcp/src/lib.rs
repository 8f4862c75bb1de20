//! `mcp`: declares the MCP servers of its config to the host, in the
//! `mcpServers` shape that Claude Desktop, Cursor and VS Code configs use,
//! so that a user can paste what they already have:
//!
//! ```toml
//! [plugins.mcp.config.mcpServers.everything]
//! command = "node"
//! args = ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
//! env = { EVERYTHING_TOKEN = "${EVERYTHING_TOKEN}" }   # optional
//! cwd = "/abs/path"                                   # optional
//! timeout_ms = 10000                                  # optional: per call
//! start_timeout_ms = 60000                            # optional: to start
//! eager = true                                        # optional
//! roots = ["/abs/path"]                               # optional: roots/list
//!
//! [plugins.mcp.config.mcpServers.remote]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }
//!
//! [plugins.mcp.config.mcpServers.tracker]               # OAuth, when discovery is not enough
//! url = "https://tracker.example.com/mcp"
//! oauth = { client_id = "tiny-harness", client_secret = "${TRACKER_SECRET}", scopes = ["read"] }
//! ```
//!
//! `oauth` (all optional): `grant` (`authorization_code`, the default,
//! `client_credentials` or `enterprise`), `client_id`, `client_secret` and
//! `private_key` (as `${NAME}`), `signing_algorithm`, `client_metadata_url`,
//! `scopes`, `callback_port`, and for `enterprise` an `identity_provider`
//! table (`issuer`, `token_endpoint`, `client_id`, `client_secret`,
//! `id_token`, the last two as `${NAME}`); the camelCase spellings other
//! clients write (`clientId`, `callbackPort`, ...) are accepted too.
//!
//! The plugin has no tools of its own: the host reaches each server under
//! the plugin's grants (`exec` for a command, `net` for a URL) and
//! registers its tools as `mcp/<server>.<tool>`. A server's key becomes its
//! name, lowercased, with every character outside `[a-z0-9_-]` made `_`.
//! `type` (`stdio`, `http`, `streamable-http`), `disabled` (the server is
//! left out), `autoApprove` and `alwaysAllow` are accepted as other tools
//! write them; `sse` servers are refused (use streamable HTTP).

use std::collections::BTreeMap;

use serde::Deserialize;

use tiny_harness_plugin::{
    Config as PluginConfig, McpHttp, McpOauth, McpSource, McpStdio, McpTransport, OauthGrant,
    OauthIdentityProvider, Plugin, Server as ToolServer,
};

/// The plugin's config.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, Server>,
}

/// One entry of `mcpServers`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Server {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    oauth: Option<OAuth>,
    timeout_ms: Option<u32>,
    start_timeout_ms: Option<u32>,
    #[serde(default)]
    eager: bool,
    #[serde(default)]
    roots: Vec<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    disabled: bool,
    #[serde(rename = "autoApprove", default)]
    _auto_approve: Option<serde_json::Value>,
    #[serde(rename = "alwaysAllow", default)]
    _always_allow: Option<serde_json::Value>,
}

/// A server's `oauth` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuth {
    grant: Option<String>,
    #[serde(alias = "clientId")]
    client_id: Option<String>,
    #[serde(alias = "clientSecret")]
    client_secret: Option<String>,
    #[serde(alias = "privateKey")]
    private_key: Option<String>,
    #[serde(alias = "signingAlgorithm")]
    signing_algorithm: Option<String>,
    #[serde(alias = "clientMetadataUrl")]
    client_metadata_url: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(alias = "callbackPort")]
    callback_port: Option<u16>,
    #[serde(alias = "identityProvider")]
    identity_provider: Option<IdentityProvider>,
}

/// The identity provider of the `enterprise` grant.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityProvider {
    issuer: String,
    #[serde(alias = "tokenEndpoint")]
    token_endpoint: String,
    #[serde(alias = "clientId")]
    client_id: String,
    #[serde(alias = "clientSecret")]
    client_secret: Option<String>,
    #[serde(alias = "idToken")]
    id_token: String,
}

impl OAuth {
    fn lower(self, at: &dyn Fn(&str) -> String) -> Result<McpOauth, String> {
        let grant = match self.grant.as_deref() {
            None | Some("authorization_code" | "authorization-code") => {
                OauthGrant::AuthorizationCode
            }
            Some("client_credentials" | "client-credentials") => OauthGrant::ClientCredentials,
            Some("enterprise") => OauthGrant::Enterprise,
            Some(other) => {
                return Err(at(&format!(
                    "oauth.grant {other:?} is not authorization_code, client_credentials or enterprise"
                )));
            }
        };
        Ok(McpOauth {
            grant,
            client_id: self.client_id,
            client_secret: self.client_secret,
            private_key: self.private_key,
            signing_algorithm: self.signing_algorithm,
            client_metadata_url: self.client_metadata_url,
            scopes: self.scopes,
            callback_port: self.callback_port,
            identity_provider: self.identity_provider.map(|i| OauthIdentityProvider {
                issuer: i.issuer,
                token_endpoint: i.token_endpoint,
                client_id: i.client_id,
                client_secret: i.client_secret,
                id_token: i.id_token,
            }),
        })
    }
}

/// The server name a `mcpServers` key becomes.
fn server_name(key: &str) -> String {
    key.chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn source(key: &str, server: Server) -> Result<McpSource, String> {
    let at = |message: &str| format!("mcpServers.{key}: {message}");
    match server.kind.as_deref() {
        None | Some("stdio" | "http" | "streamable-http" | "streamableHttp") => {}
        Some("sse") => {
            return Err(at(
                "the SSE transport is not supported; use the server's streamable HTTP endpoint",
            ));
        }
        Some(other) => return Err(at(&format!("unknown type {other:?}"))),
    }
    let transport = match (server.command, server.url) {
        (Some(command), None) => {
            if !server.headers.is_empty() || server.oauth.is_some() {
                return Err(at("headers and oauth apply to a url, not to a command"));
            }
            McpTransport::Stdio(McpStdio {
                command,
                args: server.args,
                env: server.env.into_iter().collect(),
                cwd: server.cwd,
            })
        }
        (None, Some(url)) => {
            if !server.args.is_empty() || !server.env.is_empty() || server.cwd.is_some() {
                return Err(at("args, env and cwd apply to a command, not to a url"));
            }
            let oauth = server.oauth.map(|o| o.lower(&at)).transpose()?;
            McpTransport::StreamableHttp(McpHttp {
                url,
                headers: server.headers.into_iter().collect(),
                oauth,
            })
        }
        (Some(_), Some(_)) => return Err(at("give either command or url, not both")),
        (None, None) => {
            return Err(at(
                "give a command (a program to start) or a url (a streamable HTTP endpoint)",
            ));
        }
    };
    Ok(McpSource {
        name: server_name(key),
        transport,
        timeout_ms: server.timeout_ms,
        start_timeout_ms: server.start_timeout_ms,
        eager: server.eager,
        roots: server.roots,
    })
}

/// The plugin: no tools of its own (the host calls its servers), and an
/// MCP source for every server of the config that is not disabled.
struct Mcp;

impl Plugin for Mcp {
    fn servers(_config: &PluginConfig) -> Result<Vec<ToolServer>, String> {
        Ok(Vec::new())
    }

    fn mcp_sources(config: &PluginConfig) -> Result<Vec<McpSource>, String> {
        let config: Config =
            serde_json::from_str(config.json()).map_err(|e| format!("the config: {e}"))?;
        let mut sources: Vec<McpSource> = Vec::new();
        for (key, server) in config.mcp_servers {
            if server.disabled {
                continue;
            }
            let source = source(&key, server)?;
            if source.name.is_empty() {
                return Err(format!("mcpServers.{key}: the name is empty"));
            }
            if sources.iter().any(|s| s.name == source.name) {
                return Err(format!(
                    "mcpServers.{key}: its name becomes {:?}, as another server's does; rename one",
                    source.name
                ));
            }
            sources.push(source);
        }
        Ok(sources)
    }
}

tiny_harness_plugin::export!(Mcp);
