//! Launchers read from command lines, on fake `PATH`s and trees of
//! temporary directories.

use std::ffi::OsString;
use std::os::unix::fs::{PermissionsExt as _, symlink};

use super::plan as propose;
use super::*;

fn executable(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_owned()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// A `PATH` of one directory holding executables named `names`.
fn path_with(dir: &Path, names: &[&str]) -> OsString {
    for name in names {
        executable(&dir.join("bin").join(name));
    }
    dir.join("bin").into_os_string()
}

/// A fetching command line and what it fetches: (command, args, npm?,
/// package, program, the server's own arguments).
type Fetching = (
    &'static str,
    &'static [&'static str],
    bool,
    &'static str,
    &'static str,
    &'static [&'static str],
);

#[test]
fn npm_and_pypi_runners_are_named_with_their_package() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_with(dir.path(), &["npx", "npm", "bunx", "uvx", "uv", "pipx"]);
    // (command, args, npm?, package, program, the server's own arguments)
    let cases: &[Fetching] = &[
        (
            "npx",
            &["-y", "@modelcontextprotocol/server-everything"],
            true,
            "@modelcontextprotocol/server-everything",
            "@modelcontextprotocol/server-everything",
            &[],
        ),
        (
            "npx",
            &["--yes", "--package=@a/b@1.2.3", "b-server", "/tmp"],
            true,
            "@a/b@1.2.3",
            "b-server",
            &["/tmp"],
        ),
        (
            "npm",
            &["exec", "--yes", "--", "some-server", "stdio"],
            true,
            "some-server",
            "some-server",
            &["stdio"],
        ),
        (
            "bunx",
            &["some-server"],
            true,
            "some-server",
            "some-server",
            &[],
        ),
        (
            "uvx",
            &["mcp-server-time", "--local-timezone", "UTC"],
            false,
            "mcp-server-time",
            "mcp-server-time",
            &["--local-timezone", "UTC"],
        ),
        (
            "uvx",
            &["mcp-server-time@2026.10.19"],
            false,
            "mcp-server-time@2026.10.19",
            "mcp-server-time",
            &[],
        ),
        (
            "uvx",
            &["--from", "mcp-server-time==2026.10.19", "mcp-server-time"],
            false,
            "mcp-server-time==2026.10.19",
            "mcp-server-time",
            &[],
        ),
        (
            "uv",
            &["tool", "run", "--python", "3.12", "mcp-server-fetch"],
            false,
            "mcp-server-fetch",
            "mcp-server-fetch",
            &[],
        ),
        (
            "pipx",
            &["run", "--spec", "mcp-server-fetch", "mcp-server-fetch"],
            false,
            "mcp-server-fetch",
            "mcp-server-fetch",
            &[],
        ),
    ];
    for (command, args, npm, package, program, rest) in cases {
        let plan = propose(command, &strings(args), Some(&path), dir.path());
        let expected = if *npm {
            Kind::Npm {
                package: (*package).into(),
                command: (*program).into(),
                args: strings(rest),
            }
        } else {
            Kind::PyPi {
                package: (*package).into(),
                command: (*program).into(),
                args: strings(rest),
            }
        };
        assert_eq!(plan.kind, expected, "{command} {args:?}");
        assert!(plan.fetches() && plan.found);
        assert_eq!(plan.program, *command, "a bare name stays bare");
        let note = plan.notes.join("\n");
        assert!(
            note.contains("cannot do") && note.contains("install"),
            "{note}"
        );
        assert!(plan.read.is_empty(), "{plan:?}");
        // The server's own arguments still name its directories.
        let named: Vec<PathBuf> = rest
            .iter()
            .filter(|a| a.starts_with('/'))
            .map(|a| Path::new(a).canonicalize().unwrap())
            .collect();
        assert_eq!(plan.dirs, named, "{command} {args:?}");
    }
    // `npm` alone is no runner: `npm start` runs a project's own script.
    let plan = propose("npm", &strings(&["start"]), Some(&path), dir.path());
    assert_eq!(plan.kind, Kind::Program);
}

#[test]
fn a_venvs_python_reads_its_venv_and_its_base_interpreters_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let base = executable(&dir.path().join("pyenv/versions/3.12.1/bin/python3.12"));
    let venv = dir.path().join("project/.venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    symlink(&base, venv.join("bin/python")).unwrap();
    std::fs::write(
        venv.join("pyvenv.cfg"),
        format!("home = {}\n", base.parent().unwrap().display()),
    )
    .unwrap();
    let python = venv.join("bin/python");
    let plan = propose(
        python.to_str().unwrap(),
        &strings(&["-m", "my_server"]),
        None,
        dir.path(),
    );
    assert_eq!(
        plan.kind,
        Kind::Python {
            venv: Some(venv.clone())
        }
    );
    assert_eq!(plan.program, python.display().to_string());
    let prefix = dir
        .path()
        .join("pyenv/versions/3.12.1")
        .canonicalize()
        .unwrap();
    assert_eq!(plan.read, [venv, prefix]);
    assert!(plan.dirs.is_empty() && plan.notes.is_empty(), "{plan:?}");
}

#[test]
fn a_script_reads_its_package_and_is_made_absolute() {
    let dir = tempfile::tempdir().unwrap();
    // The interpreters elsewhere: their prefix would hold the scripts.
    let interpreters = tempfile::tempdir().unwrap();
    let path = path_with(interpreters.path(), &["node", "python3"]);
    // Installed under node_modules: its dependencies are hoisted beside it.
    let tree = dir.path().join("tree");
    let installed = tree.join("node_modules/@s/pkg/dist/index.js");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::fs::write(&installed, "").unwrap();
    let plan = propose(
        "node",
        &strings(&["--enable-source-maps", installed.to_str().unwrap(), "stdio"]),
        Some(&path),
        dir.path(),
    );
    assert_eq!(plan.kind, Kind::Node);
    assert_eq!(plan.read, [tree.canonicalize().unwrap()]);
    // A project of its own, and a relative path.
    let app = dir.path().join("app");
    std::fs::create_dir_all(app.join("src")).unwrap();
    std::fs::write(app.join("package.json"), "{}").unwrap();
    std::fs::write(app.join("src/main.js"), "").unwrap();
    let plan = propose("node", &strings(&["src/main.js"]), Some(&path), &app);
    assert_eq!(plan.read, [app.canonicalize().unwrap()]);
    assert_eq!(plan.args, [app.join("src/main.js").display().to_string()]);
    // A Python script with no project: its own directory.
    let loose = dir.path().join("loose");
    std::fs::create_dir_all(&loose).unwrap();
    std::fs::write(loose.join("server.py"), "").unwrap();
    let plan = propose(
        "python3",
        &strings(&["-u", "server.py"]),
        Some(&path),
        &loose,
    );
    assert!(matches!(plan.kind, Kind::Python { venv: None }));
    assert!(
        plan.read.contains(&loose.canonicalize().unwrap()),
        "{plan:?}"
    );
    // `-m`: no script to read.
    let plan = propose(
        "python3",
        &strings(&["-m", "server.py"]),
        Some(&path),
        &loose,
    );
    assert!(
        !plan.read.contains(&loose.canonicalize().unwrap()),
        "{plan:?}"
    );
}

#[test]
fn absolute_paths_among_the_arguments_become_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_with(dir.path(), &["server"]);
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = dir.path().join("db/app.sqlite");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::write(&db, "").unwrap();
    let missing = dir.path().join("missing");
    let args = [
        data.display().to_string(),
        format!("--db={}", db.display()),
        missing.display().to_string(),
        "/".to_owned(),
        data.display().to_string(),
        "relative/ignored".to_owned(),
    ];
    let plan = propose("server", &args, Some(&path), dir.path());
    assert_eq!(
        plan.dirs,
        [
            data.canonicalize().unwrap(),
            db.parent().unwrap().canonicalize().unwrap()
        ]
    );
    let notes = plan.notes.join("\n");
    assert!(
        notes.contains("does not exist") && notes.contains("whole file system"),
        "{notes}"
    );
}

#[test]
fn a_binary_reads_its_own_prefix_and_system_paths_are_never_proposed() {
    let dir = tempfile::tempdir().unwrap();
    let tool = executable(&dir.path().join("opt/tool/bin/tool"));
    let plan = propose(tool.to_str().unwrap(), &[], None, dir.path());
    assert_eq!(plan.kind, Kind::Program);
    assert_eq!(
        plan.read,
        [dir.path().join("opt/tool").canonicalize().unwrap()]
    );
    if Path::new("/usr/bin/python3").is_file() {
        let plan = propose("/usr/bin/python3", &strings(&["-m", "x"]), None, dir.path());
        assert!(plan.read.is_empty(), "{plan:?}");
    }
}

#[test]
fn a_missing_program_is_said_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_with(dir.path(), &[]);
    let plan = propose("no-such-server", &[], Some(&path), dir.path());
    assert!(!plan.found);
    assert!(plan.notes[0].contains("not found on PATH") && plan.notes[0].contains("absolute path"));
}
