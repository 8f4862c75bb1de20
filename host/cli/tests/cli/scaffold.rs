//! `plugin new`: a new plugin builds, registers and passes its own test at
//! once, offline, as a newcomer runs it from the commands it prints; bad
//! input is one line, exit 2, with nothing written.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run_in;

/// The checkout's root.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs cargo in `dir`, offline, with none of the outer cargo's settings
/// that are meant for this workspace.
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(dir).args(args).arg("--offline");
    for name in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "RUSTC_WRAPPER",
    ] {
        command.env_remove(name);
    }
    command.output().unwrap()
}

#[test]
fn a_new_rust_plugin_builds_registers_and_passes_its_own_test() {
    let home = tempfile::tempdir().unwrap();
    let out = run_in(home.path(), &["plugin", "new", "word-count"], None);
    let told = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = home.path().join("word-count");
    assert!(
        told.contains("cargo build --release --target wasm32-wasip2 --target-dir target"),
        "{told}"
    );
    assert!(told.contains("cargo test"), "{told}");
    assert!(told.contains("call word-count/word-count.greet"), "{told}");
    let checkout = std::fs::canonicalize(checkout()).unwrap();
    assert!(told.contains(&checkout.display().to_string()), "{told}");

    // Its own test, in its directory: the cases run through this binary
    // (the one that made it), and nothing of the host is compiled. The
    // plugin is built where cargo builds (here CARGO_TARGET_DIR, shared
    // between runs of this test).
    let target = checkout.join("target/scaffold");
    let mut test = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    test.current_dir(&dir)
        .args(["test", "--offline"])
        .env("CARGO_TARGET_DIR", &target)
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .env_remove("TINY_HARNESS")
        .env_remove("TINY_HARNESS_PLUGIN_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    let tested = test.output().unwrap();
    let log = String::from_utf8_lossy(&tested.stdout);
    let err = String::from_utf8_lossy(&tested.stderr);
    assert!(tested.status.success(), "{log}{err}");
    assert!(log.contains("test result: ok. 1 passed"), "{log}");
    assert!(log.contains("4 passed, 0 failed"), "{log}");
    let lock = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap();
    assert!(!lock.contains("name = \"wasmtime\""), "{lock}");
    assert!(
        target
            .join("wasm32-wasip2/release/word_count.wasm")
            .is_file()
    );
    assert!(
        !dir.join("target").exists(),
        "built outside CARGO_TARGET_DIR"
    );

    // Then as the printed commands say: build, and try it with its config.
    let build = [
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "--target-dir",
        "target",
    ];
    let built = cargo(&dir, &build);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = run_in(
        &dir,
        &["call", "word-count/word-count.greet", r#"{"name":"Ada"}"#],
        None,
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("Hello, Ada!"), "{shown}");
    let out = run_in(
        &dir,
        &["call", "word-count/word-count.count", r#"{"text":"a b c"}"#],
        None,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""words":3"#));

    // The author's loop: edit a tool's doc, rebuild, call. The config marks
    // the plugin `dev`, so no `pins` command stands between the two: the
    // call runs, and stderr says once what was pinned again.
    let lib = dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).unwrap();
    let edited = source.replace(
        "/// Greets someone by name.",
        "/// Greets someone, by name.",
    );
    assert_ne!(source, edited, "the scaffold's greet lost its doc comment");
    std::fs::write(&lib, edited).unwrap();
    let built = cargo(&dir, &build);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = run_in(
        &dir,
        &["call", "word-count/word-count.greet", r#"{"name":"Ada"}"#],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(
        told.contains(
            "tiny-harness: dev plugin word-count: word-count/word-count.greet changed (description): pinned again"
        ),
        "{told}"
    );

    // `?` on an I/O error converts into the tool's error.
    let with_read = format!(
        "{}\n#[derive(Deserialize, JsonSchema)]\nstruct ReadArgs {{\n    path: String,\n}}\n\n\
         /// Reads a file.\n#[tool]\nfn read(args: ReadArgs) -> Result<String, ToolError> {{\n    \
         Ok(std::fs::read_to_string(args.path)?)\n}}\n",
        std::fs::read_to_string(&lib).unwrap()
    );
    std::fs::write(&lib, &with_read).unwrap();
    let built = cargo(&dir, &build);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // A map keyed by a struct compiles, but no call could ever give one:
    // the tool is refused at load, saying where and what to take.
    let listed = with_read.replace("tools![greet, count]", "tools![greet, count, tally]");
    assert_ne!(
        listed, with_read,
        "the scaffold no longer lists its tools so"
    );
    std::fs::write(
        &lib,
        format!(
            "{listed}\n#[derive(Deserialize, JsonSchema, PartialEq, Eq, Hash)]\nstruct Point {{\n    x: i32,\n}}\n\n\
             #[derive(Deserialize, JsonSchema)]\nstruct CountArgs {{\n    counts: std::collections::HashMap<Point, u32>,\n}}\n\n\
             /// Tallies.\n#[tool]\nfn tally(args: CountArgs) -> Result<String, ToolError> {{\n    Ok(args.counts.len().to_string())\n}}\n"
        ),
    )
    .unwrap();
    let built = cargo(&dir, &build);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // That tool alone: the others load.
    let out = run_in(&dir, &["tools"], None);
    let told = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{told}");
    assert!(
        told.contains("tool word-count/word-count.tally is not registered")
            && told
                .contains("`counts` is a map keyed by a struct, and JSON object keys are strings"),
        "{told}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("word-count/word-count.greet"));
    // A tool whose arguments could never be an object does not compile,
    // and the error says what to take instead.
    std::fs::write(
        &lib,
        format!(
            "{with_read}\n/// Echoes.\n#[tool]\nfn plain(args: String) -> Result<String, ToolError> {{\n    Ok(args)\n}}\n"
        ),
    )
    .unwrap();
    let built = cargo(&dir, &build);
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(!built.status.success(), "{err}");
    assert!(
        err.contains("a tool's arguments are a JSON object, and `String` is not one: take a struct with named fields"),
        "{err}"
    );
}

#[test]
fn bad_input_is_one_line_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let busy = home.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["plugin", "new", "x", "--dir", "busy"],
            "busy exists and is not empty: give another --dir",
        ),
        (&["plugin", "new", "9lives"], "does not start with a letter"),
        (&["plugin", "new", "Big"], "'B' is not allowed"),
        (
            &["plugin", "new", "Word Count!"],
            "'W', ' ', 'C' and '!' are not allowed; use 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter (such as \"word-count\")",
        ),
        (
            &["plugin", "new", "x", "--lang", "cobol"],
            "invalid value 'cobol' for '--lang",
        ),
        (
            &["plugin", "new", "x", "--sdk", "busy"],
            "holds no tiny-harness checkout with the guest SDK",
        ),
    ];
    for (args, says) in cases {
        let out = run_in(home.path(), args, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        if !args.contains(&"--lang") {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
    let mut left: Vec<String> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["busy"]);
    assert_eq!(
        std::fs::read_to_string(busy.join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);
}

/// Runs a scaffold's `test.sh` with this binary and the shared cache.
fn test_sh(dir: &Path) -> std::process::Output {
    Command::new(dir.join("test.sh"))
        .current_dir(dir)
        .env("TINY_HARNESS", env!("CARGO_BIN_EXE_tiny-harness"))
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .output()
        .unwrap()
}

/// Standard output, then standard error.
fn both(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn new_python_and_javascript_plugins_build_and_pass_their_own_test() {
    for (lang, app) in [("python", "app.py"), ("js", "app.js")] {
        let home = tempfile::tempdir().unwrap();
        let name = format!("hello-{lang}");
        let out = run_in(home.path(), &["plugin", "new", &name, "--lang", lang], None);
        let told = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            told.contains("./build.sh") && told.contains("./test.sh"),
            "{told}"
        );
        let dir = home.path().join(&name);
        assert!(dir.join(app).is_file());
        // The world it targets travels with it.
        let wit = std::fs::read_to_string(dir.join("wit/plugin.wit")).unwrap();
        assert!(wit.contains("package tiny-harness:plugin@0.3.0;"));
        let tested = test_sh(&dir);
        let log = both(&tested);
        assert!(tested.status.success(), "{lang}: {log}");
        assert!(
            log.contains("3 passed, 0 failed (cases.toml)"),
            "{lang}: {log}"
        );
        // Again, with nothing changed: nothing is built again.
        let again = test_sh(&dir);
        let log = both(&again);
        assert!(again.status.success(), "{lang}: {log}");
        assert!(log.contains("is up to date"), "{lang}: {log}");
        // A case that does not hold fails the test, saying what came back.
        let cases = std::fs::read_to_string(dir.join("cases.toml")).unwrap();
        std::fs::write(
            dir.join("cases.toml"),
            cases.replace("text = \"Hello, Ada!\"", "text = \"Hi, Ada!\""),
        )
        .unwrap();
        let failed = test_sh(&dir);
        let shown = String::from_utf8_lossy(&failed.stdout);
        assert_eq!(failed.status.code(), Some(1), "{lang}: {shown}");
        assert!(
            shown.contains("FAIL greets by name")
                && shown.contains("expected:  \"Hi, Ada!\"")
                && shown.contains("came back: \"Hello, Ada!\""),
            "{lang}: {shown}"
        );
        // What the model would see, through the config it came with.
        let out = run_in(
            &dir,
            &["call", &format!("{name}/{name}.greet"), r#"{"name":"Bo"}"#],
            None,
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Hello, Bo!"),
            "{lang}"
        );

        // A syntax error is found before the slow step, said on one line
        // with where, and leaves no component to run the old code.
        let source = std::fs::read_to_string(dir.join(app)).unwrap();
        std::fs::write(dir.join(app), format!("{source}\n)(\n")).unwrap();
        let built = Command::new(dir.join("build.sh"))
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&built.stderr);
        assert!(!built.status.success(), "{lang}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{lang}: {err}");
        assert!(
            err.starts_with(&format!("build.sh: {app}:")) && err.contains("fix it and build again"),
            "{lang}: {err}"
        );
        let wasm = format!("{}.wasm", name.replace('-', "_"));
        assert!(!dir.join(&wasm).exists(), "{lang}: a stale {wasm} was left");
    }
}

#[test]
fn plugin_new_and_inspect_show_and_take_only_the_options_they_use() {
    let home = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let out = run_in(home.path(), args, None);
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let new = help(&["plugin", "new", "--help"]);
    for unused in ["--config", "--no-cache", "--journal", "--locked"] {
        assert!(!new.contains(unused), "{unused} in: {new}");
    }
    assert!(new.contains("--lang") && new.contains("--verbose"), "{new}");
    let inspect = help(&["plugin", "inspect", "--help"]);
    assert!(inspect.contains("--no-cache"), "{inspect}");
    for unused in ["--config", "--journal", "--locked"] {
        assert!(!inspect.contains(unused), "{unused} in: {inspect}");
    }
    // Still on every command that loads a config.
    assert!(help(&["tools", "--help"]).contains("--locked"));

    let out = run_in(home.path(), &["plugin", "new", "x", "--locked"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--locked does nothing with `plugin new`: leave it out"),
        "{err}"
    );
    assert!(!home.path().join("x").exists());
}
