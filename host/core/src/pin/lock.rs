//! The lock file: the pins of every plugin's component and tools, read
//! strictly and written atomically.
//!
//! Invariants:
//! - [`Lock::load`] returns a consistent lock or an error: every recorded
//!   hash is its definition's [`definition_hash`], every tool is keyed by
//!   its name, every component hash is 64 lowercase hex digits. A missing
//!   file is `Ok(None)`; a file that is there but not a lock is never
//!   taken for an empty one.
//! - [`Lock::save`] writes only a consistent lock, so what it writes loads
//!   back equal; and it replaces the file atomically (see `write.rs`).
//! - Every [`LockError`] displays as one line naming the file and saying
//!   what to do; text from the file is escaped and cut short in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::format::{
    self, DefinitionOut, LockIn, LockOut, MAX_SCHEMA_DEPTH, NOTE, PluginOut, Probe, ServerOut,
    ToolOut, VERSION,
};
pub use super::problem::Problem;
use super::{definition_hash, pointer, shown};
use crate::file::{self, FileError, Reason};
use crate::tool::ToolDefinition;

/// The lock file's name for the default config, `tiny-harness.toml`: every
/// config has a lock of its own (see [`lock_path`]), and this is the one of
/// the default config. Before each config had its own, every config in a
/// directory shared this file (see [`legacy_lock_path`]).
pub const LOCK_FILE: &str = "tiny-harness.lock";

/// The largest lock file read, 64 MiB. A pinned tool takes a few KiB, so
/// this is thousands of tools; the bound keeps a file that is not a lock
/// (or a hostile one) from making the host read and parse without end.
pub const MAX_LOCK_BYTES: usize = 64 << 20;

/// What every refusal of a file on disk ends with.
const FIX: &str = "fix it, or delete it to pin every tool again as it is now";

/// The lock file of the config at `config_path`, in the same directory:
/// `NAME.lock` for `NAME.toml` (so `tiny-harness.toml` keeps
/// `tiny-harness.lock`), and `FILE.lock` for a config whose name does not
/// end in `.toml`. Two configs never share a lock, so one config's pins
/// cannot hide another's new tools, and a lock is never its own config.
pub fn lock_path(config_path: &Path) -> PathBuf {
    let dir = config_path.parent().unwrap_or_else(|| Path::new(""));
    let name = config_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tiny-harness.toml".to_owned());
    let stem = match name.strip_suffix(".toml") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => name,
    };
    dir.join(format!("{stem}.lock"))
}

/// The lock that the config at `config_path` shared with every config in
/// its directory before each had its own, `tiny-harness.lock` beside it;
/// `None` when that is the config's own lock anyway.
pub fn legacy_lock_path(config_path: &Path) -> Option<PathBuf> {
    let own = lock_path(config_path);
    let shared = config_path
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join(LOCK_FILE);
    (own != shared).then_some(shared)
}

/// The lock a config reads: `own` ([`lock_path`]), or, while it does not
/// exist, the `shared` one its directory's configs used to share
/// ([`legacy_lock_path`]). The lock, and the file it was read from; `None`
/// when neither exists.
pub fn load_own_or_shared(
    own: &Path,
    shared: Option<&Path>,
) -> Result<Option<(Lock, PathBuf)>, LockError> {
    if let Some(lock) = Lock::load(own)? {
        return Ok(Some((lock, own.to_owned())));
    }
    match shared {
        Some(shared) => Ok(Lock::load(shared)?.map(|lock| (lock, shared.to_owned()))),
        None => Ok(None),
    }
}

/// Everything pinned, by plugin name (the config's, never the component's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lock {
    /// Each plugin's pins.
    pub plugins: BTreeMap<String, PluginPins>,
}

/// One plugin's pins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginPins {
    /// The sha256 of the plugin's `.wasm` (64 lowercase hex digits), if
    /// recorded.
    pub component: Option<String>,
    /// The pinned tools of each of its servers, by server name.
    pub servers: BTreeMap<String, ServerPins>,
    /// Where the component came from when not from a file: the config's
    /// `oci://HOST/REPO:TAG@sha256:…` reference (its tag and manifest
    /// digest) when it was recorded.
    pub source: Option<String>,
}

/// One server's pinned tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerPins {
    /// Each tool's pin, keyed by the tool's name.
    pub tools: BTreeMap<String, ToolPin>,
    /// The server's installed code, when `mcp install` installed it.
    pub code: Option<super::Code>,
}

/// One tool's pinned definition and its hash.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPin {
    /// [`definition_hash`] of `definition`.
    pub hash: String,
    /// The definition as it was reviewed.
    pub definition: ToolDefinition,
}

impl ToolPin {
    /// Pins `definition`, computing its hash.
    pub fn new(definition: ToolDefinition) -> ToolPin {
        ToolPin {
            hash: definition_hash(&definition),
            definition,
        }
    }
}

impl Lock {
    /// Reads the lock at `path`: `Ok(None)` when the file does not exist.
    ///
    /// A file that is not a valid lock (not JSON, truncated, the wrong
    /// shape, a duplicate key, a missing or unknown version, a recorded
    /// hash that does not match its definition, a definition whose name
    /// differs from its key, a malformed component hash) is an error that
    /// names the file and, where it can, the line and the key, and says to
    /// fix or delete it. Such a file is never replaced by this call.
    pub fn load(path: &Path) -> Result<Option<Lock>, LockError> {
        let bytes = match file::read_regular(path, "lock file", MAX_LOCK_BYTES as u64) {
            Ok(bytes) => bytes,
            Err(FileError {
                reason: Reason::Io(error),
                ..
            }) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(LockError::Read {
                    path: path.to_owned(),
                    reason: error.reason,
                });
            }
        };
        Lock::parse(path, &bytes).map(Some)
    }

    /// Reads a lock from the contents of the file at `path`.
    fn parse(path: &Path, bytes: &[u8]) -> Result<Lock, LockError> {
        let malformed = |error: serde_json::Error| LockError::malformed(path, &error);
        // The version first: a lock of another version may have another
        // shape, and should be refused for its version, not its shape.
        let probe: Probe = serde_json::from_slice(bytes).map_err(malformed)?;
        match probe.version {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| (1..=VERSION).contains(&v)) => {}
            found => {
                return Err(LockError::Version {
                    path: path.to_owned(),
                    found: found.map(|v| v.to_string()),
                });
            }
        }
        let file: LockIn = serde_json::from_slice(bytes).map_err(malformed)?;
        let lock = Lock::from_file(file);
        if let Err((key, problem)) = lock.check() {
            let line = std::str::from_utf8(bytes)
                .ok()
                .zip(problem.needle())
                .and_then(|(text, needle)| line_of(text, &needle));
            return Err(LockError::Corrupt {
                path: path.to_owned(),
                line,
                key,
                problem,
            });
        }
        Ok(lock)
    }

    fn from_file(file: LockIn) -> Lock {
        let plugins = file.plugins.into_iter().map(|(plugin, pins)| {
            let servers = pins.servers.into_iter().map(|(server, pins)| {
                let tools = pins.tools.into_iter().map(|(tool, pin)| {
                    let pin = ToolPin {
                        hash: pin.hash,
                        definition: pin.definition.into_definition(&tool),
                    };
                    (tool, pin)
                });
                let tools = tools.collect();
                (
                    server,
                    ServerPins {
                        tools,
                        code: pins.code,
                    },
                )
            });
            let pins = PluginPins {
                component: pins.component,
                servers: servers.collect(),
                source: pins.source,
            };
            (plugin, pins)
        });
        Lock {
            plugins: plugins.collect(),
        }
    }

    /// The first inconsistency, with the JSON pointer to where it is.
    fn check(&self) -> Result<(), (String, Problem)> {
        for (plugin, pins) in &self.plugins {
            if let Some(value) = &pins.component
                && !is_sha256(value)
            {
                let key = pointer(&["plugins", plugin, "component"]);
                let value = value.clone();
                return Err((key, Problem::ComponentHash { value }));
            }
            if let Some(value) = &pins.source
                && !super::problem::is_source(value)
            {
                let key = pointer(&["plugins", plugin, "source"]);
                let value = value.clone();
                return Err((key, Problem::Source { value }));
            }
            for (server, pins) in &pins.servers {
                if let Some(problem) = pins.code.as_ref().and_then(super::Code::problem) {
                    let key = pointer(&["plugins", plugin, "servers", server, "code"]);
                    return Err((key, Problem::Code { problem }));
                }
                for (tool, pin) in &pins.tools {
                    check_pin(tool, pin).map_err(|problem| {
                        let key = pointer(&["plugins", plugin, "servers", server, "tools", tool]);
                        (key, problem)
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Deterministic text: pretty JSON (two-space indent), every object's
    /// keys sorted, a trailing newline; the same for the same contents
    /// whatever order the maps were filled in, so `git diff` of two locks
    /// shows exactly the tools that changed.
    #[allow(
        clippy::expect_used,
        reason = "a JSON value with string keys always serialises"
    )]
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&written(self))
            .expect("a lock serialises: every key is a string");
        text.push('\n');
        text
    }

    /// Writes the lock to `path` atomically: a temporary file in the same
    /// directory, synced, then renamed over the old one (and the directory
    /// synced), so a crash leaves the old lock or the new one. A lock that
    /// would not load back (a hash that is not its definition's, a tool
    /// keyed by another name, a schema nested deeper than
    /// [`MAX_SCHEMA_DEPTH`]) is refused and nothing is written.
    pub fn save(&self, path: &Path) -> Result<(), LockError> {
        if let Err((key, problem)) = self.check() {
            return Err(LockError::Unwritable {
                path: path.to_owned(),
                key,
                problem,
            });
        }
        file::write::atomically(path, self.to_text().as_bytes()).map_err(|source| {
            LockError::Write {
                path: path.to_owned(),
                source,
            }
        })
    }

    /// Changes the lock at `path` as another process may be changing it
    /// too: under the file's edit lock ([`file::edit::EditLock`]) the lock
    /// is read again (`shared`, the lock its directory's configs used to
    /// share, stands in while `path` does not exist, as in
    /// [`load_own_or_shared`]), `change` is applied to what was read, and
    /// the result is written if it differs from what was read. What another process wrote
    /// meanwhile is kept, and nothing is written half. Returns the lock as
    /// written (or as read, when nothing changed) and whether it was
    /// written.
    pub fn update(
        path: &Path,
        shared: Option<&Path>,
        change: impl FnOnce(&mut Lock),
    ) -> Result<(Lock, bool), LockError> {
        let _edit = file::edit::EditLock::take(path)?;
        let current = load_own_or_shared(path, shared)?
            .map(|(lock, _)| lock)
            .unwrap_or_default();
        let mut next = current.clone();
        change(&mut next);
        if next == current {
            return Ok((next, false));
        }
        next.save(path)?;
        Ok((next, true))
    }

    /// The pin of tool `tool` of server `server` of plugin `plugin`.
    pub fn tool(&self, plugin: &str, server: &str, tool: &str) -> Option<&ToolPin> {
        self.server(plugin, server)?.tools.get(tool)
    }

    /// The pinned tools of server `server` of plugin `plugin`.
    pub fn server(&self, plugin: &str, server: &str) -> Option<&ServerPins> {
        self.plugins.get(plugin)?.servers.get(server)
    }
}

/// `lock` in the shape it is written in.
fn written(lock: &Lock) -> LockOut<'_> {
    let plugins = lock.plugins.iter().map(|(plugin, pins)| {
        let servers = pins.servers.iter().map(|(server, pins)| {
            let tools = pins.tools.iter().map(|(tool, pin)| {
                let out = ToolOut {
                    definition: DefinitionOut::of(&pin.definition),
                    hash: &pin.hash,
                };
                (tool.as_str(), out)
            });
            let out = ServerOut {
                code: pins.code.as_ref(),
                tools: tools.collect(),
            };
            (server.as_str(), out)
        });
        let out = PluginOut {
            component: pins.component.as_deref(),
            servers: servers.collect(),
            source: pins.source.as_deref(),
        };
        (plugin.as_str(), out)
    });
    let installs = lock
        .plugins
        .values()
        .any(|p| p.source.is_some() || p.servers.values().any(|s| s.code.is_some()));
    LockOut {
        note: NOTE,
        plugins: plugins.collect(),
        version: if installs { VERSION } else { 1 },
    }
}

/// Whether the pin of `tool` is consistent and fits a lock file.
fn check_pin(tool: &str, pin: &ToolPin) -> Result<(), Problem> {
    let definition = &pin.definition;
    if definition.name != tool {
        return Err(Problem::NameMismatch {
            name: definition.name.clone(),
        });
    }
    let schemas = [
        ("input_schema", Some(&definition.input_schema)),
        ("output_schema", definition.output_schema.as_ref()),
    ];
    for (field, schema) in schemas {
        let depth = schema.map_or(0, format::nesting);
        if depth > MAX_SCHEMA_DEPTH {
            return Err(Problem::TooDeep { field, depth });
        }
    }
    let computed = definition_hash(definition);
    if computed != pin.hash {
        return Err(Problem::HashMismatch {
            recorded: pin.hash.clone(),
            computed,
        });
    }
    Ok(())
}

/// 64 lowercase hex digits.
fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The line (from 1) of the one place `needle` occurs in `text`; `None`
/// when it occurs nowhere or more than once.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    let mut found = text.match_indices(needle);
    let (at, _) = found.next()?;
    if found.next().is_some() {
        return None;
    }
    Some(text[..at].bytes().filter(|&b| b == b'\n').count() + 1)
}

/// A lock file that cannot be read or written. Displays as one line that
/// names the file and says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The file is there but could not be read: not a regular file, over
    /// [`MAX_LOCK_BYTES`], or an I/O error.
    #[error("cannot read the lock file {}: {}", .path.display(), read_failure(.reason))]
    Read {
        /// The lock file.
        path: PathBuf,
        /// Why it was not read.
        #[source]
        reason: Reason,
    },
    /// Not JSON, truncated, or not the shape of a lock (an unknown or
    /// duplicate key, a value of the wrong type, a missing field).
    #[error("{}:{line}:{column}: not a valid lock file: {message}; {FIX}", .path.display())]
    Malformed {
        /// The lock file.
        path: PathBuf,
        /// Where serde_json stopped (from 1).
        line: usize,
        /// The column there (from 1; 0 at the end of a line).
        column: usize,
        /// What is wrong, escaped and cut short.
        message: String,
    },
    /// The `version` is missing or is not 1.
    #[error("{}: {}", .path.display(), version_failure(.found.as_deref()))]
    Version {
        /// The lock file.
        path: PathBuf,
        /// The `version` as written (JSON), if there is one.
        found: Option<String>,
    },
    /// A pin that contradicts itself: the file was edited or corrupted.
    #[error(
        "{}{}: {}: {problem}; {FIX}",
        .path.display(),
        .line.map(|l| format!(":{l}")).unwrap_or_default(),
        shown(.key, 200)
    )]
    Corrupt {
        /// The lock file.
        path: PathBuf,
        /// The line of the offending value, when it can be told.
        line: Option<usize>,
        /// JSON pointer to the offending tool or component.
        key: String,
        /// What is wrong.
        problem: Problem,
    },
    /// [`Lock::save`] was given a lock that would not load back; nothing
    /// was written.
    #[error(
        "not writing the lock file {}: {}: {problem}; {}",
        .path.display(),
        shown(.key, 200),
        .problem.save_hint()
    )]
    Unwritable {
        /// The lock file.
        path: PathBuf,
        /// JSON pointer to the offending tool or component.
        key: String,
        /// What is wrong.
        problem: Problem,
    },
    /// Writing the file (or syncing it, or renaming it into place) failed;
    /// the old lock, if any, is unchanged.
    #[error(
        "cannot write the lock file {}: {source} (the old lock, if any, is unchanged)",
        .path.display()
    )]
    Write {
        /// The lock file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Another command held the lock file's edit lock too long, or it
    /// could not be taken; nothing was written.
    #[error(transparent)]
    Edit(#[from] file::edit::EditLockError),
}

impl LockError {
    fn malformed(path: &Path, error: &serde_json::Error) -> LockError {
        // serde_json's message ends with the position, given separately.
        let text = error.to_string();
        let suffix = format!(" at line {} column {}", error.line(), error.column());
        let message = text.strip_suffix(&suffix).unwrap_or(&text);
        LockError::Malformed {
            path: path.to_owned(),
            line: error.line(),
            column: error.column(),
            message: shown(message, 300),
        }
    }
}

/// The reason of a [`LockError::Read`], with what to do.
fn read_failure(reason: &Reason) -> String {
    match reason {
        Reason::NotRegular { kind, .. } => format!(
            "it is {kind}, not a regular file: move it out of the way (a config's lock is \
             always beside it, named after it: NAME.lock for NAME.toml)"
        ),
        Reason::TooLarge { .. } => format!("{reason}; {FIX}"),
        other => other.to_string(),
    }
}

/// The message of a [`LockError::Version`].
fn version_failure(found: Option<&str>) -> String {
    match found {
        None => format!("not a tiny-harness lock file: it has no `version`; {FIX}"),
        Some(version) => format!(
            "lock file version {} is not one this tiny-harness reads (it reads versions 1 \
             and {VERSION}): use the tiny-harness that wrote it, or delete the file to pin every \
             tool again as it is now",
            shown(version, 40)
        ),
    }
}
