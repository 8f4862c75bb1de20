//! The `grants` table of a plugin: directories, environment variables,
//! programs and network destinations, each checked on its own.
//!
//! Invariant: this module only reads the table and places errors; every
//! rule is the grant types' own (see [`crate::grant`]), so a config
//! refuses exactly what an embedder's `PluginSpec` is refused, in the same
//! words after the file, line and key.

use std::ffi::OsStr;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::grant::{
    ArgPatterns, EnvNames, ExecGrant, GrantError, NetGrant, ResolveError, UnusableProgram,
};
use crate::plugin::{DirGrant, DirMode, Grants};

use super::{Checker, ConfigError};

#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of grants: dirs, env, exec and net"
)]
pub(super) struct RawGrants {
    #[serde(default)]
    pub(super) dirs: Vec<RawDir>,
    #[serde(default)]
    pub(super) env: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) exec: Vec<Spanned<ExecEntry>>,
    #[serde(default)]
    pub(super) net: Vec<Spanned<String>>,
}

/// One `exec` entry as written: a program's name or path alone (`"wc"`),
/// or a table (`{ program = "wc", args = [...] }`).
pub(super) enum ExecEntry {
    Program(String),
    Table(RawExec),
}

impl<'de> Deserialize<'de> for ExecEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = ExecEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a program (\"wc\") or a table such as { program = \"wc\", args = [\"-l\"] }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, program: &str) -> Result<ExecEntry, E> {
                Ok(ExecEntry::Program(program.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ExecEntry, A::Error> {
                RawExec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ExecEntry::Table)
            }
        }
        deserializer.deserialize_any(Entry)
    }
}

/// An `exec` entry as a table: the short form is a table with only
/// `program`, spanning the whole entry.
pub(super) fn exec_of(entry: Spanned<ExecEntry>) -> RawExec {
    let span = entry.span();
    match entry.into_inner() {
        ExecEntry::Table(table) => table,
        ExecEntry::Program(program) => RawExec {
            program: Spanned::new(span, program),
            read: Vec::new(),
            args: None,
            env: None,
            sockets: Vec::new(),
        },
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { program = \"wc\", args = [\"-l\"] }"
)]
pub(super) struct RawExec {
    pub(super) program: Spanned<String>,
    #[serde(default)]
    pub(super) read: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) args: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(super) env: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(super) sockets: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { host = \".\", guest = \"/workspace\", mode = \"read-only\" }"
)]
pub(super) struct RawDir {
    pub(super) host: Spanned<String>,
    pub(super) guest: Spanned<String>,
    #[serde(default)]
    pub(super) mode: RawMode,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(
    rename_all = "kebab-case",
    expecting = "\"read-only\" or \"read-write\""
)]
pub(super) enum RawMode {
    #[default]
    ReadOnly,
    ReadWrite,
}

impl Checker<'_> {
    /// The grants of the plugin whose `grants` table is at `key`, with
    /// relative paths taken from `base`, the config's directory.
    pub(super) fn grants(
        &self,
        base: &Path,
        key: &str,
        raw: RawGrants,
    ) -> Result<Grants, ConfigError> {
        let mut grants = Grants::default();
        for dir in &raw.dirs {
            self.dir(&mut grants, base, key, dir)?;
        }
        for name in &raw.env {
            grants
                .add_env(name.get_ref())
                .map_err(|e| self.at(name, format!("{key}.env: {e}")))?;
        }
        let path = std::env::var_os("PATH");
        for exec in raw.exec {
            self.exec(&mut grants, base, key, &exec_of(exec), path.as_deref())?;
        }
        for net in &raw.net {
            NetGrant::parse(net.get_ref())
                .and_then(|grant| grants.add_net(grant).map(drop))
                .map_err(|e| self.at(net, format!("{key}.net: {e}")))?;
        }
        Ok(grants)
    }

    /// Adds one `dirs` entry: the error at its `host` or its `guest`,
    /// whichever is wrong.
    fn dir(
        &self,
        grants: &mut Grants,
        base: &Path,
        key: &str,
        dir: &RawDir,
    ) -> Result<(), ConfigError> {
        let mode = match dir.mode {
            RawMode::ReadOnly => DirMode::ReadOnly,
            RawMode::ReadWrite => DirMode::ReadWrite,
        };
        DirGrant::new(base.join(dir.host.get_ref()), dir.guest.get_ref(), mode)
            .and_then(|grant| grants.add_dir(grant).map(drop))
            .map_err(|e| match e {
                GrantError::NotADirectory { .. } | GrantError::Unresolvable { .. } => {
                    self.at(&dir.host, format!("{key}.dirs.host: {e}"))
                }
                _ => self.at(&dir.guest, format!("{key}.dirs.guest: {e}")),
            })
    }

    /// Adds one `exec` entry: a program resolved on `path` (a `PATH`
    /// value), or, if it is not on this machine, kept as unusable with
    /// why, so that only what needs it fails.
    fn exec(
        &self,
        grants: &mut Grants,
        base: &Path,
        key: &str,
        raw: &RawExec,
        path: Option<&OsStr>,
    ) -> Result<(), ConfigError> {
        let (args, env) = self.exec_limits(key, raw)?;
        let written = raw.program.get_ref();
        let twice = |e: GrantError| self.at(&raw.program, format!("{key}.exec: {e}"));
        match ExecGrant::resolve(written, base, path) {
            Ok(program) => {
                let mut program = self.exec_paths(program, base, key, raw)?;
                if let Some(patterns) = args {
                    program = program.with_args(patterns);
                }
                if let Some(names) = env {
                    program = program.with_env(names);
                }
                grants.add_exec(program).map_err(twice)?;
            }
            Err(ResolveError::Missing(why)) => {
                let reason = self
                    .at(&raw.program, format!("{key}.exec: {why}"))
                    .to_string();
                let mut missing = UnusableProgram::new(written, base, reason);
                if let Some(patterns) = args {
                    missing = missing.with_args(patterns);
                }
                if let Some(names) = env {
                    missing = missing.with_env(names);
                }
                grants.add_unusable(missing).map_err(twice)?;
            }
            Err(e) => return Err(self.at(&raw.program, format!("{key}.exec: {e}"))),
        }
        Ok(())
    }

    /// An `exec` entry's `args` patterns and `env` names, if it has them.
    fn exec_limits(
        &self,
        key: &str,
        raw: &RawExec,
    ) -> Result<(Option<ArgPatterns>, Option<EnvNames>), ConfigError> {
        let args = raw
            .args
            .as_ref()
            .map(|args| {
                ArgPatterns::new(args.get_ref())
                    .map_err(|e| self.at(args, format!("{key}.exec.args: {e}")))
            })
            .transpose()?;
        let env = raw
            .env
            .as_ref()
            .map(|names| {
                EnvNames::new(names.get_ref())
                    .map_err(|e| self.at(names, format!("{key}.exec.env: {e}")))
            })
            .transpose()?;
        Ok((args, env))
    }

    /// `program` with an `exec` entry's `read` paths and `sockets`, each
    /// taken from `base` and resolved now.
    fn exec_paths(
        &self,
        mut program: ExecGrant,
        base: &Path,
        key: &str,
        raw: &RawExec,
    ) -> Result<ExecGrant, ConfigError> {
        for path in &raw.read {
            program = program
                .allow_read(base.join(path.get_ref()))
                .map_err(|e| self.at(path, format!("{key}.exec.read: {e}")))?;
        }
        for path in &raw.sockets {
            program = program
                .allow_socket(base.join(path.get_ref()))
                .map_err(|e| self.at(path, format!("{key}.exec.sockets: {e}")))?;
        }
        Ok(program)
    }
}
