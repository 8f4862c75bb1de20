//! Builds the plugins in `plugins/` for `wasm32-wasip2`, so that plain
//! `cargo build` / `cargo test` leave ready-to-load components in
//! `target/wasm-plugins/wasm32-wasip2/release/`.
//!
//! The nested cargo gets a target dir of its own (sharing the outer one
//! deadlocks on its lock under `cargo test --release`) and none of the
//! outer build's flags or wrappers (they are meant for the host target, and
//! clippy's wrapper breaks a wasm build). When the `wasm32-wasip2` target is
//! missing it is installed with rustup. Without the `bundled` feature none
//! of this happens (the crate then bundles no plugin: `builtin:NAME` paths
//! are refused with a message that says so), and neither does it outside a
//! checkout (a package without `plugins/`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const TARGET: &str = "wasm32-wasip2";
const STRIPPED_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_PRIMARY_PACKAGE",
];

/// The plugins the host carries inside itself (`path = "builtin:NAME"`).
const BUNDLED: &[&str] = &["fs", "shell", "net", "mcp"];

/// Tells the crate that the bundled plugins are built, so it includes them
/// (`cfg(bundled_plugins)`); without them it builds with none bundled.
fn bundle(dir: &Path) {
    if BUNDLED
        .iter()
        .all(|name| dir.join(format!("{name}.wasm")).is_file())
    {
        println!("cargo:rustc-cfg=bundled_plugins");
    }
}

fn main() -> ExitCode {
    println!("cargo::rustc-check-cfg=cfg(bundled_plugins)");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    // This crate sits at host/wasm: the checkout's root is two levels up.
    let Some(root) = manifest_dir
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
    else {
        return ExitCode::SUCCESS;
    };
    let plugins = root.join("plugins");
    let out_dir = root.join("target").join("wasm-plugins");
    println!(
        "cargo:rustc-env=TINY_HARNESS_PLUGIN_DIR={}",
        out_dir.join(TARGET).join("release").display()
    );
    if std::env::var_os("CARGO_FEATURE_BUNDLED").is_none() || !plugins.join("Cargo.toml").is_file()
    {
        return ExitCode::SUCCESS;
    }
    println!("cargo:rerun-if-changed={}", plugins.display());
    println!("cargo:rerun-if-changed={}", root.join("wit").display());

    if let Err(message) = ensure_target() {
        eprintln!("error: {message}");
        return ExitCode::FAILURE;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&plugins)
        .args(["build", "--release", "--target", TARGET, "--target-dir"])
        .arg(&out_dir);
    for name in STRIPPED_ENV {
        command.env_remove(name);
    }
    match command.status() {
        Ok(status) if status.success() => {
            bundle(&out_dir.join(TARGET).join("release"));
            ExitCode::SUCCESS
        }
        Ok(status) => {
            eprintln!(
                "error: building the plugins in {} failed ({status})",
                plugins.display()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: cannot run cargo to build the plugins: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Makes sure the active toolchain has the wasm32-wasip2 standard library,
/// installing it with rustup if needed.
fn ensure_target() -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run rustc to find its sysroot: {e}"))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(TARGET).is_dir() {
        return Ok(());
    }
    println!("cargo:warning=installing the {TARGET} target with rustup to build the plugins");
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .map_err(|e| {
            format!(
                "the {TARGET} target is not installed and rustup cannot be run ({e}): \
                 install the {TARGET} standard library for this toolchain, or build \
                 without the bundled plugins (tiny-harness-host with default-features = false \
                 and the features you need, leaving out `bundled`)"
            )
        })?;
    if !status.success() {
        return Err(format!(
            "`rustup target add {TARGET}` failed ({status}); run it by hand and build again, \
             or build without the `bundled` feature"
        ));
    }
    Ok(())
}
