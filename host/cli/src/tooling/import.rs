//! `tiny-harness mcp import`: the `[plugins.mcp]` block, grants included,
//! for an MCP config another client uses (Claude Desktop's or Cursor's
//! `mcpServers`, VS Code's `servers`), for a person to review and paste.
//!
//! Invariants:
//! - No secret is copied: a literal environment or header value becomes a
//!   `${NAME}` reference to a host variable (granted in `env`), with a
//!   comment saying which variable to set. Only values that are already
//!   references (`${NAME}`, VS Code's `${env:NAME}`) keep their meaning.
//! - The grants are exactly what the servers need: each command's program
//!   in `exec`, each URL's `scheme://host:port` in `net`, each variable in
//!   `env`. Nothing is granted that no server uses.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// The largest config imported (1 MiB, as for host configs).
pub const MAX_IMPORT_BYTES: u64 = tiny_harness_core::file::MAX_CONFIG_BYTES;

/// Why a pasted config could not be imported; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// It is not JSON.
    #[error("it is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// It has no object of servers where clients keep one.
    #[error("it has no mcpServers (Claude Desktop, Cursor) or servers (VS Code) object")]
    NoServers,
    /// One server's entry cannot be imported: why, naming it.
    #[error("{0}")]
    Server(String),
}

/// Converts the JSON text of another client's MCP config to a
/// `[plugins.mcp]` block. `wasm` is the path written for the plugin. Each
/// command is read as [`tiny_harness_mcp::launcher::plan`] reads it, on the host's
/// `PATH`, from the current directory.
pub fn import(json: &str, wasm: &str) -> Result<String, ImportError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    import_with(json, wasm, std::env::var_os("PATH").as_deref(), &cwd)
}

/// [`import`], with commands looked up on `path` from `cwd`.
pub fn import_with(
    json: &str,
    wasm: &str,
    path: Option<&std::ffi::OsStr>,
    cwd: &std::path::Path,
) -> Result<String, ImportError> {
    let config: Value = serde_json::from_str(json).map_err(ImportError::NotJson)?;
    let servers = ["mcpServers", "servers"]
        .iter()
        .find_map(|key| config.get(key))
        .or_else(|| config.get("mcp").and_then(|m| m.get("servers")))
        .and_then(Value::as_object)
        .ok_or(ImportError::NoServers)?;
    let mut out = Out {
        path: path.map(ToOwned::to_owned),
        cwd: cwd.to_owned(),
        ..Out::default()
    };
    let mut blocks = Vec::new();
    for (name, server) in servers {
        let server = server
            .as_object()
            .ok_or_else(|| ImportError::Server(format!("server {name:?} is not an object")))?;
        blocks.push(out.server(name, server).map_err(ImportError::Server)?);
    }
    let mut text = String::new();
    text.push_str("# Imported MCP servers: review every line before use.\n");
    text.push_str("[plugins.mcp]\n");
    text.push_str(&format!("path = {}\n\n", quote(wasm)));
    text.push_str("[plugins.mcp.grants]\n");
    let list = |items: &BTreeSet<String>, each: &dyn Fn(&str) -> String| {
        items.iter().map(|i| each(i)).collect::<Vec<_>>().join(", ")
    };
    if !out.exec.is_empty() {
        // Each program with what its launcher reads and the variables its
        // servers set for it: a program is given only what its grant lists.
        let programs: Vec<String> = out
            .exec
            .iter()
            .map(|(program, grant)| {
                let mut fields = vec![format!("program = {}", quote(program))];
                if !grant.read.is_empty() {
                    fields.push(format!("read = [{}]", list(&grant.read, &|r| quote(r))));
                }
                if !grant.env.is_empty() {
                    fields.push(format!("env = [{}]", list(&grant.env, &|n| quote(n))));
                }
                format!("{{ {} }}", fields.join(", "))
            })
            .collect();
        text.push_str(&format!("exec = [{}]\n", programs.join(", ")));
    }
    if !out.dirs.is_empty() {
        // Named by the servers' arguments; read-only until a person says
        // otherwise.
        let dirs: Vec<String> = out
            .dirs
            .iter()
            .map(|d| {
                format!(
                    "{{ host = {}, guest = {}, mode = \"read-only\" }}",
                    quote(d),
                    quote(d)
                )
            })
            .collect();
        text.push_str(&format!("dirs = [{}]\n", dirs.join(", ")));
    }
    if !out.net.is_empty() {
        text.push_str(&format!("net = [{}]\n", list(&out.net, &|n| quote(n))));
    }
    if !out.env.is_empty() {
        text.push_str(&format!("env = [{}]\n", list(&out.env, &|e| quote(e))));
    }
    if !out.exec.is_empty() {
        text.push_str(
            "# Programs run confined: they read only system paths, what their grant's read\n\
             # lists (an interpreter's prefix, a script's package) and the plugin's dirs\n\
             # (those their arguments name, read-only), with no network. Each is given only\n\
             # the variables its grant's env lists (those its servers set).\n",
        );
    }
    for note in &out.notes {
        text.push_str(&format!("# {note}\n"));
    }
    for block in blocks {
        text.push('\n');
        text.push_str(&block);
    }
    Ok(text)
}

#[derive(Default)]
struct Out {
    /// Where commands are looked up.
    path: Option<std::ffi::OsString>,
    cwd: std::path::PathBuf,
    /// Each program's grant.
    exec: BTreeMap<String, ExecOut>,
    /// Directories the servers' arguments name.
    dirs: BTreeSet<String>,
    net: BTreeSet<String>,
    env: BTreeSet<String>,
    notes: Vec<String>,
}

/// What one program's exec grant lists.
#[derive(Default)]
struct ExecOut {
    read: BTreeSet<String>,
    env: BTreeSet<String>,
}

impl Out {
    fn server(&mut self, name: &str, server: &Map<String, Value>) -> Result<String, String> {
        let at = |what: &str| format!("server {name:?}: {what}");
        let string = |key: &str| -> Result<Option<&str>, String> {
            match server.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(_) => Err(at(&format!("{key} is not a string"))),
            }
        };
        let strings = |key: &str| -> Result<Vec<String>, String> {
            match server.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| at(&format!("{key} holds a non-string")))
                    })
                    .collect(),
                Some(_) => Err(at(&format!("{key} is not a list"))),
            }
        };
        if string("type")? == Some("sse") {
            return Err(at(
                "the SSE transport is not supported; use the server's streamable HTTP endpoint",
            ));
        }
        let mut lines = vec![format!("[plugins.mcp.config.mcpServers.{}]", key(name))];
        match (string("command")?, string("url")?) {
            (Some(command), None) => {
                let names = server
                    .get("env")
                    .and_then(Value::as_object)
                    .map(|env| env.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default();
                let args = strings("args")?;
                // Relative paths in it are the server's cwd's, if it has one.
                let cwd = string("cwd")?
                    .map(std::path::Path::new)
                    .filter(|c| c.is_absolute())
                    .unwrap_or(&self.cwd);
                let plan =
                    tiny_harness_mcp::launcher::plan(command, &args, self.path.as_deref(), cwd);
                let args = plan.args.clone();
                let grant = self.exec.entry(plan.program.clone()).or_default();
                grant.env.extend(names);
                grant
                    .read
                    .extend(plan.read.iter().map(|p| p.display().to_string()));
                self.dirs
                    .extend(plan.dirs.iter().map(|d| d.display().to_string()));
                self.notes
                    .extend(plan.notes.iter().map(|n| format!("{name}: {n}")));
                lines.push(format!("command = {}", quote(&plan.program)));
                if !args.is_empty() {
                    let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
                    lines.push(format!("args = [{}]", args.join(", ")));
                }
                if let Some(cwd) = string("cwd")? {
                    lines.push(format!("cwd = {}", quote(cwd)));
                    self.notes.push(format!(
                        "{name} runs in {cwd}: grant it with dirs = [{{ host = {}, guest = \"/…\" }}]",
                        quote(cwd)
                    ));
                }
                if let Some(table) = self.table(name, server.get("env"), "env")? {
                    lines.push(format!("env = {table}"));
                }
            }
            (None, Some(url)) => {
                let parsed = url::Url::parse(url).map_err(|e| at(&format!("url: {e}")))?;
                let host = parsed.host_str().ok_or_else(|| at("url has no host"))?;
                let port = parsed
                    .port_or_known_default()
                    .ok_or_else(|| at("url has no port"))?;
                let host = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]")
                } else {
                    host.to_owned()
                };
                self.net
                    .insert(format!("{}://{host}:{port}", parsed.scheme()));
                lines.push(format!("url = {}", quote(url)));
                if let Some(table) = self.table(name, server.get("headers"), "headers")? {
                    lines.push(format!("headers = {table}"));
                }
                if let Some(oauth) = self.oauth(name, server.get("oauth"))? {
                    lines.push(format!("oauth = {oauth}"));
                }
            }
            (Some(_), Some(_)) => return Err(at("it has both command and url")),
            (None, None) => return Err(at("it has neither command nor url")),
        }
        lines.push(String::new());
        Ok(lines.join("\n"))
    }

    /// The inline `oauth` table of a server's `oauth` object (Claude
    /// Code's `clientId`, `clientSecret`, `callbackPort`, or the host's
    /// own spellings): a secret becomes a reference, never a value.
    fn oauth(&mut self, server: &str, value: Option<&Value>) -> Result<Option<String>, String> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let map = value
            .as_object()
            .ok_or_else(|| format!("server {server:?}: oauth is not an object"))?;
        let mut pairs = Vec::new();
        for (name, value) in map {
            let (host, secret) = match name.as_str() {
                "clientId" | "client_id" => ("client_id", false),
                "clientSecret" | "client_secret" => ("client_secret", true),
                "privateKey" | "private_key" => ("private_key", true),
                "signingAlgorithm" | "signing_algorithm" => ("signing_algorithm", false),
                "clientMetadataUrl" | "client_metadata_url" => ("client_metadata_url", false),
                "grant" => ("grant", false),
                "callbackPort" | "callback_port" => {
                    let port = value
                        .as_u64()
                        .filter(|p| (1..=65535).contains(p))
                        .ok_or_else(|| format!("server {server:?}: oauth.{name} is not a port"))?;
                    pairs.push(format!("callback_port = {port}"));
                    continue;
                }
                "scopes" => {
                    let scopes = value
                        .as_array()
                        .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
                        .ok_or_else(|| {
                            format!("server {server:?}: oauth.scopes is not a list of strings")
                        })?;
                    let scopes: Vec<String> = scopes.iter().map(|s| quote(s)).collect();
                    pairs.push(format!("scopes = [{}]", scopes.join(", ")));
                    continue;
                }
                other => {
                    return Err(format!(
                        "server {server:?}: oauth.{other} is not a setting the host knows"
                    ));
                }
            };
            let text = value
                .as_str()
                .ok_or_else(|| format!("server {server:?}: oauth.{name} is not a string"))?;
            let text = if secret {
                self.reference(server, host, text)
            } else {
                text.to_owned()
            };
            pairs.push(format!("{host} = {}", quote(&text)));
        }
        Ok((!pairs.is_empty()).then(|| format!("{{ {} }}", pairs.join(", "))))
    }

    /// An inline table of `env` or `headers`, every value a reference.
    fn table(
        &mut self,
        server: &str,
        value: Option<&Value>,
        what: &str,
    ) -> Result<Option<String>, String> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let map = value
            .as_object()
            .ok_or_else(|| format!("server {server:?}: {what} is not an object"))?;
        if map.is_empty() {
            return Ok(None);
        }
        let mut pairs = Vec::new();
        for (name, value) in map {
            let value = value
                .as_str()
                .ok_or_else(|| format!("server {server:?}: {what}.{name} is not a string"))?;
            let reference = self.reference(server, name, value);
            pairs.push(format!("{} = {}", key(name), quote(&reference)));
        }
        Ok(Some(format!("{{ {} }}", pairs.join(", "))))
    }

    /// `value` as a reference to a granted host variable.
    fn reference(&mut self, server: &str, name: &str, value: &str) -> String {
        // Already a reference: `${NAME}` or VS Code's `${env:NAME}`.
        let inner = value
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
            .map(|v| v.strip_prefix("env:").unwrap_or(v));
        if let Some(variable) = inner.filter(|v| is_variable(v)) {
            self.env.insert(variable.to_owned());
            return format!("${{{variable}}}");
        }
        let variable: String = format!("{server}_{name}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        let variable =
            if is_variable(&variable) && !variable.starts_with(|c: char| c.is_ascii_digit()) {
                variable
            } else {
                format!("MCP_{variable}")
            };
        self.env.insert(variable.clone());
        // Keep a scheme such as `Bearer ` that precedes a token.
        let prefix = match value.split_once(' ') {
            Some((scheme, rest))
                if name.eq_ignore_ascii_case("authorization") && !rest.is_empty() =>
            {
                format!("{scheme} ")
            }
            _ => String::new(),
        };
        self.notes.push(format!(
            "{server}: set {variable} in the host environment (the value of {name} was not copied)"
        ));
        format!("{prefix}${{{variable}}}")
    }
}

fn is_variable(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A TOML string.
fn quote(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// A TOML key: bare when it can be.
fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        name.to_owned()
    } else {
        quote(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WASM: &str = "plugins/mcp.wasm";

    #[test]
    fn claude_desktop_config_becomes_a_block_with_exactly_its_grants() {
        let json = r#"{"mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal_secret"}},
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer tok_123"}}
        }}"#;
        let block = import(json, WASM).unwrap();
        assert!(
            !block.contains("ghp_literal_secret") && !block.contains("tok_123"),
            "{block}"
        );
        // The program may be given the variable its server sets, and no
        // other.
        assert!(
            block.contains(
                r#"exec = [{ program = "npx", env = ["GITHUB_PERSONAL_ACCESS_TOKEN"] }]"#
            ),
            "{block}"
        );
        assert!(
            block.contains(r#"net = ["https://mcp.example.com:443"]"#),
            "{block}"
        );
        assert!(
            block.contains(
                r#"GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN}""#
            ),
            "{block}"
        );
        assert!(
            block.contains(r#"Authorization = "Bearer ${REMOTE_AUTHORIZATION}""#),
            "{block}"
        );
        assert!(
            block.contains(
                r#"env = ["GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN", "REMOTE_AUTHORIZATION"]"#
            ),
            "{block}"
        );
        // What it prints is a config the host accepts.
        let parsed: toml::Table = toml::from_str(&block).unwrap();
        let servers = &parsed["plugins"]["mcp"]["config"]["mcpServers"];
        assert_eq!(servers["fs"]["args"][2].as_str(), Some("/tmp"));
    }

    #[test]
    fn launchers_are_read_and_get_what_they_need_to_run_confined() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for name in ["node", "npx"] {
            std::fs::write(bin.join(name), "").unwrap();
            std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        let script = dir.path().join("tree/node_modules/pkg/index.js");
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(&script, "").unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let json = serde_json::json!({"mcpServers": {
            "files": {"command": "node", "args": [script, data]},
            "fetched": {"command": "npx", "args": ["-y", "some-server"]},
        }})
        .to_string();
        let block = import_with(&json, WASM, Some(bin.as_os_str()), dir.path()).unwrap();
        let tree = dir.path().join("tree").canonicalize().unwrap();
        let data = data.canonicalize().unwrap();
        assert!(
            block.contains(&format!(
                "{{ program = \"node\", read = [{:?}] }}",
                tree.display().to_string()
            )),
            "{block}"
        );
        assert!(block.contains(r#"{ program = "npx" }"#), "{block}");
        let data = data.display().to_string();
        assert!(
            block.contains(&format!(
                "dirs = [{{ host = {data:?}, guest = {data:?}, mode = \"read-only\" }}]"
            )),
            "{block}"
        );
        assert!(
            block.contains("# fetched: npx fetches some-server from the npm registry"),
            "{block}"
        );
        let parsed: toml::Table = toml::from_str(&block).unwrap();
        assert!(
            parsed["plugins"]["mcp"]["grants"].get("net").is_none(),
            "{block}"
        );
    }

    #[test]
    fn an_oauth_client_is_kept_and_its_secret_becomes_a_reference() {
        let json = r#"{"mcpServers": {"tracker": {"type": "http", "url": "https://t.example.com/mcp",
            "oauth": {"clientId": "acme", "clientSecret": "s3cret-value", "callbackPort": 8765}}}}"#;
        let block = import(json, "builtin:mcp").unwrap();
        assert!(
            block.contains(r#"oauth = { callback_port = 8765, client_id = "acme", client_secret = "${TRACKER_CLIENT_SECRET}" }"#),
            "{block}"
        );
        assert!(!block.contains("s3cret-value"));
        assert!(
            block.contains(r#"env = ["TRACKER_CLIENT_SECRET"]"#),
            "{block}"
        );
        let refused = import(
            r#"{"mcpServers": {"t": {"url": "https://t.example.com/mcp", "oauth": {"audience": "x"}}}}"#,
            "builtin:mcp",
        )
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains("oauth.audience is not a setting"),
            "{refused}"
        );
    }

    #[test]
    fn vs_code_references_keep_their_variable() {
        let json = r#"{"servers": {"api": {"type": "http", "url": "http://127.0.0.1:3001/mcp",
            "headers": {"X-Key": "${env:API_KEY}"}}}}"#;
        let block = import(json, WASM).unwrap();
        assert!(block.contains(r#"X-Key = "${API_KEY}""#), "{block}");
        assert!(block.contains(r#"env = ["API_KEY"]"#), "{block}");
        assert!(
            block.contains(r#"net = ["http://127.0.0.1:3001"]"#),
            "{block}"
        );
        assert!(
            !block.contains("exec ="),
            "nothing to run, nothing granted: {block}"
        );
    }

    #[test]
    fn unusable_entries_are_refused_in_one_line() {
        for (json, want) in [
            (
                r#"{"mcpServers": {"x": {"args": []}}}"#,
                "neither command nor url",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "a", "url": "http://h"}}}"#,
                "both",
            ),
            (
                r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#,
                "SSE",
            ),
            (r#"{"other": {}}"#, "no mcpServers"),
            ("not json", "not JSON"),
        ] {
            let error = import(json, WASM).unwrap_err().to_string();
            assert!(error.contains(want), "{json}: {error}");
            assert!(!error.contains('\n'));
        }
    }
}
