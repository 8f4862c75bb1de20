//! What a launcher that fetches its package at every start (`npx -y PKG`,
//! `uvx PKG`) would fetch: what `mcp install` installs instead.

use tiny_harness_core::pin::Code;

/// What to install: a package fetched by a launcher at every start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetch {
    /// An npm package (`npx -y PKG`): `package` as written (a name with an
    /// optional `@version`), `command` the program of it to run.
    Npm {
        /// The package spec.
        package: String,
        /// The program (one of its `bin`s) to run.
        command: String,
    },
    /// A PyPI package (`uvx PKG`): `command` the console script to run.
    PyPi {
        /// The requirement (`mcp-server-time`, `mcp-server-time==1.0`).
        package: String,
        /// The console script to run.
        command: String,
    },
}

impl Fetch {
    /// What it installs, for people: `npm @scope/pkg@1.0`, `PyPI
    /// mcp-server-time`.
    pub fn describe(&self) -> String {
        match self {
            Fetch::Npm { package, .. } => {
                format!("npm {}", tiny_harness_core::display::one_line(package))
            }
            Fetch::PyPi { package, .. } => {
                format!("PyPI {}", tiny_harness_core::display::one_line(package))
            }
        }
    }

    /// The exact version the spec asks for (`pkg@1.2.3`, `pkg==1.2.3`), if
    /// it asks for one.
    pub fn exact_version(&self) -> Option<&str> {
        let version = match self {
            Fetch::Npm { package, .. } => {
                let at = package.rfind('@').filter(|at| *at > 0)?;
                &package[at + 1..]
            }
            Fetch::PyPi { package, .. } => package
                .split_once("==")
                .map(|(_, v)| v)
                .or_else(|| package.split_once('@').map(|(_, v)| v))?,
        };
        let version = version.trim();
        let exact = !version.is_empty()
            && version.starts_with(|c: char| c.is_ascii_digit())
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
        exact.then_some(version)
    }

    /// Why the code `recorded` is not what this spec asks for, if it is
    /// not (only an exact version can disagree).
    pub fn conflict(&self, recorded: &Code, server: &str) -> Option<String> {
        let wanted = self.exact_version()?;
        (wanted != recorded.version).then(|| {
            format!(
                "the config asks for version {wanted}, the lock records {}: run tiny-harness mcp \
                 install --upgrade {server} to install {wanted} and record it",
                recorded.version
            )
        })
    }
}
