//! One way to build a host: setters that record, one `build()` that does
//! everything a config says (as the CLI does), typed errors for every
//! misuse, and plugins added to a running host whole or not at all.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tiny_harness_core::invoke::CallRecorder;
use tiny_harness_core::registry::RegistryError;
use tiny_harness_core::schema::SchemaHash;
use tiny_harness_host::{
    CallOutcome, CompileCache, Config, Host, HostBuilder, HostError, ToolCall, Workflow,
};

use crate::common::{call, hostile, spec, text_of};

/// A config in `dir` loading the bundled `fs` over `dir` (read-only),
/// with a skills root.
fn config_in(dir: &Path) -> Config {
    std::fs::create_dir_all(dir.join("skills/hello")).unwrap();
    std::fs::write(
        dir.join("skills/hello/SKILL.md"),
        "---\nname: hello\ndescription: Says hello.\n---\nSay hello.\n",
    )
    .unwrap();
    std::fs::write(dir.join("note.txt"), "a note").unwrap();
    let path = dir.join("agent.toml");
    std::fs::write(
        &path,
        "[plugins.fs]\npath = \"builtin:fs\"\n\n[plugins.fs.grants]\n\
         dirs = [{ host = \".\", guest = \"/workspace\", mode = \"read-only\" }]\n\n\
         [plugins.fs.config]\nroot = \"/workspace\"\n\n[skills]\nroot = \"skills\"\n",
    )
    .unwrap();
    Config::load(&path).unwrap()
}

#[tokio::test]
async fn from_config_does_what_the_cli_does() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let host = Host::from_config(&config).await.unwrap();

    // The lock beside the config, written by the host.
    let lock = dir.path().join("agent.lock");
    let pins = std::fs::read_to_string(&lock).expect("the host wrote the config's lock");
    assert!(pins.contains("read_file"), "{pins}");

    // The plugin's tools and the twelve intrinsics.
    let read = call(&host, "fs/workspace.read_file", json!({"path": "note.txt"})).await;
    assert_eq!(text_of(&read), "a note");
    assert!(host.registry().get("create_plan").is_some());

    // The skills root the config names.
    let mut workflow = Workflow::new();
    let listed = host
        .call_intrinsic(
            &ToolCall {
                id: "1".into(),
                name: "list_skills".into(),
                arguments: json!({}),
            },
            &mut workflow,
            None,
        )
        .await;
    assert!(
        listed.outcome.render().contains("Says hello."),
        "{}",
        listed.outcome.render()
    );

    // A second host of the same config under --locked: held to that lock.
    let again = HostBuilder::new()
        .locked(true)
        .config(&config)
        .build()
        .await
        .unwrap();
    assert!(again.registry().get("fs/workspace.read_file").is_some());
    assert!(again.registry().get("create_plan").is_none(), "not asked");
}

#[tokio::test]
async fn the_order_of_the_setters_does_not_matter() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("pins.lock");
    // Locked before the lock file is named: still held to it (and it does
    // not exist yet, so the build is refused).
    let err = HostBuilder::new()
        .locked(true)
        .plugin(hostile("normal"))
        .lock_file(&lock)
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, HostError::Locked { .. }) && err.to_string().contains("does not exist"),
        "{err}"
    );
    assert!(!lock.exists());
}

#[tokio::test]
async fn misuse_is_a_typed_error_from_build() {
    let dir = tempfile::tempdir().unwrap();

    // --locked with no lock at all.
    let err = HostBuilder::new()
        .locked(true)
        .plugin(hostile("normal"))
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::NoLock), "{err:?}");
    assert!(err.to_string().contains("a lock file"), "{err}");

    // --locked with the config's lock refused by without_lock.
    let config = config_in(dir.path());
    let err = HostBuilder::new()
        .config(&config)
        .without_lock()
        .locked(true)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::NoLock), "{err:?}");

    // A lock that cannot be read.
    let bad = dir.path().join("bad.lock");
    std::fs::write(&bad, "this is { not a lock").unwrap();
    let err = HostBuilder::new()
        .lock_file(&bad)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Lock(_)), "{err:?}");
    assert!(!err.to_string().contains('\n'), "{err}");

    // A skills root that is a file.
    let file = dir.path().join("note.txt");
    let err = HostBuilder::new()
        .intrinsics(true)
        .skills_root(&file)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Skills(_)), "{err:?}");
    assert!(err.to_string().contains("skills root"), "{err}");

    // The same plugin name twice: refused before either is loaded, so the
    // config's lock is not written.
    let err = HostBuilder::new()
        .config(&config)
        .plugin(spec("fs", "hello"))
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            HostError::Registry {
                source: RegistryError::DuplicatePlugin(name),
                ..
            } if name == "fs"
        ),
        "{err:?}"
    );
    assert!(!dir.path().join("agent.lock").exists());
}

#[tokio::test]
async fn a_plugin_added_to_a_running_host_is_pinned_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("pins.lock");
    let host = HostBuilder::new()
        .lock_file(&lock)
        .plugin(spec("hello", "hello"))
        .build()
        .await
        .unwrap();
    let written = crate::common::inode(&lock).expect("the build wrote the lock");

    // Refused by the registry after its component was checked against the
    // lock: nothing of it stays, in the registry or the lock.
    let before = host.registry().len();
    let err = host.load_plugin(spec("Bad", "hello")).await.unwrap_err();
    assert!(matches!(err, HostError::Registry { .. }), "{err:?}");
    assert_eq!(host.registry().len(), before);
    assert_eq!(crate::common::inode(&lock), Some(written), "not written");

    // A good one is registered and pinned, and the lock written, with
    // nothing of the refused one.
    let added = host.load_plugin(hostile("normal")).await.unwrap();
    assert!(added > 0);
    assert_eq!(host.registry().len(), before + added);
    let pins = std::fs::read_to_string(&lock).unwrap();
    assert!(pins.contains("hostile") && !pins.contains("Bad"), "{pins}");
    let echo = call(&host, "hostile/chaos.echo", json!({"message": "hi"})).await;
    assert_eq!(text_of(&echo), "hi");
}

/// Records the tool of every call it is given.
#[derive(Debug, Default)]
struct Names(Mutex<Vec<String>>);

impl CallRecorder for Names {
    fn record(
        &self,
        _call: &ToolCall,
        outcome: &CallOutcome,
        _definition: Option<&SchemaHash>,
        _wire_name: Option<&str>,
    ) {
        self.0.lock().unwrap().push(outcome.tool.clone());
    }
}

#[tokio::test]
async fn every_recorder_gets_every_call_and_two_hosts_share_one_engine() {
    let (first, second) = (Arc::new(Names::default()), Arc::new(Names::default()));
    let cache = tempfile::tempdir().unwrap();
    let host = HostBuilder::new()
        .compile_cache(Some(CompileCache::new(cache.path())))
        .recorder(first.clone())
        .recorder(second.clone())
        .plugin(spec("hello", "hello"))
        .build()
        .await
        .unwrap();
    call(&host, "hello/hello.greet", json!({"name": "a"})).await;
    call(&host, "nobody/x.y", json!({})).await;
    for names in [&first, &second] {
        assert_eq!(
            *names.0.lock().unwrap(),
            ["hello/hello.greet", "nobody/x.y"]
        );
    }

    // Another host on the same engine, with other plugins: each has its own.
    let other = HostBuilder::new()
        .engine(host.engine().clone())
        .plugin(hostile("normal"))
        .build()
        .await
        .unwrap();
    assert!(other.registry().get("hello/hello.greet").is_none());
    assert!(host.registry().get("hostile/chaos.echo").is_none());
    let echo = call(&other, "hostile/chaos.echo", json!({"message": "x"})).await;
    assert_eq!(text_of(&echo), "x");
    assert_eq!(first.0.lock().unwrap().len(), 2, "the other host's own");
}
