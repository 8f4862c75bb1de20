//! `tiny-harness plugins`: what each loaded plugin is granted (directories,
//! programs by absolute path and argument patterns, net grants as
//! written), its limits, and the confinement in force for its programs.

use super::*;

#[test]
fn plugins_shows_what_each_plugin_is_granted() {
    let dir = sandbox();
    let output = run_in(dir.path(), &["plugins"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let work = dir.path().join("work").canonicalize().unwrap();
    let sha = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(std::fs::read(fs_wasm()).unwrap()))
    };
    let row = text.lines().nth(1).expect("one plugin row");
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&columns[..4], ["fs", "5", sha.as_str(), "no"], "{text}");
    assert!(
        row.ends_with(&format!("dirs: /workspace={} (read-only)", work.display())),
        "{row}"
    );

    // Pinned, and as JSON.
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    let pinned = config.replacen(
        "[plugins.fs]\n",
        &format!("[plugins.fs]\nsha256 = \"{sha}\"\n"),
        1,
    );
    std::fs::write(dir.path().join("pinned.toml"), pinned).unwrap();
    let output = run_in(
        dir.path(),
        &["--config", "pinned.toml", "plugins", "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let fs = &list[0];
    assert_eq!(fs["name"], "fs");
    assert_eq!(fs["sha256"], sha);
    assert_eq!(fs["pinned"], true);
    assert_eq!(fs["tools"], 5);
    assert_eq!(
        fs["grants"],
        serde_json::json!({
            "dirs": [{"host": work.display().to_string(), "guest": "/workspace", "mode": "read-only"}],
            "env": [],
            "exec_unusable": [],
            "exec": [],
            "net": []
        })
    );
    assert_eq!(fs["confinement"], "landlock");
    assert_eq!(
        fs["limits"],
        serde_json::json!({
            "memory_mib": 64, "timeout_ms": 30000, "result_kib": 1024, "result_parts": 1024,
            "open_files": 256, "arguments_kib": 1024, "concurrent_calls": 16, "tools": 1024, "servers": 64,
            "description_kib": 32, "title_kib": 1, "schema_kib": 256, "schema_cost": 20000,
            "registration_kib": 8192, "program_cpu_seconds": 3600, "program_memory_mib": 4096,
            "program_processes": 256
        })
    );
}

/// Where a shell would find `name`: the first absolute directory on this
/// process's `PATH` (which the binary inherits) holding an executable
/// regular file of that name.
fn which(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

#[test]
fn plugins_shows_exec_grants_by_absolute_path_and_net_grants_as_written() {
    let dir = sandbox();
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    assert!(
        config.ends_with("guest = \"/workspace\" }]\n"),
        "grants last"
    );
    // A socket file to grant, as a Docker socket would be.
    let socket = dir.path().join("agent.sock").display().to_string();
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let granted = format!(
        "{config}exec = [{{ program = \"sh\", env = [\"GIT_DIR\", \"LC_*\"], sockets = [{socket:?}] }}, {{ program = \"/usr/bin/printf\", args = [\"%s\", \"[a-z]+\"] }}]\nnet = [\"http://127.0.0.1:*\", \"https://*.example.com\"]\n"
    );
    std::fs::write(dir.path().join("granted.toml"), granted).unwrap();
    let sh = which("sh");

    let output = run_in(dir.path(), &["--config", "granted.toml", "plugins"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let row = text.lines().nth(1).expect("one plugin row");
    assert!(
        row.contains(&format!(
            " (read-only); exec: {} (env: [\"GIT_DIR\", \"LC_*\"]; sockets: {}), /usr/bin/printf (args: [\"%s\", \"[a-z]+\"]); net: http://127.0.0.1:*, https://*.example.com; ",
            sh.display(),
            std::path::Path::new(&socket).canonicalize().unwrap().display(),
        )),
        "{row}"
    );
    // The confinement in force for the programs it may start.
    assert!(
        row.contains("; programs confined by: landlock (ABI "),
        "{row}"
    );
    // On this kernel (Landlock ABI 7): signals and abstract sockets scoped,
    // device ioctls held, and the honest word on the granted socket.
    assert!(
        row.contains("signals and abstract sockets scoped")
            && row.contains("device ioctls")
            && row.contains("Unix sockets allowed for the programs granted sockets")
            && row.contains("no terminal"),
        "{row}"
    );
    // And what keeps track of their processes (on this machine, control
    // groups in both hierarchies).
    assert!(
        row.contains("; processes kept by: cgroup (kill, pids.max, memory)"),
        "{row}"
    );
    let none = format!(
        "{}
",
        std::fs::read_to_string(dir.path().join("granted.toml")).unwrap()
    )
    .replacen(
        "[plugins.fs]\n",
        "[plugins.fs]\nconfinement = \"none\"\n",
        1,
    );
    std::fs::write(dir.path().join("unconfined.toml"), none).unwrap();
    let output = run_in(
        dir.path(),
        &["--config", "unconfined.toml", "plugins"],
        None,
    );
    assert!(
        stdout(&output).contains("programs confined by: nothing (confinement = \"none\")"),
        "{}",
        stdout(&output)
    );

    let output = run_in(
        dir.path(),
        &["--config", "granted.toml", "plugins", "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let grants = &list[0]["grants"];
    assert_eq!(
        grants["exec"],
        serde_json::json!([
            {"program": "sh", "path": sh.display().to_string(), "args": null,
             "env": ["GIT_DIR", "LC_*"],
             "sockets": [std::path::Path::new(&socket).canonicalize().unwrap().display().to_string()]},
            {"program": "/usr/bin/printf", "path": "/usr/bin/printf", "args": ["%s", "[a-z]+"],
             "env": [], "sockets": []},
        ])
    );
    assert_eq!(
        grants["net"],
        serde_json::json!(["http://127.0.0.1:*", "https://*.example.com"])
    );

    // A program that is nowhere on PATH does not stop the run: its grant
    // is shown as unusable here, with the line that says where and why.
    let missing = config.replace(
        "[plugins.fs.grants]\n",
        "[plugins.fs.grants]\nexec = [{ program = \"surely-no-such-program-here\" }]\n",
    );
    std::fs::write(dir.path().join("missing.toml"), missing).unwrap();
    let output = run_in(dir.path(), &["--config", "missing.toml", "plugins"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(
            "exec unusable here: surely-no-such-program-here (missing.toml:4:21: plugins.fs.grants.exec: program \"surely-no-such-program-here\" was not found on PATH: install it, or give its path)"
        ),
        "{}",
        stdout(&output)
    );
    // One that no machine could have still does.
    let nameless = config.replace(
        "[plugins.fs.grants]\n",
        "[plugins.fs.grants]\nexec = [{ program = \"\" }]\n",
    );
    std::fs::write(dir.path().join("nameless.toml"), nameless).unwrap();
    let output = run_in(dir.path(), &["--config", "nameless.toml", "plugins"], None);
    one_error_line(
        &output,
        &["nameless.toml:4:21: plugins.fs.grants.exec: program \"\" names no program"],
    );
}
