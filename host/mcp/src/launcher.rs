//! What a stdio server's command line needs to run confined, read from the
//! command line itself: the launcher it uses (`npx`, `uvx`, a venv's
//! Python, `node script.js`, a binary), the files the program must read
//! beyond the system set, and the directories its arguments name. What
//! `tiny-harness mcp add` and `mcp import` grant comes from here.
//!
//! Invariants:
//! - Nothing here grants anything: a [`Plan`] is a proposal, written into
//!   a config for a person to review.
//! - It proposes exactly what the launcher needs and nothing more: read of
//!   the interpreter's own prefix and of the script's package, and each
//!   absolute path among the server's arguments as a directory (read-only
//!   unless asked). Never `/`, never the user's home as a whole, never the
//!   network.
//! - A launcher that fetches code at every start (`npx`, `uvx`) is named as
//!   such, with what to do instead (`mcp install`): it cannot start
//!   confined as it is.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// The launchers that fetch a package at every start: the program, and the
/// leading arguments that make it one (`npm exec`).
const NPM_RUNNERS: &[(&str, &[&str])] = &[
    ("npx", &[]),
    ("npm", &["exec"]),
    ("bunx", &[]),
    ("bun", &["x"]),
];
const PYPI_RUNNERS: &[(&str, &[&str])] = &[
    ("uvx", &[]),
    ("uv", &["tool", "run"]),
    ("uv", &["x"]),
    ("pipx", &["run"]),
];

/// Options of those launchers that take a value (`--from PKG`).
const VALUED: &[&str] = &[
    "-p",
    "--package",
    "--from",
    "--with",
    "--python",
    "--spec",
    "--index",
    "--index-url",
    "-c",
    "--call",
];

/// What a server's command line is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// An npm package fetched at each start (`npx -y PKG ARGS`).
    Npm {
        /// The package as written (`@scope/name@1.2.3`).
        package: String,
        /// The program of it to run (the package itself, or what follows
        /// `--package=PKG`).
        command: String,
        /// The server's own arguments.
        args: Vec<String>,
    },
    /// A PyPI package fetched at each start (`uvx PKG ARGS`, `pipx run`).
    PyPi {
        /// The requirement as written.
        package: String,
        /// The console script to run.
        command: String,
        /// The server's own arguments.
        args: Vec<String>,
    },
    /// A Python interpreter; `venv` is its virtual environment, if any.
    Python {
        /// The environment's root (holding `pyvenv.cfg`).
        venv: Option<PathBuf>,
    },
    /// Node.js.
    Node,
    /// Any other program.
    Program,
}

/// What to grant a server so that it runs confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What the command line is.
    pub kind: Kind,
    /// The program to grant and run: the command as written when it is a
    /// bare name found on `PATH`, else an absolute path.
    pub program: String,
    /// The arguments, with a relative script path made absolute (the
    /// server runs in a private directory).
    pub args: Vec<String>,
    /// Files and directories the program must read beyond the system set.
    pub read: Vec<PathBuf>,
    /// Directories the server's arguments name.
    pub dirs: Vec<PathBuf>,
    /// What a person should know, one line each.
    pub notes: Vec<String>,
    /// Whether the program was found; a plan for a missing one grants it
    /// as written and says so in `notes`.
    pub found: bool,
}

impl Plan {
    /// True when the launcher fetches its package at every start, which a
    /// confined server cannot do.
    pub fn fetches(&self) -> bool {
        self.fetch().is_some()
    }

    /// What `mcp install` installs for it, and the server's own arguments,
    /// when the launcher fetches its package at every start.
    pub fn fetch(&self) -> Option<(super::fetch::Fetch, &[String])> {
        use super::fetch::Fetch;
        match &self.kind {
            Kind::Npm {
                package,
                command,
                args,
            } => Some((
                Fetch::Npm {
                    package: package.clone(),
                    command: command.clone(),
                },
                args,
            )),
            Kind::PyPi {
                package,
                command,
                args,
            } => Some((
                Fetch::PyPi {
                    package: package.clone(),
                    command: command.clone(),
                },
                args,
            )),
            _ => None,
        }
    }
}

/// The plan for `command` with `args`, looked up on `path` (the host's
/// `PATH`); relative paths are taken from `cwd`.
pub fn plan(command: &str, args: &[String], path: Option<&OsStr>, cwd: &Path) -> Plan {
    let mut plan = Plan {
        kind: Kind::Program,
        program: command.to_owned(),
        args: args.to_vec(),
        read: Vec::new(),
        dirs: Vec::new(),
        notes: Vec::new(),
        found: false,
    };
    let Some(mut resolved) = locate(command, path, cwd) else {
        plan.notes.push(format!(
            "{command:?} was not found{}: install it, or give its absolute path",
            if command.contains('/') {
                ""
            } else {
                " on PATH"
            }
        ));
        // What it would fetch is known from its name alone (an installed
        // server never runs it).
        let name = Path::new(command)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some((kind, note)) = fetching(&name, args) {
            plan.kind = kind;
            plan.notes.push(note);
        }
        return plan;
    };
    plan.found = true;
    if command.contains('/') {
        plan.program = resolved.display().to_string();
    }
    if let Some(real) = pyenv_shim(&resolved, &mut plan.notes) {
        plan.program = real.display().to_string();
        resolved = real;
    }
    let name = resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let canonical = resolved.canonicalize().unwrap_or_else(|_| resolved.clone());

    if let Some((kind, note)) = fetching(&name, args) {
        // Its own arguments may name directories (a filesystem server's
        // root), as any server's do.
        if let Kind::Npm { args, .. } | Kind::PyPi { args, .. } = &kind {
            let args = args.clone();
            argument_dirs(&args, &mut plan);
        }
        plan.kind = kind;
        plan.notes.push(note);
        return plan;
    }

    let script_at = if is_python(&name) {
        let venv = venv_of(&resolved);
        if let Some(venv) = &venv {
            plan.read.push(venv.clone());
        }
        // The interpreter's own prefix: its standard library (a venv's
        // base interpreter, a pyenv version).
        if let Some(prefix) = canonical.parent().and_then(Path::parent) {
            plan.read.push(prefix.to_owned());
        }
        plan.kind = Kind::Python { venv };
        script_index(args, &["-m", "-c"], &["-X", "-W"])
    } else if name == "node"
        || name.starts_with("node") && name[4..].chars().all(|c| c.is_ascii_digit())
    {
        plan.kind = Kind::Node;
        script_index(
            args,
            &["-e", "--eval", "-p", "--print"],
            &["-r", "--require", "--import", "--loader"],
        )
    } else {
        // A binary of its own: it reads its own install prefix, if it has
        // one outside the system set (`/opt/tool/bin/tool`).
        if command.contains('/')
            && let Some(prefix) = canonical
                .parent()
                .filter(|p| p.file_name() == Some(OsStr::new("bin")))
                .and_then(Path::parent)
        {
            plan.read.push(prefix.to_owned());
        }
        None
    };

    let mut first_arg = 0;
    if let Some(at) = script_at {
        let script = absolute(Path::new(&args[at]), cwd);
        if script.is_file() {
            plan.read.push(package_root(&script, &plan.kind));
            plan.args[at] = script.display().to_string();
        } else {
            plan.notes.push(format!(
                "{} was not found: check the path",
                script.display()
            ));
        }
        first_arg = at + 1;
    }
    argument_dirs(&args[first_arg..], &mut plan);
    plan.read = minimal(plan.read);
    plan
}

/// Each absolute path among a server's own `args` (also as `--x=/path`):
/// a directory to grant (a file's own directory), never `/`; one that does
/// not exist is noted.
fn argument_dirs(args: &[String], plan: &mut Plan) {
    for arg in args {
        let value = arg.split_once('=').map_or(arg.as_str(), |(_, v)| v);
        if !value.starts_with('/') {
            continue;
        }
        let path = Path::new(value);
        let dir = if path.is_dir() {
            path.to_owned()
        } else if path.exists() {
            match path.parent() {
                Some(parent) => parent.to_owned(),
                None => continue,
            }
        } else {
            plan.notes.push(format!(
                "{value} (in its arguments) does not exist: create it, or the server may not start"
            ));
            continue;
        };
        let dir = dir.canonicalize().unwrap_or(dir);
        if dir == Path::new("/") {
            plan.notes.push(format!(
                "{value} (in its arguments) would grant the whole file system: not granted"
            ));
        } else if !plan.dirs.contains(&dir) {
            plan.dirs.push(dir);
        }
    }
}

/// The file `command` runs: a path (made absolute) or the first executable
/// file of that name on `path`.
pub(crate) fn locate(command: &str, path: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let path = absolute(Path::new(command), cwd);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
}

/// Whether `command` is named as a launcher that may fetch its package at
/// every start (`npx`, `uvx`, ...): a cheap test before [`plan`].
pub fn may_fetch(command: &str) -> bool {
    let name = Path::new(command)
        .file_name()
        .and_then(OsStr::to_str)
        .unwrap_or_default();
    NPM_RUNNERS
        .iter()
        .chain(PYPI_RUNNERS)
        .any(|(runner, _)| *runner == name)
}

/// What a launcher named `name` that fetches its package at every start
/// fetches with `args`, and what to say of it.
fn fetching(name: &str, args: &[String]) -> Option<(Kind, String)> {
    if let Some((runner, package, command, rest)) = runner(name, args, NPM_RUNNERS) {
        let note = format!(
            "{runner} fetches {package} from the npm registry at every start, which a confined \
             server cannot do (no network, no writable cache): install it once with \
             tiny-harness mcp install, which pins its code in the lock"
        );
        let kind = Kind::Npm {
            package,
            command,
            args: rest,
        };
        return Some((kind, note));
    }
    let (runner, package, command, rest) = runner(name, args, PYPI_RUNNERS)?;
    let note = format!(
        "{runner} fetches {package} from PyPI at every start, which a confined server cannot do \
         (no network, no writable cache): install it once with tiny-harness mcp install, which \
         pins its code in the lock"
    );
    // uvx's `PKG@VERSION` and a requirement's `PKG==VERSION` name the
    // package; its script is the bare name.
    let command = command
        .split(['@', '=', '<', '>', '~', '!', '['])
        .next()
        .unwrap_or(&command)
        .to_owned();
    let kind = Kind::PyPi {
        package,
        command,
        args: rest,
    };
    Some((kind, note))
}

/// The launcher `name` with `args` is, among `runners`: how it is written,
/// the package it fetches, the program of it that runs, and the server's
/// own arguments.
type Runner = (String, String, String, Vec<String>);

fn runner(name: &str, args: &[String], runners: &[(&str, &[&str])]) -> Option<Runner> {
    let (runner, lead) = runners.iter().find(|(r, lead)| {
        *r == name && args.len() >= lead.len() && args.iter().zip(lead.iter()).all(|(a, l)| a == l)
    })?;
    let mut rest = args[lead.len()..].iter();
    let mut from = None;
    while let Some(arg) = rest.next() {
        if arg == "--" {
            continue;
        }
        if let Some((flag, value)) = arg.split_once('=')
            && matches!(flag, "--package" | "--from" | "--spec")
        {
            from = Some(value.to_owned());
            continue;
        }
        if VALUED.contains(&arg.as_str()) {
            let value = rest.next()?;
            if matches!(arg.as_str(), "-p" | "--package" | "--from" | "--spec") {
                from = Some(value.clone());
            }
            continue;
        }
        if arg.starts_with('-') {
            continue;
        }
        let written = if lead.is_empty() {
            (*runner).to_owned()
        } else {
            format!("{runner} {}", lead.join(" "))
        };
        let server_args: Vec<String> = rest.filter(|a| *a != "--").cloned().collect();
        let package = from.unwrap_or_else(|| arg.clone());
        return Some((written, package, arg.clone(), server_args));
    }
    None
}

fn is_python(name: &str) -> bool {
    name == "python"
        || name
            .strip_prefix("python")
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The index of the script among an interpreter's `args`: the first that
/// is not an option (`stop` options end the search, `valued` ones take the
/// next argument).
fn script_index(args: &[String], stop: &[&str], valued: &[&str]) -> Option<usize> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if stop.contains(&arg) {
            return None;
        }
        if valued.contains(&arg) {
            i += 2;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            return (arg != "-").then_some(i);
        }
        i += 1;
    }
    None
}

/// The virtual environment `python` belongs to: the directory above its
/// `bin/` that holds `pyvenv.cfg`.
fn venv_of(python: &Path) -> Option<PathBuf> {
    let root = python.parent()?.parent()?;
    root.join("pyvenv.cfg").is_file().then(|| root.to_owned())
}

/// The interpreter a pyenv shim runs, asked of pyenv itself.
fn pyenv_shim(program: &Path, notes: &mut Vec<String>) -> Option<PathBuf> {
    let shims = program.parent()?;
    if shims.file_name() != Some(OsStr::new("shims")) {
        return None;
    }
    let root = shims.parent()?;
    let pyenv = root.join("bin").join("pyenv");
    if !pyenv.is_file() {
        return None;
    }
    let name = program.file_name()?;
    let output = std::process::Command::new(&pyenv)
        .arg("which")
        .arg(name)
        .env("PYENV_ROOT", root)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let found = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if output.status.success() && found.is_absolute() && found.is_file() {
        notes.push(format!(
            "{} is a pyenv shim: the interpreter it runs, {}, is granted instead",
            program.display(),
            found.display()
        ));
        Some(found)
    } else {
        notes.push(format!(
            "{} is a pyenv shim that pyenv could not resolve: give the interpreter's own path \
             (pyenv which {})",
            program.display(),
            name.to_string_lossy()
        ));
        None
    }
}

/// What a script needs to read: for a script inside a `node_modules` tree,
/// the directory holding the outermost `node_modules` (dependencies are
/// hoisted there); else the nearest directory above it with the project's
/// manifest; else its own directory.
fn package_root(script: &Path, kind: &Kind) -> PathBuf {
    let script = script.canonicalize().unwrap_or_else(|_| script.to_owned());
    let mut outermost = None;
    let mut at = PathBuf::new();
    for component in script.components() {
        if component == Component::Normal(OsStr::new("node_modules")) && outermost.is_none() {
            outermost = Some(at.clone());
        }
        at.push(component);
    }
    if let Some(root) = outermost.filter(|r| r != Path::new("/")) {
        return root;
    }
    let manifests: &[&str] = match kind {
        Kind::Node => &["package.json"],
        _ => &["pyproject.toml", "setup.py", "setup.cfg"],
    };
    let dir = script.parent().unwrap_or(Path::new("/"));
    dir.ancestors()
        .take_while(|d| *d != Path::new("/"))
        .find(|d| manifests.iter().any(|m| d.join(m).is_file()))
        .unwrap_or(dir)
        .to_owned()
}

/// `path`, absolute (relative to `cwd`).
fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    }
}

/// `paths` without the system set, without duplicates, and without any
/// path inside another.
fn minimal(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let system = |p: &Path| {
        tiny_harness_sandbox::confine::SYSTEM_READ
            .iter()
            .any(|s| p.starts_with(s))
    };
    outermost(
        paths
            .into_iter()
            .filter(|p| !system(p) && p != Path::new("/")),
    )
}

/// `paths` in their first order, without duplicates and without any path
/// inside another.
pub fn outermost(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if kept.iter().any(|k| path.starts_with(k)) {
            continue;
        }
        kept.retain(|k| !k.starts_with(&path));
        kept.push(path);
    }
    kept
}

#[cfg(test)]
mod tests;
