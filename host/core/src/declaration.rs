//! What a plugin declares about an MCP server: how to reach it. Plain data,
//! as the plugin sent it; nothing here is granted or resolved yet (the MCP
//! runtime's `mcp::launch` does that).

use std::fmt;
use std::time::Duration;

/// An MCP server a plugin asks the host to reach for it.
#[derive(Clone, PartialEq, Eq)]
pub struct Declaration {
    /// The server name: the middle part of `<plugin>/<server>.<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The longest one call may take; `None` for the plugin's timeout.
    pub timeout: Option<Duration>,
    /// The longest starting may take; `None` for
    /// `mcp::launch::DEFAULT_START_TIMEOUT`.
    pub start_timeout: Option<Duration>,
    /// Start it with the host even when the lock file could stand in for it.
    pub eager: bool,
    /// Host directories to tell the server about as roots.
    pub roots: Vec<String>,
}

/// How to reach a declared server.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio(Stdio),
    /// Streamable HTTP.
    Http(Http),
}

/// A program to start, as declared.
#[derive(Clone, PartialEq, Eq)]
pub struct Stdio {
    /// A bare name or an absolute path; must be granted.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables to set; values may name granted host variables as `${NAME}`.
    pub env: Vec<(String, String)>,
    /// The working directory (a host path), or `None` for a private one.
    pub cwd: Option<String>,
}

/// A streamable HTTP endpoint, as declared.
#[derive(Clone, PartialEq, Eq)]
pub struct Http {
    /// The endpoint URL.
    pub url: String,
    /// Headers for every request; values may name granted variables.
    pub headers: Vec<(String, String)>,
    /// How the host logs in when the server asks for OAuth (boxed: most
    /// servers have none).
    pub oauth: Option<Box<OAuth>>,
}

/// Which OAuth grant the host uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Grant {
    /// A person logs in through a browser (`mcp login`).
    #[default]
    AuthorizationCode,
    /// The host obtains tokens itself with the client's credentials.
    ClientCredentials,
    /// Enterprise-managed (SEP-990): a person's ID token from the
    /// enterprise's identity provider, exchanged for the server's token.
    Enterprise,
}

/// The identity provider of the enterprise grant, as declared.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct IdentityProvider {
    /// Its issuer URL.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client's id there.
    pub client_id: String,
    /// The client's secret there, `${NAME}`.
    pub client_secret: Option<String>,
    /// The person's ID token, `${NAME}`.
    pub id_token: String,
}

/// OAuth settings, as declared: `client_secret` and `private_key` are
/// `${NAME}` references, never values.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct OAuth {
    /// The grant.
    pub grant: Grant,
    /// A pre-registered client id (may name granted variables).
    pub client_id: Option<String>,
    /// Its secret, `${NAME}`.
    pub client_secret: Option<String>,
    /// A PEM private key for a JWT assertion, `${NAME}`.
    pub private_key: Option<String>,
    /// The key's algorithm.
    pub signing_algorithm: Option<String>,
    /// An HTTPS Client ID Metadata Document URL.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for beyond the server's.
    pub scopes: Vec<String>,
    /// The loopback redirect's port.
    pub callback_port: Option<u16>,
    /// The enterprise grant's identity provider.
    pub identity_provider: Option<IdentityProvider>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id.as_ref().map(|_| "…"))
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("private_key", &self.private_key.as_ref().map(|_| "…"))
            .field("signing_algorithm", &self.signing_algorithm)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field(
                "identity_provider",
                &self.identity_provider.as_ref().map(|i| &i.issuer),
            )
            .finish()
    }
}

impl Transport {
    /// `stdio` or `streamable-http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "streamable-http",
        }
    }
}

// Declared values may hold secrets (tokens in `env` or `headers`, even
// written out literally), so `Debug` names keys and never shows values.
impl fmt::Debug for Declaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Declaration")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("timeout", &self.timeout)
            .field("start_timeout", &self.start_timeout)
            .field("eager", &self.eager)
            .field("roots", &self.roots)
            .finish()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = |pairs: &[(String, String)]| -> Vec<String> {
            pairs.iter().map(|(k, _)| format!("{k}=…")).collect()
        };
        match self {
            Transport::Stdio(s) => f
                .debug_struct("Stdio")
                .field("command", &s.command)
                .field("args", &s.args.len())
                .field("env", &keys(&s.env))
                .field("cwd", &s.cwd)
                .finish(),
            Transport::Http(h) => f
                .debug_struct("Http")
                .field("url", &crate::display::redact_url(&h.url))
                .field("headers", &keys(&h.headers))
                .field("oauth", &h.oauth)
                .finish(),
        }
    }
}
