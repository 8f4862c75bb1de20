//! Servers whose launcher fetches their package at every start (`npx -y
//! PKG`, `uvx PKG`) run from the config's store instead, as `mcp install`
//! installed them, and only as the lock records their code.
//!
//! Invariants:
//! - Such a server starts from its install, or not at all (unless its
//!   plugin runs programs unconfined, where the launcher runs as written):
//!   never through a package manager, never from the network.
//! - The install must be the code the lock records (package, version,
//!   integrity, every dependency); under `--locked` every installed file
//!   is checked too. An install the lock does not know yet is recorded
//!   (trust on first use), except under `--locked`.
//! - Each refusal is one line naming the server and what to run.

use std::ffi::OsStr;

use crate::grant::Grants;
use crate::mcp::declaration::{Declaration, Transport};
use crate::mcp::launch::{Launch, Target};
use crate::mcp::launcher;

use super::HostBuilder;

impl HostBuilder {
    /// `launch` of `declaration` of plugin `plugin`, run from the store
    /// when its launcher fetches its package at every start.
    pub(super) fn through_store(
        &self,
        plugin: &str,
        declaration: &Declaration,
        grants: &Grants,
        mut launch: Launch,
    ) -> Result<Launch, String> {
        let Transport::Stdio(stdio) = &declaration.transport else {
            return Ok(launch);
        };
        if !launcher::may_fetch(&stdio.command) {
            return Ok(launch);
        }
        let path = std::env::var_os("PATH");
        let plan = launcher::plan(
            &stdio.command,
            &stdio.args,
            path.as_deref(),
            std::path::Path::new("/"),
        );
        let Some((_, server_args)) = plan.fetch() else {
            return Ok(launch);
        };
        let server = &declaration.name;
        let Some(store) = &self.state.store else {
            return unconfined_or(grants, launch, &plan, server);
        };
        let installed = store.installed(plugin, server)?;
        let locked = self.with_lock(|l| l.locked).unwrap_or(false);
        let recorded = self.with_lock(|l| l.code(plugin, server)).flatten();
        if let Some((fetch, _)) = plan.fetch()
            && let Some(recorded) = &recorded
            && let Some(conflict) = fetch.conflict(recorded, server)
        {
            return Err(conflict);
        }
        let installed = match (installed, recorded) {
            (Some(installed), Some(recorded)) => {
                if installed.manifest.code != recorded {
                    let differences = recorded.differences(&installed.manifest.code);
                    return Err(format!(
                        "its installed code is not the code the lock records ({}): run tiny-harness \
                         mcp install {server} to install what the lock records, or tiny-harness mcp \
                         install --upgrade {server} to record what is installed",
                        differences.join("; ")
                    ));
                }
                installed
            }
            (Some(installed), None) => {
                self.with_lock(|l| l.set_code(plugin, server, installed.manifest.code.clone()))
                    .transpose()
                    .map_err(|e| {
                        format!("{e}: run tiny-harness mcp install {server} without --locked")
                    })?;
                installed
            }
            (None, Some(recorded)) => {
                return Err(format!(
                    "it is not installed: run tiny-harness mcp install {server} (it installs {}, \
                     as the lock records)",
                    recorded.describe()
                ));
            }
            (None, None) => return unconfined_or(grants, launch, &plan, server),
        };
        if locked {
            store.verify(&installed, server)?;
        }
        let Target::Process(process) = &mut launch.target else {
            return Ok(launch);
        };
        let (program, mut args) = installed.command(path.as_deref())?;
        args.extend(server_args.iter().cloned());
        process.program = program;
        process.args = args;
        if let Some(policy) = &mut process.policy {
            policy.read.extend(installed.read(path.as_deref()));
        }
        Ok(launch)
    }
}

/// A fetching launcher with nothing installed: as written when its plugin
/// runs programs unconfined, else refused with what to run.
fn unconfined_or(
    grants: &Grants,
    launch: Launch,
    plan: &launcher::Plan,
    server: &str,
) -> Result<Launch, String> {
    if grants.confinement == crate::confine::Mode::None {
        return Ok(launch);
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
