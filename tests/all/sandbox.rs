//! Deny by default: a plugin reaches only what its grants name, and the
//! sandbox itself (WASI preopens), not plugin code, enforces it. The hostile
//! plugin has no path checks of its own, so what it cannot reach, the
//! sandbox refused.

use std::path::Path;

use tiny_harness_host::{DirGrant, DirMode, PluginSpec};

use crate::common::{call, error_code, fs_over, host, hostile, json_of, text_of};

const SECRET: &str = "the secret outside every grant";

/// A temp dir holding `granted/` (with `inside.txt` and two symlinks that
/// point out of it) and `secret.txt` next to it.
fn layout() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let granted = root.path().join("granted");
    std::fs::create_dir(&granted).unwrap();
    std::fs::write(granted.join("inside.txt"), "inside\n").unwrap();
    std::fs::write(root.path().join("secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink("../secret.txt", granted.join("relative-link")).unwrap();
    std::os::unix::fs::symlink(
        root.path().join("secret.txt"),
        granted.join("absolute-link"),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.path(), granted.join("dir-link")).unwrap();
    root
}

fn hostile_over(dir: &Path, guest: &str, mode: DirMode) -> PluginSpec {
    let mut spec = hostile("normal");
    spec.grants
        .add_dir(DirGrant::new(dir, guest, mode).unwrap())
        .unwrap();
    spec
}

/// Every path a model might try to escape through, relative to the grant.
fn escapes(root: &Path) -> Vec<String> {
    vec![
        "../secret.txt".into(),
        "../../../../../../etc/passwd".into(),
        "/workspace/../secret.txt".into(),
        root.join("secret.txt").display().to_string(),
        "/etc/passwd".into(),
        "relative-link".into(),
        "absolute-link".into(),
        "dir-link/secret.txt".into(),
        "/workspace/relative-link".into(),
    ]
}

#[tokio::test]
async fn fs_tools_cannot_leave_their_grant() {
    let root = layout();
    let host = host(vec![fs_over(
        &root.path().join("granted"),
        DirMode::ReadOnly,
    )])
    .await;

    let inside = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "inside.txt"}),
    )
    .await;
    assert_eq!(text_of(&inside), "inside\n");

    for path in escapes(root.path()) {
        for tool in ["read_file", "stat"] {
            let outcome = call(
                &host,
                &format!("fs/workspace.{tool}"),
                serde_json::json!({ "path": path }),
            )
            .await;
            // `stat` describes a symlink itself (inside the grant) without
            // following it; anything else that succeeds escaped.
            let described_link = tool == "stat"
                && outcome.result.as_ref().is_ok_and(|r| !r.is_error)
                && json_of(&outcome)["type"] == "symlink";
            assert!(
                outcome.is_error() || described_link,
                "{tool} {path}: {:?}",
                outcome.result
            );
            if tool == "read_file" {
                assert_eq!(error_code(&outcome), "denied", "{tool} {path}");
            }
            let rendered = outcome.render();
            assert!(!rendered.contains(SECRET), "{tool} {path}: {rendered}");
            assert!(!rendered.contains("root:"), "{tool} {path}: {rendered}");
        }
    }
    let link = call(
        &host,
        "fs/workspace.stat",
        serde_json::json!({"path": "dir-link"}),
    )
    .await;
    assert_eq!(json_of(&link)["type"], "symlink");

    let listing = call(
        &host,
        "fs/workspace.list_dir",
        serde_json::json!({"path": ".."}),
    )
    .await;
    assert!(listing.is_error(), "{:?}", listing.result);
    assert!(!listing.render().contains("secret.txt"));

    let found = call(
        &host,
        "fs/workspace.search",
        serde_json::json!({"pattern": "secret", "path": "."}),
    )
    .await;
    assert_eq!(
        json_of(&found)["matches"],
        serde_json::json!([]),
        "symlinks are not followed"
    );
}

#[tokio::test]
async fn a_path_outside_every_grant_is_denied_not_missing() {
    let root = layout();
    let host = host(vec![fs_over(
        &root.path().join("granted"),
        DirMode::ReadWrite,
    )])
    .await;
    let outside = [
        "/etc/passwd".to_owned(),
        root.path().join("secret.txt").display().to_string(),
        // A sibling whose name merely begins with the grant's.
        "/workspace2/inside.txt".to_owned(),
    ];
    for path in &outside {
        for (tool, args) in [
            ("read_file", serde_json::json!({ "path": path })),
            ("stat", serde_json::json!({ "path": path })),
            ("list_dir", serde_json::json!({ "path": path })),
            (
                "write_file",
                serde_json::json!({ "path": path, "content": "x", "create_dirs": true }),
            ),
        ] {
            let outcome = call(&host, &format!("fs/workspace.{tool}"), args).await;
            assert_eq!(error_code(&outcome), "denied", "{tool} {path}");
            let message = outcome.result.as_ref().unwrap_err().to_string();
            assert!(
                message.contains("outside every directory granted")
                    && message.contains("/workspace"),
                "{tool} {path}: {message}"
            );
        }
    }
    // A missing file inside the grant stays an ordinary error result.
    for path in ["missing.txt", "/workspace/missing.txt"] {
        let outcome = call(
            &host,
            "fs/workspace.read_file",
            serde_json::json!({ "path": path }),
        )
        .await;
        let result = outcome.result.as_ref().unwrap();
        assert!(result.is_error, "{path}: {result:?}");
        assert!(text_of(&outcome).contains("No such file"), "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(root.path().join("secret.txt")).unwrap(),
        SECRET
    );
}

#[tokio::test]
async fn the_sandbox_refuses_escapes_even_without_plugin_checks() {
    let root = layout();
    let host = host(vec![hostile_over(
        &root.path().join("granted"),
        "/workspace",
        DirMode::ReadOnly,
    )])
    .await;
    let ok = call(
        &host,
        "hostile/chaos.read_path",
        serde_json::json!({"path": "/workspace/inside.txt"}),
    )
    .await;
    assert_eq!(text_of(&ok), "inside\n");

    let mut paths: Vec<String> = escapes(root.path())
        .into_iter()
        .map(|p| {
            if p.starts_with('/') {
                p
            } else {
                format!("/workspace/{p}")
            }
        })
        .collect();
    paths.push("/proc/self/environ".into());
    for path in paths {
        let outcome = call(
            &host,
            "hostile/chaos.read_path",
            serde_json::json!({ "path": path }),
        )
        .await;
        let result = outcome.result.as_ref().unwrap();
        assert!(result.is_error, "{path}: {result:?}");
        let rendered = outcome.render();
        assert!(!rendered.contains(SECRET), "{path}: {rendered}");
    }
}

#[tokio::test]
async fn a_plugin_without_grants_sees_no_files() {
    let root = layout();
    let host = host(vec![hostile("normal")]).await;
    for path in [
        root.path().join("secret.txt").display().to_string(),
        "/etc/passwd".into(),
        ".".into(),
        "secret.txt".into(),
    ] {
        let outcome = call(
            &host,
            "hostile/chaos.read_path",
            serde_json::json!({ "path": path }),
        )
        .await;
        assert!(outcome.result.as_ref().unwrap().is_error, "{path}");
        assert!(!outcome.render().contains(SECRET));
    }
}

#[tokio::test]
async fn a_read_only_grant_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "original").unwrap();
    let host = host(vec![fs_over(dir.path(), DirMode::ReadOnly)]).await;

    for path in ["keep.txt", "new.txt", "sub/new.txt"] {
        let outcome = call(
            &host,
            "fs/workspace.write_file",
            serde_json::json!({"path": path, "content": "overwritten", "create_dirs": true}),
        )
        .await;
        assert_eq!(
            error_code(&outcome),
            "denied",
            "{path}: {:?}",
            outcome.result
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "original"
    );
    assert!(!dir.path().join("new.txt").exists());
    assert!(!dir.path().join("sub").exists());

    // The sandbox, not the fs plugin, refuses: hostile has no policy at all.
    let host = host_recording(dir.path(), DirMode::ReadOnly).await;
    let outcome = call(
        &host,
        "hostile/chaos.record",
        serde_json::json!({"message": "x"}),
    )
    .await;
    assert!(outcome.result.as_ref().unwrap().is_error);
    assert!(!dir.path().join("calls.log").exists());
}

async fn host_recording(dir: &Path, mode: DirMode) -> tiny_harness_host::Host {
    host(vec![hostile_over(dir, "/state", mode)]).await
}

#[tokio::test]
async fn a_read_write_grant_allows_writes_inside_it_only() {
    let root = layout();
    let granted = root.path().join("granted");
    let host = host(vec![fs_over(&granted, DirMode::ReadWrite)]).await;

    let outcome = call(
        &host,
        "fs/workspace.write_file",
        serde_json::json!({"path": "out/new.txt", "content": "written\n", "create_dirs": true}),
    )
    .await;
    assert!(!outcome.is_error(), "{:?}", outcome.result);
    assert_eq!(
        std::fs::read_to_string(granted.join("out/new.txt")).unwrap(),
        "written\n"
    );

    for path in ["../escaped.txt", "relative-link", "dir-link/escaped.txt"] {
        let outcome = call(
            &host,
            "fs/workspace.write_file",
            serde_json::json!({"path": path, "content": "escaped"}),
        )
        .await;
        assert!(outcome.is_error(), "{path}: {:?}", outcome.result);
    }
    assert_eq!(
        std::fs::read_to_string(root.path().join("secret.txt")).unwrap(),
        SECRET
    );
    assert!(!root.path().join("escaped.txt").exists());

    let host = host_recording(root.path(), DirMode::ReadWrite).await;
    let outcome = call(
        &host,
        "hostile/chaos.record",
        serde_json::json!({"message": "x"}),
    )
    .await;
    assert_eq!(text_of(&outcome), "recorded");
    assert_eq!(
        std::fs::read_to_string(root.path().join("calls.log")).unwrap(),
        "x\n"
    );
}

#[tokio::test]
async fn environment_variables_are_granted_by_name() {
    let host_path = std::env::var("PATH").expect("PATH is set for tests");

    let host_none = host(vec![hostile("normal")]).await;
    let env = json_of(&call(&host_none, "hostile/chaos.env", serde_json::json!({})).await);
    assert_eq!(env, serde_json::json!({}), "no grant, no variables");

    let mut spec = hostile("normal");
    spec.grants
        .add_env("PATH")
        .unwrap()
        .add_env("TINY_HARNESS_SURELY_UNSET_VAR")
        .unwrap();
    let host_some = host(vec![spec]).await;
    let env = json_of(&call(&host_some, "hostile/chaos.env", serde_json::json!({})).await);
    assert_eq!(env, serde_json::json!({ "PATH": host_path }));
}

#[tokio::test]
async fn sockets_are_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let host = host(vec![hostile("normal")]).await;

    for target in [addr.as_str(), "localhost:80", "example.com:443"] {
        let outcome = call(
            &host,
            "hostile/chaos.connect",
            serde_json::json!({ "addr": target }),
        )
        .await;
        let result = outcome.result.as_ref().unwrap();
        assert!(result.is_error, "{target}: {result:?}");
        assert!(!text_of(&outcome).contains("connected"), "{target}");
    }
    assert!(
        listener.accept().is_err(),
        "the listener must not have received a connection"
    );
}
