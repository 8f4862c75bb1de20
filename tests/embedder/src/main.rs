//! Loads the bundled `fs` and `shell` into a host, as an embedder's app
//! does at start: `ROUNDS` times without the compile cache, then once into
//! an empty cache and once from it. Prints each median in milliseconds.

use std::time::{Duration, Instant};

use tiny_harness_host::{CompileCache, HostBuilder, PluginSpec};

const ROUNDS: usize = 5;

async fn load(cache: Option<CompileCache>) -> Duration {
    let started = Instant::now();
    let host = HostBuilder::new()
        .compile_cache(cache)
        .without_lock()
        .plugin(PluginSpec::new("fs", "builtin:fs"))
        .plugin(PluginSpec::new("shell", "builtin:shell"))
        .build()
        .await
        .expect("the bundled plugins load");
    let elapsed = started.elapsed();
    drop(host);
    elapsed
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let mut uncached = Vec::new();
    for _ in 0..ROUNDS {
        uncached.push(load(None).await);
    }
    let dir = std::env::temp_dir().join(format!("embedder-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cold = load(Some(CompileCache::new(&dir))).await;
    let mut warm = Vec::new();
    for _ in 0..ROUNDS {
        warm.push(load(Some(CompileCache::new(&dir))).await);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "no cache: {:.0} ms (median of {ROUNDS}); empty cache: {:.0} ms; from the cache: {:.0} ms (median of {ROUNDS})",
        median(uncached),
        cold.as_secs_f64() * 1000.0,
        median(warm)
    );
}
