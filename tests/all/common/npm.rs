//! npm's server-everything for the tests, and the MCP Inspector (a client
//! the CLI's `serve` tests drive), installed into `tests/mcp` by `.ci/run`,
//! or here on first use with `npm ci`. Self-contained, so that the CLI
//! tests include it too (`#[path]`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `tests/mcp`, where the npm servers are installed.
pub fn servers_dir() -> PathBuf {
    // The checkout's root is the nearest directory above the crate's that
    // holds `wit/` (the tests' crate and the CLI's sit at different depths).
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here
        .ancestors()
        .find(|dir| dir.join("wit").is_dir())
        .unwrap_or(here);
    root.join("tests").join("mcp")
}

/// The entry points of the npm packages in `tests/mcp/package.json`: every
/// one is checked, so that a `node_modules` installed before a package was
/// added is installed again.
const ENTRIES: &[&str] = &[
    "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
];

/// Installs the npm packages with `npm ci` unless every entry point is
/// there already: once, whichever tests and test binaries ask at once.
fn installed() -> &'static Path {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = servers_dir();
        let complete = || ENTRIES.iter().all(|e| dir.join(e).is_file());
        tiny_harness_prereq::npm_ci(&dir, complete, &[]);
        dir
    })
}

/// server-everything's entry point, installing the servers first if needed.
pub fn everything_js() -> PathBuf {
    installed().join(ENTRIES[0])
}

/// server-filesystem's entry point, installing the servers first if needed.
#[allow(dead_code)]
pub fn filesystem_js() -> PathBuf {
    installed().join(ENTRIES[1])
}

/// The MCP Inspector's launcher (the `mcp-inspector` bin: `node` runs it,
/// `--cli` for its command-line client), installing the packages first if
/// needed.
#[allow(dead_code)]
pub fn inspector_js() -> PathBuf {
    installed().join(ENTRIES[2])
}
