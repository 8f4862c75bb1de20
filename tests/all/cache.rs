//! The compile cache: a second engine loads a plugin without compiling it,
//! and an entry that is damaged, replaced or not private to the user is
//! never run.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use tiny_harness_host::{CompileCache, DirMode, HostBuilder, PluginEngine, PluginSpec};
use tiny_harness_wasm::{CompileOrigin, Plugin};

use crate::common::{call, fs_over, spec, text_of};

/// Loads `spec` in a fresh engine over the cache in `dir`.
async fn load(dir: &Path, spec: PluginSpec) -> CompileOrigin {
    let engine = PluginEngine::with_compile_cache(Some(CompileCache::new(dir))).unwrap();
    let (plugin, tools) = Plugin::load(&engine, spec).await.expect("loads");
    assert!(!tools.is_empty());
    plugin.compile_origin()
}

/// The cache's entries.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    found.sort();
    found
}

fn mode(path: &Path) -> u32 {
    path.symlink_metadata().unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_second_engine_loads_from_the_cache_and_the_plugin_works() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note.txt"), "cached\n").unwrap();

    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    let stored = entries(&cache);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(&stored[0]), 0o600);
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Cached
    );

    // Another component gets an entry of its own.
    let fs = || fs_over(work.path(), DirMode::ReadOnly);
    assert_eq!(load(&cache, fs()).await, CompileOrigin::Compiled);
    assert_eq!(entries(&cache).len(), 2);

    // A host built on a cached engine serves calls.
    let engine = PluginEngine::with_compile_cache(Some(CompileCache::new(&cache))).unwrap();
    let host = HostBuilder::new()
        .engine(engine)
        .plugin(fs())
        .build()
        .await
        .unwrap();
    let outcome = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "note.txt"}),
    )
    .await;
    assert_eq!(text_of(&outcome), "cached\n");
}

#[tokio::test]
async fn a_damaged_or_untrusted_entry_is_never_used_and_is_replaced() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    let entry = entries(&cache).remove(0);
    let good = std::fs::read(&entry).unwrap();

    // Damaged: wasmtime refuses it; the plugin is compiled and the entry
    // rewritten.
    std::fs::write(&entry, b"not machine code").unwrap();
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    assert_eq!(std::fs::read(&entry).unwrap().len(), good.len());
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Cached
    );

    // Truncated: the same.
    std::fs::write(&entry, &good[..good.len() / 2]).unwrap();
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Cached
    );

    // Writable by others: not trusted, and replaced by a private one.
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    assert_eq!(mode(&entry), 0o600);
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Cached
    );

    // A symlink, even to a good entry: not trusted.
    let elsewhere = root.path().join("elsewhere.cwasm");
    std::fs::rename(&entry, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &entry).unwrap();
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    assert!(!entry.symlink_metadata().unwrap().is_symlink());

    // A directory others may write to: nothing is read from it or written
    // to it.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    std::fs::remove_file(&entry).unwrap();
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    assert!(entries(&cache).is_empty(), "nothing written to an open dir");
}

#[tokio::test]
async fn a_changed_component_misses_the_cache() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    // The same path, first holding hello, then hostile: the key is the
    // file's sha256, not its name.
    let wasm = root.path().join("plugin.wasm");
    let at = |name: &str| {
        let mut spec = spec("p", name);
        std::fs::copy(&spec.wasm, &wasm).unwrap();
        spec.wasm = wasm.clone();
        if name == "hostile" {
            spec.config = serde_json::json!({"mode": "normal"});
        }
        spec
    };
    assert_eq!(load(&cache, at("hello")).await, CompileOrigin::Compiled);
    assert_eq!(load(&cache, at("hostile")).await, CompileOrigin::Compiled);
    assert_eq!(load(&cache, at("hello")).await, CompileOrigin::Cached);
    assert_eq!(entries(&cache).len(), 2);
}

#[tokio::test]
async fn the_cache_keeps_at_most_its_limit_of_entries() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let total = tiny_harness_wasm::CompileCache::MAX_ENTRIES + 5;
    for n in 0..total {
        let path = cache.join(format!("{n:064}-0000000000000000.cwasm"));
        let file = std::fs::File::create(&path).unwrap();
        file.set_modified(old + std::time::Duration::from_secs(n as u64))
            .unwrap();
    }
    // Not an entry: left alone.
    std::fs::write(cache.join("README"), "keep").unwrap();

    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Compiled
    );
    let kept = entries(&cache);
    let cwasm = kept
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(cwasm, tiny_harness_wasm::CompileCache::MAX_ENTRIES);
    assert!(cache.join("README").exists());
    // The oldest went first; the new entry stayed.
    assert!(
        !cache
            .join(format!("{:064}-0000000000000000.cwasm", 0))
            .exists()
    );
    assert!(
        cache
            .join(format!("{:064}-0000000000000000.cwasm", total - 1))
            .exists()
    );
    assert_eq!(
        load(&cache, spec("hello", "hello")).await,
        CompileOrigin::Cached
    );
}
