//! `tiny-harness plugin new NAME [--lang rust|python|js] [--dir DIR] [--sdk
//! PATH]`: a new plugin that builds, registers and passes its own test at
//! once.
//!
//! Invariants:
//! - Nothing is written unless everything is: the files are written into
//!   a new directory beside the destination, then renamed into place; a
//!   destination that exists and is not empty is refused.
//! - A Rust scaffold depends on the guest SDK by the path of a checkout
//!   (the one this binary was built from, or `--sdk`), checked before
//!   anything is written; it says so.
//! - Every scaffold's test runs its `cases.toml` through this binary
//!   (`tiny-harness test`), so no test compiles the host.

use std::path::{Path, PathBuf};

use tiny_harness_core::display::one_line;

/// The languages a plugin can be scaffolded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    /// Rust on the guest SDK, tested with `cargo test`.
    Rust,
    /// Python, built with componentize-py.
    Python,
    /// JavaScript, built with componentize-js.
    Js,
}

/// Why nothing was scaffolded. One line each, saying what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScaffoldError {
    /// The name cannot name a plugin (or a package).
    #[error(
        "{name:?} cannot name a plugin: {why}; use 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter{}",
        .suggestion.as_ref().map(|s| format!(" (such as {s:?})")).unwrap_or_default()
    )]
    Name {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: String,
        /// A name like it that would do, if one can be made.
        suggestion: Option<String>,
    },
    /// The destination holds something already.
    #[error(
        "{} exists and is not empty: give another --dir, or remove it first",
        dir.display()
    )]
    NotEmpty {
        /// The destination.
        dir: PathBuf,
    },
    /// The checkout holding the SDK is not there.
    #[error(
        "{} holds no tiny-harness checkout with the guest SDK (plugins/sdk): give --sdk PATH to one",
        sdk.display()
    )]
    NoSdk {
        /// Where it was looked for.
        sdk: PathBuf,
    },
    /// Writing failed.
    #[error("cannot write the plugin to {}: {reason}", dir.display())]
    Write {
        /// The destination.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The checkout this binary was built from.
fn built_from() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `c` may be part of a plugin's name.
fn allowed(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'
}

/// A name like `name` that would do: lowercased, every run of other
/// characters made one '-', what comes before the first letter dropped,
/// cut at 64 characters. None when nothing of it would be left.
fn suggest(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if allowed(c) {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let start = out.find(|c: char| c.is_ascii_lowercase())?;
    let mut out: String = out[start..].chars().take(64).collect();
    while out.ends_with('-') {
        out.pop();
    }
    (!out.is_empty() && out != name).then_some(out)
}

/// Checks `name`, returning what is wrong with it.
fn check_name(name: &str) -> Result<(), ScaffoldError> {
    let fail = |why: String| ScaffoldError::Name {
        name: one_line(name).into_owned(),
        why,
        suggestion: suggest(name),
    };
    if name.is_empty() || name.len() > 64 {
        return Err(fail(format!(
            "it is {} characters long",
            name.chars().count()
        )));
    }
    let mut bad: Vec<char> = Vec::new();
    for c in name.chars().filter(|c| !allowed(*c)) {
        if !bad.contains(&c) {
            bad.push(c);
        }
    }
    let shown: Vec<String> = bad.iter().map(|c| format!("{c:?}")).collect();
    if let Some((last, first)) = shown.split_last() {
        let why = match first {
            [] => format!("{last} is not allowed"),
            _ => format!("{} and {last} are not allowed", first.join(", ")),
        };
        return Err(fail(why));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(fail("it does not start with a letter".to_owned()));
    }
    Ok(())
}

/// The files of a `lang` plugin named `name`, depending on the checkout at
/// `sdk` (Rust): (path in the plugin's directory, contents, executable).
fn files(lang: Lang, name: &str, sdk: &Path) -> Vec<(&'static str, String, bool)> {
    let this = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "tiny-harness".to_owned());
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{server}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{sdk}}", &sdk.display().to_string())
            .replace("{{tiny_harness}}", &this)
    };
    // The world itself, for the toolchains that read WIT.
    let wit = || {
        (
            "wit/plugin.wit",
            include_str!("../../../../wit/plugin.wit").to_owned(),
            false,
        )
    };
    match lang {
        Lang::Rust => vec![
            (
                "Cargo.toml",
                fill(include_str!("../../templates/rust/Cargo.toml.in")),
                false,
            ),
            (
                "src/lib.rs",
                fill(include_str!("../../templates/rust/src/lib.rs.in")),
                false,
            ),
            (
                "tests/plugin.rs",
                fill(include_str!("../../templates/rust/tests/plugin.rs.in")),
                false,
            ),
            (
                "cases.toml",
                fill(include_str!("../../templates/rust/cases.toml.in")),
                false,
            ),
            (
                "tiny-harness.toml",
                fill(include_str!("../../templates/rust/tiny-harness.toml.in")),
                false,
            ),
            (
                ".gitignore",
                fill(include_str!("../../templates/rust/gitignore.in")),
                false,
            ),
        ],
        Lang::Python => vec![
            (
                "app.py",
                fill(include_str!("../../templates/python/app.py.in")),
                false,
            ),
            (
                "tools.py",
                fill(include_str!("../../templates/python/tools.py.in")),
                false,
            ),
            (
                "requirements.txt",
                fill(include_str!("../../templates/python/requirements.txt.in")),
                false,
            ),
            (
                "build.sh",
                fill(include_str!("../../templates/python/build.sh.in")),
                true,
            ),
            (
                "test.sh",
                fill(include_str!("../../templates/python/test.sh.in")),
                true,
            ),
            (
                "cases.toml",
                fill(include_str!("../../templates/python/cases.toml.in")),
                false,
            ),
            (
                "tiny-harness.toml",
                fill(include_str!("../../templates/python/tiny-harness.toml.in")),
                false,
            ),
            (
                ".gitignore",
                fill(include_str!("../../templates/python/gitignore.in")),
                false,
            ),
            wit(),
        ],
        Lang::Js => vec![
            (
                "app.js",
                fill(include_str!("../../templates/js/app.js.in")),
                false,
            ),
            (
                "tools.js",
                fill(include_str!("../../templates/js/tools.js.in")),
                false,
            ),
            (
                "package.json",
                fill(include_str!("../../templates/js/package.json.in")),
                false,
            ),
            (
                "package-lock.json",
                fill(include_str!("../../templates/js/package-lock.json.in")),
                false,
            ),
            (
                "build.sh",
                fill(include_str!("../../templates/js/build.sh.in")),
                true,
            ),
            (
                "test.sh",
                fill(include_str!("../../templates/js/test.sh.in")),
                true,
            ),
            (
                "cases.toml",
                fill(include_str!("../../templates/js/cases.toml.in")),
                false,
            ),
            (
                "tiny-harness.toml",
                fill(include_str!("../../templates/js/tiny-harness.toml.in")),
                false,
            ),
            (
                ".gitignore",
                fill(include_str!("../../templates/js/gitignore.in")),
                false,
            ),
            wit(),
        ],
    }
}

/// Writes the plugin and returns what to tell the user.
pub(crate) fn scaffold(
    name: &str,
    lang: Lang,
    dir: Option<&Path>,
    sdk: Option<&Path>,
) -> Result<String, ScaffoldError> {
    check_name(name)?;
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    let occupied = match std::fs::read_dir(&dir) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
    };
    if occupied {
        return Err(ScaffoldError::NotEmpty { dir });
    }
    let sdk = sdk.map_or_else(built_from, Path::to_owned);
    let sdk = std::fs::canonicalize(&sdk).unwrap_or(sdk);
    if !sdk.join("plugins/sdk/Cargo.toml").is_file() {
        return Err(ScaffoldError::NoSdk { sdk });
    }
    write_all(&dir, &files(lang, name, &sdk)).map_err(|e| ScaffoldError::Write {
        dir: dir.clone(),
        reason: e.to_string(),
    })?;
    let shown = dir.display();
    let crate_name = name.replace('-', "_");
    Ok(match lang {
        Lang::Rust => format!(
            "Created the Rust plugin {name} in {shown}.\n\
             It uses the guest SDK of the checkout at {sdk} by path, until it is published.\n\
             \n\
             Build it:  cd {shown} && cargo build --release --target wasm32-wasip2 --target-dir target\n\
             Test it:   cargo test   (builds it and runs the calls of cases.toml through tiny-harness)\n\
             Try it:    tiny-harness --config tiny-harness.toml call {name}/{name}.greet '{{\"name\":\"Ada\"}}'\n\
             Look:      tiny-harness plugin inspect target/wasm32-wasip2/release/{crate_name}.wasm",
            sdk = sdk.display(),
        ),
        Lang::Python | Lang::Js => {
            let (language, toolchain) = match lang {
                Lang::Python => ("Python", "componentize-py, from PyPI into .venv"),
                _ => ("JavaScript", "componentize-js, from npm into node_modules"),
            };
            format!(
                "Created the {language} plugin {name} in {shown}, with the world it targets in wit/.\n\
                 The first build installs {toolchain}, pinned with hashes.\n\
                 \n\
                 Build it:  cd {shown} && ./build.sh\n\
                 Test it:   ./test.sh   (builds it and runs the calls of cases.toml through tiny-harness)\n\
                 Try it:    tiny-harness --config tiny-harness.toml call {name}/{name}.greet '{{\"name\":\"Ada\"}}'\n\
                 Look:      tiny-harness plugin inspect {crate_name}.wasm"
            )
        }
    })
}

/// Writes `files` into a new directory beside `dir`, then renames it to
/// `dir` (which is absent or empty), so that nothing is left half written.
fn write_all(dir: &Path, files: &[(&str, String, bool)]) -> std::io::Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let staged = parent.join(format!(".tiny-harness-new-{}", std::process::id()));
    std::fs::create_dir(&staged)?;
    let written = (|| {
        for (path, contents, executable) in files {
            let path = staged.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, contents)?;
            if *executable {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
            }
        }
        // An empty destination is replaced by the staged one (rename(2)
        // does that for an empty directory).
        std::fs::rename(&staged, dir)
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&staged);
    }
    written
}
