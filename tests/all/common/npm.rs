//! npm's server-everything for the tests, installed into `tests/mcp` by
//! `.ci/run`, or here on first use with `npm ci`. Self-contained, so that
//! the CLI tests include it too (`#[path]`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `tests/mcp`, where the npm servers are installed.
pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("mcp")
}

/// server-everything's entry point, installing it first if it is missing.
pub fn everything_js() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let dir = servers_dir();
            let js = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
            if !js.is_file() {
                // Several test binaries may get here at once: take a lock.
                let lock = std::fs::File::create(dir.join(".install.lock")).expect("lock file");
                lock.lock().expect("lock");
                if !js.is_file() {
                    let status = Command::new("npm")
                        .args(["ci", "--no-audit", "--no-fund"])
                        .current_dir(&dir)
                        .status()
                        .expect("npm (Node.js) must be installed to run the MCP tests");
                    assert!(status.success(), "npm ci in {} failed", dir.display());
                }
            }
            assert!(js.is_file(), "{} is missing after npm ci", js.display());
            js
        })
        .clone()
}
