//! What checking an installed server costs at its start, on npm's
//! server-everything as `tiny-harness mcp install` installs it (about
//! 3,000 files), two ways side by side in every iteration:
//!
//! - `check`: the default at every start: the manifest read, then what
//!   `statx` says of every entry the install recorded (all but the files
//!   no runtime loads) compared with the record (no file is read).
//!   Target: under 10 ms.
//! - `verify`: what `--locked` does instead: the manifest read, then every
//!   installed file hashed.
//!
//! Prints the medians of both and of their ratio. Needs the npm registry
//! for the setup (`mcp install`).
//!
//! Run: `cargo bench -p tiny-harness-host --bench store`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tiny_harness_mcp::store::Store;

const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// A config with server-everything as a desktop assistant's config has
/// it, installed.
fn installed() -> tempfile::TempDir {
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
    std::fs::write(dir.path().join("tiny-harness.toml"), &block.stdout).expect("write");
    let install = cli(dir.path(), &["mcp", "install"]);
    assert!(
        install.status.success(),
        "{}{}",
        String::from_utf8_lossy(&install.stdout),
        String::from_utf8_lossy(&install.stderr)
    );
    dir
}

fn cli(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", dir.join("cache"))
        .output()
        .expect("the binary runs")
}

fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read")
        .map(|e| {
            let e = e.expect("entry");
            1 + if e.file_type().expect("type").is_dir() {
                count(&e.path())
            } else {
                0
            }
        })
        .sum()
}

fn bench(c: &mut Criterion) {
    let dir = installed();
    let store = Store::beside(&dir.path().join("tiny-harness.toml"));
    // As a start does: the manifest read, then the check (`full`: every
    // file hashed, as under --locked).
    let start = |full: bool| {
        let installed = store
            .installed("mcp", "everything")
            .expect("manifest")
            .expect("installed");
        let checked = if full {
            store.verify(&installed, "everything")
        } else {
            store.check(&installed, "everything")
        };
        checked.expect("unchanged");
    };
    let check = || start(false);
    let verify = || start(true);
    let entries = count(&store.dir("mcp", "everything"));
    let checked = std::fs::read_to_string(store.dir("mcp", "everything").join("install.stat"))
        .expect("the record")
        .lines()
        .count();
    check();
    verify();

    let mut group = c.benchmark_group("store_check");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(20));
    let samples = std::cell::RefCell::new(Vec::new());
    group.bench_function("paired", |b| {
        b.iter_custom(|iters| {
            let (mut cheap, mut full) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..iters {
                let start = Instant::now();
                check();
                cheap += start.elapsed();
                let start = Instant::now();
                verify();
                full += start.elapsed();
            }
            samples
                .borrow_mut()
                .push((cheap / iters as u32, full / iters as u32));
            cheap
        });
    });
    group.finish();
    let samples = samples.into_inner();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let cheap = median(samples.iter().map(|s| s.0.as_secs_f64()).collect());
    let full = median(samples.iter().map(|s| s.1.as_secs_f64()).collect());
    let ratio = median(
        samples
            .iter()
            .map(|s| s.0.as_secs_f64() / s.1.as_secs_f64())
            .collect(),
    );
    eprintln!(
        "store_check ({entries} entries, {checked} of them checked cheaply): check median {:.2} ms, verify median {:.2} ms, \
         check/verify {ratio:.3} ({} samples)",
        cheap * 1e3,
        full * 1e3,
        samples.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
