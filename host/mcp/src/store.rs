//! The store of installed MCP servers: `tiny-harness mcp install` fetches
//! an npm or PyPI server's package with its dependencies once, into
//! `NAME.store/<plugin>/<server>/` beside the config `NAME.toml`, and the
//! server then starts from there, confined, offline, with no package
//! manager in its path.
//!
//! Invariants:
//! - An install is whole or absent: it is built in a fresh directory
//!   beside its place and renamed into it only once complete, so a failed
//!   or interrupted install leaves the previous one working and nothing
//!   half-installed where a server would start from.
//! - Every install holds a manifest (`install.json`): the [`Code`] the
//!   lock records (package, version, integrity, dependencies, entry) and a
//!   hash over every installed file ([`tree_hash`]), so that a tampered
//!   file is found ([`Store::verify`]).
//! - The package manager runs confined (see `npm`, `pypi`): it writes
//!   only the new install (its cache inside it), reads the system, its own
//!   installation and the user's config for it, and connects only to the
//!   registry's ports; each of its steps runs within the install's time
//!   and room (`step`).

mod error;
mod index;
mod npm;
mod pypi;
mod room;
mod step;
mod tree;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use super::fetch::Fetch;
pub use error::StoreError;
use step::{Budget, Step, base_env, home, present, run, shown_registry};
pub use step::{
    DEFAULT_INSTALL_SIZE, DEFAULT_INSTALL_TIMEOUT, InstallLimits, MAX_INSTALL_SIZE,
    MAX_INSTALL_TIMEOUT, find,
};
pub use tree::{
    MAX_TREE_FILES, STAT_FILE, npm_tree_hash, pypi_tree_hash, stat_changed, stat_record, tree_hash,
};

/// The tree the lock pins of an install of `kind` at `root`: its files as
/// any machine that installs the same code gets them, wherever it is
/// ([`npm_tree_hash`], [`pypi_tree_hash`]).
pub fn pinned_tree(root: &Path, kind: &str) -> std::io::Result<String> {
    match kind {
        "npm" => npm_tree_hash(root),
        _ => pypi_tree_hash(root),
    }
}

use tiny_harness_core::pin::Code;

/// The manifest's file name inside an install.
pub const MANIFEST: &str = "install.json";

/// Where a `--locked` start of a PyPI server looks for bytecode: a path
/// that cannot exist, so that Python compiles every module from its
/// pinned source and loads nothing from the install's `__pycache__`.
const NO_BYTECODE: &str = "/dev/null/tiny-harness-locked";

/// The largest manifest read (it lists every dependency).
const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// An install's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// What the lock records of it.
    pub code: Code,
    /// [`tree_hash`] of the install, manifest aside.
    pub tree: String,
}

/// A complete install.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl Installed {
    /// The interpreter that runs it: `node` on `path` for npm, the venv's
    /// Python for PyPI.
    pub fn interpreter(&self, path: Option<&std::ffi::OsStr>) -> Result<PathBuf, StoreError> {
        match self.manifest.code.kind.as_str() {
            "npm" => find("node", path).ok_or_else(|| {
                StoreError::Runtime(
                    "node is not on PATH: an npm server runs with node (install Node.js)"
                        .to_owned(),
                )
            }),
            _ => Ok(self.dir.join("venv/bin/python")),
        }
    }

    /// The program and leading arguments that run its entry: `node ENTRY`
    /// for npm; for PyPI the venv's interpreter running the console
    /// script's entry point (see `pypi::entry_program`), and with
    /// `locked` loading none of the bytecode in the install (it is no
    /// part of what the lock pins: Python compiles the pinned sources).
    pub fn command(
        &self,
        path: Option<&std::ffi::OsStr>,
        locked: bool,
    ) -> Result<(PathBuf, Vec<String>), StoreError> {
        let interpreter = self.interpreter(path)?;
        let entry = self.dir.join(&self.manifest.code.entry);
        match self.manifest.code.kind.as_str() {
            "npm" => Ok((interpreter, vec![entry.display().to_string()])),
            _ => {
                let mut args = Vec::new();
                if locked {
                    args.extend(["-X".to_owned(), format!("pycache_prefix={NO_BYTECODE}")]);
                }
                match pypi::entry_program(&self.dir, &self.manifest.code) {
                    Ok(program) => args.extend(["-c".to_owned(), program]),
                    // A package whose program is a plain script (setup.py's
                    // `scripts`), not an entry point: that script runs, held
                    // to the install's own record.
                    Err(_) if entry.is_file() => args.push(entry.display().to_string()),
                    Err(why) => return Err(StoreError::Runtime(why)),
                }
                Ok((interpreter, args))
            }
        }
    }

    /// What the program reads besides the system: the install, and (for a
    /// venv) its base interpreter's prefix.
    pub fn read(&self, path: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
        let Ok(program) = self.interpreter(path) else {
            return vec![self.dir.clone()];
        };
        let plan = super::launcher::plan(&program.display().to_string(), &[], path, &self.dir);
        let mut read = vec![self.dir.clone()];
        // The interpreter itself (node from nvm lives outside the system).
        if let Ok(real) = program.canonicalize()
            && !real.starts_with(&self.dir)
        {
            read.push(real);
        }
        read.extend(plan.read.into_iter().filter(|r| !r.starts_with(&self.dir)));
        read
    }
}

/// What a server run from its install checks before each start of its
/// program: the cheap check ([`Store::check`]), or under `--locked` every
/// byte ([`Store::verify`]). Made when the host loads, run when the
/// server starts (so a host whose server is never called pays nothing,
/// and a store changed while the host runs is found at the next start).
#[derive(Debug, Clone)]
pub struct StartCheck {
    store: Store,
    installed: Installed,
    server: String,
    full: bool,
}

impl StartCheck {
    /// The check of `installed`, the install of `server` in `store`;
    /// `full` under `--locked`.
    pub fn new(store: Store, installed: Installed, server: &str, full: bool) -> StartCheck {
        StartCheck {
            store,
            installed,
            server: server.to_owned(),
            full,
        }
    }

    /// Whether it checks every byte (`--locked`).
    pub fn full(&self) -> bool {
        self.full
    }

    /// Runs it: one line saying what changed and what to run.
    pub fn run(&self) -> Result<(), StoreError> {
        if self.full {
            self.store.verify(&self.installed, &self.server)
        } else {
            self.store.check(&self.installed, &self.server)
        }
    }
}

/// The largest [`STAT_FILE`] read: a line of about 100 bytes for each of
/// at most [`MAX_TREE_FILES`] entries.
const MAX_RECORD_BYTES: u64 = (MAX_TREE_FILES as u64) * 256;

/// The store beside one config.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store of the config at `config_path`: `NAME.store` beside
    /// `NAME.toml`.
    pub fn beside(config_path: &Path) -> Store {
        let lock = tiny_harness_core::pin::lock_path(config_path);
        let root = lock.with_extension("store");
        // Absolute: a server runs in a directory of its own.
        let root = if root.is_absolute() {
            root
        } else {
            std::env::current_dir().map_or(root.clone(), |cwd| cwd.join(&root))
        };
        Store { root }
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `plugin/server` is installed.
    pub fn dir(&self, plugin: &str, server: &str) -> PathBuf {
        self.root.join(plugin).join(server)
    }

    /// A lock on the installs of `plugin`'s servers (on its directory in
    /// the store, made if missing: no lock file is left), waiting up to
    /// `wait` for another process's install: one install into a plugin's
    /// store at a time.
    pub fn install_lock(
        &self,
        plugin: &str,
        wait: std::time::Duration,
    ) -> Result<tiny_harness_core::file::edit::EditLock, tiny_harness_core::file::edit::EditLockError>
    {
        let dir = self.root.join(plugin);
        // An error shows when the directory is opened.
        let _ = std::fs::create_dir_all(&dir);
        tiny_harness_core::file::edit::EditLock::take_directory_within(&dir, wait)
    }

    /// The install of `plugin/server`, if there is one. A directory there
    /// without a readable manifest is an error, not an absence.
    pub fn installed(&self, plugin: &str, server: &str) -> Result<Option<Installed>, StoreError> {
        let dir = self.dir(plugin, server);
        if !dir.exists() {
            return Ok(None);
        }
        let bytes = tiny_harness_core::file::read_regular(
            &dir.join(MANIFEST),
            "install manifest",
            MAX_MANIFEST_BYTES,
        )
        .map_err(|e| StoreError::NoManifest {
            server: server.to_owned(),
            dir: dir.clone(),
            why: e.reason.to_string(),
        })?;
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|source| StoreError::DamagedManifest {
                server: server.to_owned(),
                dir: dir.clone(),
                source,
            })?;
        if let Some(problem) = manifest.code.problem() {
            return Err(StoreError::UnusableManifest {
                server: server.to_owned(),
                dir,
                problem,
            });
        }
        Ok(Some(Installed { dir, manifest }))
    }

    /// Checks cheaply that the install is as it was put in place: the
    /// status of every entry the install recorded ([`stat_record`], in
    /// [`STAT_FILE`]: all but the files no runtime loads) against the
    /// record, reading no file and no directory. An install without that record (made before it was
    /// kept) is checked in full once ([`Store::verify`]) and the record
    /// is added then.
    pub fn check(&self, installed: &Installed, server: &str) -> Result<(), StoreError> {
        let path = installed.dir.join(STAT_FILE);
        let record = match tiny_harness_core::file::read_regular(
            &path,
            "install record",
            MAX_RECORD_BYTES,
        ) {
            Ok(bytes) => String::from_utf8(bytes).ok(),
            Err(_) => None,
        };
        let Some(record) = record else {
            self.verify(installed, server)?;
            // Best effort: the full check passed, and a store that cannot
            // be written is checked in full again next time.
            if let Ok(Some(now)) = stat_record(&installed.dir) {
                let _ = tiny_harness_core::file::replace(&path, now.as_bytes());
            }
            return Ok(());
        };
        if let Some(what) = stat_changed(&installed.dir, &record) {
            return Err(StoreError::EntryChanged {
                server: server.to_owned(),
                dir: installed.dir.clone(),
                what,
            });
        }
        Ok(())
    }

    /// Checks that every installed file is as the install left it: for
    /// an npm install, as the tree its code records (which the lock pins:
    /// the host admits no install whose code the lock does not), else as
    /// its manifest records.
    pub fn verify(&self, installed: &Installed, server: &str) -> Result<(), StoreError> {
        let pypi = installed.manifest.code.kind == "pypi";
        let dir = || installed.dir.clone();
        let unreadable = |source| StoreError::Unreadable {
            server: server.to_owned(),
            dir: dir(),
            source,
        };
        if pypi {
            pypi::interpreter(&installed.dir).map_err(|why| StoreError::Venv {
                server: server.to_owned(),
                dir: dir(),
                why,
            })?;
        }
        if let Some(pinned) = &installed.manifest.code.tree {
            let now =
                pinned_tree(&installed.dir, &installed.manifest.code.kind).map_err(unreadable)?;
            if now != *pinned {
                return Err(StoreError::NotAsPinned {
                    server: server.to_owned(),
                    dir: dir(),
                    now,
                    pinned: pinned.clone(),
                });
            }
            // The rest of a venv (its scripts, its configuration) names the
            // place it is in, so the lock cannot pin it: held to the
            // install's own record, and its interpreter checked above.
            if !pypi {
                return Ok(());
            }
        }
        let now = tree_hash(&installed.dir).map_err(unreadable)?;
        if now != installed.manifest.tree {
            return Err(StoreError::NotAsInstalled {
                server: server.to_owned(),
                dir: dir(),
                now,
                installed: installed.manifest.tree.clone(),
            });
        }
        Ok(())
    }

    /// Installs `fetch` as `plugin/server`, replacing a previous install
    /// only once the new one is complete (and, with `expect`, only when it
    /// is exactly that code). `confined` runs the package manager under
    /// the kernel's confinement (the plugin's `confinement`).
    pub async fn install(
        &self,
        plugin: &str,
        server: &str,
        fetch: &Fetch,
        confined: bool,
        expect: Option<&Code>,
        limits: InstallLimits,
    ) -> Result<Installed, StoreError> {
        let parent = self.root.join(plugin);
        std::fs::create_dir_all(&parent).map_err(|source| StoreError::Io {
            what: format!("cannot make the store {}", parent.display()),
            source,
        })?;
        let staging = Staging::new(&parent, server)?;
        let budget = Budget::new(limits, staging.path());
        let code = match fetch {
            Fetch::Npm { package, command } => {
                npm::install(staging.path(), package, command, confined, &budget).await?
            }
            Fetch::PyPi { package, command } => {
                pypi::install(staging.path(), package, command, confined, &budget).await?
            }
        };
        // The package manager's cache and temporary files are not part of
        // what runs.
        let work = staging.path().join(room::WORK);
        if work.exists() {
            std::fs::remove_dir_all(&work).map_err(|source| StoreError::Io {
                what: format!("cannot remove {}", work.display()),
                source,
            })?;
        }
        let mut code = code;
        let read = |source| StoreError::Io {
            what: "cannot read what was installed".to_owned(),
            source,
        };
        code.tree = Some(pinned_tree(staging.path(), &code.kind).map_err(read)?);
        if let Some(expected) = expect
            && !expected.admits(&code)
        {
            return Err(StoreError::OtherCode {
                server: server.to_owned(),
                differences: expected.differences(&code),
            });
        }
        let tree = tree_hash(staging.path()).map_err(read)?;
        // Renaming the install into place changes no entry's status below
        // it, so this holds for it in place.
        let record = tree::stat_record(staging.path()).map_err(read)?;
        if let Some(record) = record {
            std::fs::write(staging.path().join(STAT_FILE), record).map_err(|source| {
                StoreError::Io {
                    what: "cannot write the install's record".to_owned(),
                    source,
                }
            })?;
        }
        let manifest = Manifest { code, tree };
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
        std::fs::write(staging.path().join(MANIFEST), text + "\n").map_err(|source| {
            StoreError::Io {
                what: "cannot write the install's manifest".to_owned(),
                source,
            }
        })?;
        let dir = self.dir(plugin, server);
        staging.replace(&dir)?;
        Ok(Installed { dir, manifest })
    }
}

/// A new install being built beside its place; removed unless it is
/// renamed into place.
struct Staging {
    path: Option<PathBuf>,
}

impl Staging {
    fn new(parent: &Path, server: &str) -> Result<Staging, StoreError> {
        let mut nonce = [0u8; 6];
        getrandom::fill(&mut nonce).map_err(|e| e.to_string())?;
        let path = parent.join(format!(".{server}.installing-{}", hex::encode(nonce)));
        std::fs::create_dir(&path).map_err(|source| StoreError::Io {
            what: format!("cannot make {}", path.display()),
            source,
        })?;
        Ok(Staging { path: Some(path) })
    }

    fn path(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(""))
    }

    /// Puts the install at `dir`: the old one (if any) is moved aside
    /// first and removed after, so `dir` is always whole.
    fn replace(mut self, dir: &Path) -> Result<(), StoreError> {
        let path = self.path.take().unwrap_or_default();
        let old = path.with_extension("old");
        let had = dir.exists();
        if had {
            std::fs::rename(dir, &old).map_err(|source| StoreError::Io {
                what: "cannot move the previous install aside".to_owned(),
                source,
            })?;
        }
        if let Err(e) = std::fs::rename(&path, dir) {
            if had {
                let _ = std::fs::rename(&old, dir);
            }
            let _ = std::fs::remove_dir_all(&path);
            return Err(StoreError::Io {
                what: "cannot put the install in place".to_owned(),
                source: e,
            });
        }
        if had {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

#[cfg(test)]
mod tests;
