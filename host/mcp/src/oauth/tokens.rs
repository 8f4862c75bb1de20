//! The token file: what `mcp login` obtained for each HTTP server of a
//! config, beside it as `NAME.tokens` (never in the config, the lock or a
//! log).
//!
//! Invariants:
//! - The file is read only when it is a regular file (not a symlink)
//!   owned by the user running the host and readable by no one else (mode
//!   0600 or stricter); otherwise every use of it is refused with a line
//!   that says what to do. It is at most [`MAX_TOKEN_FILE_BYTES`].
//! - It is replaced whole and atomically, created mode 0600, under an
//!   advisory lock (`NAME.tokens.lock`) so that two hosts saving at once
//!   do not lose either's change.
//! - An entry holds the URL it was issued for; a host whose config now
//!   names another URL for the server does not use it (a token goes only
//!   to the resource it was issued for).
//! - Nothing here prints a token or a secret: `Debug` names only what an
//!   entry has.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthorizationMetadata, StoredCredentials};
use serde::{Deserialize, Serialize};

use super::OAuthError;

/// The largest token file read (many servers' tokens fit in a few KiB).
pub const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;

/// What the file holds for one server, `<plugin>/<server>`.
#[derive(Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The MCP endpoint the tokens were issued for.
    pub resource: String,
    /// The client, the tokens, their scopes and issuer, as rmcp keeps them.
    pub credentials: StoredCredentials,
    /// A secret the authorization server gave the client at dynamic
    /// registration (a pre-registered one stays in the host's
    /// environment, never here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Scopes a server asked for since (a step-up): the next login asks
    /// for them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
    /// The authorization server's metadata as discovered at login, so
    /// that a call need not discover it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AuthorizationMetadata>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("resource", &self.resource)
            .field("credentials", &self.credentials)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("wanted_scopes", &self.wanted_scopes)
            .field("metadata", &self.metadata.as_ref().map(|m| &m.issuer))
            .finish()
    }
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct Contents {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

/// The token file of one config.
#[derive(Clone)]
pub struct Tokens {
    path: PathBuf,
    /// The contents as last read, with the identity of the file they
    /// were read from and when that identity was last checked. Every
    /// write makes a new file (a rename), so another host's write is
    /// seen at the next check.
    cache: std::sync::Arc<std::sync::Mutex<Option<Cached>>>,
    /// How long the token of a call ([`Tokens::credentials`], looked up at
    /// every request) is taken from the cache without a `stat` of the
    /// file: the `stat` was most of a logged-in call's extra cost.
    recheck: std::time::Duration,
    /// Bumped whenever what the cache holds may have changed (a write by
    /// this host, or another version of the file read), so that what a
    /// session keeps from it ([`Tokens::credentials_seen`]) is dropped
    /// at once.
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// How long [`Tokens::credentials`] trusts the cache without a `stat`: a
/// change of the file by another program (a login, a logout, a chmod, a
/// refresh by another host) reaches a running host's requests at most
/// this late. The host's own writes reach them at once.
pub const RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// One server's credentials as [`Tokens::credentials_seen`] found them.
pub(super) struct Seen {
    pub credentials: Option<StoredCredentials>,
    /// When the file was last seen to hold them.
    pub at: std::time::Instant,
    /// [`Tokens::generation`] when they were looked up.
    pub generation: u64,
}

/// The contents as read from the file version `Stamp`, and when the file
/// was last seen to be that version.
struct Cached {
    stamp: Stamp,
    contents: std::sync::Arc<Contents>,
    checked: std::time::Instant,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").field("path", &self.path).finish()
    }
}

/// What identifies one version of the file: its inode, size and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt as _;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }

    #[cfg(not(unix))]
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: 0,
            ino: 0,
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

impl Tokens {
    /// The token file beside `config`: `NAME.tokens` for `NAME.toml`.
    pub fn beside(config: &Path) -> Tokens {
        let stem = config
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tiny-harness".to_owned());
        Tokens {
            path: config.with_file_name(format!("{stem}.tokens")),
            cache: std::sync::Arc::default(),
            recheck: RECHECK,
            generation: std::sync::Arc::default(),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry of `key`, if the file has one.
    pub fn entry(&self, key: &str) -> Result<Option<Entry>, OAuthError> {
        Ok(self.read()?.servers.get(key).cloned())
    }

    /// The credentials of `key`'s entry, if it was issued for `resource`.
    pub fn credentials(
        &self,
        key: &str,
        resource: &str,
    ) -> Result<Option<StoredCredentials>, OAuthError> {
        self.credentials_seen(key, resource)
            .map(|seen| seen.credentials)
    }

    /// [`Tokens::credentials`], with when the file was last seen to hold
    /// them and the generation they belong to.
    pub(super) fn credentials_seen(&self, key: &str, resource: &str) -> Result<Seen, OAuthError> {
        // Before the contents: a change after this is a later generation.
        let generation = self.generation();
        let recent = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .as_ref()
                .filter(|c| c.checked.elapsed() < self.recheck)
                .map(|c| (c.contents.clone(), c.checked))
        };
        let (contents, at) = match recent {
            Some(recent) => recent,
            None => (self.read()?, std::time::Instant::now()),
        };
        Ok(Seen {
            credentials: contents
                .servers
                .get(key)
                .filter(|e| e.resource == resource)
                .map(|e| e.credentials.clone()),
            at,
            generation,
        })
    }

    /// Changes when what [`Tokens::credentials_seen`] answers may have.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn bump(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// Changes the entry of `key` (`None`: none) and writes the file, the
    /// other entries untouched. Says whether there was an entry before.
    pub fn update(
        &self,
        key: &str,
        change: impl FnOnce(Option<Entry>) -> Option<Entry>,
    ) -> Result<bool, OAuthError> {
        let changed = self.change(key, change);
        // After the write (or its failure): nothing read before it is
        // current any more.
        self.bump();
        changed
    }

    fn change(
        &self,
        key: &str,
        change: impl FnOnce(Option<Entry>) -> Option<Entry>,
    ) -> Result<bool, OAuthError> {
        let _lock = self.lock()?;
        let mut contents = Contents::clone(&*self.read()?);
        // Whatever happens below, the next lookup reads the file again.
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let before = contents.servers.remove(key);
        let had = before.is_some();
        if let Some(after) = change(before) {
            contents.servers.insert(key.to_owned(), after);
        }
        if contents.servers.is_empty() {
            match std::fs::remove_file(&self.path) {
                Ok(()) => return Ok(had),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(had),
                Err(e) => return Err(self.fail(&format!("cannot remove it: {e}"))),
            }
        }
        contents.version = 1;
        let text = serde_json::to_vec_pretty(&contents)
            .map_err(|e| self.fail(&format!("cannot encode it: {e}")))?;
        tiny_harness_core::file::write::privately(&self.path, &text)
            .map_err(|e| self.fail(&format!("cannot write it: {e}")))?;
        Ok(had)
    }

    fn fail(&self, why: &str) -> OAuthError {
        OAuthError::TokenFile(format!("token file {}: {why}", self.path.display()))
    }

    /// The file's contents: none when there is no file; refused when it is
    /// not the owner's alone.
    fn read(&self) -> Result<std::sync::Arc<Contents>, OAuthError> {
        let meta = match std::fs::symlink_metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(std::sync::Arc::default());
            }
            Err(e) => return Err(self.fail(&format!("cannot read it: {e}"))),
        };
        // Checked at every read, cached or not: a chmod shows at once.
        self.check(&meta)?;
        let stamp = Stamp::of(&meta);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = cache.as_mut()
            && cached.stamp == stamp
        {
            cached.checked = std::time::Instant::now();
            return Ok(cached.contents.clone());
        }
        let bytes =
            tiny_harness_core::file::read_regular(&self.path, "token file", MAX_TOKEN_FILE_BYTES)
                .map_err(|e| self.fail(&format!("{} (remove it and log in again)", e.reason)))?;
        let contents: Contents = serde_json::from_slice(&bytes).map_err(|e| {
            self.fail(&format!(
                "it is not a token file this host wrote ({e}): remove it and log in again"
            ))
        })?;
        let contents = std::sync::Arc::new(contents);
        self.bump();
        *cache = Some(Cached {
            stamp,
            contents: contents.clone(),
            checked: std::time::Instant::now(),
        });
        Ok(contents)
    }

    #[cfg(unix)]
    fn check(&self, meta: &std::fs::Metadata) -> Result<(), OAuthError> {
        use std::os::unix::fs::MetadataExt as _;
        let path = self.path.display();
        if !meta.file_type().is_file() {
            return Err(self.fail("it is not a regular file (a symlink or other): remove it"));
        }
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Err(self.fail(&format!(
                "it belongs to user {}, not to you (user {me}): remove it and log in again",
                meta.uid()
            )));
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(self.fail(&format!(
                "others may read or change it (mode {mode:03o}): run chmod 600 {path}, and log in again if someone else may have read it"
            )));
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn check(&self, _meta: &std::fs::Metadata) -> Result<(), OAuthError> {
        Ok(())
    }

    /// The edit lock that orders the hosts' writes (`.NAME.lock` beside it).
    fn lock(&self) -> Result<tiny_harness_core::file::edit::EditLock, OAuthError> {
        tiny_harness_core::file::edit::EditLock::take(&self.path)
            .map_err(|e| OAuthError::TokenFile(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(resource: &str) -> Entry {
        Entry {
            resource: resource.to_owned(),
            credentials: StoredCredentials::new("client".to_owned(), None, vec![], None),
            client_secret: Some("s3cret".to_owned()),
            wanted_scopes: vec![],
            metadata: None,
        }
    }

    #[test]
    fn entries_are_kept_apart_and_the_file_is_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let tokens = Tokens::beside(&dir.path().join("agent.toml"));
        assert_eq!(tokens.path(), dir.path().join("agent.tokens"));
        assert!(tokens.entry("mcp/a").unwrap().is_none());
        tokens
            .update("mcp/a", |_| Some(entry("http://a/mcp")))
            .unwrap();
        tokens
            .update("mcp/b", |_| Some(entry("http://b/mcp")))
            .unwrap();
        let mode = std::fs::metadata(tokens.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            tokens.entry("mcp/a").unwrap().unwrap().resource,
            "http://a/mcp"
        );
        assert!(format!("{:?}", tokens.entry("mcp/a").unwrap()).contains("…"));
        assert!(!format!("{:?}", tokens.entry("mcp/a").unwrap()).contains("s3cret"));
        assert!(
            tokens.update("mcp/a", |_| None).unwrap(),
            "there was an entry"
        );
        assert!(tokens.entry("mcp/a").unwrap().is_none());
        assert_eq!(
            tokens.entry("mcp/b").unwrap().unwrap().resource,
            "http://b/mcp"
        );
        tokens.update("mcp/b", |_| None).unwrap();
        assert!(!tokens.path().exists(), "no entry left, no file");
    }

    #[test]
    fn another_hosts_write_is_seen_through_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("agent.toml");
        let (mine, theirs) = (Tokens::beside(&config), Tokens::beside(&config));
        mine.update("mcp/a", |_| Some(entry("http://one/mcp")))
            .unwrap();
        assert_eq!(
            mine.entry("mcp/a").unwrap().unwrap().resource,
            "http://one/mcp"
        );
        theirs
            .update("mcp/a", |_| Some(entry("http://two/mcp")))
            .unwrap();
        assert_eq!(
            mine.entry("mcp/a").unwrap().unwrap().resource,
            "http://two/mcp"
        );
        std::fs::remove_file(mine.path()).unwrap();
        assert!(
            mine.entry("mcp/a").unwrap().is_none(),
            "a removed file is seen"
        );
    }

    #[test]
    fn a_calls_token_is_checked_against_the_file_at_most_a_recheck_late() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("agent.toml");
        let mut mine = Tokens::beside(&config);
        mine.recheck = std::time::Duration::from_millis(300);
        let theirs = Tokens::beside(&config);
        let resource = |t: &Tokens, url: &str| t.credentials("mcp/a", url).unwrap().is_some();
        mine.update("mcp/a", |_| Some(entry("http://one/mcp")))
            .unwrap();
        assert!(resource(&mine, "http://one/mcp"), "its own write, at once");
        theirs
            .update("mcp/a", |_| Some(entry("http://two/mcp")))
            .unwrap();
        let started = std::time::Instant::now();
        let soon = resource(&mine, "http://one/mcp");
        if started.elapsed() < std::time::Duration::from_millis(200) {
            assert!(soon, "within the recheck, the cache answers");
        }
        std::thread::sleep(std::time::Duration::from_millis(350));
        assert!(resource(&mine, "http://two/mcp"), "after it, the file");
        assert!(!resource(&mine, "http://one/mcp"));
        std::fs::remove_file(mine.path()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(350));
        assert!(!resource(&mine, "http://two/mcp"), "a logout, seen");
    }

    #[test]
    fn a_file_others_may_read_or_a_symlink_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let tokens = Tokens::beside(&dir.path().join("agent.toml"));
        tokens
            .update("mcp/a", |_| Some(entry("http://a/mcp")))
            .unwrap();
        std::fs::set_permissions(tokens.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = tokens.entry("mcp/a").unwrap_err().to_string();
        assert!(
            refused.contains("mode 644") && refused.contains("chmod 600"),
            "{refused}"
        );
        assert!(!refused.contains('\n'));
        // A write refuses too, and leaves the file as it was.
        let before = std::fs::read(tokens.path()).unwrap();
        assert!(
            tokens
                .update("mcp/b", |_| Some(entry("http://b/mcp")))
                .is_err()
        );
        assert_eq!(std::fs::read(tokens.path()).unwrap(), before);

        std::fs::remove_file(tokens.path()).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, tokens.path()).unwrap();
        let refused = tokens.entry("mcp/a").unwrap_err().to_string();
        assert!(refused.contains("not a regular file"), "{refused}");

        // Another user's file (only root can make one here; as anyone
        // else the kernel refuses the chown and the case cannot be built).
        std::fs::remove_file(tokens.path()).unwrap();
        tokens
            .update("mcp/a", |_| Some(entry("http://a/mcp")))
            .unwrap();
        if std::os::unix::fs::chown(tokens.path(), Some(65534), None).is_ok() {
            let refused = tokens.entry("mcp/a").unwrap_err().to_string();
            assert!(
                refused.contains("belongs to user 65534, not to you"),
                "{refused}"
            );
        }

        std::fs::remove_file(tokens.path()).unwrap();
        std::fs::write(tokens.path(), "garbage").unwrap();
        std::fs::set_permissions(tokens.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        let refused = tokens.entry("mcp/a").unwrap_err().to_string();
        assert!(refused.contains("remove it and log in again"), "{refused}");
    }
}
