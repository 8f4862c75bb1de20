//! Confinement of the programs `run` starts: the kernel holds them to the
//! plugin's grants (reading outside them, writing outside the read-write
//! ones and connecting without a `net` grant all fail). Each test runs the
//! same program unconfined as well, to show that what it asserts can fail.

use std::path::Path;

use serde_json::json;
use tiny_harness_host::{DirMode, PluginSpec};
use tiny_harness_sandbox::confine::Mode;

use super::{failed, grant_dir, ok, run, sh, shell, still_works};
use crate::common::host;

#[tokio::test]
async fn a_confined_program_cannot_read_outside_the_grants() {
    let secret = tempfile::tempdir().unwrap();
    let canary = secret.path().join("canary");
    std::fs::write(&canary, "the-canary-secret").unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut spec = shell(&["sh"], json!({}));
    grant_dir(&mut spec, work.path(), "/workspace", DirMode::ReadWrite);
    let arguments = sh(&format!("cat {}", canary.display()));

    let confined = host(vec![spec.clone()]).await;
    let outcome = run(&confined, arguments.clone()).await;
    let data = failed(&outcome);
    assert!(
        data["stderr"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{data}"
    );
    assert!(!data.to_string().contains("the-canary-secret"), "{data}");
    still_works(&confined).await;

    spec.grants.confinement = Mode::None;
    let unconfined = host(vec![spec]).await;
    assert_eq!(
        ok(&run(&unconfined, arguments).await)["stdout"],
        "the-canary-secret"
    );
}

#[tokio::test]
async fn a_confined_program_writes_only_inside_read_write_grants() {
    let rw = tempfile::tempdir().unwrap();
    let ro = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(ro.path().join("readme"), "read-only content").unwrap();
    let mut spec = shell(&["sh"], json!({}));
    let rw_host = grant_dir(&mut spec, rw.path(), "/workspace", DirMode::ReadWrite);
    let ro_host = grant_dir(&mut spec, ro.path(), "/data", DirMode::ReadOnly);
    let host_of = |spec: &PluginSpec| host(vec![spec.clone()]);
    let confined = host_of(&spec).await;

    let mut inside = sh("echo inside > inside.txt");
    inside["cwd"] = "/workspace".into();
    ok(&run(&confined, inside).await);
    assert_eq!(
        std::fs::read_to_string(rw_host.join("inside.txt")).unwrap(),
        "inside\n"
    );
    let read = run(&confined, sh(&format!("cat {}/readme", ro_host.display()))).await;
    assert_eq!(ok(&read)["stdout"], "read-only content");

    let write_to = |dir: &Path| sh(&format!("echo written > {}/new", dir.display()));
    for dir in [ro_host.as_path(), outside.path()] {
        let data = failed(&run(&confined, write_to(dir)).await);
        assert!(
            data["stderr"]
                .as_str()
                .unwrap()
                .contains("Permission denied"),
            "{}: {data}",
            dir.display()
        );
        assert!(!dir.join("new").exists(), "{} was written", dir.display());
        still_works(&confined).await;
    }

    spec.grants.confinement = Mode::None;
    let unconfined = host_of(&spec).await;
    ok(&run(&unconfined, write_to(outside.path())).await);
    assert!(outside.path().join("new").exists());
}

#[tokio::test]
async fn a_confined_program_cannot_connect_without_a_net_grant() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "import socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n\
         except OSError as e:\n    print('refused:', e)\n    raise SystemExit(1)\n\
         print('connected')\n"
    );
    let arguments = json!({"program": "/usr/bin/python3", "args": ["-c", script]});
    let mut spec = shell(&["/usr/bin/python3"], json!({}));

    let confined = host(vec![spec.clone()]).await;
    let outcome = run(&confined, arguments.clone()).await;
    let data = failed(&outcome);
    assert!(
        data["stdout"].as_str().unwrap().starts_with("refused:"),
        "{data}"
    );
    assert!(
        listener.accept().is_err(),
        "the listener must not have received a connection"
    );
    still_works(&confined).await;

    spec.grants.confinement = Mode::None;
    let unconfined = host(vec![spec]).await;
    assert_eq!(
        ok(&run(&unconfined, arguments).await)["stdout"],
        "connected\n"
    );
    assert!(
        listener.accept().is_ok(),
        "the unconfined program connected"
    );
}

/// The programs people grant most (git in a read-only repository,
/// python3, node, npm) run confined with no grant beyond the program: the
/// home they get is their private directory, not the host's unreadable
/// one, which git and npm would fail on.
#[tokio::test]
async fn common_programs_run_confined_with_no_extra_grant() {
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let done = std::process::Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(done.status.success(), "git {args:?}: {done:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(repo.path().join("file"), "text").unwrap();
    let mut spec = shell(&["git", "/usr/bin/python3", "node", "npm"], json!({}));
    grant_dir(&mut spec, repo.path(), "/repo", DirMode::ReadOnly);
    let host = host(vec![spec]).await;
    let status = run(
        &host,
        json!({"program": "git", "args": ["status", "--porcelain"], "cwd": "/repo"}),
    )
    .await;
    assert_eq!(ok(&status)["stdout"], "?? file\n");
    let python = run(
        &host,
        json!({"program": "/usr/bin/python3", "args": ["-c",
            "import json, os, ssl, sqlite3, tempfile; print(os.environ['HOME'] == tempfile.gettempdir())"]}),
    )
    .await;
    assert_eq!(ok(&python)["stdout"], "True\n");
    let node = run(
        &host,
        json!({"program": "node", "args": ["-e", "console.log(require('os').homedir().length > 1)"]}),
    )
    .await;
    assert_eq!(ok(&node)["stdout"], "true\n");
    let npm = run(&host, json!({"program": "npm", "args": ["--version"]})).await;
    let version = ok(&npm)["stdout"].as_str().unwrap().to_owned();
    assert!(version.trim().split('.').count() == 3, "{version}");
}
