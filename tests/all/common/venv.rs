//! The venv of the Python MCP servers, `tests/mcp/.venv`, made from
//! Debian's interpreter with PyPI's `mcp`: installed by `.ci/run`, or here
//! on first use from the hash-pinned `tests/mcp/requirements.txt`.
//! The CLI tests include it too (`#[path]`), beside `npm.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// `tests/mcp` (npm's servers share it).
fn servers_dir() -> PathBuf {
    super::npm::servers_dir()
}

/// The version of PyPI's `mcp` the servers are written for.
pub const MCP_VERSION: &str = "2.3.0";

/// Debian's interpreter, which makes the venv (the `python3` first on
/// `PATH` may be a pyenv shim).
const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// `tests/mcp/.venv`.
pub fn venv() -> PathBuf {
    servers_dir().join(".venv")
}

/// The venv's interpreter, creating the venv and installing
/// `requirements.txt` into it first if it does not hold `mcp` at
/// [`MCP_VERSION`].
pub fn python() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let python = venv().join("bin/python");
            // Test threads and test binaries ask at once: one installs.
            tiny_harness_prereq::once(&servers_dir(), "venv", || has_mcp(&python), install);
            python
        })
        .clone()
}

/// Whether `python` runs and imports `mcp` at [`MCP_VERSION`].
fn has_mcp(python: &Path) -> bool {
    python.is_file()
        && Command::new(python)
            .args([
                "-c",
                &format!(
                    "import importlib.metadata as m, mcp; assert m.version('mcp') == '{MCP_VERSION}'"
                ),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Makes (or remakes) the venv and installs the requirements, hashes checked.
fn install() {
    install_into(&venv(), &servers_dir().join("requirements.txt"));
}

/// Makes (or remakes) the venv `venv` from Debian's interpreter and
/// installs `requirements` into it, hashes checked.
pub fn install_into(venv: &Path, requirements: &Path) {
    let status = Command::new(SYSTEM_PYTHON)
        .args(["-m", "venv", "--clear"])
        .arg(venv)
        .status()
        .unwrap_or_else(|e| panic!("{SYSTEM_PYTHON} -m venv: {e}"));
    assert!(
        status.success(),
        "{SYSTEM_PYTHON} -m venv {} failed",
        venv.display()
    );
    let what = format!("pip install -r {}", requirements.display());
    tiny_harness_prereq::retried(&what, || {
        let status = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--require-hashes", "-r"])
            .arg(requirements)
            .status()
            .map_err(|e| format!("the venv's pip cannot run: {e}"))?;
        status
            .success()
            .then_some(())
            .ok_or_else(|| format!("it failed ({status})"))
    });
}
