//! `tiny-harness mcp install` of PyPI servers as `uvx` starts them
//! (mcp-server-time), with uv on the machine and without it: installed
//! once by pip, then run from the store, confined.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use super::install::{lock, text};
use super::{npm, stdout};

/// `tests/mcp/.uv/bin`, holding PyPI's uv (for its `uvx`), installed first
/// if it is missing.
fn uv_bin() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let venv = npm::servers_dir().join(".uv");
            let uvx = venv.join("bin/uvx");
            tiny_harness_prereq::once(
                &npm::servers_dir(),
                "uv",
                || uvx.is_file(),
                || {
                    super::venv::install_into(
                        &venv,
                        &npm::servers_dir().join("uv-requirements.txt"),
                    )
                },
            );
            venv.join("bin")
        })
        .clone()
}

/// `tiny-harness ARGS` in `dir`, with exactly `path` as `PATH`.
fn tiny_harness(
    dir: &std::path::Path,
    path: &std::ffi::OsStr,
    args: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn a_pypi_server_as_uvx_starts_it_is_installed_and_runs_confined() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        uv_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| tiny_harness(dir.path(), path.as_ref(), args);
    let add = run(&[
        "mcp",
        "add",
        "time",
        "--",
        "uvx",
        "mcp-server-time==2026.10.19",
        "--local-timezone",
        "UTC",
    ]);
    assert_eq!(add.status.code(), Some(0), "{}", text(&add));
    let install = run(&["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    assert!(
        stdout(&install).contains("pypi mcp-server-time 2026.10.19 (sha256:"),
        "{}",
        text(&install)
    );
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["time"]["code"];
    assert!(
        code["dependencies"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("mcp@")),
        "{code}"
    );
    let now = run(&["call", "mcp/time.get_current_time", r#"{"timezone":"UTC"}"#]);
    assert_eq!(now.status.code(), Some(0), "{}", text(&now));
    assert!(
        stdout(&now).contains("\"timezone\":\"UTC\""),
        "{}",
        text(&now)
    );
}

#[test]
fn a_pasted_uvx_server_installs_and_runs_on_a_machine_without_uv() {
    let dir = tempfile::tempdir().unwrap();
    // A PATH with python3 (pip installs the server) and no uv, whatever
    // this machine has.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", bin.join("python3")).unwrap();
    let claude = serde_json::json!({"mcpServers": {"time": {
        "command": "uvx", "args": ["mcp-server-time==2026.10.19", "--local-timezone", "UTC"],
    }}});
    std::fs::write(dir.path().join("claude.json"), claude.to_string()).unwrap();
    let run = |args: &[&str]| tiny_harness(dir.path(), bin.as_ref(), args);
    // `mcp add` takes it too, with the advice to install it.
    let added = run(&[
        "--config",
        "added.toml",
        "mcp",
        "add",
        "time",
        "--",
        "uvx",
        "mcp-server-time==2026.10.19",
    ]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added));
    assert!(text(&added).contains("mcp install"), "{}", text(&added));
    let written = std::fs::read_to_string(dir.path().join("added.toml")).unwrap();
    assert!(written.contains("{ program = \"uvx\" }"), "{written}");

    let block = run(&["mcp", "import", "claude.json"]);
    assert_eq!(block.status.code(), Some(0), "{}", text(&block));
    std::fs::write(dir.path().join("tiny-harness.toml"), &block.stdout).unwrap();

    // Before: the config loads; the server says what to run.
    let before = run(&["call", "mcp/time.get_current_time", r#"{"timezone":"UTC"}"#]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    assert!(
        stdout(&before).contains("run tiny-harness mcp install time"),
        "{}",
        text(&before)
    );
    let plugins = stdout(&run(&["plugins"]));
    assert!(
        plugins.contains("exec unusable here: uvx (tiny-harness.toml:")
            && plugins.contains("program \"uvx\" was not found on PATH"),
        "{plugins}"
    );

    let install = run(&["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    assert!(
        stdout(&install).contains("mcp/time: pypi mcp-server-time 2026.10.19 (sha256:"),
        "{}",
        text(&install)
    );
    // After: from its install, confined; uvx, which would not run
    // confined anyway, is not needed.
    let now = run(&["call", "mcp/time.get_current_time", r#"{"timezone":"UTC"}"#]);
    assert_eq!(now.status.code(), Some(0), "{}", text(&now));
    assert!(
        stdout(&now).contains("\"timezone\":\"UTC\""),
        "{}",
        text(&now)
    );
}

/// Rewrites the install manifest's own `tree` to what the install at
/// `dir` holds now: what someone who changed the installed files would do
/// to hide it from a check of the install against itself.
fn hide_in_manifest(dir: &std::path::Path) {
    let path = dir.join(tiny_harness_mcp::store::MANIFEST);
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["tree"] = tiny_harness_mcp::store::tree_hash(dir).unwrap().into();
    std::fs::write(&path, manifest.to_string()).unwrap();
}

#[test]
fn locked_holds_a_pypi_install_to_the_wheels_the_lock_pins_not_to_itself() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // python3 (pip installs the server) and nothing else of this machine.
    let bin = first.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", bin.join("python3")).unwrap();
    let run = |dir: &std::path::Path, args: &[&str]| tiny_harness(dir, bin.as_ref(), args);
    let time = [
        "mcp",
        "add",
        "time",
        "--",
        "uvx",
        "mcp-server-time==2026.10.19",
    ];
    for dir in [first.path(), second.path()] {
        let added = run(dir, &time);
        assert_eq!(added.status.code(), Some(0), "{}", text(&added));
    }
    let install = run(first.path(), &["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    let pinned = lock(first.path())["plugins"]["mcp"]["servers"]["time"]["code"]["tree"]
        .as_str()
        .unwrap()
        .to_owned();
    let installed = first.path().join("tiny-harness.store/mcp/time");
    let site = std::fs::read_dir(installed.join("venv/lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    // The venv holds the server's packages and no package manager.
    let packages: Vec<String> = std::fs::read_dir(&site)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        packages.iter().any(|p| p.starts_with("mcp_server_time"))
            && !packages
                .iter()
                .any(|p| p.starts_with("pip") || p.starts_with("setuptools")),
        "{packages:?}"
    );
    // The tree does not depend on where the install is: the same lock
    // installs in another directory under --locked.
    std::fs::copy(
        first.path().join("tiny-harness.lock"),
        second.path().join("tiny-harness.lock"),
    )
    .unwrap();
    let elsewhere = run(second.path(), &["--locked", "mcp", "install"]);
    assert_eq!(elsewhere.status.code(), Some(0), "{}", text(&elsewhere));
    let call = [
        "--locked",
        "call",
        "mcp/time.get_current_time",
        r#"{"timezone":"UTC"}"#,
    ];
    let works = |why: &str| {
        let now = run(first.path(), &call);
        assert_eq!(now.status.code(), Some(0), "{why}: {}", text(&now));
        assert!(
            stdout(&now).contains("\"timezone\":\"UTC\""),
            "{why}: {}",
            text(&now)
        );
    };
    let refused = |said: &str| {
        let now = run(first.path(), &call);
        assert!(stdout(&now).contains(said), "{}", text(&now));
        assert!(
            !stdout(&now).contains("\"timezone\":\"UTC\""),
            "{}",
            text(&now)
        );
    };
    // The first call pins the plugin and the server's tools.
    let pinned_tools = run(first.path(), &call[1..]);
    assert_eq!(
        pinned_tools.status.code(),
        Some(0),
        "{}",
        text(&pinned_tools)
    );
    works("as installed");

    // A changed source, hidden in the manifest: the lock's tree finds it.
    let server = site.join("mcp_server_time/server.py");
    let original = std::fs::read(&server).unwrap();
    let mut changed = original.clone();
    changed.extend_from_slice(b"\nraise SystemExit('TAMPERED')\n");
    std::fs::write(&server, &changed).unwrap();
    hide_in_manifest(&installed);
    refused(&format!("the lock pins {}", &pinned[..12]));
    std::fs::write(&server, &original).unwrap();

    // A .pth file (run at every start of Python) that no wheel brought.
    std::fs::write(site.join("zz.pth"), "import os\n").unwrap();
    hide_in_manifest(&installed);
    refused(&format!("the lock pins {}", &pinned[..12]));
    std::fs::remove_file(site.join("zz.pth")).unwrap();

    // Bytecode made to pass for the pinned source (its size and time in
    // the header): a --locked start loads none of the install's bytecode.
    let planted = Command::new(installed.join("venv/bin/python"))
        .arg("-c")
        .arg(
            "import importlib.util, marshal, os, struct, sys\n\
             src = sys.argv[1]\n\
             st = os.stat(src)\n\
             code = compile(\"raise SystemExit('TAMPERED')\", src, 'exec')\n\
             head = importlib.util.MAGIC_NUMBER + struct.pack('<III', 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)\n\
             os.makedirs(os.path.dirname(importlib.util.cache_from_source(src)), exist_ok=True)\n\
             open(importlib.util.cache_from_source(src), 'wb').write(head + marshal.dumps(code))\n",
        )
        .arg(&server)
        .status()
        .unwrap();
    assert!(planted.success());
    hide_in_manifest(&installed);
    works("with planted bytecode");

    // Another interpreter behind the venv's python.
    let python = installed.join("venv/bin/python");
    std::fs::remove_file(&python).unwrap();
    std::os::unix::fs::symlink("/bin/sh", &python).unwrap();
    hide_in_manifest(&installed);
    refused("its python is");
}
