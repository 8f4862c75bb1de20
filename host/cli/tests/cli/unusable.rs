//! A config that names a program this machine does not have: only what
//! needs it fails, with the grant's own line (the config's place and what
//! to do), and everything else works; warnings reach only the commands
//! they concern.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{npm, shared_cache, stderr, stdout, wait_live};

/// A `PATH` of one directory that holds only `node` (a link to the one on
/// the test's own `PATH`) and `git`: no `uvx`, no `cargo-*`, whatever this
/// machine has.
fn narrow_path(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["node", "git"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{name} is on PATH"));
        std::os::unix::fs::symlink(found, bin.join(name)).unwrap();
    }
    bin
}

fn run(dir: &Path, path: &Path, args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", shared_cache())
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_live(child)
}

/// fs, and the mcp plugin with three servers: server-everything under
/// `node` (present), a venv's Python that is not there, and `uvx` (not on
/// this `PATH`).
fn config(dir: &Path) {
    let text = format!(
        "[plugins.fs]\npath = \"builtin:fs\"\n\
         [plugins.fs.grants]\ndirs = [{{ host = \".\", guest = \"/workspace\" }}]\n\n\
         [plugins.mcp]\npath = \"builtin:mcp\"\n\
         [plugins.mcp.grants]\n\
         exec = [{{ program = \"node\", read = [{servers:?}] }}, {{ program = \"./venv/bin/python\" }}, {{ program = \"uvx\" }}]\n\n\
         [plugins.mcp.config.mcpServers.everything]\ncommand = \"node\"\nargs = [{js:?}, \"stdio\"]\n\n\
         [plugins.mcp.config.mcpServers.gone]\ncommand = {python:?}\nargs = [\"server.py\"]\n\n\
         [plugins.mcp.config.mcpServers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n",
        servers = npm::servers_dir()
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
        js = npm::everything_js().display().to_string(),
        python = dir.join("venv/bin/python").display().to_string(),
    );
    std::fs::write(dir.join("tiny-harness.toml"), text).unwrap();
}

#[test]
fn a_program_that_is_not_here_makes_only_the_servers_that_need_it_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let path = narrow_path(&dir);
    config(&dir);
    // The grant's own line: the config's place, the key, what to do.
    let gone = "tiny-harness.toml:9:";
    let gone_why = format!(
        "plugins.mcp.grants.exec: program \"./venv/bin/python\" ({}) does not exist",
        dir.join("venv/bin/python").display()
    );

    let tools = run(&dir, &path, &["tools"]);
    assert_eq!(tools.status.code(), Some(0), "{}", stderr(&tools));
    assert!(
        stdout(&tools).contains("mcp/everything.echo")
            && stdout(&tools).contains("fs/workspace.read_file"),
        "{}",
        stdout(&tools)
    );
    // `tools` warns of each server that cannot be used, once.
    let warned = stderr(&tools);
    assert_eq!(warned.matches("mcp server gone:").count(), 1, "{warned}");
    assert!(
        warned.contains(gone) && warned.contains(&gone_why),
        "{warned}"
    );
    assert!(
        warned.contains("mcp server time: uvx fetches its package at every start: run tiny-harness mcp install time"),
        "{warned}"
    );

    let plugins = stdout(&run(&dir, &path, &["plugins"]));
    assert!(
        plugins.contains("exec unusable here: ./venv/bin/python (")
            && plugins.contains("uvx (")
            && plugins
                .contains("program \"uvx\" was not found on PATH: install it, or give its path"),
        "{plugins}"
    );
    let server_line = plugins
        .lines()
        .find(|l| l.contains("mcp server gone:"))
        .unwrap_or_else(|| panic!("{plugins}"));
    assert!(
        server_line.contains("failed: ")
            && server_line.contains(gone)
            && server_line.contains(&gone_why),
        "{server_line}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&run(&dir, &path, &["plugins", "--json"]))).unwrap();
    let unusable = &json[1]["grants"]["exec_unusable"];
    assert_eq!(unusable[0]["program"], "./venv/bin/python", "{json}");
    assert_eq!(unusable[1]["program"], "uvx", "{json}");

    // Another server's tool, and another plugin's: they work, and hear
    // nothing of the servers that do not.
    let echo = run(
        &dir,
        &path,
        &["call", "mcp/everything.echo", r#"{"message":"still here"}"#],
    );
    assert_eq!(echo.status.code(), Some(0), "{}", stderr(&echo));
    assert!(stdout(&echo).contains("Echo: still here"));
    assert_eq!(stderr(&echo), "", "an unrelated call is not warned");
    let read = run(
        &dir,
        &path,
        &[
            "call",
            "fs/workspace.read_file",
            r#"{"path":"tiny-harness.toml"}"#,
        ],
    );
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    assert_eq!(stderr(&read), "");

    // A call of the server that needs the program: unavailable, with the
    // grant's line, and warned.
    let call = run(&dir, &path, &["call", "mcp/gone.anything"]);
    assert_eq!(call.status.code(), Some(1));
    assert!(
        stdout(&call).contains("code=\"unavailable\"")
            && stdout(&call).contains(gone)
            && stdout(&call).contains(&gone_why),
        "{}",
        stdout(&call)
    );
    assert!(
        stderr(&call).contains("mcp server gone:") && !stderr(&call).contains("mcp server time"),
        "{}",
        stderr(&call)
    );
}

#[test]
fn a_missing_program_in_the_shell_plugins_grants_stops_only_its_own_calls() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let path = narrow_path(&dir);
    std::fs::write(
        dir.join("tiny-harness.toml"),
        "[plugins.shell]\npath = \"builtin:shell\"\n[plugins.shell.grants]\n\
         exec = [{ program = \"git\", args = [\"--version\"] }, { program = \"cargo\", args = [\"build\"] }]\n",
    )
    .unwrap();
    let git = run(
        &dir,
        &path,
        &[
            "call",
            "shell/exec.run",
            r#"{"program":"git","args":["--version"]}"#,
        ],
    );
    assert_eq!(git.status.code(), Some(0), "{}", stdout(&git));
    assert!(stdout(&git).contains("git version"), "{}", stdout(&git));
    let cargo = run(
        &dir,
        &path,
        &[
            "call",
            "shell/exec.run",
            r#"{"program":"cargo","args":["build"]}"#,
        ],
    );
    assert!(
        stdout(&cargo).contains(
            "tiny-harness.toml:4:64: plugins.shell.grants.exec: program \"cargo\" was not found on PATH: install it, or give its path"
        ),
        "{}",
        stdout(&cargo)
    );
}

#[test]
fn an_unset_variable_is_said_where_it_matters_and_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let path = narrow_path(&dir);
    let text = format!(
        "[plugins.fs]\npath = \"builtin:fs\"\n\
         [plugins.fs.grants]\ndirs = [{{ host = \".\", guest = \"/workspace\" }}]\n\n\
         [plugins.mcp]\npath = \"builtin:mcp\"\n\
         [plugins.mcp.grants]\nenv = [\"TINY_HARNESS_TEST_NEVER_SET\"]\n\
         exec = [{{ program = \"node\", read = [{servers:?}], env = [\"GITHUB_TOKEN\"] }}]\n\n\
         [plugins.mcp.config.mcpServers.github]\ncommand = \"node\"\nargs = [{js:?}, \"stdio\"]\n\
         env = {{ GITHUB_TOKEN = \"${{TINY_HARNESS_TEST_NEVER_SET}}\" }}\n",
        servers = npm::servers_dir()
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
        js = npm::everything_js().display().to_string(),
    );
    std::fs::write(dir.join("tiny-harness.toml"), text).unwrap();
    let unset = "host variable TINY_HARNESS_TEST_NEVER_SET is granted but not set";
    let tools = run(&dir, &path, &["tools"]);
    assert_eq!(
        stderr(&tools).matches(unset).count(),
        1,
        "{}",
        stderr(&tools)
    );
    let read = run(
        &dir,
        &path,
        &[
            "call",
            "fs/workspace.read_file",
            r#"{"path":"tiny-harness.toml"}"#,
        ],
    );
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    assert_eq!(stderr(&read), "", "an unrelated call is not warned");
    let call = run(
        &dir,
        &path,
        &["call", "mcp/github.echo", r#"{"message":"x"}"#],
    );
    assert_eq!(call.status.code(), Some(1));
    assert!(
        stdout(&call).contains("code=\"unavailable\"") && stdout(&call).contains(unset),
        "{}",
        stdout(&call)
    );
    assert_eq!(stderr(&call).matches(unset).count(), 1, "{}", stderr(&call));
    let plugins = run(&dir, &path, &["plugins"]);
    assert!(stdout(&plugins).contains(unset), "{}", stdout(&plugins));
}
