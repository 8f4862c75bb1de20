//! A plugin's tests as data: a cases file (TOML, or JSON by its `.json`
//! extension) names the plugin, what it is granted, the programs and pages
//! of the world outside it as scripted, and each call with what must come
//! back. `tiny-harness test CASES.toml` runs one; [`Cases::load`] and
//! [`Cases::run`] are the same from Rust.
//!
//! ```toml
//! [plugin]
//! path = "wordtools.wasm"             # or crate = "." (built for wasm32-wasip2)
//! build = ["./build.sh"]              # run first, in this file's directory
//! name = "wordtools"
//! tools = ["words.count", "words.lines"]
//! grants = { exec = ["wc"], dirs = [{ guest = "/work", mode = "read-write" }] }
//!
//! [[program]]
//! program = "wc"
//! args = ["-l", "notes.txt"]
//! stdout = "2 notes.txt\n"
//!
//! [[case]]
//! name = "lines come from wc"
//! tool = "words.lines"
//! arguments = { file = "notes.txt" }
//! json = { lines = 2 }
//! ran = [["wc", "-l", "notes.txt"]]
//! ```
//!
//! Invariants:
//! - The file is untrusted input: at most [`MAX_CASES_BYTES`] read (a FIFO
//!   or device refused without blocking), at most [`MAX_CASES`] cases,
//!   unknown keys refused, and every refusal one line naming the file, the
//!   place and what to write instead.
//! - Grants are written as a config writes them (`exec = ["wc"]` or
//!   `{ program = "wc" }`, `net = [...]`, `dirs = [...]`), checked by the
//!   same grant types; a directory without `host` is a new temporary one,
//!   filled with its `files`.
//! - Cases run in the order written, against one loaded plugin (what a
//!   case writes, the next can read); what a case asserts about programs
//!   and requests is about that case's alone.

mod run;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

pub use run::{CaseReport, Mismatch, Report};

/// The largest cases file read, 1 MiB.
pub const MAX_CASES_BYTES: u64 = 1 << 20;

/// The most cases one file may hold.
pub const MAX_CASES: usize = 10_000;

/// Why a cases file cannot be run. One line each, saying what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CasesError {
    /// The file could not be read, or is not a cases file.
    #[error("{}{}: {message}", .file.display(), .location.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Invalid {
        /// The cases file.
        file: PathBuf,
        /// 1-based line and column, when the error has a place.
        location: Option<(usize, usize)>,
        /// What is wrong and what to do.
        message: String,
    },
    /// The plugin's build command failed or could not run.
    #[error("{}: the build {command} {reason}", .file.display())]
    Build {
        /// The cases file.
        file: PathBuf,
        /// The command as written.
        command: String,
        /// What happened ("exited with 1: its messages are above", ...).
        reason: String,
    },
    /// The plugin crate did not build into a component.
    #[error("{}: {0}", .file.display())]
    Crate {
        /// The cases file.
        file: PathBuf,
        /// Why.
        #[source]
        reason: crate::BuildError,
    },
    /// The plugin did not load (or a grant is refused).
    #[error("{}: {reason}", .file.display())]
    Start {
        /// The cases file.
        file: PathBuf,
        /// Why.
        #[source]
        reason: crate::StartError,
    },
}

/// A cases file, read and checked, ready to [`run`](Cases::run).
#[derive(Debug, Clone)]
pub struct Cases {
    pub(crate) file: PathBuf,
    pub(crate) base: PathBuf,
    pub(crate) raw: RawCases,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a cases file: [plugin], [[program]], [[page]] and [[case]] tables"
)]
pub(crate) struct RawCases {
    /// What the file is about, for its reader.
    #[serde(default, rename = "about")]
    pub(crate) _about: Option<String>,
    #[serde(default)]
    pub(crate) plugin: RawPlugin,
    #[serde(default, rename = "program")]
    pub(crate) programs: Vec<RawProgram>,
    #[serde(default, rename = "page")]
    pub(crate) pages: Vec<RawPage>,
    #[serde(default, rename = "case")]
    pub(crate) cases: Vec<RawCase>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [plugin] table: path or crate, and build, name, config, grants, tools"
)]
pub(crate) struct RawPlugin {
    pub(crate) path: Option<String>,
    #[serde(rename = "crate")]
    pub(crate) krate: Option<String>,
    pub(crate) build: Option<Vec<String>>,
    pub(crate) name: Option<String>,
    pub(crate) config: Option<Value>,
    #[serde(default)]
    pub(crate) grants: RawGrants,
    pub(crate) tools: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of grants: dirs, exec and net"
)]
pub(crate) struct RawGrants {
    #[serde(default)]
    pub(crate) dirs: Vec<RawDir>,
    #[serde(default)]
    pub(crate) exec: Vec<ExecEntry>,
    #[serde(default)]
    pub(crate) net: Vec<String>,
}

/// An `exec` entry as a config writes it: `"wc"` or `{ program = "wc" }`.
/// A test grants programs by name; what they answer is scripted.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "a program (\"wc\") or a table { program = \"wc\" }"
)]
pub(crate) enum ExecEntry {
    Program(String),
    Table(RawExec),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table { program = \"wc\" } (a test grants programs by name; what they answer is in [[program]])"
)]
pub(crate) struct RawExec {
    pub(crate) program: String,
}

impl ExecEntry {
    pub(crate) fn program(&self) -> &str {
        match self {
            ExecEntry::Program(p) | ExecEntry::Table(RawExec { program: p }) => p,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { guest = \"/work\", mode = \"read-write\", files = { \"a.txt\" = \"...\" } }"
)]
pub(crate) struct RawDir {
    /// A host directory, relative to the cases file; none: a new
    /// temporary directory.
    pub(crate) host: Option<String>,
    pub(crate) guest: String,
    #[serde(default)]
    pub(crate) mode: RawMode,
    /// Files written into a temporary directory before the plugin loads.
    #[serde(default)]
    pub(crate) files: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    expecting = "\"read-only\" or \"read-write\""
)]
pub(crate) enum RawMode {
    #[default]
    ReadOnly,
    ReadWrite,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[program]] table: program, and args, stdout, stderr, exit, signal, times_out, fails"
)]
pub(crate) struct RawProgram {
    pub(crate) program: String,
    pub(crate) args: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) stdout: String,
    #[serde(default)]
    pub(crate) stderr: String,
    pub(crate) exit: Option<i32>,
    pub(crate) signal: Option<i32>,
    #[serde(default)]
    pub(crate) times_out: bool,
    pub(crate) fails: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[page]] table: url, and method, status, headers, body or json, fails"
)]
pub(crate) struct RawPage {
    pub(crate) url: String,
    pub(crate) method: Option<String>,
    pub(crate) status: Option<u16>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Option<String>,
    pub(crate) json: Option<Value>,
    pub(crate) fails: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[case]] table: tool, arguments, and what must come back (json, text, contains, is_error, error, message, ran, fetched, files)"
)]
pub(crate) struct RawCase {
    pub(crate) name: Option<String>,
    pub(crate) tool: String,
    #[serde(default = "empty_object")]
    pub(crate) arguments: Value,
    pub(crate) json: Option<Value>,
    pub(crate) text: Option<String>,
    pub(crate) contains: Option<OneOrMany>,
    pub(crate) is_error: Option<bool>,
    pub(crate) error: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) ran: Option<Vec<Vec<String>>>,
    pub(crate) fetched: Option<Vec<String>>,
    pub(crate) files: Option<BTreeMap<String, String>>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A string, or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, expecting = "a string or a list of strings")]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub(crate) fn all(&self) -> &[String] {
        match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        }
    }
}

impl Cases {
    /// Reads and checks the cases file at `path` (TOML, or JSON when its
    /// name ends in `.json`).
    pub fn load(path: &Path) -> Result<Cases, CasesError> {
        let invalid = |message: String| CasesError::Invalid {
            file: path.to_owned(),
            location: None,
            message,
        };
        let bytes = tiny_harness_core::file::read_regular(path, "cases file", MAX_CASES_BYTES)
            .map_err(|e| invalid(format!("cannot read it: {}", e.reason)))?;
        let text =
            String::from_utf8(bytes).map_err(|e| invalid(format!("it is not UTF-8 text ({e})")))?;
        Cases::parse(path, &text)
    }

    /// Checks `text` as the cases file at `path` (which anchors relative
    /// paths and names the file in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Cases, CasesError> {
        let at = |location: Option<(usize, usize)>, message: &str| CasesError::Invalid {
            file: path.to_owned(),
            location,
            message: tiny_harness_core::display::one_line(message).into_owned(),
        };
        let raw: RawCases = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(text).map_err(|e| {
                let message = e.to_string();
                // serde_json ends its message with " at line L column C".
                let message = message
                    .rsplit_once(" at line ")
                    .map_or(message.as_str(), |(m, _)| m);
                at(Some((e.line(), e.column())), message)
            })?
        } else {
            toml::from_str(text).map_err(|e| {
                let location = e.span().map(|span| line_column(text, span.start));
                at(location, &e.message().trim().replace('\n', " "))
            })?
        };
        let cases = Cases {
            file: path.to_owned(),
            base: path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_owned(),
            raw,
        };
        cases.check().map_err(|message| at(None, &message))?;
        Ok(cases)
    }

    /// Runs the component at `path` instead of the one the file names
    /// (and builds nothing): one file of cases for a plugin written in
    /// several languages.
    pub fn with_plugin(mut self, path: impl Into<PathBuf>) -> Cases {
        let path: PathBuf = path.into();
        self.raw.plugin.path = Some(path.display().to_string());
        self.raw.plugin.krate = None;
        self.raw.plugin.build = None;
        // A path given here is the caller's, not the file's.
        if path.is_relative()
            && !path.to_str().is_some_and(|p| p.starts_with("builtin:"))
            && let Ok(cwd) = std::env::current_dir()
        {
            self.raw.plugin.path = Some(cwd.join(path).display().to_string());
        }
        self
    }

    /// Gives the plugin `name` instead of the one the file names.
    pub fn with_name(mut self, name: impl Into<String>) -> Cases {
        self.raw.plugin.name = Some(name.into());
        self
    }

    /// How many cases the file holds.
    pub fn len(&self) -> usize {
        self.raw.cases.len()
    }

    /// Whether the file holds no case.
    pub fn is_empty(&self) -> bool {
        self.raw.cases.is_empty()
    }

    /// What is inconsistent in the file, as one line.
    fn check(&self) -> Result<(), String> {
        let plugin = &self.raw.plugin;
        match (&plugin.path, &plugin.krate) {
            (Some(_), Some(_)) => {
                return Err(
                    "plugin: give path (a component) or crate (a Rust crate to build), not both"
                        .to_owned(),
                );
            }
            (None, None) => {
                return Err(
                    "plugin: name the component with path = \"PLUGIN.wasm\", or a Rust crate to build with crate = \".\""
                        .to_owned(),
                );
            }
            _ => {}
        }
        if plugin.krate.is_some() && plugin.build.is_some() {
            return Err(
                "plugin: a crate is built by cargo; drop build, or name the component with path"
                    .to_owned(),
            );
        }
        if plugin.build.as_ref().is_some_and(Vec::is_empty) {
            return Err(
                "plugin.build: give the command as a list, such as [\"./build.sh\"]".to_owned(),
            );
        }
        if let Some(config) = &plugin.config
            && !config.is_object()
        {
            return Err("plugin.config: must be a table".to_owned());
        }
        if self.raw.cases.len() > MAX_CASES {
            return Err(format!(
                "{} cases: at most {MAX_CASES} fit in one file; split it",
                self.raw.cases.len()
            ));
        }
        for (i, case) in self.raw.cases.iter().enumerate() {
            let name = run::case_name(i, case);
            if case.error.is_some()
                && (case.json.is_some()
                    || case.text.is_some()
                    || case.contains.is_some()
                    || case.is_error.is_some())
            {
                return Err(format!(
                    "case {name}: error expects no result, so json, text, contains and is_error cannot be expected with it"
                ));
            }
            if case.message.is_some() && case.error.is_none() {
                return Err(format!(
                    "case {name}: message is the error's; give error = \"CODE\" with it"
                ));
            }
            for guest in case.files.iter().flat_map(BTreeMap::keys) {
                if !self.raw.plugin.grants.dirs.iter().any(|d| {
                    Path::new(guest)
                        .strip_prefix(&d.guest)
                        .is_ok_and(|rest| !rest.as_os_str().is_empty())
                }) {
                    return Err(format!(
                        "case {name}: files: {guest:?} is in no granted directory; give its guest path, such as \"/work/out.txt\""
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The 1-based line and column of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
