//! Loading a plugin: compiling the component against loading it from the
//! compile cache, measured side by side.
//!
//! - `compile`: `Plugin::load` of the fs plugin in an engine without a
//!   cache: read, hash, compile, link, `register`.
//! - `cached`: the same in an engine whose cache already holds the fs
//!   plugin: the compile step becomes a load of the cached entry.
//!
//! Run: `cargo bench -p tiny-harness-host --bench load`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tiny_harness_host::{CompileCache, PluginEngine, PluginSpec};
use tiny_harness_wasm::{CompileOrigin, Plugin};

fn fs_spec() -> PluginSpec {
    PluginSpec::new(
        "fs",
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/wasm-plugins/wasm32-wasip2/release"
        ))
        .join("fs.wasm"),
    )
}

fn load(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let cache_dir = tempfile::tempdir().expect("temp dir");
    let plain = PluginEngine::new().expect("engine");
    let cached = PluginEngine::with_compile_cache(Some(CompileCache::new(cache_dir.path())))
        .expect("engine");
    // Fill the cache.
    runtime.block_on(async {
        Plugin::load(&cached, fs_spec()).await.expect("load");
        let (plugin, _) = Plugin::load(&cached, fs_spec()).await.expect("load");
        assert_eq!(plugin.compile_origin(), CompileOrigin::Cached);
    });

    let mut group = c.benchmark_group("load_fs_plugin");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("compile", |b| {
        b.to_async(&runtime)
            .iter(|| async { Plugin::load(&plain, fs_spec()).await.expect("load") });
    });
    group.bench_function("cached", |b| {
        b.to_async(&runtime)
            .iter(|| async { Plugin::load(&cached, fs_spec()).await.expect("load") });
    });
    group.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
