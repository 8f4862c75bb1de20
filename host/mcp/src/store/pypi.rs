//! Installing a PyPI server: a virtual environment made from the host's
//! `python3` in a fresh directory, `pip install` of the package into it
//! through the user's own pip configuration, then the exact versions and
//! the wheels' sha256 read from pip's installation report.
//!
//! Invariant: pip runs confined (when the plugin is): it writes only the
//! new install (its cache and temporary files inside it), reads the interpreter and the user's pip
//! config, and connects only to ports 443 and 80 and those of the indexes
//! the user's pip or uv settings name (see `index`). Only wheels are
//! installed: no package code runs at install.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use tiny_harness_core::pin::Code;

use super::StoreError;

/// The largest installation report read.
const MAX_REPORT_BYTES: u64 = 16 << 20;

/// Installs `package` into a fresh venv in `dir` (the staging directory)
/// and returns the code pip's report says it installed, `command` among
/// its entry points: the interpreter found, two venvs made, pip run.
pub(super) async fn install(
    dir: &Path,
    package: &str,
    command: &str,
    confined: bool,
    budget: &super::Budget,
) -> Result<Code, StoreError> {
    let (base, python) = python3(dir)
        .map_err(|e| format!("{e}: installing a PyPI server needs Python 3 with venv"))?;
    let mut read = base.read.clone();
    read.push(python.clone());
    if let Ok(real) = python.canonicalize() {
        read.push(real);
    }
    let mut env = super::base_env();
    env.extend(pip_settings(&mut read));
    let (cache, tmp) = work(dir, &mut env)?;
    let venv = dir.join("venv");
    let tool = tmp.with_file_name("pip");
    let run = VenvRun {
        python: &python,
        dir,
        env: &env,
        read: &read,
    };
    make_venvs(run, &venv, &tool, confined, budget).await?;
    let home = super::home();
    let indexes = pip_config(home.as_deref(), &mut read);
    env.extend(indexes.env.iter().cloned());
    if let Some(home) = &home {
        env.push(("HOME".to_owned(), home.display().to_string()));
    }
    let report = dir.join("report.json");
    let step = super::Step {
        program: tool.join("bin/python"),
        args: pip_args(&venv, &report, &cache, package, budget),
        env,
        cwd: dir.to_owned(),
        read,
        write: vec![dir.to_owned()],
        ports: indexes.ports(),
        registry: Some(indexes.shown()),
    };
    if let Err(why) = super::run(step, confined, budget).await {
        return Err(pip_failed(why, package, &python, &indexes).await.into());
    }
    let code = read_report(&report, package, command, dir)?;
    let _ = std::fs::remove_file(&report);
    Ok(code)
}

/// The user's pip settings (its `PIP_` variables), the local paths they
/// name (a wheel directory, a certificate) added to `read`; a path that
/// does not exist is left out, as pip would pass it over.
fn pip_settings(read: &mut Vec<PathBuf>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for (key, value) in std::env::vars().filter(|(k, _)| k.starts_with("PIP_")) {
        let mut kept = Vec::new();
        for word in value.split_whitespace() {
            let local = word.strip_prefix("file://").unwrap_or(word);
            if local.starts_with('/') {
                let path = PathBuf::from(local);
                if !path.exists() {
                    continue;
                }
                read.push(path);
            }
            kept.push(word);
        }
        env.push((key, kept.join(" ")));
    }
    env
}

/// A cache and temporary files of the install's own, inside it (and so
/// within its room), removed once it is made: `env` set to use them.
fn work(dir: &Path, env: &mut Vec<(String, String)>) -> Result<(PathBuf, PathBuf), StoreError> {
    let (cache, tmp) = super::room::work(dir).map_err(|source| StoreError::Io {
        what: format!("cannot make the install's cache in {}", dir.display()),
        source,
    })?;
    env.retain(|(k, _)| k != "PIP_CACHE_DIR" && k != "PIP_NO_CACHE_DIR");
    env.push(("TMPDIR".to_owned(), tmp.display().to_string()));
    Ok((cache, tmp))
}

/// What the venv steps run with: the interpreter, in the install's
/// directory, with this environment, reading these paths.
#[derive(Clone, Copy)]
struct VenvRun<'a> {
    python: &'a Path,
    dir: &'a Path,
    env: &'a [(String, String)],
    read: &'a [PathBuf],
}

/// Makes the server's venv (`venv`) and pip's (`tool`). The server's venv
/// holds its packages and nothing else: no pip, no setuptools (a package
/// manager is no part of what runs, and what the venv holds is exactly
/// what the lock pins). pip runs from a venv of its own in the work
/// directory, installing into the server's with --python.
async fn make_venvs(
    run: VenvRun<'_>,
    venv: &Path,
    tool: &Path,
    confined: bool,
    budget: &super::Budget,
) -> Result<(), String> {
    for (target, with_pip) in [(venv, false), (tool, true)] {
        let mut args = vec!["-m".to_owned(), "venv".to_owned()];
        if !with_pip {
            args.push("--without-pip".to_owned());
        }
        args.push(target.display().to_string());
        let step = super::Step {
            program: run.python.to_owned(),
            args,
            env: run.env.to_vec(),
            cwd: run.dir.to_owned(),
            read: run.read.to_vec(),
            write: vec![run.dir.to_owned()],
            ports: Vec::new(),
            registry: None,
        };
        super::run(step, confined, budget)
            .await
            .map_err(|why| format!("python3 -m venv failed: {why}"))?;
    }
    Ok(())
}

/// The indexes the user's pip configuration names; its files (and the
/// directories pip reads them from) added to `read`.
fn pip_config(home: Option<&Path>, read: &mut Vec<PathBuf>) -> super::index::Indexes {
    read.extend(super::present([
        home.map(|h| h.join(".config/pip")),
        home.map(|h| h.join(".pip")),
        Some(PathBuf::from("/etc/pip.conf")),
    ]));
    let config_files: Vec<PathBuf> = super::present([
        std::env::var_os("PIP_CONFIG_FILE").map(PathBuf::from),
        Some(PathBuf::from("/etc/pip.conf")),
        Some(PathBuf::from("/etc/xdg/pip/pip.conf")),
        home.map(|h| h.join(".pip/pip.conf")),
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".config")))
            .map(|c| c.join("pip/pip.conf")),
    ])
    .collect();
    super::index::Indexes::configured(&config_files)
}

/// pip's arguments: install `package` (wheels only) into `venv`'s
/// interpreter, its report to `report`, its cache in `cache`.
fn pip_args(
    venv: &Path,
    report: &Path,
    cache: &Path,
    package: &str,
    budget: &super::Budget,
) -> Vec<String> {
    let mut args: Vec<String> = ["-m", "pip", "--python"]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    args.push(venv.join("bin/python").display().to_string());
    args.extend(
        [
            "install",
            "--no-input",
            "--disable-pip-version-check",
            "--no-warn-script-location",
            "--only-binary=:all:",
            "--retries=1",
        ]
        .iter()
        .map(|a| (*a).to_owned()),
    );
    args.extend([
        format!("--report={}", report.display()),
        format!("--cache-dir={}", cache.display()),
        // pip's own socket timeout fits inside the install's limit.
        format!(
            "--timeout={}",
            budget.per_request(Duration::from_secs(30)).as_secs()
        ),
        "--".to_owned(),
        package.to_owned(),
    ]);
    args
}

/// Why `pip install package` failed, in one line: what pip said, or what
/// the index has when pip found nothing, or that pip is too old.
async fn pip_failed(
    why: String,
    package: &str,
    python: &Path,
    indexes: &super::index::Indexes,
) -> String {
    let why = if why.contains("No matching distribution found") {
        indexes.why_nothing(package).await.unwrap_or(why)
    } else if why.contains("no such option: --python") {
        // pip installs into the server's venv from its own with
        // --python, which pip 22.3 (October 2022) brought.
        format!(
            "{why}: the pip that {}'s venv module brings is older than 22.3; install a \
             newer Python 3 as python3",
            python.display()
        )
    } else {
        why
    };
    format!("pip install {package} failed: {why}")
}

/// The installed distributions from pip's report.
fn read_report(report: &Path, package: &str, command: &str, dir: &Path) -> Result<Code, String> {
    let bytes = tiny_harness_core::file::read_regular(report, "pip report", MAX_REPORT_BYTES)
        .map_err(|e| format!("pip wrote no report: {}", e.reason))?;
    let report: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("pip's report is not JSON: {e}"))?;
    let installed = report
        .get("install")
        .and_then(Value::as_array)
        .ok_or("pip's report lists nothing installed")?;
    let mut top = None;
    let mut dependencies = BTreeMap::new();
    for item in installed {
        let meta = item.get("metadata");
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
        let (Some(name), Some(version)) = (text("name"), text("version")) else {
            continue;
        };
        let archive = item
            .get("download_info")
            .and_then(|d| d.get("archive_info"));
        let sha256 = archive
            .and_then(|a| a.get("hashes"))
            .and_then(|h| h.get("sha256"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                archive
                    .and_then(|a| a.get("hash"))
                    .and_then(Value::as_str)
                    .and_then(|h| h.strip_prefix("sha256="))
                    .map(str::to_owned)
            });
        let integrity = sha256.map_or_else(|| "none".to_owned(), |h| format!("sha256:{h}"));
        if item.get("requested").and_then(Value::as_bool) == Some(true) {
            top = Some((name.to_owned(), version.to_owned(), integrity));
        } else {
            dependencies.insert(format!("{name}@{version}"), integrity);
        }
    }
    let (name, version, integrity) =
        top.ok_or_else(|| format!("pip's report does not list {package} as installed"))?;
    if dependencies.len() > tiny_harness_core::pin::MAX_DEPENDENCIES {
        return Err(format!(
            "{name} pulls in more than {} packages",
            tiny_harness_core::pin::MAX_DEPENDENCIES
        ));
    }
    let script = format!("venv/bin/{command}");
    if !dir.join(&script).is_file() {
        return Err(format!(
            "{name} installed no program named {command}: name the one to run with uvx --from {name} PROGRAM"
        ));
    }
    Ok(Code {
        kind: "pypi".to_owned(),
        package: name,
        version,
        integrity,
        entry: script,
        dependencies,
        tree: None,
        registry: None,
        sources: Default::default(),
    })
}

/// `python3` as the launcher finds it on the host's `PATH` (through a
/// pyenv shim to the interpreter it runs), for a server whose directory is
/// `dir`: the launcher's plan for it, and its absolute path. The one place
/// that says which interpreter an install is made with and must keep
/// running.
fn python3(dir: &Path) -> Result<(super::super::launcher::Plan, PathBuf), String> {
    let path = std::env::var_os("PATH");
    let base = super::super::launcher::plan("python3", &[], path.as_deref(), dir);
    if !base.found {
        return Err("python3 is not on PATH".to_owned());
    }
    let program = PathBuf::from(&base.program);
    let located = if program.is_absolute() {
        program
    } else {
        super::find(&base.program, path.as_deref()).ok_or("python3 is not on PATH")?
    };
    Ok((base, located))
}

/// The largest `pyvenv.cfg` read.
const MAX_VENV_CFG_BYTES: u64 = 64 << 10;

/// Checks that the venv of the install at `dir` runs the interpreter
/// `python3` on `PATH` is (its `bin/python` and its `home` are that
/// interpreter and its directory) and sees no system packages: what its
/// configuration says decides what Python loads before any pinned file.
pub(super) fn interpreter(dir: &Path) -> Result<(), String> {
    let (_, located) = python3(dir)?;
    let real = located
        .canonicalize()
        .map_err(|e| format!("python3 on PATH: {e}"))?;
    let venv_python = dir.join("venv/bin/python");
    let runs = venv_python
        .canonicalize()
        .map_err(|e| format!("{}: {e}", venv_python.display()))?;
    if runs != real {
        return Err(format!(
            "its python is {}, not python3 on PATH ({})",
            runs.display(),
            real.display()
        ));
    }
    let cfg = dir.join("venv/pyvenv.cfg");
    let bytes = tiny_harness_core::file::read_regular(&cfg, "pyvenv.cfg", MAX_VENV_CFG_BYTES)
        .map_err(|e| format!("{}: {}", cfg.display(), e.reason))?;
    let text = String::from_utf8_lossy(&bytes);
    let value = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_owned())
    };
    // `home` is the directory python3 was run from to make the venv: on
    // PATH, or the interpreter's own.
    let canonical = |p: Option<&Path>| p.and_then(|p| p.canonicalize().ok());
    let home = canonical(value("home").as_deref().map(Path::new));
    if home.is_none() || (home != canonical(located.parent()) && home != canonical(real.parent())) {
        return Err("pyvenv.cfg names another home".to_owned());
    }
    if let Some(executable) = value("executable")
        && canonical(Some(Path::new(&executable))).as_ref() != Some(&real)
    {
        return Err("pyvenv.cfg names another interpreter".to_owned());
    }
    if !value("include-system-site-packages").is_some_and(|v| v.eq_ignore_ascii_case("false")) {
        return Err("pyvenv.cfg lets it see the system's packages".to_owned());
    }
    Ok(())
}

/// The largest `entry_points.txt` read.
const MAX_ENTRY_POINTS_BYTES: u64 = 1 << 20;

/// The Python program (for `python -c`) that runs `code`'s command as
/// its console script would: the entry point named in the installed
/// package's `entry_points.txt` (which the lock's tree pins), not the
/// script pip wrote into the venv's `bin` (whose first line names the
/// place it was installed in, so the lock cannot pin it). The current
/// directory is taken off `sys.path` as the script's run would not have
/// it, and `sys.argv[0]` is the script's path.
pub(super) fn entry_program(dir: &Path, code: &Code) -> Result<String, String> {
    let command = Path::new(&code.entry)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let site = super::tree::site_packages(dir).map_err(|e| format!("no usable venv: {e}"))?;
    let wanted = normalized(&code.package);
    let mut infos: Vec<PathBuf> = std::fs::read_dir(&site)
        .map_err(|e| format!("cannot read {}: {e}", site.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "dist-info"))
        .collect();
    // The package's own first, then the others (a console script may be
    // declared by a dependency: `uvx --from PKG PROGRAM`).
    infos.sort_by_key(|p| {
        let name = p.file_stem().map(|s| s.to_string_lossy().into_owned());
        let own = name
            .as_deref()
            .and_then(|n| n.rsplit_once('-'))
            .is_some_and(|(n, _)| normalized(n) == wanted);
        (!own, p.clone())
    });
    for info in infos {
        let path = info.join("entry_points.txt");
        if !path.is_file() {
            continue;
        }
        let bytes =
            tiny_harness_core::file::read_regular(&path, "entry points", MAX_ENTRY_POINTS_BYTES)
                .map_err(|e| format!("cannot read {}: {}", path.display(), e.reason))?;
        let text = String::from_utf8_lossy(&bytes);
        if let Some(target) = console_script(&text, &command) {
            let (module, attrs) = target;
            let argv0 = dir.join(&code.entry).display().to_string();
            let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
            return Ok(format!(
                "import sys; sys.path[:] = [p for p in sys.path if p]; \
                 from importlib import import_module; f = import_module({module})\n\
                 for a in {attrs}: f = getattr(f, a)\n\
                 sys.argv[0] = {argv0}; sys.exit(f())",
                module = quoted(module),
                attrs = serde_json::to_string(&attrs).unwrap_or_default(),
                argv0 = quoted(&argv0),
            ));
        }
    }
    Err(format!(
        "{} declares no console script {command} in its entry_points.txt: name the one to run \
         with uvx --from {} PROGRAM",
        code.package, code.package
    ))
}

/// A project name as PEP 503 compares them.
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if matches!(c, '-' | '_' | '.') { '-' } else { c };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The module and attribute path of console script `command` in
/// `entry_points.txt`, when it is one (dotted identifiers only: nothing
/// else reaches the program run).
fn console_script<'a>(text: &'a str, command: &str) -> Option<(&'a str, Vec<&'a str>)> {
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim();
            continue;
        }
        if section != "console_scripts" {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.trim() != command {
            continue;
        }
        // `module:attr.attr [extra]`
        let value = value.split('[').next().unwrap_or("").trim();
        let (module, attrs) = value.split_once(':').unwrap_or((value, ""));
        let (module, attrs) = (module.trim(), attrs.trim());
        let dotted = |s: &str| {
            !s.is_empty()
                && s.split('.').all(|part| {
                    let mut chars = part.chars();
                    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
                        && chars.all(|c| c.is_alphanumeric() || c == '_')
                })
        };
        if !dotted(module) || !(attrs.is_empty() || dotted(attrs)) {
            return None;
        }
        let attrs = match attrs.is_empty() {
            true => Vec::new(),
            false => attrs.split('.').collect(),
        };
        return Some((module, attrs));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_console_script_is_found_and_only_dotted_names_pass() {
        let text = "[gui_scripts]\nx = evil:run\n\n[console_scripts]\nmcp-server-time = \
                    mcp_server_time:main\nsub = pkg.cli:app.run [extra]\nbad = os;system:x\n";
        assert_eq!(
            console_script(text, "mcp-server-time"),
            Some(("mcp_server_time", vec!["main"]))
        );
        assert_eq!(
            console_script(text, "sub"),
            Some(("pkg.cli", vec!["app", "run"]))
        );
        assert_eq!(console_script(text, "bad"), None);
        assert_eq!(console_script(text, "x"), None);
        assert_eq!(normalized("Mcp_Server..Time"), "mcp-server-time");
    }

    #[test]
    fn python3_is_located_as_a_server_would_run_it() {
        let dir = tempfile::tempdir().unwrap();
        let (plan, located) = python3(dir.path()).unwrap();
        assert!(plan.found, "{:?}", plan.notes);
        assert!(located.is_absolute() && located.is_file(), "{located:?}");
        assert!(
            located.ends_with(&plan.program) || located.file_name() == Some("python3".as_ref()),
            "{located:?} {}",
            plan.program
        );
    }
}
