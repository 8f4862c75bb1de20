//! `tiny-harness mcp install`, with the real registries: npm's
//! server-everything and server-filesystem as a desktop assistant's config
//! starts them (`npx -y`), each installed once and then run from the store,
//! confined; installs that fail or never end. PyPI's servers are in
//! `install_pypi.rs`.

use std::path::Path;
use std::process::{Command, Output};

use super::{one_error_line, run_in, stderr, stdout, wait_live_for};

pub(super) fn text(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

/// What is left in the store of the config in `dir` (its `mcp` plugin's
/// directory): nothing, after any refused install.
pub(super) fn left_in_store(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("tiny-harness.store/mcp"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

/// The lock of `dir`'s `tiny-harness.toml`, as JSON.
pub(super) fn lock(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("tiny-harness.lock")).expect("a lock");
    serde_json::from_str(&text).unwrap()
}

fn call(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    run_in(dir, &all, None)
}

/// The config a desktop assistant's `npx -y PACKAGE` entry imports to.
fn imported(dir: &Path, package: &str) {
    let claude = serde_json::json!({"mcpServers": {"everything": {
        "command": "npx", "args": ["-y", package],
    }}});
    std::fs::write(dir.join("claude.json"), claude.to_string()).unwrap();
    let block = run_in(dir, &["mcp", "import", "claude.json"], None);
    assert_eq!(block.status.code(), Some(0), "{}", text(&block));
    std::fs::write(dir.join("tiny-harness.toml"), &block.stdout).unwrap();
}

#[test]
fn a_pasted_npx_config_runs_confined_after_mcp_install_and_its_code_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    imported(
        dir.path(),
        "@modelcontextprotocol/server-everything@2026.8.31",
    );
    let echo = ["mcp/everything.echo", r#"{"message":"installed"}"#];

    // Before: at once, an answer that says what to run.
    let before = call(dir.path(), &echo);
    assert_eq!(before.status.code(), Some(1));
    assert!(
        stdout(&before).contains("unavailable")
            && stdout(&before).contains("tiny-harness mcp install everything"),
        "{}",
        text(&before)
    );

    let install = run_in(dir.path(), &["mcp", "install"], None);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    assert!(
        stdout(&install).contains("server-everything 2026.8.31")
            && stdout(&install).contains("pinned in the lock"),
        "{}",
        text(&install)
    );
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["everything"]["code"];
    assert_eq!(code["package"], "@modelcontextprotocol/server-everything");
    assert_eq!(code["version"], "2026.8.31");
    assert!(
        code["integrity"].as_str().unwrap().starts_with("sha512-"),
        "{code}"
    );
    assert!(
        code["dependencies"].as_object().unwrap().len() > 10,
        "{code}"
    );
    // Nothing half-made is left beside the install.
    let beside: Vec<String> = std::fs::read_dir(dir.path().join("tiny-harness.store/mcp"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside, ["everything"]);

    // After: from the store, confined, with no network.
    let after = call(dir.path(), &echo);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
    assert!(
        stdout(&after).contains("Echo: installed"),
        "{}",
        text(&after)
    );
    let plugins = stdout(&run_in(dir.path(), &["plugins"], None));
    assert!(
        plugins.contains("tiny-harness.store/mcp/everything/node_modules")
            && plugins.contains("landlock"),
        "{plugins}"
    );
    let locked = run_in(dir.path(), &["--locked", "call", echo[0], echo[1]], None);
    assert_eq!(locked.status.code(), Some(0), "{}", text(&locked));

    // One installed file changed: --locked refuses it, pins diff shows it,
    // and mcp install puts back what the lock records.
    let entry = dir
        .path()
        .join("tiny-harness.store/mcp/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut js = std::fs::read_to_string(&entry).unwrap();
    js.push_str("\n// tampered\n");
    std::fs::write(&entry, js).unwrap();
    let refused = run_in(dir.path(), &["--locked", "call", echo[0], echo[1]], None);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stdout(&refused).contains("were changed since it was installed"),
        "{}",
        text(&refused)
    );
    // Without --locked too: what each file's status says is checked at
    // every start, and the changed code is not run.
    let plain = call(dir.path(), &echo);
    assert_eq!(plain.status.code(), Some(1), "{}", text(&plain));
    assert!(
        stdout(&plain).contains("were changed since it was installed")
            && stdout(&plain).contains("run tiny-harness mcp install everything")
            && !stdout(&plain).contains("Echo: installed"),
        "{}",
        text(&plain)
    );
    // Said once, not retried, with no hint at a grant: nothing ran.
    assert!(
        !stdout(&plain).contains("attempts") && !stdout(&plain).contains("mcp doctor"),
        "{}",
        text(&plain)
    );
    let plugins = stdout(&run_in(dir.path(), &["plugins"], None));
    assert!(
        plugins.contains("failed: the installed files of everything")
            && plugins.contains("dist/index.js is not as the install left it"),
        "{plugins}"
    );
    let diff = run_in(dir.path(), &["pins", "diff"], None);
    assert_eq!(diff.status.code(), Some(1), "{}", text(&diff));
    assert!(
        stdout(&diff).contains("mcp/everything (code):") && stdout(&diff).contains("were changed"),
        "{}",
        text(&diff)
    );
    let again = run_in(dir.path(), &["mcp", "install"], None);
    assert!(
        stdout(&again).contains("installed, as the lock records"),
        "{}",
        text(&again)
    );
    assert!(
        !std::fs::read_to_string(&entry)
            .unwrap()
            .contains("tampered")
    );
    let locked = run_in(dir.path(), &["--locked", "call", echo[0], echo[1]], None);
    assert_eq!(locked.status.code(), Some(0), "{}", text(&locked));

    // The lock pins the installed files' tree, and --locked holds them to
    // it, not to what the store says of itself: a changed file whose
    // store was rewritten to match (its manifest and its record) is
    // still refused.
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["everything"]["code"];
    let pinned = code["tree"].as_str().unwrap_or_default().to_owned();
    assert!(
        pinned.len() == 64 && pinned.bytes().all(|b| b.is_ascii_hexdigit()),
        "{code}"
    );
    let install = dir.path().join("tiny-harness.store/mcp/everything");
    let mut js = std::fs::read_to_string(&entry).unwrap();
    js.push_str("\n// tampered, and the store rewritten to match\n");
    std::fs::write(&entry, js).unwrap();
    let manifest_path = install.join("install.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["tree"] = tiny_harness_mcp::store::tree_hash(&install).unwrap().into();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let record = tiny_harness_mcp::store::stat_record(&install)
        .unwrap()
        .unwrap();
    std::fs::write(install.join(tiny_harness_mcp::store::STAT_FILE), record).unwrap();
    let refused = run_in(dir.path(), &["--locked", "call", echo[0], echo[1]], None);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        stdout(&refused).contains("were changed since it was installed")
            && stdout(&refused).contains(&format!("the lock pins {}", &pinned[..12]))
            && !stdout(&refused).contains("Echo: installed"),
        "{}",
        text(&refused)
    );
    // With the tree its code records rewritten too, the install is not
    // the code the lock records, with or without --locked.
    manifest["code"]["tree"] = manifest["tree"].clone();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    for args in [&["call"][..], &["--locked", "call"][..]] {
        let all: Vec<&str> = args.iter().copied().chain(echo).collect();
        let refused = run_in(dir.path(), &all, None);
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        assert!(
            stdout(&refused).contains("its installed code is not the code the lock records")
                && stdout(&refused).contains("installed files (tree sha256"),
            "{}",
            text(&refused)
        );
    }

    // A lock written before trees were kept: --locked cannot hold the
    // files to it and says what to run; a run without it records the tree.
    let again = run_in(dir.path(), &["mcp", "install"], None);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let lock_path = dir.path().join("tiny-harness.lock");
    let mut old = lock(dir.path());
    old["plugins"]["mcp"]["servers"]["everything"]["code"]
        .as_object_mut()
        .unwrap()
        .remove("tree");
    std::fs::write(&lock_path, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let refused = run_in(dir.path(), &["--locked", "call", echo[0], echo[1]], None);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        stdout(&refused).contains("the lock records no tree of the installed files")
            && stdout(&refused).contains("without --locked to record it"),
        "{}",
        text(&refused)
    );
    let plain = call(dir.path(), &echo);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["everything"]["code"];
    assert_eq!(code["tree"].as_str(), Some(pinned.as_str()), "{code}");
}

#[test]
fn the_filesystem_server_is_installed_upgraded_only_when_asked_and_reads_only_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("inside.txt"), "granted words").unwrap();
    std::fs::write(dir.path().join("canary.txt"), "CANARY-NEVER-READ").unwrap();
    let root = root.canonicalize().unwrap();
    let root_arg = root.display().to_string();
    let add = run_in(
        dir.path(),
        &[
            "mcp",
            "add",
            "files",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem@2026.7.10",
            &root_arg,
        ],
        None,
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add));
    let install = run_in(dir.path(), &["mcp", "install", "files"], None);
    assert!(
        stdout(&install).contains("server-filesystem 2026.7.10"),
        "{}",
        text(&install)
    );

    let read = |path: &Path| {
        let arguments = serde_json::json!({ "path": path }).to_string();
        text(&call(dir.path(), &["mcp/files.read_text_file", &arguments]))
    };
    assert!(read(&root.join("inside.txt")).contains("granted words"));
    assert!(
        !read(&dir.path().canonicalize().unwrap().join("canary.txt")).contains("CANARY-NEVER-READ")
    );

    // The config no longer names a version: the lock's stays.
    let config = dir.path().join("tiny-harness.toml");
    let text_of = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text_of.replace("@2026.7.10", "")).unwrap();
    let install = run_in(dir.path(), &["mcp", "install"], None);
    assert!(
        stdout(&install).contains("2026.7.10 (")
            && stdout(&install).contains("installed already, as the lock records"),
        "{}",
        text(&install)
    );
    // --upgrade is the one way it moves, and says how.
    let upgrade = run_in(dir.path(), &["mcp", "install", "--upgrade", "files"], None);
    assert_eq!(upgrade.status.code(), Some(0), "{}", text(&upgrade));
    assert!(
        stdout(&upgrade)
            .contains("upgraded: @modelcontextprotocol/server-filesystem 2026.7.10 -> "),
        "{}",
        text(&upgrade)
    );
    let version = lock(dir.path())["plugins"]["mcp"]["servers"]["files"]["code"]["version"].clone();
    assert_ne!(version, "2026.7.10");
    assert!(read(&root.join("inside.txt")).contains("granted words"));
    // A config that asks for another exact version than the lock's.
    std::fs::write(&config, text_of).unwrap();
    let refused = read(&root.join("inside.txt"));
    assert!(
        refused.contains("the config asks for version 2026.7.10"),
        "{refused}"
    );
}

#[test]
fn bad_installs_are_one_line_errors_that_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    imported(dir.path(), "@tiny-harness-tests/no-such-package-exists");
    let missing = run_in(dir.path(), &["mcp", "install"], None);
    // Nothing could be installed: exit 1, the server named with why, on
    // its own line and in the one-line error that ends the run.
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(
        stdout(&missing).lines().any(|l| l
            .starts_with("mcp/everything: not installed: npm install")
            && l.contains("404")),
        "{}",
        text(&missing)
    );
    let error = stderr(&missing);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with(
            "tiny-harness: error: 1 of 1 server not installed: mcp/everything (npm install"
        ) && error.contains("404"),
        "{error}"
    );
    let left = left_in_store(dir.path());
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        !dir.path().join("tiny-harness.lock").exists()
            || lock(dir.path())["plugins"]["mcp"]["servers"]["everything"]["code"].is_null()
    );

    let ghost = run_in(dir.path(), &["mcp", "install", "ghost"], None);
    one_error_line(&ghost, &["has no server ghost", "mcp/everything"]);

    // A registry that cannot be reached.
    let unreachable = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["mcp", "install"])
        .current_dir(dir.path())
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .output()
        .unwrap();
    assert_eq!(unreachable.status.code(), Some(1), "{}", text(&unreachable));
    assert!(
        stderr(&unreachable).contains("not installed: mcp/everything (npm install"),
        "{}",
        text(&unreachable)
    );

    // Installed code for a server the config no longer has goes.
    imported(
        dir.path(),
        "@modelcontextprotocol/server-everything@2026.8.31",
    );
    assert_eq!(
        run_in(dir.path(), &["mcp", "install"], None).status.code(),
        Some(0)
    );
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        "[plugins.mcp]\npath = \"builtin:mcp\"\n",
    )
    .unwrap();
    let gone = run_in(dir.path(), &["mcp", "install"], None);
    assert!(
        stdout(&gone).contains("mcp/everything: no longer in the config"),
        "{}",
        text(&gone)
    );
    assert!(lock(dir.path())["plugins"]["mcp"]["servers"]["everything"]["code"].is_null());
    assert!(
        !dir.path()
            .join("tiny-harness.store/mcp/everything")
            .exists()
    );
}

/// A config of two `npx -y` servers: server-everything, and a package
/// the registry does not have.
fn one_good_one_missing(dir: &Path) {
    let claude = serde_json::json!({"mcpServers": {
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]},
        "broken": {"command": "npx", "args": ["-y", "@tiny-harness-tests/no-such-package-exists"]},
    }});
    std::fs::write(dir.join("claude.json"), claude.to_string()).unwrap();
    let block = run_in(dir, &["mcp", "import", "claude.json"], None);
    assert_eq!(block.status.code(), Some(0), "{}", text(&block));
    std::fs::write(dir.join("tiny-harness.toml"), &block.stdout).unwrap();
}

#[test]
fn a_server_that_cannot_be_installed_is_skipped_and_named_and_the_others_are_installed() {
    let dir = tempfile::tempdir().unwrap();
    one_good_one_missing(dir.path());
    let install = run_in(dir.path(), &["mcp", "install"], None);
    // One installed: exit 0, each server said as it starts and as it
    // ends, with how long it took, and the skipped one named at the end.
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    let out = stdout(&install);
    let lines: Vec<&str> = out.lines().collect();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in {out}"))
    };
    assert!(
        at("mcp/broken: installing npm @tiny-harness-tests/no-such-package-exists")
            < at("mcp/broken: not installed: npm install")
    );
    assert!(
        at("mcp/everything: installing npm @modelcontextprotocol/server-everything@2026.8.31")
            < at("mcp/everything: npm @modelcontextprotocol/server-everything 2026.8.31")
    );
    let done = lines[at("mcp/everything: npm")];
    assert!(
        done.contains("installed, pinned in the lock (") && done.ends_with(" s)"),
        "{done}"
    );
    assert!(
        stderr(&install).starts_with(
            "tiny-harness: warning: 1 of 2 servers not installed: mcp/broken (npm install"
        ),
        "{}",
        text(&install)
    );
    assert!(!lock(dir.path())["plugins"]["mcp"]["servers"]["everything"]["code"].is_null());
    let echo = call(
        dir.path(),
        &["mcp/everything.echo", r#"{"message":"skipped one"}"#],
    );
    assert_eq!(echo.status.code(), Some(0), "{}", text(&echo));

    // Under --locked, a server it cannot install is a failure.
    let locked = run_in(dir.path(), &["--locked", "mcp", "install"], None);
    assert_eq!(locked.status.code(), Some(1), "{}", text(&locked));
    assert!(
        stdout(&locked).contains("mcp/everything: npm @modelcontextprotocol/server-everything 2026.8.31")
            && stdout(&locked).contains("installed already, as the lock records")
            && stderr(&locked).starts_with("tiny-harness: error: 1 of 2 servers not installed: mcp/broken (its code is not in the lock, and --locked records nothing new"),
        "{}",
        text(&locked)
    );
}

#[test]
fn an_install_from_a_registry_that_never_answers_ends_at_its_limit_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    imported(
        dir.path(),
        "@modelcontextprotocol/server-everything@2026.8.31",
    );
    // Takes every connection and never says a word.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["mcp", "install", "--timeout", "3"])
        .current_dir(dir.path())
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .env("npm_config_registry", &registry)
        // A cache of its own: the package must come from the registry.
        .env("npm_config_cache", dir.path().join("npm-cache"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ended = wait_live_for(child, std::time::Duration::from_secs(30), "mcp install");
    assert_eq!(ended.status.code(), Some(1), "{}", text(&ended));
    let error = stderr(&ended);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.contains("mcp/everything")
            && error.contains(&format!("is the registry {registry} answering?"))
            && error.contains("within the install's limit of 3 s")
            && error.contains("mcp install --timeout SECS"),
        "{error}"
    );
    let left = left_in_store(dir.path());
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!dir.path().join("tiny-harness.lock").exists());

    // On a terminal, a live line says what it is installing and for how
    // long, redrawn in place, then gives way to the line that ends it.
    let cache = dir.path().join("npm-cache").display().to_string();
    let seen = super::terminal::in_terminal_with(
        dir.path(),
        &["mcp", "install", "--timeout", "2"],
        &[
            ("npm_config_registry", &registry),
            ("npm_config_cache", &cache),
        ],
        b"",
    );
    assert_eq!(seen.exit, Some(1), "{}", seen.screen);
    let live = "\r\x1b[2K| mcp/everything: installing npm @modelcontextprotocol/server-everything@2026.8.31 (0 s)";
    assert!(seen.screen.contains(live), "{:?}", seen.screen);
    assert!(
        seen.screen.contains("(1 s)")
            && seen
                .screen
                .contains("\r\x1b[2Kmcp/everything: not installed: npm install"),
        "{:?}",
        seen.screen
    );
}
