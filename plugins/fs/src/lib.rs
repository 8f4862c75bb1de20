//! `fs`: the tiny-harness filesystem plugin, server `workspace`.
//!
//! Tools: `read_file`, `write_file`, `list_dir`, `stat` and `search`. A
//! relative `path` argument is joined onto the configured `root` (default
//! `/workspace`); an absolute path is used as given. Each tool is a
//! `#[tool]` function on the guest SDK (in `files.rs` and `tree.rs`), its
//! description its doc comment and its schemas the hand-written ones in
//! `defs.rs`, so that its registration stays what it was before the SDK.
//!
//! Guarantees:
//! - The plugin never decides which paths are allowed: it neither normalises
//!   nor rejects `..` or absolute paths. The WASI sandbox (the directories
//!   the host grants) is what refuses them; a refusal becomes a `denied`
//!   call error naming the granted directories, any other io error an error
//!   result naming the path. (The sandbox reports an absolute path outside
//!   every grant as missing, since it has no directory to look in; the
//!   plugin tells that apart from a missing file by comparing the path with
//!   the granted directories' guest paths, and reports it as `denied`.)
//! - Walks (`list_dir` with `recursive`, `search`) never follow symlinks,
//!   visit entries in a deterministic order, and stop at their limits.
//! - Text is returned as found in the file (line endings kept); invalid
//!   UTF-8 is replaced with U+FFFD, and files that look binary are refused.
//! - Only `write_file` changes anything. (`stat` opens a regular file for
//!   writing, without creating or truncating it, to learn whether the
//!   sandbox lets it be written: WASI reports no permission bits.)

mod defs;
mod files;
mod tree;

use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tiny_harness_plugin::{Config as PluginConfig, Context, Plugin, Server, ToolError, tools};

/// The server every tool of this plugin belongs to.
const SERVER: &str = "workspace";

/// The root a relative path is joined onto when the config names none.
const DEFAULT_ROOT: &str = "/workspace";

/// The plugin's config: the host's `[plugins.<name>.config]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The directory relative paths are joined onto.
    #[serde(default = "default_root")]
    root: String,
}

/// The default for [`Config::root`].
fn default_root() -> String {
    DEFAULT_ROOT.into()
}

impl Config {
    /// Parses the config JSON, saying what to fix when it is wrong.
    fn parse(config: &str) -> Result<Self, String> {
        serde_json::from_str(config).map_err(|err| {
            format!(
                "invalid fs plugin config: {err}; the only key is `root`, a string naming \
                 the directory relative paths are joined onto (default \"{DEFAULT_ROOT}\")"
            )
        })
    }
}

/// The plugin: the `workspace` server, once its config checks.
struct Fs;

impl Plugin for Fs {
    fn servers(config: &PluginConfig) -> Result<Vec<Server>, String> {
        Config::parse(config.json())?;
        Ok(vec![Server::new(
            SERVER,
            tools![
                files::read_file,
                files::write_file,
                tree::list_dir,
                files::stat,
                tree::search,
            ],
        )])
    }
}

tiny_harness_plugin::export!(Fs);

/// Checks that an integer argument lies in `min..=max`.
fn check_range(name: &str, value: u64, min: u64, max: u64) -> Result<(), ToolError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else if max == u64::MAX {
        Err(ToolError::InvalidArguments(format!(
            "`{name}` must be at least {min}, not {value}"
        )))
    } else {
        Err(ToolError::InvalidArguments(format!(
            "`{name}` must be from {min} to {max}, not {value}"
        )))
    }
}

/// The path a tool argument names: joined onto the config's `root` when
/// relative, as given when absolute. `.` and the empty path name `root`
/// itself. Nothing is normalised: the sandbox decides what may be reached.
fn resolve(cx: &Context, path: &str) -> Result<PathBuf, ToolError> {
    let root = PathBuf::from(
        Config::parse(cx.config.json())
            .map_err(ToolError::Failed)?
            .root,
    );
    Ok(match path {
        "" | "." => root,
        _ => root.join(path),
    })
}

/// Whether an io error is the sandbox (or the host's permissions) refusing
/// access rather than, say, a missing file.
fn is_denial(err: &io::Error) -> bool {
    if err.kind() == io::ErrorKind::PermissionDenied {
        return true;
    }
    let message = err.to_string();
    [
        "not capable",
        "Capabilities insufficient",
        "Operation not permitted",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// Turns an io error on `path` into the tool's error: `denied` when the
/// sandbox refused, else an error result for the model. `action` is the
/// verb for the message ("read", "write", ...).
fn io_failure(action: &str, path: &Path, err: io::Error) -> ToolError {
    let message = format!("cannot {action} {}: {err}", path.display());
    let denied = is_denial(&err);
    if !denied && err.kind() != io::ErrorKind::NotFound {
        return ToolError::Reported(message);
    }
    // Only a refusal or a missing path needs the grants to explain it.
    let granted = granted_dirs();
    if denied {
        ToolError::Denied(format!(
            "{message}; the sandbox refused it: {}",
            describe_grants(&granted)
        ))
    } else if is_outside(path, &granted) {
        ToolError::Denied(format!(
            "cannot {action} {}: the path lies outside every directory granted to this \
             plugin; {}",
            path.display(),
            describe_grants(&granted)
        ))
    } else {
        ToolError::Reported(message)
    }
}

/// The guest paths of the directories the host granted (the WASI
/// preopens), in the order the host gave them.
fn granted_dirs() -> Vec<String> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_descriptor, guest)| guest)
        .collect()
}

/// Whether an absolute `path` lies outside every granted directory, by
/// comparing whole path components (`/workspace2` is not in `/workspace`).
fn is_outside(path: &Path, granted: &[String]) -> bool {
    path.is_absolute() && !granted.iter().any(|dir| path.starts_with(dir))
}

/// One sentence naming what this plugin may reach.
fn describe_grants(granted: &[String]) -> String {
    if granted.is_empty() {
        "the host config grants this plugin no directories".into()
    } else {
        format!(
            "the host config grants this plugin only {}",
            granted.join(", ")
        )
    }
}

// What a user grants it by default: the directory its paths are relative
// to, read-only (write_file needs read-write, and says so when denied).
tiny_harness_plugin::expects! {
    dirs = ["/workspace"],
}
