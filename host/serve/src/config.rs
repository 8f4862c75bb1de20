//! The `[serve]` section of a host config: the clients and the tools each
//! sees, the `Host` and `Origin` allowlists, and the gateway's limits.
//!
//! Invariant: a [`ServeConfig`] is checked as a whole when it is made (a
//! glob that cannot match a registry name, a client name that could not
//! be a token's, a rename that is not an MCP tool name, a limit of 0 or
//! past its ceiling are refused here); what needs the registry (a set
//! that matches nothing, a rename that collides) is checked when the
//! gateway is built ([`crate::Gateway::new`]).
//!
//! A search client (`search = true`) is listed `search_tools`,
//! `call_tool` and its `always` tools instead of its whole set
//! ([`crate::search`]); a rename to one of those two names is refused
//! for it here, and `always` without `search` is refused as a mistake.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::clients::Glob;

mod limits;

use limits::RawLimits;
pub use limits::ServeLimits;

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
    /// `search`: the client is listed `search_tools` and `call_tool` (and
    /// its `always` tools) instead of its whole set, and finds the rest
    /// by searching. `false` by default.
    pub search: bool,
    /// `always`: globs over registry names; the tools of a search client's
    /// set that match one are listed directly (so are those the host's
    /// `[search] always` patterns match).
    pub always: Vec<Glob>,
}

impl ClientEntry {
    /// An entry that sees the tools matching `globs`.
    pub fn tools(globs: impl IntoIterator<Item = Glob>) -> ClientEntry {
        ClientEntry {
            tools: Some(globs.into_iter().collect()),
            ..ClientEntry::default()
        }
    }

    /// This entry as a search client's, listing the tools of its set that
    /// match `always` directly.
    pub fn search(mut self, always: impl IntoIterator<Item = Glob>) -> ClientEntry {
        self.search = true;
        self.always = always.into_iter().collect();
        self
    }

    /// This entry, with the tool `registry_name` seen as `name`.
    pub fn rename(mut self, name: &str, registry_name: &str) -> Result<ClientEntry, ServeError> {
        check_wire_name(name).map_err(|why| ServeError::Config(format!("rename: {why}")))?;
        self.rename
            .insert(name.to_owned(), registry_name.to_owned());
        Ok(self)
    }

    /// For a search client, that no rename takes the name of one of its
    /// own tools (`search_tools`, `call_tool`).
    pub(crate) fn check_search_names(&self) -> Result<(), String> {
        let taken = self
            .rename
            .keys()
            .find(|alias| crate::search::OWN_TOOLS.contains(&alias.as_str()));
        match taken {
            Some(alias) if self.search => Err(format!(
                "{alias:?} is the name of a search client's own tool: choose another name"
            )),
            _ => Ok(()),
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
    #[serde(default)]
    search: bool,
    #[serde(default)]
    always: Vec<String>,
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
            let globs = |key: &str, globs: &[String]| {
                if globs.len() > MAX_PATTERNS {
                    return Err(at(key, format!("more than {MAX_PATTERNS} globs")));
                }
                globs
                    .iter()
                    .map(|glob| Glob::new(glob).map_err(|why| at(key, why)))
                    .collect::<Result<Vec<_>, _>>()
            };
            let tools = match &client.tools {
                None => None,
                Some(tools) => Some(globs("tools", tools)?),
            };
            let always = globs("always", &client.always)?;
            if !client.search && !always.is_empty() {
                return Err(at(
                    "always",
                    "lists tools apart for a search client only: add search = true, or remove always"
                        .to_owned(),
                ));
            }
            if client.rename.len() > MAX_PATTERNS {
                return Err(at("rename", format!("more than {MAX_PATTERNS} renames")));
            }
            for alias in client.rename.keys() {
                check_wire_name(alias).map_err(|why| at("rename", why))?;
            }
            let entry = ClientEntry {
                tools,
                rename: client.rename,
                search: client.search,
                always,
            };
            entry
                .check_search_names()
                .map_err(|why| at("rename", why))?;
            clients.insert(name, entry);
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
mod tests;
