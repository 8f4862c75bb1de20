//! Servers whose launcher fetches their package at every start (`npx -y
//! PKG`, `uvx PKG`) run from the config's store instead, as `mcp install`
//! installed them, and only as the lock records their code.
//!
//! Invariants:
//! - Such a server starts from its install, or not at all (unless its
//!   plugin runs programs unconfined, where the launcher runs as written):
//!   never through a package manager, never from the network.
//! - The install must be the code the lock records (package, version,
//!   integrity, every dependency), and is checked before each start of
//!   the server (what `lstat` says of each entry; under `--locked`, every
//!   installed file). An install the lock does not know yet is recorded
//!   (trust on first use), except under `--locked`.
//! - Each refusal is one line naming the server and what to run.

use std::ffi::OsStr;

use crate::grant::Grants;
use crate::mcp_runtime::declaration::{Declaration, Transport};
use crate::mcp_runtime::launch::{Launch, LaunchError, LaunchRefused, Target};
use crate::mcp_runtime::launcher;
use crate::mcp_runtime::store::{Installed, StartCheck};

use super::HostState;

/// A server that runs from its install: the install, and the server's
/// own arguments (those after the package).
struct FromStore {
    installed: Installed,
    server_args: Vec<String>,
    check: StartCheck,
}

impl HostState {
    /// How the host starts (or reaches) server `declaration` of plugin
    /// `plugin`: checked against `grants` (`timeout` is the plugin's call
    /// timeout), and run from the store when its launcher fetches its
    /// package at every start. Such a launcher need not be on this machine
    /// when its plugin is confined: it would not run anyway (the server
    /// runs from its install or not at all), so its unusable grant stands
    /// for the install's interpreter.
    pub(super) fn launch_of(
        &self,
        plugin: &str,
        declaration: &Declaration,
        grants: &Grants,
        timeout: std::time::Duration,
    ) -> Result<Launch, LaunchRefused> {
        let launch = match Launch::resolve(plugin, declaration, grants, timeout) {
            Ok(launch) => launch,
            Err(LaunchError::Unusable(why)) => {
                let Transport::Stdio(stdio) = &declaration.transport else {
                    return Err(why.into());
                };
                if grants.confinement == crate::confine::Mode::None
                    || !launcher::may_fetch(&stdio.command)
                {
                    return Err(why.into());
                }
                let Some(found) = self.installed_for(plugin, declaration, grants)? else {
                    return Err(why.into());
                };
                let path = std::env::var_os("PATH");
                let program = found
                    .installed
                    .interpreter(path.as_deref())
                    .map_err(LaunchRefused::error)?;
                let stand_in = grants
                    .unusable()
                    .iter()
                    .find(|u| u.names(&stdio.command))
                    .ok_or(why)?
                    .stand_in(&program)
                    .map_err(LaunchRefused::error)?;
                let launch =
                    Launch::resolve_standing_in(plugin, declaration, grants, timeout, &stand_in)
                        .map_err(LaunchRefused::error)?;
                return found.apply(launch);
            }
            Err(e) => return Err(LaunchRefused::error(e)),
        };
        match self.installed_for(plugin, declaration, grants)? {
            Some(found) => found.apply(launch),
            None => Ok(launch),
        }
    }

    /// `launch` with its place in the token file, for an HTTP server of a
    /// host that keeps logins (one built with the `oauth` feature, beside
    /// a config file).
    #[cfg(feature = "oauth")]
    pub(super) fn with_login(&self, plugin: &str, mut launch: Launch) -> Launch {
        if let (Some(tokens), Target::Http(endpoint)) = (&self.tokens, &mut launch.target) {
            let key = format!("{plugin}/{}", launch.server);
            endpoint.login = Some(crate::mcp_runtime::oauth::Slot::new(
                tokens.clone(),
                &key,
                &endpoint.url,
            ));
        }
        launch
    }

    /// `launch` as it is: a host built without the `oauth` feature keeps
    /// no logins.
    #[cfg(not(feature = "oauth"))]
    pub(super) fn with_login(&self, _plugin: &str, launch: Launch) -> Launch {
        launch
    }

    /// The install `declaration` runs from, when its launcher fetches its
    /// package at every start; `None` when it runs as declared (another
    /// launcher, or an unconfined plugin with nothing installed). An error
    /// is one line saying what to run.
    fn installed_for(
        &self,
        plugin: &str,
        declaration: &Declaration,
        grants: &Grants,
    ) -> Result<Option<FromStore>, LaunchRefused> {
        let Transport::Stdio(stdio) = &declaration.transport else {
            return Ok(None);
        };
        if !launcher::may_fetch(&stdio.command) {
            return Ok(None);
        }
        let path = std::env::var_os("PATH");
        let plan = launcher::plan(
            &stdio.command,
            &stdio.args,
            path.as_deref(),
            std::path::Path::new("/"),
        );
        let Some((_, server_args)) = plan.fetch() else {
            return Ok(None);
        };
        let server_args = server_args.to_vec();
        let server = &declaration.name;
        let Some(store) = &self.store else {
            return Ok(unconfined_or(grants, &plan, server)?);
        };
        let installed = store
            .installed(plugin, server)
            .map_err(LaunchRefused::error)?;
        let locked = self.with_lock(|l| l.locked).unwrap_or(false);
        let recorded = self.with_lock(|l| l.code(plugin, server)).flatten();
        if let Some((fetch, _)) = plan.fetch()
            && let Some(recorded) = &recorded
            && let Some(conflict) = fetch.conflict(recorded, server)
        {
            return Err(conflict.into());
        }
        let installed = match (installed, recorded) {
            (Some(installed), Some(recorded)) => {
                if !recorded.admits(&installed.manifest.code) {
                    let differences = recorded.differences(&installed.manifest.code);
                    return Err(format!(
                        "its installed code is not the code the lock records ({}): run tiny-harness \
                         mcp install {server} to install what the lock records, or tiny-harness mcp \
                         install --upgrade {server} to record what is installed",
                        differences.join("; ")
                    )
                    .into());
                }
                if recorded.tree.is_none() {
                    // A lock written before trees were kept: the install's
                    // tree is recorded now (trust on first use); --locked,
                    // which holds the files to the lock, cannot hold them
                    // to nothing.
                    let tree_needed = || {
                        format!(
                            "the lock records no tree of the installed files of {server} (an \
                             earlier version wrote it), so --locked cannot check them: run \
                             tiny-harness mcp install {server} without --locked to record it"
                        )
                    };
                    if locked {
                        return Err(tree_needed().into());
                    }
                    if installed.manifest.code.tree.is_some() {
                        self.with_lock(|l| {
                            l.set_code(plugin, server, installed.manifest.code.clone())
                        })
                        .transpose()
                        .map_err(|e| LaunchRefused::Caused {
                            reason: tree_needed(),
                            source: Box::new(e),
                        })?;
                    }
                }
                installed
            }
            (Some(installed), None) => {
                self.with_lock(|l| l.set_code(plugin, server, installed.manifest.code.clone()))
                    .transpose()
                    .map_err(|e| LaunchRefused::Caused {
                        reason: format!(
                            "{e}: run tiny-harness mcp install {server} without --locked"
                        ),
                        source: Box::new(e),
                    })?;
                installed
            }
            (None, Some(recorded)) => {
                return Err(format!(
                    "it is not installed: run tiny-harness mcp install {server} (it installs {}, \
                     as the lock records)",
                    recorded.describe()
                )
                .into());
            }
            (None, None) => return Ok(unconfined_or(grants, &plan, server)?),
        };
        // Every start: cheaply, what each entry's status says; under
        // --locked, every byte.
        let check = StartCheck::new(store.clone(), installed.clone(), server, locked);
        Ok(Some(FromStore {
            installed,
            server_args,
            check,
        }))
    }
}

impl FromStore {
    /// `launch` run from the install: its interpreter and entry, then the
    /// server's own arguments, with the install readable.
    fn apply(self, mut launch: Launch) -> Result<Launch, LaunchRefused> {
        let Target::Process(process) = &mut launch.target else {
            return Ok(launch);
        };
        let path = std::env::var_os("PATH");
        let (program, mut args) = self
            .installed
            .command(path.as_deref(), self.check.full())
            .map_err(LaunchRefused::error)?;
        launch.store_check = Some(self.check);
        args.extend(self.server_args);
        process.program = program;
        process.args = args;
        if let Some(policy) = &mut process.policy {
            policy.read.extend(self.installed.read(path.as_deref()));
        }
        Ok(launch)
    }
}

/// A fetching launcher with nothing installed: as written when its plugin
/// runs programs unconfined, else refused with what to run.
fn unconfined_or(
    grants: &Grants,
    plan: &launcher::Plan,
    server: &str,
) -> Result<Option<FromStore>, String> {
    if grants.confinement == crate::confine::Mode::None {
        return Ok(None);
    }
    let what = plan
        .notes
        .first()
        .and_then(|n| {
            n.split_once(": install it once")
                .map(|(why, _)| why.to_owned())
        })
        .unwrap_or_else(|| {
            format!(
                "{} fetches its package at every start",
                OsStr::new(&plan.program).to_string_lossy()
            )
        });
    Err(format!(
        "{what}: run tiny-harness mcp install {server} to install it once, pinned in the lock"
    ))
}
