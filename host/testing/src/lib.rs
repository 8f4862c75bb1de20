//! # tiny-harness-testing
//!
//! Test a tiny-harness plugin the way the host runs it: load its component
//! (or build its crate), grant it directories, script the programs it runs
//! and the HTTP it sends, call its tools with JSON arguments, and assert on
//! what the model would see and on what the plugin asked the host to do.
//!
//! ```no_run
//! # async fn example() {
//! use serde_json::json;
//! use tiny_harness_testing::{PluginTest, Program};
//!
//! let plugin = PluginTest::new("target/wasm32-wasip2/release/shell.wasm")
//!     .name("shell")
//!     .grant_program("git")
//!     .program(Program::new("git").args(["status", "--short"]).stdout(" M README.md\n"))
//!     .start()
//!     .await
//!     .unwrap();
//! let outcome = plugin
//!     .call("exec.run", json!({"program": "git", "args": ["status", "--short"]}))
//!     .await;
//! assert_eq!(outcome.json()["stdout"], " M README.md\n");
//! assert_eq!(plugin.ran()[0].args, ["status", "--short"]);
//! # }
//! ```
//!
//! A cases file says the same as data (the plugin, its grants, the
//! script, the calls and what must come back), run by `tiny-harness test`
//! or by [`Cases`] here: see [`cases`].
//!
//! Invariants:
//! - A call goes through the production path exactly: the host's
//!   registry, validation against the tool's schema, limits, the sandbox,
//!   the rendering of the result as untrusted data. Only what lies beyond
//!   the host (a program's process, a server at the end of a URL) is
//!   scripted, and only after the host's own checks: a `cwd` outside the
//!   granted directories and a URL outside the net grants are refused as
//!   in production.
//! - Grants are checked by the grant types themselves, as a config's and
//!   an embedder's are: [`PluginTest::start`] refuses a relative guest
//!   path, a host path that is not a directory, two directories at one
//!   guest path or a malformed net pattern in the words a config would.
//! - Nothing of the test reaches the machine: no program runs and nothing
//!   is sent. Granted directories made by [`PluginTest::temp_dir`] are
//!   removed when the [`Running`] plugin is dropped.

mod build;
pub mod cases;
mod script;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tiny_harness_host::{
    CallError, CallOutcome, ContentPart, DirGrant, GrantError, Host, HostBuilder, NetGrant,
    PluginSpec, ToolCall, ToolDefinition, ToolResult,
};

pub use build::{BuildError, TARGET_DIR_ENV, build};
pub use cases::{Cases, CasesError};
pub use script::{Page, Program, Ran};
pub use tiny_harness_host::{DirMode, Limits};
pub use tiny_harness_wasm::HttpRequest as Fetched;

/// Why a plugin under test did not start. One line each, saying what to
/// fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A net grant is not a valid pattern, or grants a destination
    /// already granted.
    #[error("net grant {pattern:?}: {reason}")]
    NetGrant {
        /// The pattern as given.
        pattern: String,
        /// Why it is refused.
        #[source]
        reason: Box<GrantError>,
    },
    /// A directory grant is refused (a guest path that is not absolute or
    /// holds `.` or `..`, a host path that is not a directory, a second
    /// directory at one guest path): the grant types' own check, in the
    /// words a config would use after its key.
    #[error("dir grant {guest:?}: {reason}")]
    DirGrant {
        /// The guest path as given.
        guest: String,
        /// Why it is refused.
        #[source]
        reason: Box<GrantError>,
    },
    /// A temporary directory could not be made.
    #[error("cannot make a temporary directory for {guest}: {reason}")]
    TempDir {
        /// The guest path it was for.
        guest: String,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// The host did not load the plugin (not a component, another world,
    /// `register` refused or trapped, a registration over a limit...).
    #[error("{0}")]
    Load(#[source] Box<tiny_harness_host::HostError>),
}

/// A plugin to test: its component, name, config, grants, limits and the
/// script of the world outside it. [`PluginTest::start`] loads it.
#[derive(Debug)]
pub struct PluginTest {
    spec: PluginSpec,
    dirs: Vec<(PathBuf, String, DirMode)>,
    temp_dirs: Vec<(String, DirMode)>,
    net: Vec<String>,
    script: script::Script,
}

impl PluginTest {
    /// The component at `wasm` (or `builtin:NAME`), named `plugin`, with an
    /// empty config, no grants and the host's default limits.
    pub fn new(wasm: impl Into<PathBuf>) -> PluginTest {
        PluginTest {
            spec: PluginSpec::new("plugin", wasm),
            dirs: Vec::new(),
            temp_dirs: Vec::new(),
            net: Vec::new(),
            script: script::Script::default(),
        }
    }

    /// Builds the plugin crate in `dir` for `wasm32-wasip2` (release) and
    /// tests its component (see [`build`]).
    pub fn build(dir: impl AsRef<Path>) -> Result<PluginTest, BuildError> {
        build(dir.as_ref(), None).map(PluginTest::new)
    }

    /// The name the host config gives it: the first part of its tools'
    /// names (`NAME/server.tool`).
    pub fn name(mut self, name: impl Into<String>) -> PluginTest {
        self.spec.name = name.into();
        self
    }

    /// Its `config` table, as `register` and every call receive it.
    pub fn config(mut self, config: Value) -> PluginTest {
        self.spec.config = config;
        self
    }

    /// Its limits (memory, time, result size...).
    pub fn limits(mut self, limits: Limits) -> PluginTest {
        self.spec.limits = limits;
        self
    }

    /// Grants host directory `host` at guest path `guest`. Checked by
    /// [`PluginTest::start`] as a config's `dirs` entry is (see
    /// [`DirGrant::new`]): `guest` absolute without `.` or `..`, `host` a
    /// directory, one directory per guest path.
    pub fn grant_dir(mut self, host: impl Into<PathBuf>, guest: &str, mode: DirMode) -> PluginTest {
        self.dirs.push((host.into(), guest.to_owned(), mode));
        self
    }

    /// Grants a new empty temporary directory at guest path `guest`;
    /// [`Running::dir`] tells where it is on the host.
    pub fn temp_dir(mut self, guest: &str, mode: DirMode) -> PluginTest {
        self.temp_dirs.push((guest.to_owned(), mode));
        self
    }

    /// Grants running `program`, as the plugin names it (`git`, or
    /// `/usr/bin/git`); what it answers comes from [`PluginTest::program`].
    pub fn grant_program(mut self, program: impl Into<String>) -> PluginTest {
        self.script.granted.push(program.into());
        self
    }

    /// Grants HTTP requests to `pattern` (`https://api.example.com`, as in
    /// a config's `net`); what they answer comes from [`PluginTest::page`].
    pub fn grant_net(mut self, pattern: impl Into<String>) -> PluginTest {
        self.net.push(pattern.into());
        self
    }

    /// What a granted program answers (the first that matches answers).
    pub fn program(mut self, program: Program) -> PluginTest {
        self.script.programs.push(program);
        self
    }

    /// What a URL answers (the first that matches answers).
    pub fn page(mut self, page: Page) -> PluginTest {
        self.script.pages.push(page);
        self
    }

    /// Loads the plugin in a host of its own (which runs `register`).
    pub async fn start(mut self) -> Result<Running, StartError> {
        for pattern in &self.net {
            NetGrant::parse(pattern)
                .and_then(|grant| self.spec.grants.add_net(grant).map(drop))
                .map_err(|reason| StartError::NetGrant {
                    pattern: pattern.clone(),
                    reason: Box::new(reason),
                })?;
        }
        let grants = &mut self.spec.grants;
        let mut dir_grant = |host: &Path, guest: &str, mode| {
            DirGrant::new(host, guest, mode)
                .and_then(|grant| grants.add_dir(grant).map(drop))
                .map_err(|reason| StartError::DirGrant {
                    guest: guest.to_owned(),
                    reason: Box::new(reason),
                })
        };
        for (host, guest, mode) in &self.dirs {
            dir_grant(host, guest, *mode)?;
        }
        let mut dirs = Vec::new();
        for (guest, mode) in &self.temp_dirs {
            let dir = tempfile::tempdir().map_err(|reason| StartError::TempDir {
                guest: guest.clone(),
                reason,
            })?;
            dir_grant(dir.path(), guest, *mode)?;
            dirs.push((guest.clone(), dir));
        }
        let script = Arc::new(self.script);
        self.spec.stand_in = Some(script.clone());
        let name = self.spec.name.clone();
        let host = HostBuilder::new()
            .plugin(self.spec)
            .build()
            .await
            .map_err(|e| StartError::Load(Box::new(e)))?;
        Ok(Running {
            host,
            name,
            script,
            dirs,
            calls: std::sync::atomic::AtomicU64::new(0),
        })
    }
}

/// A loaded plugin under test.
#[derive(Debug)]
pub struct Running {
    host: Host,
    name: String,
    script: Arc<script::Script>,
    dirs: Vec<(String, tempfile::TempDir)>,
    calls: std::sync::atomic::AtomicU64,
}

impl Running {
    /// Calls `tool` (`server.tool`, or the full `plugin/server.tool`) with
    /// `arguments`, as a model's call would be made.
    pub async fn call(&self, tool: &str, arguments: Value) -> Outcome {
        let name = if tool.contains('/') {
            tool.to_owned()
        } else {
            format!("{}/{tool}", self.name)
        };
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let outcome = self
            .host
            .invoke(&ToolCall {
                id: format!("test-{}", n + 1),
                name,
                arguments,
            })
            .await;
        Outcome { inner: outcome }
    }

    /// The names of its tools (`server.tool`), in order.
    pub fn tools(&self) -> Vec<String> {
        let prefix = format!("{}/", self.name);
        self.host
            .registry()
            .tools()
            .map(|t| t.name.to_string())
            .map(|n| n.strip_prefix(&prefix).map_or(n.clone(), str::to_owned))
            .collect()
    }

    /// The definition of `tool` (`server.tool`) as the host registered it.
    pub fn definition(&self, tool: &str) -> Option<ToolDefinition> {
        let full = format!("{}/{tool}", self.name);
        self.host
            .registry()
            .tools()
            .find(|t| t.name.to_string() == full)
            .map(|t| t.definition.clone())
    }

    /// The host directory granted at guest path `guest` by
    /// [`PluginTest::temp_dir`].
    pub fn dir(&self, guest: &str) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(g, _)| g == guest)
            .map(|(_, dir)| dir.path())
    }

    /// Every program the plugin asked to run, in order (denied ones too).
    pub fn ran(&self) -> Vec<Ran> {
        self.script
            .ran
            .lock()
            .map(|ran| ran.clone())
            .unwrap_or_default()
    }

    /// Every HTTP request the plugin sent that the grants allowed, in
    /// order.
    pub fn fetched(&self) -> Vec<Fetched> {
        self.script
            .fetched
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }

    /// The host it runs in, for what this harness does not wrap.
    pub fn host(&self) -> &Host {
        &self.host
    }
}

/// What one call came to. The accessors panic with the call's error when
/// there is no result, which is what a test wants.
#[derive(Debug)]
pub struct Outcome {
    inner: CallOutcome,
}

impl Outcome {
    /// The result, or the error the model is shown instead.
    pub fn result(&self) -> Result<&ToolResult, &CallError> {
        self.inner.result.as_ref()
    }

    fn ok(&self) -> &ToolResult {
        match &self.inner.result {
            Ok(result) => result,
            Err(e) => panic!("the call failed: {} error: {e}", e.code()),
        }
    }

    /// The text of every text part, concatenated.
    pub fn text(&self) -> String {
        self.ok()
            .content
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The first JSON part's document.
    pub fn json(&self) -> Value {
        self.ok()
            .content
            .iter()
            .find_map(|part| match part {
                ContentPart::Json { data, .. } => Some(data.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("the result has no JSON part: {:?}", self.ok()))
    }

    /// Whether the result is marked as an error the model should see.
    pub fn is_error(&self) -> bool {
        self.ok().is_error
    }

    /// The error's code (`invalid_arguments`, `denied`, `failed`,
    /// `timeout`...) when the call produced no result.
    pub fn error_code(&self) -> Option<&'static str> {
        self.inner.result.as_ref().err().map(CallError::code)
    }

    /// The error's message when the call produced no result.
    pub fn error_message(&self) -> Option<String> {
        self.inner.result.as_ref().err().map(ToString::to_string)
    }

    /// Exactly what the model is shown: the result or error as untrusted
    /// data, inside delimiters it cannot forge.
    pub fn rendered(&self) -> &str {
        self.inner.render()
    }
}
