//! Installing a PyPI server: a virtual environment made from the host's
//! `python3` in a fresh directory, `pip install` of the package into it
//! through the user's own pip configuration, then the exact versions and
//! the wheels' sha256 read from pip's installation report.
//!
//! Invariant: pip runs confined (when the plugin is): it writes only the
//! new install and its cache, reads the interpreter and the user's pip
//! config, and connects only to ports 443 and 80 and those of the indexes
//! the user's pip or uv settings name (see `index`). Only wheels are
//! installed: no package code runs at install.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use tiny_harness_core::pin::Code;

/// The largest installation report read.
const MAX_REPORT_BYTES: u64 = 16 << 20;

pub(super) async fn install(
    dir: &Path,
    package: &str,
    command: &str,
    confined: bool,
    budget: &super::Budget,
) -> Result<Code, String> {
    let path = std::env::var_os("PATH");
    let base = super::super::launcher::plan("python3", &[], path.as_deref(), dir);
    if !base.found {
        return Err(
            "python3 is not on PATH: installing a PyPI server needs Python 3 with venv".to_owned(),
        );
    }
    let python = PathBuf::from(&base.program);
    let python = if python.is_absolute() {
        python
    } else {
        super::find(&base.program, path.as_deref()).ok_or("python3 is not on PATH")?
    };
    let home = super::home();
    let mut read = base.read.clone();
    read.push(python.clone());
    if let Ok(real) = python.canonicalize() {
        read.push(real);
    }
    let mut env = super::base_env();
    // The user's pip settings, and the local paths they name (a wheel
    // directory, a certificate) made readable; a path that does not exist
    // is left out, as pip would pass it over.
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
    let venv = dir.join("venv");
    let step = super::Step {
        program: python.clone(),
        args: vec!["-m".into(), "venv".into(), venv.display().to_string()],
        env: env.clone(),
        cwd: dir.to_owned(),
        read: read.clone(),
        write: vec![dir.to_owned()],
        ports: Vec::new(),
        registry: None,
    };
    super::run(step, confined, budget)
        .await
        .map_err(|why| format!("python3 -m venv failed: {why}"))?;

    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".cache")))
        .map(|c| c.join("pip"));
    let mut write = vec![dir.to_owned()];
    if let Some(cache) = &cache
        && std::fs::create_dir_all(cache).is_ok()
    {
        write.push(cache.clone());
    }
    read.extend(super::present([
        home.as_ref().map(|h| h.join(".config/pip")),
        home.as_ref().map(|h| h.join(".pip")),
        Some(PathBuf::from("/etc/pip.conf")),
    ]));
    let config_files: Vec<PathBuf> = super::present([
        std::env::var_os("PIP_CONFIG_FILE").map(PathBuf::from),
        Some(PathBuf::from("/etc/pip.conf")),
        Some(PathBuf::from("/etc/xdg/pip/pip.conf")),
        home.as_ref().map(|h| h.join(".pip/pip.conf")),
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")))
            .map(|c| c.join("pip/pip.conf")),
    ])
    .collect();
    let indexes = super::index::Indexes::configured(&config_files);
    env.extend(indexes.env.iter().cloned());
    if let Some(home) = &home {
        env.push(("HOME".to_owned(), home.display().to_string()));
    }
    let report = dir.join("report.json");
    let args: Vec<String> = [
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "--no-warn-script-location",
        "--only-binary=:all:",
        "--retries=1",
        "--report",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .chain([
        report.display().to_string(),
        // pip's own socket timeout fits inside the install's limit.
        format!(
            "--timeout={}",
            budget.per_request(Duration::from_secs(30)).as_secs()
        ),
        "--".to_owned(),
        package.to_owned(),
    ])
    .collect();
    let step = super::Step {
        program: venv.join("bin/python"),
        args,
        env,
        cwd: dir.to_owned(),
        read,
        write,
        ports: indexes.ports(),
        registry: Some(indexes.shown()),
    };
    if let Err(why) = super::run(step, confined, budget).await {
        let why = match why.contains("No matching distribution found") {
            true => indexes.why_nothing(package).await.unwrap_or(why),
            false => why,
        };
        return Err(format!("pip install {package} failed: {why}"));
    }
    let code = read_report(&report, package, command, dir)?;
    let _ = std::fs::remove_file(&report);
    Ok(code)
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
