//! Installing an npm server: `npm install` of the package into a fresh
//! directory, through the user's own npm (its registry and config; the
//! cache is the install's own, see `room`), then
//! its exact version and integrity (and every dependency's) read from the
//! `package-lock.json` npm wrote, and the program to run from its `bin`.
//!
//! Invariants:
//! - npm runs with `--ignore-scripts` (a package's install scripts are
//!   code run at install, outside any server's grants) and, confined, may
//!   write only the new install (its cache and temporary files inside
//!   it), and connect only to the registry's port.
//! - Every package comes from the registry, or from a scoped registry the
//!   user's npm config names: one that npm's lockfile says was resolved
//!   from any other host (a packument may point a tarball anywhere, and
//!   the kernel's rules limit ports, not hosts) refuses the install.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use tiny_harness_core::pin::Code;

use super::StoreError;

/// The largest `package-lock.json` or `package.json` read.
const MAX_JSON_BYTES: u64 = 64 << 20;

pub(super) async fn install(
    dir: &Path,
    package: &str,
    command: &str,
    confined: bool,
    budget: &super::Budget,
) -> Result<Code, StoreError> {
    let path = std::env::var_os("PATH");
    let npm = super::find("npm", path.as_deref()).ok_or_else(|| {
        "npm is not on PATH: installing an npm server needs npm (install Node.js)".to_owned()
    })?;
    std::fs::write(
        dir.join("package.json"),
        "{\"name\": \"tiny-harness-store\", \"private\": true}\n",
    )
    .map_err(|source| StoreError::Io {
        what: "cannot write package.json".to_owned(),
        source,
    })?;
    let home = super::home();
    // A cache and temporary files of the install's own, inside it (and so
    // within its room), removed once it is made: a refused install leaves
    // nothing behind in the user's cache either.
    let (cache, tmp) = super::room::work(dir).map_err(|source| StoreError::Io {
        what: format!("cannot make the install's cache in {}", dir.display()),
        source,
    })?;
    // What npm reads: its own package and node's, and the user's config.
    let mut read = Vec::new();
    if let Ok(real) = npm.canonicalize() {
        // .../lib/node_modules/npm/bin/npm-cli.js: the npm package.
        if let Some(package) = real.parent().and_then(Path::parent) {
            read.push(package.to_owned());
        }
    }
    if let Some(node) = super::find("node", path.as_deref())
        && let Ok(real) = node.canonicalize()
    {
        read.push(real.clone());
        if let Some(prefix) = real.parent().and_then(Path::parent) {
            read.push(prefix.to_owned());
        }
    }
    read.extend(super::present([
        home.as_ref().map(|h| h.join(".npmrc")),
        Some(PathBuf::from("/etc/npmrc")),
    ]));
    let write = vec![dir.to_owned()];
    let mut env = super::base_env();
    if let Some(home) = &home {
        env.push(("HOME".to_owned(), home.display().to_string()));
    }
    env.push(("TMPDIR".to_owned(), tmp.display().to_string()));
    for (key, value) in std::env::vars() {
        let lower = key.to_ascii_lowercase();
        if lower.starts_with("npm_config_") && lower != "npm_config_cache" {
            env.push((key, value));
        }
    }
    // npm's own request timeout and retries fit inside the install's
    // limit, so a registry that does not answer is given up on in time.
    let fetch_timeout = budget.per_request(Duration::from_secs(60));
    let args: Vec<String> = [
        "install",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "--save-exact",
        "--omit=dev",
        "--fetch-retries=1",
        "--fetch-retry-mintimeout=1000",
        "--fetch-retry-maxtimeout=5000",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .chain([
        format!("--fetch-timeout={}", fetch_timeout.as_millis()),
        format!("--cache={}", cache.display()),
        "--".to_owned(),
        package.to_owned(),
    ])
    .collect();
    let step = super::Step {
        program: npm,
        args,
        env,
        cwd: dir.to_owned(),
        read,
        write,
        ports: registry_ports(),
        registry: Some(super::shown_registry(&registry())),
    };
    super::run(step, confined, budget)
        .await
        .map_err(|why| format!("npm install {package} failed: {why}"))?;
    Ok(read_install(dir, command)?)
}

/// The ports npm's registry is reached on: 443 and 80, and the port of a
/// registry the user's config or environment names.
fn registry_ports() -> Vec<u16> {
    let mut ports = vec![443, 80];
    if let Some(port) = configured_registry()
        .and_then(|url| url::Url::parse(url.trim()).ok())
        .and_then(|url| url.port_or_known_default())
    {
        ports.push(port);
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// The registry the user's environment or `~/.npmrc` names, if any.
fn configured_registry() -> Option<String> {
    std::env::var("npm_config_registry").ok().or_else(|| {
        let home = super::home()?;
        let text = std::fs::read_to_string(home.join(".npmrc")).ok()?;
        text.lines()
            .find_map(|l| l.trim().strip_prefix("registry=").map(str::to_owned))
    })
}

/// The registry npm installs from: the user's, else npm's default.
fn registry() -> String {
    configured_registry().unwrap_or_else(|| "https://registry.npmjs.org/".to_owned())
}

/// The scoped registries (`@scope:registry=URL`) the user's environment
/// and `~/.npmrc` name.
fn scoped_registries() -> Vec<String> {
    let mut found: Vec<String> = std::env::vars()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k.starts_with("npm_config_@") && k.ends_with(":registry")
        })
        .map(|(_, v)| v)
        .collect();
    if let Some(text) = super::home().and_then(|h| std::fs::read_to_string(h.join(".npmrc")).ok()) {
        found.extend(text.lines().filter_map(|l| {
            let (key, value) = l.trim().split_once('=')?;
            (key.trim().starts_with('@') && key.trim().ends_with(":registry"))
                .then(|| value.trim().to_owned())
        }));
    }
    found
}

/// `scheme://host[:port]` of `url`, if it is an http(s) URL.
fn origin(url: &str) -> Option<String> {
    let url = url::Url::parse(url.trim()).ok()?;
    matches!(url.scheme(), "http" | "https").then(|| url.origin().ascii_serialization())
}

/// Where `name@version` came from, as npm's lockfile says, if that is
/// the registry or one of `scoped`; else why it may not be installed.
fn source(
    dependency: &str,
    resolved: &str,
    registry: &str,
    scoped: &[String],
) -> Result<String, String> {
    let shown = super::shown_registry(resolved);
    match origin(resolved) {
        Some(from) if from == registry || scoped.contains(&from) => Ok(from),
        Some(from) => Err(format!(
            "{dependency} was resolved from {from} ({shown}), not from the registry {registry}: \
             a registry may not send packages from other hosts; if {from} is a registry of \
             yours, name it for its scope in ~/.npmrc (@scope:registry={from}/)"
        )),
        None => Err(format!(
            "{dependency} was resolved from {shown}, which is not a registry: only packages \
             from the registry are installed"
        )),
    }
}

/// The installed package, its dependencies and its program, from what npm
/// wrote in `dir`.
fn read_install(dir: &Path, command: &str) -> Result<Code, String> {
    let lock = json(&dir.join("package-lock.json"))?;
    let packages = lock
        .get("packages")
        .and_then(Value::as_object)
        .ok_or("npm wrote a package-lock.json without packages")?;
    let direct = packages
        .get("")
        .and_then(|root| root.get("dependencies"))
        .and_then(Value::as_object)
        .ok_or("npm installed nothing")?;
    let name = match direct.keys().collect::<Vec<_>>().as_slice() {
        [one] => (*one).clone(),
        _ => return Err("npm installed more than the one package asked for".to_owned()),
    };
    let field =
        |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let top = packages
        .get(&format!("node_modules/{name}"))
        .ok_or_else(|| format!("npm's lock has no entry for {name}"))?;
    let version =
        field(top, "version").ok_or_else(|| format!("{name} has no version in npm's lock"))?;
    let integrity = field(top, "integrity").ok_or_else(|| {
        format!("{name} has no integrity in npm's lock (was it installed from a registry?)")
    })?;
    let registry = origin(&registry()).unwrap_or_default();
    let scoped: Vec<String> = scoped_registries()
        .iter()
        .filter_map(|r| origin(r))
        .collect();
    let mut sources = BTreeMap::new();
    if let Some(resolved) = field(top, "resolved") {
        let from = source(&format!("{name}@{version}"), &resolved, &registry, &scoped)?;
        if from != registry {
            sources.insert(format!("{name}@{version}"), from);
        }
    }
    let mut dependencies = BTreeMap::new();
    for (key, entry) in packages {
        let Some(at) = key.rfind("node_modules/") else {
            continue;
        };
        let dependency = &key[at + "node_modules/".len()..];
        if dependency == name && !key[..at].contains("node_modules") {
            continue;
        }
        if let Some(version) = field(entry, "version") {
            let key = format!("{dependency}@{version}");
            if let Some(resolved) = field(entry, "resolved") {
                let from = source(&key, &resolved, &registry, &scoped)?;
                if from != registry {
                    sources.insert(key.clone(), from);
                }
            }
            let integrity = field(entry, "integrity").unwrap_or_else(|| "none".to_owned());
            dependencies.insert(key, integrity);
        }
    }
    if dependencies.len() > tiny_harness_core::pin::MAX_DEPENDENCIES {
        return Err(format!(
            "{name} pulls in {} packages, more than the {} a lock records",
            dependencies.len(),
            tiny_harness_core::pin::MAX_DEPENDENCIES
        ));
    }
    let entry = entry(dir, &name, command)?;
    Ok(Code {
        kind: "npm".to_owned(),
        package: name,
        version,
        integrity,
        entry,
        dependencies,
        tree: None,
        registry: Some(registry),
        sources,
    })
}

/// The program of package `name` to run for `command`, as npx picks it:
/// the `bin` named `command` (or the package's own name without its
/// scope), or its only one. Relative to the install.
fn entry(dir: &Path, name: &str, command: &str) -> Result<String, String> {
    let package = dir.join("node_modules").join(name);
    let manifest = json(&package.join("package.json"))?;
    let unscoped = name.rsplit('/').next().unwrap_or(name);
    let wanted = command
        .strip_prefix('@')
        .map_or(command, |_| command.rsplit('/').next().unwrap_or(command));
    let wanted = wanted.split('@').next().unwrap_or(wanted);
    let script = match manifest.get("bin") {
        Some(Value::String(one)) => one.clone(),
        Some(Value::Object(bins)) => {
            let pick = bins
                .get(wanted)
                .or_else(|| bins.get(unscoped))
                .or_else(|| (bins.len() == 1).then(|| bins.values().next()).flatten());
            match pick.and_then(Value::as_str) {
                Some(script) => script.to_owned(),
                None => {
                    let names: Vec<&str> = bins.keys().map(String::as_str).collect();
                    return Err(format!(
                        "{name} has several programs ({}) and none named {wanted}: name one \
                         with npx --package={name} PROGRAM",
                        names.join(", ")
                    ));
                }
            }
        }
        _ => {
            return Err(format!(
                "{name} has no program to run (no bin in its package.json)"
            ));
        }
    };
    let script = Path::new(&script);
    if script.is_absolute() || script.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "{name}'s bin {} leaves its package",
            script.display()
        ));
    }
    let relative = Path::new("node_modules").join(name).join(script);
    let normal: PathBuf = relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if !dir.join(&normal).is_file() {
        return Err(format!(
            "{name}'s program {} was not installed",
            normal.display()
        ));
    }
    Ok(normal.display().to_string())
}

fn json(path: &Path) -> Result<Value, String> {
    let bytes = tiny_harness_core::file::read_regular(path, "package file", MAX_JSON_BYTES)
        .map_err(|e| format!("cannot read {}: {}", path.display(), e.reason))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}
