//! One CLI call of npm's server-everything's `echo`, as a user makes it
//! (a fresh `tiny-harness call` process each time), two ways side by side
//! in every iteration:
//!
//! - `npx_unconfined`: the desktop assistant's config as pasted
//!   (`npx -y @modelcontextprotocol/server-everything@2026.8.31`) with
//!   `confinement = "none"`, the only way `npx` can fetch: npx resolves the
//!   package at every start.
//! - `installed_confined`: the same config after `tiny-harness mcp
//!   install`: the server starts from the store, confined, offline.
//!
//! Prints the medians of both and of their ratio. Each row asserts that
//! the call succeeded. Needs the npm registry for the setup (`mcp
//! install`) and for npx.
//!
//! Run: `cargo bench -p tiny-harness-host --bench cli_call`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

fn cli(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", dir.join("cache"))
        .output()
        .expect("the binary runs")
}

/// A directory with the pasted config, as `mcp import` writes it, plus
/// `extra` in `[plugins.mcp]`.
fn config(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let claude = serde_json::json!({"mcpServers": {"everything": {
        "command": "npx", "args": ["-y", PACKAGE],
    }}});
    std::fs::write(dir.path().join("claude.json"), claude.to_string()).expect("write");
    let block = cli(dir.path(), &["mcp", "import", "claude.json"]);
    assert!(
        block.status.success(),
        "{}",
        String::from_utf8_lossy(&block.stderr)
    );
    let text = String::from_utf8(block.stdout).expect("utf-8").replacen(
        "path = \"builtin:mcp\"\n",
        &format!("path = \"builtin:mcp\"\n{extra}"),
        1,
    );
    std::fs::write(dir.path().join("tiny-harness.toml"), text).expect("write");
    dir
}

/// One `tiny-harness call` of `echo` in `dir`, which must succeed.
fn echo(dir: &Path) {
    let output = cli(
        dir,
        &["call", "mcp/everything.echo", r#"{"message":"bench"}"#],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.contains("Echo: bench"),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn bench(c: &mut Criterion) {
    let unconfined = config("confinement = \"none\"\n");
    let installed = config("");
    let install = cli(installed.path(), &["mcp", "install"]);
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    // Warm both: the compile cache, npm's cache.
    echo(unconfined.path());
    echo(installed.path());

    let mut group = c.benchmark_group("cli_call_echo");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    let samples = std::cell::RefCell::new(Vec::new());
    group.bench_function("paired", |b| {
        b.iter_custom(|iters| {
            let (mut npx, mut store) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..iters {
                let start = Instant::now();
                echo(unconfined.path());
                npx += start.elapsed();
                let start = Instant::now();
                echo(installed.path());
                store += start.elapsed();
            }
            samples
                .borrow_mut()
                .push((npx / iters as u32, store / iters as u32));
            store
        });
    });
    group.finish();
    let samples = samples.into_inner();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let npx = median(samples.iter().map(|s| s.0.as_secs_f64()).collect());
    let store = median(samples.iter().map(|s| s.1.as_secs_f64()).collect());
    let ratio = median(
        samples
            .iter()
            .map(|s| s.1.as_secs_f64() / s.0.as_secs_f64())
            .collect(),
    );
    eprintln!(
        "cli_call_echo: npx_unconfined median {npx:.3} s, installed_confined median {store:.3} s, \
         installed/npx {ratio:.3} ({} samples)",
        samples.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
