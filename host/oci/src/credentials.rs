//! [`Credentials`] for a registry, and finding them where `docker login`
//! keeps them.
//!
//! Invariants: the Docker config is read as a regular file of at most
//! [`MAX_DOCKER_CONFIG_BYTES`] (never a FIFO or a device); a credential
//! helper is only ever `docker-credential-NAME` with NAME of
//! `[A-Za-z0-9._-]` (no path), run with the registry on its standard input
//! and killed if it has not finished within [`HELPER_TIMEOUT`]; at most
//! [`MAX_HELPER_OUTPUT`] bytes of its output are read. A password is never
//! shown by `Debug` or in an error.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::error::{OciError, one_line};

/// The largest Docker config read.
pub const MAX_DOCKER_CONFIG_BYTES: u64 = 1 << 20;

/// The longest a credential helper may take.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(5);

/// The most output of a credential helper read.
pub const MAX_HELPER_OUTPUT: u64 = 64 << 10;

/// How to authenticate to a registry.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Credentials {
    /// No credentials: a registry that asks for some refuses.
    #[default]
    Anonymous,
    /// A user name and a password (or a token used as one).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
        }
    }
}

/// Where [`Credentials::from_docker_config`] looks: the Docker config file
/// and the `PATH` its credential helpers are found on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerConfig {
    /// The config file, `config.json`.
    pub file: PathBuf,
    /// The `PATH` helpers are looked up on (`None`: this process's).
    pub search_path: Option<OsString>,
}

impl DockerConfig {
    /// Docker's own choice: `$DOCKER_CONFIG/config.json`, else
    /// `$HOME/.docker/config.json`; `None` when neither variable is set.
    pub fn from_env() -> Option<DockerConfig> {
        let dir = match std::env::var_os("DOCKER_CONFIG") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".docker"),
        };
        Some(DockerConfig {
            file: dir.join("config.json"),
            search_path: None,
        })
    }
}

/// The parts of a Docker config that hold credentials.
#[derive(Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
}

/// What a credential helper prints for `get`.
#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

impl Credentials {
    /// The credentials `docker login` keeps for `registry` (`HOST[:PORT]`),
    /// from the config [`DockerConfig::from_env`] names; anonymous when
    /// there is no such config or it holds nothing for the registry.
    pub async fn for_registry(registry: &str) -> Result<Credentials, OciError> {
        match DockerConfig::from_env() {
            Some(config) => Credentials::from_docker_config(&config, registry).await,
            None => Ok(Credentials::Anonymous),
        }
    }

    /// The credentials `config` holds for `registry` (`HOST[:PORT]`), in
    /// Docker's order: the helper `credHelpers[registry]` names, else the
    /// `credsStore` helper, else `auths[registry].auth` (base64 of
    /// `user:password`), else anonymous. A missing config file is
    /// anonymous; an unreadable or malformed one is an error.
    pub async fn from_docker_config(
        config: &DockerConfig,
        registry: &str,
    ) -> Result<Credentials, OciError> {
        let config_error = |reason: String| OciError::DockerConfig {
            registry: registry.to_owned(),
            path: config.file.clone(),
            reason,
        };
        let parsed: ConfigFile = match std::fs::symlink_metadata(&config.file) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Credentials::Anonymous);
            }
            _ => {
                let bytes = tiny_harness_core::file::read_regular(
                    &config.file,
                    "Docker config",
                    MAX_DOCKER_CONFIG_BYTES,
                )
                .map_err(|error| config_error(one_line(&error.reason.to_string())))?;
                serde_json::from_slice(&bytes)
                    .map_err(|error| config_error(one_line(&error.to_string())))?
            }
        };
        let helper = parsed
            .cred_helpers
            .get(registry)
            .or(parsed.creds_store.as_ref())
            .filter(|name| !name.is_empty());
        if let Some(helper) = helper {
            return run_helper(helper, registry, config.search_path.as_ref()).await;
        }
        let entry = parsed
            .auths
            .iter()
            .find(|(key, _)| auth_key_host(key) == registry)
            .map(|(_, entry)| entry);
        match entry
            .and_then(|entry| entry.auth.as_deref())
            .filter(|a| !a.is_empty())
        {
            Some(auth) => decode_auth(auth).ok_or_else(|| {
                config_error(format!(
                    "auths[{}].auth is not base64 of user:password",
                    one_line(registry)
                ))
            }),
            None => Ok(Credentials::Anonymous),
        }
    }
}

/// The `HOST[:PORT]` an `auths` key stands for: Docker accepts
/// `https://HOST/v1/` and the like as well as the bare host.
fn auth_key_host(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

/// `user:password` from its base64.
fn decode_auth(auth: &str) -> Option<Credentials> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (username, password) = text.split_once(':')?;
    Some(Credentials::Basic {
        username: username.to_owned(),
        password: password.to_owned(),
    })
}

/// Runs `docker-credential-NAME get` for `registry`.
async fn run_helper(
    name: &str,
    registry: &str,
    search_path: Option<&OsString>,
) -> Result<Credentials, OciError> {
    let program = format!("docker-credential-{name}");
    let failed = |reason: String| OciError::Helper {
        registry: registry.to_owned(),
        program: one_line(&program),
        reason,
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(failed(
            "its name is not letters, digits, ., _ and -".to_owned(),
        ));
    }
    let mut command = tokio::process::Command::new(&program);
    command
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(path) = search_path {
        command.env("PATH", path);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(OciError::HelperMissing {
                registry: registry.to_owned(),
                program,
            });
        }
        Err(error) => {
            return Err(failed(format!(
                "cannot start it: {}",
                one_line(&error.to_string())
            )));
        }
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(failed(
            "its standard input or output was not connected".to_owned(),
        ));
    };
    let talk = async {
        // A helper that exits without reading its input is not an error
        // here: its answer says what it knows.
        let _ = stdin.write_all(registry.as_bytes()).await;
        drop(stdin);
        let mut output = Vec::new();
        stdout
            .take(MAX_HELPER_OUTPUT + 1)
            .read_to_end(&mut output)
            .await
            .map_err(|error| {
                failed(format!(
                    "reading its output: {}",
                    one_line(&error.to_string())
                ))
            })?;
        if output.len() as u64 > MAX_HELPER_OUTPUT {
            return Err(failed(format!(
                "it printed more than {MAX_HELPER_OUTPUT} bytes"
            )));
        }
        let status = child
            .wait()
            .await
            .map_err(|error| failed(one_line(&error.to_string())))?;
        Ok((status, output))
    };
    let (status, output) = match tokio::time::timeout(HELPER_TIMEOUT, talk).await {
        Ok(result) => result?,
        // Dropping the child (kill_on_drop) ends it.
        Err(_) => {
            return Err(failed(format!(
                "it did not answer within {} s",
                HELPER_TIMEOUT.as_secs()
            )));
        }
    };
    let text = String::from_utf8_lossy(&output);
    if !status.success() {
        // docker-credential-helpers' words for "nothing stored for it".
        if text.contains("credentials not found") {
            return Ok(Credentials::Anonymous);
        }
        let first = text.lines().next().unwrap_or("").trim();
        return Err(failed(format!(
            "it exited with {status}: {}",
            one_line(first)
        )));
    }
    let answer: HelperAnswer = serde_json::from_str(&text).map_err(|error| {
        failed(format!(
            "its answer is not the credential JSON: {}",
            one_line(&error.to_string())
        ))
    })?;
    if answer.username == "<token>" {
        return Err(failed(
            "it holds an identity token, which is not supported: log in with a user name and password or an access token".to_owned(),
        ));
    }
    Ok(Credentials::Basic {
        username: answer.username,
        password: answer.secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The config file's path in an error.
    fn file_of(error: &OciError) -> Option<&Path> {
        match error {
            OciError::DockerConfig { path, .. } => Some(path),
            _ => None,
        }
    }

    #[test]
    fn auth_keys_name_hosts() {
        assert_eq!(
            auth_key_host("https://index.docker.io/v1/"),
            "index.docker.io"
        );
        assert_eq!(auth_key_host("localhost:5000"), "localhost:5000");
        assert_eq!(auth_key_host("http://127.0.0.1:80/x"), "127.0.0.1:80");
    }

    #[test]
    fn auth_decodes_user_and_password() {
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:pa:ss");
        assert_eq!(
            decode_auth(&auth),
            Some(Credentials::Basic {
                username: "alice".into(),
                password: "pa:ss".into()
            })
        );
        assert_eq!(decode_auth("!!"), None);
        let debug = format!("{:?}", decode_auth(&auth).unwrap());
        assert!(!debug.contains("pa:ss"), "{debug}");
    }

    #[tokio::test]
    async fn a_malformed_config_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        std::fs::write(&file, "{\"auths\": 3}").unwrap();
        let config = DockerConfig {
            file: file.clone(),
            search_path: None,
        };
        let error = Credentials::from_docker_config(&config, "r.example")
            .await
            .unwrap_err();
        assert_eq!(file_of(&error), Some(file.as_path()));
        assert!(!error.to_string().contains('\n'));
        let missing = DockerConfig {
            file: dir.path().join("none.json"),
            search_path: None,
        };
        assert_eq!(
            Credentials::from_docker_config(&missing, "r.example")
                .await
                .unwrap(),
            Credentials::Anonymous
        );
    }
}
