//! Plugins from an OCI registry: what `plugin add` costs, and whether a
//! start that finds the component in the store costs more than one that
//! loads it from a file.
//!
//! - `plugin_add_fs`: `tiny-harness plugin add fs oci://…` of the bundled
//!   `fs` component (published once to a docker-registry on loopback) into
//!   a fresh directory: resolve, download, digest check, load, store,
//!   config. A process per iteration, as a user runs it.
//! - `start/paired`: in every iteration, a host built from a config whose
//!   `fs` is `oci://…` with its component in the store (no network: the
//!   registry is stopped first), then one built from a config whose `fs`
//!   is the same component by file path; both compile-cached. Prints the
//!   medians of both and of their ratio.
//!
//! Needs Debian's docker-registry. Run: `cargo bench -p tiny-harness-cli
//! --bench oci`.

// A benchmark that cannot set up has nothing to measure: it stops at
// once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tiny_harness_host::{CompileCache, Config, HostBuilder};
use tiny_harness_oci::test_registry::Registry;

fn fs_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/wasm-plugins/wasm32-wasip2/release/fs.wasm"
    ))
}

fn cli(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", cache)
        .env("DOCKER_CONFIG", dir.join(".docker"))
        .output()
        .expect("the binary runs");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A host from `config`, built and dropped.
fn start(runtime: &tokio::runtime::Runtime, config: &Config, cache: &Path) {
    runtime.block_on(async {
        let host = HostBuilder::new()
            .config(config)
            .compile_cache(Some(CompileCache::new(cache)))
            .build()
            .await
            .unwrap();
        assert_eq!(host.registry().len(), 5);
    });
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn bench(c: &mut Criterion) {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let registry = Registry::start();
    let reference = registry.reference("bench/fs:1");
    let fs = fs_wasm();
    cli(
        work.path(),
        &cache,
        &["plugin", "publish", fs.to_str().unwrap(), &reference],
    );

    let mut group = c.benchmark_group("oci");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("plugin_add_fs", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().unwrap();
                let begin = Instant::now();
                cli(dir.path(), &cache, &["plugin", "add", "fs", &reference]);
                total += begin.elapsed();
            }
            total
        });
    });

    // The config `plugin add` wrote, and the same component by path.
    let from_oci = work.path().join("oci");
    std::fs::create_dir(&from_oci).unwrap();
    cli(&from_oci, &cache, &["plugin", "add", "fs", &reference]);
    let oci_config = Config::load(&from_oci.join("tiny-harness.toml")).unwrap();
    let from_file = work.path().join("file");
    std::fs::create_dir(&from_file).unwrap();
    std::fs::write(
        from_file.join("tiny-harness.toml"),
        format!("[plugins.fs]\npath = {:?}\n", fs.display().to_string()),
    )
    .unwrap();
    let file_config = Config::load(&from_file.join("tiny-harness.toml")).unwrap();
    // No network from here on.
    drop(registry);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    start(&runtime, &oci_config, &cache);
    start(&runtime, &file_config, &cache);

    let samples = std::cell::RefCell::new(Vec::new());
    group.bench_function("start/paired", |b| {
        b.iter_custom(|iters| {
            let (mut oci, mut file) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..iters {
                let begin = Instant::now();
                start(&runtime, &oci_config, &cache);
                oci += begin.elapsed();
                let begin = Instant::now();
                start(&runtime, &file_config, &cache);
                file += begin.elapsed();
            }
            samples
                .borrow_mut()
                .push((oci / iters as u32, file / iters as u32));
            oci
        });
    });
    group.finish();
    let samples = samples.into_inner();
    let oci = median(samples.iter().map(|s| s.0.as_secs_f64() * 1e3).collect());
    let file = median(samples.iter().map(|s| s.1.as_secs_f64() * 1e3).collect());
    let ratio = median(
        samples
            .iter()
            .map(|s| s.0.as_secs_f64() / s.1.as_secs_f64())
            .collect(),
    );
    eprintln!(
        "oci start: from the store median {oci:.2} ms, from a file path median {file:.2} ms, \
         store/file {ratio:.3} ({} samples)",
        samples.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
