//! The `[serve]` section of a host config: the clients and the tools each
//! sees, the `Host` and `Origin` allowlists, and the gateway's limits.
//!
//! Invariant: a [`ServeConfig`] is checked as a whole when it is made (a
//! glob that cannot match a registry name, a client name that could not
//! be a token's, a rename that is not an MCP tool name, a limit of 0 or
//! past its ceiling are refused here); what needs the registry (a set
//! that matches nothing, a rename that collides) is checked when the
//! gateway is built ([`crate::Gateway::new`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::clients::Glob;

/// What `[serve]` says, checked.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServeConfig {
    /// `[serve.clients.NAME]`: the tool set of each client, by name.
    pub clients: BTreeMap<String, ClientEntry>,
    /// `allowed_hosts`: `Host` values accepted besides the loopback ones.
    pub allowed_hosts: Vec<String>,
    /// `allowed_origins`: browser origins accepted (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// `[serve.limits]`.
    pub limits: ServeLimits,
    /// `[serve.oauth]`: access tokens from an authorization server.
    pub oauth: Option<crate::oauth::OAuthConfig>,
}

/// One client's entry: which tools it sees and under which names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientEntry {
    /// `tools`: globs over registry names (`*` any run of characters, `?`
    /// one); `None` is every tool.
    pub tools: Option<Vec<Glob>>,
    /// `rename`: the client's own name for a tool, to the tool's registry
    /// name.
    pub rename: BTreeMap<String, String>,
}

impl ClientEntry {
    /// An entry that sees the tools matching `globs`.
    pub fn tools(globs: impl IntoIterator<Item = Glob>) -> ClientEntry {
        ClientEntry {
            tools: Some(globs.into_iter().collect()),
            rename: BTreeMap::new(),
        }
    }

    /// This entry, with the tool `registry_name` seen as `name`.
    pub fn rename(mut self, name: &str, registry_name: &str) -> Result<ClientEntry, ServeError> {
        check_wire_name(name).map_err(|why| ServeError::Config(format!("rename: {why}")))?;
        self.rename
            .insert(name.to_owned(), registry_name.to_owned());
        Ok(self)
    }
}

/// The gateway's bounds, each with its config key under `[serve.limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeLimits {
    /// `request_kib`: the largest request body read (413 past it).
    pub request_bytes: usize,
    /// `concurrent_requests`: requests served at once over HTTP, all
    /// clients together (503 past it).
    pub concurrent_requests: usize,
    /// `requests_per_second`: one client's sustained rate over HTTP, with
    /// a burst of as many (429 past it).
    pub requests_per_second: u32,
    /// `sessions`: 2025-11-25 sessions open at once (503 for a new one).
    pub sessions: usize,
    /// `session_idle_secs`: a session unused this long is closed.
    pub session_idle: Duration,
    /// `connections`: HTTP connections open at once (further ones wait in
    /// the kernel's backlog).
    pub connections: usize,
    /// `read_timeout_secs`: the time a client has to send a request's
    /// headers and its whole body.
    pub read_timeout: Duration,
    /// `relist_interval_ms`: the shortest time between two iterations (an
    /// iteration re-lists an upstream MCP server's tools before the first
    /// call to them).
    pub relist_interval: Duration,
    /// `drain_grace_secs`: how long a drain keeps taking connections and
    /// requests after it began, with `/readyz` answering 503, so that a
    /// load balancer's health check takes the gateway out of rotation
    /// before it refuses connections (HTTP only; 0 by default: connections
    /// are refused at once).
    pub drain_grace: Duration,
    /// `drain_secs`: how long the calls in flight when the gateway stops
    /// taking requests (at the end of `drain_grace_secs`) have to finish;
    /// those still running then are cancelled. Over stdio, from the start
    /// of the drain.
    pub drain: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            request_bytes: 1 << 20,
            concurrent_requests: 64,
            requests_per_second: 200,
            sessions: 256,
            session_idle: Duration::from_secs(300),
            connections: 512,
            read_timeout: Duration::from_secs(10),
            relist_interval: Duration::from_secs(1),
            drain_grace: Duration::ZERO,
            drain: Duration::from_secs(30),
        }
    }
}

/// Why the gateway cannot be set up or cannot serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// `[serve]` (or what the registry makes of it) is unusable.
    #[error("serve: {0}")]
    Config(String),
    /// The tokens file is unusable.
    #[error("tokens file {path}: {reason}")]
    Tokens {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Serving over HTTP would expose the tools without authentication,
    /// or the address cannot be bound.
    #[error("{0}")]
    Http(String),
    /// `error`, in the config file `file`.
    #[error("{}: {error}", .file.display())]
    InConfig {
        /// The config file.
        file: std::path::PathBuf,
        /// What is wrong in it.
        #[source]
        error: Box<ServeError>,
    },
    /// The transport failed.
    #[error("serving failed: {0}")]
    Io(#[source] std::io::Error),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [serve] table")]
struct RawServe {
    #[serde(default)]
    clients: BTreeMap<String, RawClient>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    #[serde(default)]
    limits: RawLimits,
    oauth: Option<RawOAuth>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with issuer, audience and jwks"
)]
struct RawOAuth {
    issuer: String,
    audience: String,
    jwks: String,
    client_claim: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a client's table, such as { tools = [\"fs/*\"] }"
)]
struct RawClient {
    tools: Option<Vec<String>>,
    #[serde(default)]
    rename: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of limits such as { request_kib = 1024 }"
)]
struct RawLimits {
    request_kib: Option<u64>,
    concurrent_requests: Option<u64>,
    requests_per_second: Option<u64>,
    sessions: Option<u64>,
    session_idle_secs: Option<u64>,
    connections: Option<u64>,
    read_timeout_secs: Option<u64>,
    relist_interval_ms: Option<u64>,
    drain_grace_secs: Option<u64>,
    drain_secs: Option<u64>,
}

/// The most clients a config may name (each has a rate bucket and a view
/// per registry snapshot).
pub const MAX_CLIENTS: usize = 1024;
/// The most globs or renames one client may have.
pub const MAX_PATTERNS: usize = 1024;

impl ServeError {
    /// This error, said of the config file `file`.
    pub fn in_config(self, file: &std::path::Path) -> ServeError {
        ServeError::InConfig {
            file: file.to_owned(),
            error: Box::new(self),
        }
    }
}

impl ServeConfig {
    /// Checks the `[serve]` section of `config`; an error names its file.
    pub fn from_config(config: &tiny_harness_host::Config) -> Result<ServeConfig, ServeError> {
        let base = config
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        ServeConfig::from_table_in(config.serve.as_ref(), base)
            .map_err(|e| e.in_config(&config.path))
    }

    /// Checks the `[serve]` table of a config (`None`: no such section,
    /// the defaults); a relative path in it is taken from the current
    /// directory.
    pub fn from_table(table: Option<&toml::Table>) -> Result<ServeConfig, ServeError> {
        ServeConfig::from_table_in(table, std::path::Path::new("."))
    }

    /// As [`ServeConfig::from_table`], with relative paths taken from
    /// `base` (the config's directory).
    pub fn from_table_in(
        table: Option<&toml::Table>,
        base: &std::path::Path,
    ) -> Result<ServeConfig, ServeError> {
        let Some(table) = table else {
            return Ok(ServeConfig::default());
        };
        let raw: RawServe =
            toml::Value::Table(table.clone())
                .try_into()
                .map_err(|e: toml::de::Error| {
                    ServeError::Config(
                        tiny_harness_core::display::one_line(e.message().trim()).into_owned(),
                    )
                })?;
        if raw.clients.len() > MAX_CLIENTS {
            return Err(ServeError::Config(format!(
                "clients: {} clients, more than the {MAX_CLIENTS} allowed",
                raw.clients.len()
            )));
        }
        let mut clients = BTreeMap::new();
        for (name, client) in raw.clients {
            check_client_name(&name)
                .map_err(|why| ServeError::Config(format!("clients.{name:?}: {why}")))?;
            let at = |what: &str, why: String| {
                ServeError::Config(format!("clients.{name}.{what}: {why}"))
            };
            let tools = match client.tools {
                None => None,
                Some(globs) if globs.len() > MAX_PATTERNS => {
                    return Err(at("tools", format!("more than {MAX_PATTERNS} globs")));
                }
                Some(globs) => Some(
                    globs
                        .iter()
                        .map(|glob| Glob::new(glob).map_err(|why| at("tools", why)))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            };
            if client.rename.len() > MAX_PATTERNS {
                return Err(at("rename", format!("more than {MAX_PATTERNS} renames")));
            }
            for alias in client.rename.keys() {
                check_wire_name(alias).map_err(|why| at("rename", why))?;
            }
            clients.insert(
                name,
                ClientEntry {
                    tools,
                    rename: client.rename,
                },
            );
        }
        for host in &raw.allowed_hosts {
            if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '/') {
                return Err(ServeError::Config(format!(
                    "allowed_hosts: {host:?} is not a host name or host:port"
                )));
            }
        }
        for origin in &raw.allowed_origins {
            check_origin(origin)
                .map_err(|why| ServeError::Config(format!("allowed_origins: {why}")))?;
        }
        let oauth = match raw.oauth {
            None => None,
            Some(oauth) => Some(oauth.check(base)?),
        };
        Ok(ServeConfig {
            clients,
            allowed_hosts: raw.allowed_hosts,
            allowed_origins: raw.allowed_origins,
            limits: raw.limits.check()?,
            oauth,
        })
    }
}

impl RawOAuth {
    fn check(self, base: &std::path::Path) -> Result<crate::oauth::OAuthConfig, ServeError> {
        let error = |key: &str, why: String| ServeError::Config(format!("oauth.{key}: {why}"));
        for (key, value) in [("issuer", &self.issuer), ("audience", &self.audience)] {
            if value.trim().is_empty() || value.len() > 2048 {
                return Err(error(key, "must be 1 to 2048 characters".to_owned()));
            }
        }
        let jwks = crate::oauth::jwks_of(&self.jwks, base).map_err(|why| error("jwks", why))?;
        let client_claim = self.client_claim.unwrap_or_else(|| "client_id".to_owned());
        if client_claim.is_empty() || client_claim.len() > 256 {
            return Err(error(
                "client_claim",
                "must be 1 to 256 characters".to_owned(),
            ));
        }
        if self.scopes.len() > MAX_PATTERNS
            || self.scopes.iter().any(|s| s.is_empty() || s.contains(' '))
        {
            return Err(error(
                "scopes",
                "each scope is a word without spaces".to_owned(),
            ));
        }
        Ok(crate::oauth::OAuthConfig {
            issuer: self.issuer,
            audience: self.audience,
            jwks,
            client_claim,
            scopes: self.scopes,
        })
    }
}

impl RawLimits {
    fn check(self) -> Result<ServeLimits, ServeError> {
        let mut limits = ServeLimits::default();
        let get = |value: Option<u64>, key: &str, max: u64| -> Result<Option<u64>, ServeError> {
            match value {
                None => Ok(None),
                Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
                Some(n) => Err(ServeError::Config(format!(
                    "limits.{key}: {n} is outside 1..={max}"
                ))),
            }
        };
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(kib) = get(self.request_kib, "request_kib", 64 << 10)? {
            limits.request_bytes = size(kib << 10);
        }
        if let Some(n) = get(self.concurrent_requests, "concurrent_requests", 65_536)? {
            limits.concurrent_requests = size(n);
        }
        if let Some(n) = get(self.requests_per_second, "requests_per_second", 1_000_000)? {
            limits.requests_per_second = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(n) = get(self.sessions, "sessions", 65_536)? {
            limits.sessions = size(n);
        }
        if let Some(n) = get(self.session_idle_secs, "session_idle_secs", 86_400)? {
            limits.session_idle = Duration::from_secs(n);
        }
        if let Some(n) = get(self.connections, "connections", 65_536)? {
            limits.connections = size(n);
        }
        if let Some(n) = get(self.read_timeout_secs, "read_timeout_secs", 3_600)? {
            limits.read_timeout = Duration::from_secs(n);
        }
        if let Some(n) = get(self.relist_interval_ms, "relist_interval_ms", 3_600_000)? {
            limits.relist_interval = Duration::from_millis(n);
        }
        // A grace of 0 is the default (no grace), so it may be written.
        match self.drain_grace_secs {
            None => {}
            Some(n) if n <= 3_600 => limits.drain_grace = Duration::from_secs(n),
            Some(n) => {
                return Err(ServeError::Config(format!(
                    "limits.drain_grace_secs: {n} is outside 0..=3600"
                )));
            }
        }
        if let Some(n) = get(self.drain_secs, "drain_secs", 3_600)? {
            limits.drain = Duration::from_secs(n);
        }
        Ok(limits)
    }
}

/// A client's name: what a tokens file, a JWT claim or a log line uses.
/// The stdio client is `stdio`, the anonymous loopback client `anonymous`.
pub(crate) fn check_client_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err("a client name is 1 to 64 of A-Z a-z 0-9 - _ .".to_owned())
    }
}

/// An MCP tool name: `[A-Za-z0-9_.-]`, 1 to 128.
pub(crate) fn check_wire_name(name: &str) -> Result<(), String> {
    let ok = (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{:?} is not an MCP tool name (1 to 128 of A-Z a-z 0-9 _ . -)",
            tiny_harness_core::display::one_line(name)
        ))
    }
}

/// An origin: `null`, or `scheme://host[:port]` (`:*` any port).
pub(crate) fn check_origin(origin: &str) -> Result<(), String> {
    if origin == "null" {
        return Ok(());
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err(format!(
            "{origin:?} lacks a scheme (https://app.example.com)"
        ));
    };
    let fine = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', ' ']);
    if fine {
        Ok(())
    } else {
        Err(format!("{origin:?} is not scheme://host[:port]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServeConfig, ServeError> {
        let table: toml::Table = toml::from_str(text).unwrap();
        ServeConfig::from_table(table.get("serve").and_then(|v| v.as_table()))
    }

    #[test]
    fn clients_limits_and_allowlists_are_read() {
        let config = parse(
            r#"
            [serve]
            allowed_origins = ["https://app.example.com:*"]
            [serve.limits]
            request_kib = 64
            relist_interval_ms = 250
            drain_grace_secs = 0
            drain_secs = 5
            [serve.clients.ci]
            tools = ["fs/*"]
            rename = { read = "fs/workspace.read_file" }
            "#,
        )
        .unwrap();
        assert_eq!(config.limits.request_bytes, 64 << 10);
        assert_eq!(config.limits.relist_interval, Duration::from_millis(250));
        assert_eq!(config.limits.drain_grace, Duration::ZERO);
        assert_eq!(config.limits.drain, Duration::from_secs(5));
        assert_eq!(config.limits.sessions, ServeLimits::default().sessions);
        let ci = &config.clients["ci"];
        assert_eq!(ci.tools.as_ref().unwrap().len(), 1);
        assert_eq!(ci.rename["read"], "fs/workspace.read_file");
    }

    #[test]
    fn bad_entries_are_refused_naming_the_key() {
        for (text, says) in [
            ("[serve]\nport = 1", "unknown field `port`"),
            (
                "[serve.limits]\nrequest_kib = 0",
                "limits.request_kib: 0 is outside",
            ),
            (
                "[serve.limits]\ndrain_secs = 0",
                "limits.drain_secs: 0 is outside 1..=3600",
            ),
            (
                "[serve.limits]\ndrain_grace_secs = 3601",
                "limits.drain_grace_secs: 3601 is outside 0..=3600",
            ),
            ("[serve.clients.\"a b\"]\ntools = []", "a client name is"),
            (
                "[serve.clients.ci]\nrename = { \"a/b\" = \"x/y.z\" }",
                "clients.ci.rename",
            ),
            ("[serve.clients.ci]\ntools = [\"\"]", "clients.ci.tools"),
            (
                "[serve]\nallowed_origins = [\"app.example.com\"]",
                "lacks a scheme",
            ),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text:?}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }
}
