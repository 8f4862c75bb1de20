//! The `grants` table of a plugin: directories, environment variables,
//! programs and network destinations, each checked on its own.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::grant::{ExecGrant, NetGrant, ResolveError, UnusableProgram};
use crate::plugin::{DirGrant, DirMode, Grants};

use super::{Checker, ConfigError};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGrants {
    #[serde(default)]
    pub(super) dirs: Vec<RawDir>,
    #[serde(default)]
    pub(super) env: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) exec: Vec<RawExec>,
    #[serde(default)]
    pub(super) net: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub(super) struct RawDir {
    pub(super) host: Spanned<String>,
    pub(super) guest: Spanned<String>,
    #[serde(default)]
    pub(super) mode: RawMode,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub(super) enum RawMode {
    #[default]
    ReadOnly,
    ReadWrite,
}

impl Checker<'_> {
    pub(super) fn grants(
        &self,
        base: &Path,
        key: &str,
        raw: RawGrants,
    ) -> Result<Grants, ConfigError> {
        let mut dirs = Vec::new();
        let mut guests = BTreeSet::new();
        for dir in raw.dirs {
            let guest = dir.guest.get_ref();
            if !guest.starts_with('/') || guest.split('/').any(|s| s == ".." || s == ".") {
                return Err(self.at(&dir.guest, format!("{key}.dirs.guest: {guest:?} must be an absolute guest path without . or .. (for example \"/workspace\")")));
            }
            if !guests.insert(guest.clone()) {
                return Err(self.at(
                    &dir.guest,
                    format!("{key}.dirs.guest: {guest:?} is granted twice"),
                ));
            }
            let host = base.join(dir.host.get_ref());
            if !host.is_dir() {
                return Err(self.at(
                    &dir.host,
                    format!("{key}.dirs.host: {} is not a directory", host.display()),
                ));
            }
            // The grant is the directory as resolved now (symlinks and `..`
            // followed once, here), shown and opened by its real path.
            let host = host.canonicalize().map_err(|e| {
                self.at(
                    &dir.host,
                    format!("{key}.dirs.host: cannot resolve {}: {e}", host.display()),
                )
            })?;
            dirs.push(DirGrant {
                host,
                guest: guest.clone(),
                mode: match dir.mode {
                    RawMode::ReadOnly => DirMode::ReadOnly,
                    RawMode::ReadWrite => DirMode::ReadWrite,
                },
            });
        }
        let mut env = Vec::new();
        for name in raw.env {
            let n = name.get_ref();
            if n.is_empty() || n.contains('=') || n.contains('\0') {
                return Err(self.at(
                    &name,
                    format!("{key}.env: {n:?} is not an environment variable name"),
                ));
            }
            env.push(n.clone());
        }
        let path = std::env::var_os("PATH");
        let mut exec: Vec<ExecGrant> = Vec::new();
        let mut unusable: Vec<UnusableProgram> = Vec::new();
        for raw in raw.exec {
            let args = raw
                .args
                .as_ref()
                .map(|args| {
                    crate::grant::ArgPatterns::new(args.get_ref())
                        .map_err(|e| self.at(args, format!("{key}.exec.args: {e}")))
                })
                .transpose()?;
            let env_names = raw
                .env
                .as_ref()
                .map(|names| {
                    crate::grant::EnvNames::new(names.get_ref())
                        .map_err(|e| self.at(names, format!("{key}.exec.env: {e}")))
                })
                .transpose()?;
            let written = raw.program.get_ref();
            let program = match ExecGrant::resolve(written, base, path.as_deref()) {
                Ok(program) => program,
                Err(ResolveError::Missing(why)) => {
                    // Not on this machine: only what needs it fails.
                    let reason = self
                        .at(&raw.program, format!("{key}.exec: {why}"))
                        .to_string();
                    let mut missing = UnusableProgram::new(written, base, reason);
                    if let Some(args) = args {
                        missing = missing.with_args(args);
                    }
                    if let Some(names) = env_names {
                        missing = missing.with_env(names);
                    }
                    if unusable.iter().any(|u| u.written() == written) {
                        return Err(self.at(
                            &raw.program,
                            format!(
                                "{key}.exec: program {written:?} is granted twice: grant it once"
                            ),
                        ));
                    }
                    unusable.push(missing);
                    continue;
                }
                Err(e) => return Err(self.at(&raw.program, format!("{key}.exec: {e}"))),
            };
            if let Some(twin) = exec.iter().find(|g| g.canonical() == program.canonical()) {
                return Err(self.at(
                    &raw.program,
                    format!(
                        "{key}.exec: program {:?} is granted twice (as {:?}): grant it once",
                        program.written(),
                        twin.written(),
                    ),
                ));
            }
            let mut read = Vec::new();
            for path in &raw.read {
                let full = base.join(path.get_ref());
                let real = full.canonicalize().map_err(|e| {
                    self.at(
                        path,
                        format!("{key}.exec.read: cannot resolve {}: {e}", full.display()),
                    )
                })?;
                read.push(real);
            }
            let mut program = program.with_read(read);
            if let Some(patterns) = args {
                program = program.with_args(patterns);
            }
            if let Some(names) = env_names {
                program = program.with_env(names);
            }
            let mut sockets = Vec::new();
            for path in &raw.sockets {
                use std::os::unix::fs::FileTypeExt;
                let full = base.join(path.get_ref());
                let real = full
                    .canonicalize()
                    .ok()
                    .filter(|real| {
                        std::fs::metadata(real).is_ok_and(|m| m.file_type().is_socket())
                    })
                    .ok_or_else(|| {
                        self.at(
                            path,
                            format!(
                                "{key}.exec.sockets: {} is not a Unix socket: give the path of one that exists (start its server first)",
                                full.display()
                            ),
                        )
                    })?;
                sockets.push(real);
            }
            program = program.with_sockets(sockets);
            exec.push(program);
        }
        let mut net: Vec<NetGrant> = Vec::new();
        for raw in raw.net {
            let grant = NetGrant::parse(raw.get_ref())
                .map_err(|e| self.at(&raw, format!("{key}.net: {e}")))?;
            if let Some(twin) = net.iter().find(|g| g.same_destination(&grant)) {
                return Err(self.at(
                    &raw,
                    format!(
                        "{key}.net: {:?} is granted twice (as {:?}): grant it once",
                        grant.as_str(),
                        twin.as_str()
                    ),
                ));
            }
            net.push(grant);
        }
        // Non-exhaustive: filled field by field.
        let mut grants = Grants::default();
        grants.dirs = dirs;
        grants.env = env;
        grants.exec = exec;
        grants.unusable = unusable;
        grants.net = net;
        Ok(grants)
    }
}
