//! What a plugin author's choices cost, side by side in one run.
//!
//! - `textstats/<lang>/compile`: `Plugin::load` of the same plugin written
//!   in Rust (on the guest SDK), Python (componentize-py) and JavaScript
//!   (componentize-js), in an engine without a compile cache: read, hash,
//!   compile, link, `register`.
//! - `textstats/<lang>/cached`: the same from a compile cache that holds
//!   it.
//! - `textstats/<lang>/call`: one call of `textstats.stats` on a loaded
//!   plugin: a fresh instance, the call, the result lifted.
//! - `paired_sdk_over_bindgen`: `hello.greet` of `hello` on the SDK and of
//!   the same plugin written against wit-bindgen directly (the fixture
//!   `tests/fixtures/worlds/hello-0.3.0.wasm`), back to back in every
//!   iteration; prints the medians and the ratio.
//! - `compile_hello/<config>`: `Component::new` of `hello.wasm` under
//!   wasmtime's default configuration, with epoch interruption, with the
//!   pooling allocator, and in the host's own engine (both), to see which
//!   setting costs compile time.
//! - `instantiate/<component>`: a fresh instance alone (`instantiate_pre`
//!   done), for components importing few and many WASI interfaces.
//!
//! The interpreted components come from `plugins/examples/build.sh
//! target/examples` (`.ci/run` runs it).
//!
//! Run: `cargo bench -p tiny-harness-host --bench authoring`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::{CompileCache, PluginEngine, PluginSpec};
use tiny_harness_wasm::Plugin;
use wasmtime::component::Component;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn plugin_wasm(name: &str) -> PathBuf {
    root()
        .join("target/wasm-plugins/wasm32-wasip2/release")
        .join(format!("{name}.wasm"))
}

/// The three textstats components.
fn textstats() -> Vec<(&'static str, PathBuf)> {
    let examples = root().join("target/examples");
    let all = vec![
        ("rust", plugin_wasm("textstats_rust")),
        ("python", examples.join("textstats-python.wasm")),
        ("js", examples.join("textstats-js.wasm")),
    ];
    for (_, path) in &all {
        assert!(
            path.is_file(),
            "{} is missing: run plugins/examples/build.sh target/examples",
            path.display()
        );
    }
    all
}

/// One compile cache for the whole run, so that each interpreted
/// component (seconds to compile) is compiled once outside the `compile`
/// rows.
fn cache_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

fn cached_engine() -> PluginEngine {
    PluginEngine::with_compile_cache(Some(CompileCache::new(cache_dir()))).expect("engine")
}

fn load_and_call(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let plain = PluginEngine::with_compile_cache(None).expect("engine");
    let cached = cached_engine();
    let mut group = c.benchmark_group("textstats");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (lang, wasm) in textstats() {
        let spec = || PluginSpec::new("textstats", &wasm);
        // Fill the cache, and keep one loaded plugin for the calls.
        let plugin = runtime.block_on(async {
            Plugin::load(&cached, spec()).await.expect("load");
            Plugin::load(&cached, spec()).await.expect("load").0
        });
        group.bench_function(format!("{lang}/compile"), |b| {
            b.to_async(&runtime)
                .iter(|| async { Plugin::load(&plain, spec()).await.expect("load") });
        });
        group.bench_function(format!("{lang}/cached"), |b| {
            b.to_async(&runtime)
                .iter(|| async { Plugin::load(&cached, spec()).await.expect("load") });
        });
        let arguments = json!({"text": "the quick brown fox jumps over the lazy dog\n"});
        group.bench_function(format!("{lang}/call"), |b| {
            b.to_async(&runtime).iter(|| async {
                plugin
                    .call("textstats", "stats", &arguments)
                    .await
                    .expect("call")
            });
        });
    }
    group.finish();
}

/// `hello.greet` on the SDK against the same plugin written against
/// wit-bindgen, interleaved.
fn sdk_over_bindgen(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let engine = PluginEngine::new().expect("engine");
    let fixture = root().join("tests/fixtures/worlds/hello-0.3.0.wasm");
    let (sdk, bindgen) = runtime.block_on(async {
        let sdk = Plugin::load(&engine, PluginSpec::new("sdk", plugin_wasm("hello")))
            .await
            .expect("load")
            .0;
        let bindgen = Plugin::load(&engine, PluginSpec::new("bindgen", fixture))
            .await
            .expect("load")
            .0;
        (sdk, bindgen)
    });
    let arguments = json!({"name": "Ada"});
    let times = std::sync::Mutex::new((Vec::new(), Vec::new()));
    c.bench_function("paired_sdk_over_bindgen", |b| {
        b.to_async(&runtime).iter_custom(|iterations| {
            let (sdk, bindgen, arguments, times) = (&sdk, &bindgen, &arguments, &times);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let start = Instant::now();
                    sdk.call("hello", "greet", arguments).await.expect("call");
                    let middle = Instant::now();
                    bindgen
                        .call("hello", "greet", arguments)
                        .await
                        .expect("call");
                    let end = Instant::now();
                    let mut times = times.lock().unwrap();
                    times.0.push(middle - start);
                    times.1.push(end - middle);
                    total += end - start;
                }
                total
            }
        });
    });
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut times = times.into_inner().unwrap();
    // Filtered out of this run: nothing measured.
    if times.0.is_empty() {
        return;
    }
    let (s, g) = (median(&mut times.0), median(&mut times.1));
    println!(
        "paired over {} calls each: sdk {:?}, bindgen {:?}, ratio {:.3}",
        times.0.len(),
        s,
        g,
        s.as_secs_f64() / g.as_secs_f64()
    );
}

/// Compiling `hello.wasm` under wasmtime's defaults and with each setting
/// the host adds.
fn compile_settings(c: &mut Criterion) {
    let bytes = std::fs::read(plugin_wasm("hello")).expect("hello.wasm");
    let engines: Vec<(&str, wasmtime::Engine)> = vec![
        ("default", wasmtime::Engine::default()),
        ("epoch", {
            let mut config = wasmtime::Config::new();
            config.epoch_interruption(true);
            wasmtime::Engine::new(&config).expect("engine")
        }),
        ("pooling", {
            let mut config = wasmtime::Config::new();
            config.allocation_strategy(wasmtime::InstanceAllocationStrategy::pooling());
            wasmtime::Engine::new(&config).expect("engine")
        }),
        (
            "host",
            PluginEngine::new().expect("engine").engine().clone(),
        ),
    ];
    let mut group = c.benchmark_group("compile_hello");
    group.sample_size(20);
    for (name, engine) in &engines {
        group.bench_function(*name, |b| {
            b.iter(|| Component::new(engine, &bytes).expect("compile"));
        });
    }
    group.finish();
}

/// A fresh sandbox and instance alone (nothing called), for components
/// that import more or fewer WASI interfaces.
fn instantiate(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let engine = cached_engine();
    let mut components = vec![("hello", plugin_wasm("hello")), ("net", plugin_wasm("net"))];
    components.extend(textstats().into_iter().filter(|(l, _)| *l != "rust"));
    let mut group = c.benchmark_group("instantiate");
    group.sample_size(20);
    for (name, path) in components {
        // Read through the cache: an interpreted component takes seconds
        // to compile.
        let imports = runtime
            .block_on(tiny_harness_wasm::inspect(&engine, &path))
            .expect("inspect")
            .imports
            .len();
        println!("instantiate/{name}: {imports} imports");
        let plugin = runtime
            .block_on(Plugin::load(&engine, PluginSpec::new(name, &path)))
            .expect("load")
            .0;
        group.bench_function(name, |b| {
            b.to_async(&runtime)
                .iter(|| async { plugin.instantiate_only().await.expect("instance") });
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    load_and_call,
    sdk_over_bindgen,
    compile_settings,
    instantiate
);
criterion_main!(benches);
