//! Building a plugin crate into its component, for a test that runs it.
//!
//! Invariants:
//! - The nested cargo builds where cargo itself would for the crate
//!   (`CARGO_TARGET_DIR`, a `build.target-dir` setting, else the crate's
//!   or its workspace's `target`: `cargo metadata`'s target directory),
//!   unless given one or `TINY_HARNESS_PLUGIN_TARGET_DIR` says; so the
//!   component is where `cargo build --release --target wasm32-wasip2`
//!   leaves it. It shares that directory with the `cargo test` that runs
//!   it without waiting: cargo locks each target and profile's directory
//!   while it builds, and a test runs after its build.
//! - None of the outer build's flags or wrappers reach it (they are meant
//!   for the host, not wasm32).
//! - The component is the one cargo reports it built, never a file that
//!   merely lies where one would.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target plugins are built for.
pub const TARGET: &str = "wasm32-wasip2";

/// The variable that moves where [`build`] builds by default (to share
/// one target directory between several plugins' tests, say).
pub const TARGET_DIR_ENV: &str = "TINY_HARNESS_PLUGIN_TARGET_DIR";

/// What the outer cargo sets that must not reach the nested build.
const STRIPPED_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_MAKEFLAGS",
];

/// Why a plugin crate did not build into a component.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// cargo could not be run.
    #[error("cannot run cargo to build the plugin in {dir}: {reason}")]
    Cargo {
        /// The crate's directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// The build failed; cargo's diagnostics went to standard error.
    #[error(
        "building the plugin in {dir} failed (cargo's messages are above); \
         if the target is missing, run `rustup target add {TARGET}`"
    )]
    Failed {
        /// The crate's directory.
        dir: PathBuf,
    },
    /// The crate built no component (it is not a `cdylib`).
    #[error(
        "the crate in {dir} built no .wasm component: its Cargo.toml needs \
         [lib] crate-type = [\"cdylib\"]"
    )]
    NoComponent {
        /// The crate's directory.
        dir: PathBuf,
    },
}

/// Builds the plugin crate in `dir` for `wasm32-wasip2`, release, into
/// `target_dir` (default: [`TARGET_DIR_ENV`] if set, else where cargo
/// builds the crate: `CARGO_TARGET_DIR`, or the crate's `target`), and
/// returns the component's path. cargo's diagnostics go to standard
/// error.
pub fn build(dir: &Path, target_dir: Option<&Path>) -> Result<PathBuf, BuildError> {
    let target_dir = match (target_dir, std::env::var_os(TARGET_DIR_ENV)) {
        (Some(dir), _) => Some(dir.to_owned()),
        (None, Some(set)) if !set.is_empty() => Some(PathBuf::from(set)),
        (None, _) => None,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(dir)
        .args(["build", "--release", "--target", TARGET])
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(std::process::Stdio::inherit());
    if let Some(target_dir) = &target_dir {
        command.arg("--target-dir").arg(target_dir);
    }
    for name in STRIPPED_ENV {
        command.env_remove(name);
    }
    let output = command.output().map_err(|e| BuildError::Cargo {
        dir: dir.to_owned(),
        reason: e.to_string(),
    })?;
    if !output.status.success() {
        return Err(BuildError::Failed {
            dir: dir.to_owned(),
        });
    }
    // The last cdylib artifact that is a .wasm file (a binary crate builds
    // a .wasm too, but not a component with exports).
    let stdout = String::from_utf8_lossy(&output.stdout);
    let component = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| {
            message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "cdylib"))
        })
        .filter_map(|message| {
            message["filenames"].as_array().and_then(|files| {
                files
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .find(|file| file.ends_with(".wasm"))
                    .map(PathBuf::from)
            })
        })
        .next_back();
    component.ok_or_else(|| BuildError::NoComponent {
        dir: dir.to_owned(),
    })
}
