//! A host built from the config for one command: the options every such
//! command shares, what it is told on stderr before it runs, and the
//! clean shutdown after it.
//!
//! Invariant: a command that loads the config as a host opens exactly one
//! [`Session`] and ends it with [`Session::close`], whatever the command's
//! outcome, so that every MCP server it started is stopped in order.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tiny_harness_core::display::one_line;
use tiny_harness_host::{Config, Host, HostBuilder, Journal};

use super::pins;

/// The global options (`--config`, `--no-cache`, `--journal`,
/// `--journal-full`, `--locked`), as every command may use them.
#[derive(Clone)]
pub(super) struct Globals {
    /// The config file.
    pub(super) config: PathBuf,
    /// Compile afresh, without the compile cache.
    pub(super) no_cache: bool,
    /// Where to journal calls.
    pub(super) journal: Option<PathBuf>,
    /// Journal arguments and rendered results too.
    pub(super) journal_full: bool,
    /// Hold the host to its lock.
    pub(super) locked: bool,
}

/// What a command hears on stderr, before it runs, of the config's
/// troubles.
#[derive(Clone, Copy)]
pub(super) enum Heard<'a> {
    /// Nothing: the command is a report on them (`plugins`, `mcp doctor`,
    /// `mcp login`, `mcp logout`).
    Nothing,
    /// Every MCP server that could not be used (`pins`).
    Failures,
    /// Those, and the tools new, changed or gone since the lock (`tools`,
    /// `replay`).
    FailuresAndDrift,
    /// A call of the tool named: the failure of its own server only (a
    /// call hears nothing of the others), and the drift.
    CallOf(&'a str),
}

/// A host built from the config, with the journal it records to.
pub(super) struct Session {
    /// The host.
    pub(super) host: Host,
    /// The config it was built from.
    pub(super) config: Config,
    /// The journal, when `--journal` names one.
    pub(super) journal: Option<Arc<Journal>>,
}

impl Session {
    /// Loads the config, builds the host (with the intrinsics when
    /// `intrinsics`), says where its pins came from when they moved to a
    /// lock of its own, which tools of a plugin were left out and why
    /// (whatever the command), and what the command is to hear
    /// (`heard`).
    pub(super) async fn open(
        globals: &Globals,
        intrinsics: bool,
        heard: Heard<'_>,
    ) -> anyhow::Result<Session> {
        let config = Config::load(&globals.config)?;
        let mut builder = HostBuilder::new()
            .config(&config)
            .locked(globals.locked)
            .intrinsics(intrinsics);
        if globals.no_cache {
            builder = builder.compile_cache(None);
        }
        let journal = match &globals.journal {
            Some(path) => {
                let journal = Journal::open(path, globals.journal_full).map_err(|e| {
                    anyhow::anyhow!("cannot open the journal {}: {e}", path.display())
                })?;
                let journal = Arc::new(journal);
                builder = builder.recorder(journal.clone());
                Some(journal)
            }
            None => None,
        };
        let host = builder.build().await?;
        note_lock_migration(&host, globals.locked);
        for line in pins::repinned_lines(&host) {
            eprintln!("tiny-harness: {line}");
        }
        for refused in host.refused_tools() {
            eprintln!(
                "tiny-harness: warning: plugin {}: tool {} is not registered: {}",
                one_line(&refused.plugin),
                one_line(&refused.name),
                one_line(&refused.error.to_string())
            );
        }
        tell(&host, heard);
        Ok(Session {
            host,
            config,
            journal,
        })
    }

    /// Closes every MCP session cleanly (stdin closed, a grace period,
    /// then the process group killed) and returns the command's `outcome`.
    pub(super) async fn close(self, outcome: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
        self.host.shutdown().await;
        outcome
    }
}

/// One note when this config's pins were taken from the lock its
/// directory's configs used to share.
fn note_lock_migration(host: &Host, locked: bool) {
    let Some(migration) = host.lock_taken_from() else {
        return;
    };
    let written = if locked {
        "under --locked it is not written; run once without --locked to write it"
    } else {
        "it is written now, and the shared file is left as it is"
    };
    eprintln!(
        "tiny-harness: note: this config's pins now live in a lock of its own, {}; they were \
         taken from {}, which every config in that directory used to share ({written})",
        one_line(&migration.own.display().to_string()),
        one_line(&migration.shared.display().to_string()),
    );
}

/// Tells the command on stderr what `heard` says it is to hear.
fn tell(host: &Host, heard: Heard<'_>) {
    let drift = match heard {
        Heard::Nothing => return,
        Heard::Failures => {
            warn_failed_sources(host, None);
            false
        }
        Heard::FailuresAndDrift => {
            warn_failed_sources(host, None);
            true
        }
        Heard::CallOf(name) => {
            let server = host
                .registry()
                .server_of(name)
                .map(|(plugin, server)| (plugin.to_owned(), server.to_owned()));
            warn_failed_sources(host, Some(server.as_ref()));
            true
        }
    };
    // `pins` shows the differences itself.
    if drift {
        for line in pins::drift_warnings(host) {
            eprintln!("tiny-harness: warning: {line}");
        }
    }
}

/// One warning line per MCP server that could not be used; with `only`,
/// for that one server (`Some(None)`: for none).
fn warn_failed_sources(host: &Host, only: Option<Option<&(String, String)>>) {
    for (plugin, source) in host.mcp_sources() {
        if let Some(only) = only
            && only != Some(&(plugin.clone(), source.server().to_owned()))
        {
            continue;
        }
        if let tiny_harness_mcp::State::Failed(why) = source.status().state {
            eprintln!(
                "tiny-harness: warning: plugin {}: mcp server {}: {}",
                one_line(&plugin),
                one_line(source.server()),
                one_line(&why)
            );
        }
    }
}
