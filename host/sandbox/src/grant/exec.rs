//! `exec` grants: the programs a plugin may have the host start.
//!
//! Invariant: a grant is one file, found once when the config is loaded (a
//! bare name on `PATH`, or a path), and a command is allowed only if it
//! resolves now to that same file, compared by canonical path. So a second
//! `node` earlier on some other `PATH`, or a symlink to another program
//! under a granted name, is refused, while `node`, `/usr/bin/node` and a
//! symlink to it are one program. Only absolute directories on `PATH` are
//! searched: a relative entry (or an empty one, which means the current
//! directory) would make the answer depend on where the host was started.
//! A program that is not on this machine is an [`UnusableProgram`]: never
//! run, it answers whatever asks for it with why, while the rest works.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use tiny_harness_core::display::one_line;

use super::env::EnvNames;
use super::{GrantError, shown, toml_string};

/// A program a plugin may have the host start.
///
/// Resolved when the config is loaded: the file must exist then and be an
/// executable regular file. [`program`](Self::program) is what gets run:
/// the absolute path as found, with symlinks not followed, since a program
/// may behave by the name it is started as (a multi-call binary such as
/// busybox). [`canonical`](Self::canonical) is the file itself, which
/// commands are matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecGrant {
    written: String,
    program: PathBuf,
    canonical: PathBuf,
    read: Vec<PathBuf>,
    args: Option<ArgPatterns>,
    env: EnvNames,
    sockets: Vec<PathBuf>,
}

/// The arguments an exec grant allows (`args = ["status", "--oneline",
/// "-n[0-9]+"]`): every argument must match one of the patterns, each a
/// regular expression matched against the whole argument. Without `args`
/// any arguments are allowed; `args = []` allows none.
///
/// Patterns are compiled once, at load, with a size limit; matching is
/// linear in the argument's length (the `regex` crate has no
/// backtracking).
#[derive(Debug, Clone)]
pub struct ArgPatterns {
    written: Vec<String>,
    compiled: Vec<regex::Regex>,
}

impl PartialEq for ArgPatterns {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}
impl Eq for ArgPatterns {}

impl ArgPatterns {
    /// The most patterns one grant may have.
    pub const MAX_PATTERNS: usize = 256;
    /// The largest compiled pattern, in bytes of the regex engine's program.
    pub const MAX_COMPILED_BYTES: usize = 1 << 20;

    /// Compiles `patterns`; an error is one line naming the pattern.
    pub fn new(patterns: &[String]) -> Result<ArgPatterns, super::GrantError> {
        if patterns.len() > Self::MAX_PATTERNS {
            return Err(super::GrantError::TooManyPatterns {
                count: patterns.len(),
                max: Self::MAX_PATTERNS,
            });
        }
        let compiled = patterns
            .iter()
            .map(|pattern| {
                let build = |source: &str| {
                    regex::RegexBuilder::new(source)
                        .size_limit(Self::MAX_COMPILED_BYTES)
                        .build()
                        .map_err(|e| super::GrantError::Pattern {
                            pattern: pattern.clone(),
                            why: why_not(source, &e),
                        })
                };
                // Alone first, so that a pattern such as `a)|(b` cannot
                // break out of the anchors it is then wrapped in.
                build(pattern)?;
                build(&format!("^(?:{pattern})$"))
            })
            .collect::<Result<_, _>>()?;
        Ok(ArgPatterns {
            written: patterns.to_vec(),
            compiled,
        })
    }

    /// The patterns as written.
    pub fn written(&self) -> &[String] {
        &self.written
    }

    /// The first argument no pattern matches, with its index.
    fn refused<'a>(&self, args: &'a [String]) -> Option<(usize, &'a str)> {
        args.iter()
            .enumerate()
            .find(|(_, arg)| !self.compiled.iter().any(|re| re.is_match(arg)))
            .map(|(i, arg)| (i, arg.as_str()))
    }
}

impl ExecGrant {
    /// Resolves the program `written` in a config.
    ///
    /// A bare name (no `/`) is searched in the absolute directories of
    /// `path` (a `PATH` value), in order; the first executable regular file
    /// of that name wins, as a shell would run it. A path with `/` is taken
    /// relative to `base` (the config's directory) unless absolute. Either
    /// way the result must be an executable regular file. Errors are one
    /// line saying what to fix; `ResolveError::Invalid` for a grant no
    /// machine could satisfy (no name, a NUL byte), else
    /// `ResolveError::Missing`: the program is not on this machine.
    pub fn resolve(
        written: &str,
        base: &Path,
        path: Option<&OsStr>,
    ) -> Result<ExecGrant, ResolveError> {
        let quoted = format!("program {written:?}");
        if written.is_empty() {
            return Err(ResolveError::Invalid(format!(
                "{quoted} names no program: give a name on PATH (such as \"node\") or a path"
            )));
        }
        if written.contains('\0') {
            return Err(ResolveError::Invalid(format!(
                "{quoted} holds a NUL byte: remove it"
            )));
        }
        let absent = ResolveError::Missing;
        let program = if is_bare(written) {
            search(written, path).map_err(|missing| match missing {
                Missing::NoPath => format!(
                    "{quoted} cannot be looked up: PATH has no absolute directory; give the program's absolute path"
                ),
                Missing::NotFound(None) => format!(
                    "{quoted} was not found on PATH: install it, or give its path"
                ),
                Missing::NotFound(Some((candidate, why))) => format!(
                    "{quoted} was not found on PATH ({} {why}): install it, or give its path",
                    shown(&candidate)
                ),
            })
            .map_err(absent)?
        } else {
            let joined = base.join(written);
            let program = std::path::absolute(&joined).unwrap_or(joined);
            check_program(&program)
                .map_err(|why| {
                    format!(
                        "{quoted} ({}) {why}: give the path of an executable file",
                        shown(&program)
                    )
                })
                .map_err(absent)?;
            program
        };
        let canonical = program.canonicalize().map_err(|e| {
            absent(format!(
                "{quoted} ({}) cannot be resolved: {e}",
                shown(&program)
            ))
        })?;
        Ok(ExecGrant {
            written: written.to_owned(),
            program,
            canonical,
            read: Vec::new(),
            args: None,
            env: EnvNames::default(),
            sockets: Vec::new(),
        })
    }

    /// The program as written in the config (`node`, `./bin/server`).
    pub fn written(&self) -> &str {
        &self.written
    }

    /// The absolute path as resolved, symlinks not followed: what is run.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The canonical path (symlinks followed): what commands are matched
    /// against.
    pub fn canonical(&self) -> &Path {
        &self.canonical
    }

    /// The grant with `path` also readable by the program when it runs
    /// confined (one entry of `read = [...]` in the config): a file or
    /// directory it needs beyond the system set, such as its own package.
    ///
    /// The path is resolved now, symlinks and `..` followed (a relative
    /// path from the current directory; the config joins its own
    /// directory first), and the real path is what is granted. A path
    /// that cannot be resolved (it does not exist) is refused with
    /// [`GrantError::Unresolvable`]. Default: nothing beyond the system
    /// set.
    pub fn allow_read(mut self, path: impl AsRef<Path>) -> Result<ExecGrant, GrantError> {
        let path = path.as_ref();
        let real = path.canonicalize().map_err(|e| GrantError::Unresolvable {
            path: path.to_owned(),
            source: std::sync::Arc::new(e),
        })?;
        self.read.push(real);
        Ok(self)
    }

    /// What the program may read besides the system set.
    pub fn read(&self) -> &[PathBuf] {
        &self.read
    }

    /// The grant allowing only arguments that match `patterns`.
    pub fn with_args(mut self, patterns: ArgPatterns) -> ExecGrant {
        self.args = Some(patterns);
        self
    }

    /// The grant letting the plugin set the variables `names` allows for
    /// the program (`env = [...]` on the grant; none by default).
    pub fn with_env(mut self, names: EnvNames) -> ExecGrant {
        self.env = names;
        self
    }

    /// The variables the plugin may set for the program.
    pub fn env(&self) -> &EnvNames {
        &self.env
    }

    /// The grant letting the program connect to the Unix socket file at
    /// `path` (one entry of `sockets = [...]` on the grant).
    ///
    /// The path is resolved now as [`allow_read`](Self::allow_read)
    /// resolves one, and must be a Unix socket that exists (its server
    /// started): anything else is refused with
    /// [`GrantError::NotASocket`]. Default: no socket.
    pub fn allow_socket(mut self, path: impl AsRef<Path>) -> Result<ExecGrant, GrantError> {
        let path = path.as_ref();
        let real = path
            .canonicalize()
            .ok()
            .filter(|real| is_socket(real))
            .ok_or_else(|| GrantError::NotASocket {
                path: path.to_owned(),
            })?;
        self.sockets.push(real);
        Ok(self)
    }

    /// The Unix socket files the program may connect to.
    pub fn sockets(&self) -> &[PathBuf] {
        &self.sockets
    }

    /// The argument patterns, if the grant limits arguments.
    pub fn args(&self) -> Option<&ArgPatterns> {
        self.args.as_ref()
    }

    /// Checks `args` (without the program itself) against the grant's
    /// patterns. The error is one line naming the argument and the grant.
    pub fn check_args(&self, args: &[String]) -> Result<(), super::GrantError> {
        let Some(patterns) = &self.args else {
            return Ok(());
        };
        match patterns.refused(args) {
            None => Ok(()),
            Some((index, arg)) => Err(super::GrantError::Argument {
                position: index + 1,
                arg: one_line(&arg.chars().take(200).collect::<String>()).into_owned(),
                program: self.written.clone(),
                patterns: patterns.written().to_vec(),
                program_toml: toml_string(&self.written),
            }),
        }
    }
}

/// Why a program named in a config cannot be granted. Display is one
/// line saying what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The grant is wrong whatever the machine (it names no program, or
    /// holds a NUL byte): the config must change.
    #[error("{0}")]
    Invalid(String),
    /// The program is not on this machine (not on `PATH`, no such file,
    /// not executable): the grant is unusable here, and only what needs it
    /// fails (see [`UnusableProgram`]).
    #[error("{0}")]
    Missing(String),
}

/// An exec grant whose program is not on this machine: kept, with why,
/// so that whatever needs it (an MCP server it starts, an exec call)
/// fails with that reason, while everything else the plugin has works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusableProgram {
    written: String,
    path: Option<PathBuf>,
    reason: String,
    args: Option<ArgPatterns>,
    env: EnvNames,
}

impl UnusableProgram {
    /// The grant of `written` (as in the config; `base` is the config's
    /// directory), unusable for `reason`: one line, the config's place
    /// included, saying what to do.
    pub fn new(written: &str, base: &Path, reason: String) -> UnusableProgram {
        let path = (!is_bare(written)).then(|| {
            let joined = base.join(written);
            std::path::absolute(&joined).unwrap_or(joined)
        });
        UnusableProgram {
            written: written.to_owned(),
            path,
            reason,
            args: None,
            env: EnvNames::default(),
        }
    }

    /// The same, with the argument patterns its grant gives.
    pub fn with_args(mut self, patterns: ArgPatterns) -> UnusableProgram {
        self.args = Some(patterns);
        self
    }

    /// The same, with the variables its grant lets the plugin set.
    pub fn with_env(mut self, names: EnvNames) -> UnusableProgram {
        self.env = names;
        self
    }

    /// The program as written in the config.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// Why it is unusable: one line, from the config's place.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether `command`, as a plugin declared it, names this grant's
    /// program: the same bare name, or the same absolute path.
    pub fn names(&self, command: &str) -> bool {
        match &self.path {
            None => command == self.written,
            Some(path) => Path::new(command) == path,
        }
    }

    /// The grant standing for this one with `program` (an absolute path to
    /// an executable file) as what runs, with this grant's argument
    /// patterns and variables: for a server whose launcher (`uvx`) is not
    /// on this machine but runs from its install, where the launcher would
    /// not run anyway.
    pub fn stand_in(&self, program: &Path) -> Result<ExecGrant, ResolveError> {
        let display = program.display().to_string();
        let mut grant = ExecGrant::resolve(&display, Path::new("/"), None)?;
        grant.written = self.written.clone();
        grant.args = self.args.clone();
        grant.env = self.env.clone();
        Ok(grant)
    }
}

/// Why `source` does not compile, in one line: what is wrong and at which
/// character of the pattern (regex's own message spans several lines, the
/// pattern drawn with a caret under the place).
fn why_not(source: &str, error: &regex::Error) -> String {
    let at = |span: &regex_syntax::ast::Span, what: String| {
        format!("{what} at character {}", span.start.column)
    };
    match error {
        regex::Error::Syntax(_) => match regex_syntax::Parser::new().parse(source) {
            Err(regex_syntax::Error::Parse(e)) => at(e.span(), e.kind().to_string()),
            Err(regex_syntax::Error::Translate(e)) => at(e.span(), e.kind().to_string()),
            _ => one_line(&error.to_string()).into_owned(),
        },
        _ => one_line(&error.to_string()).into_owned(),
    }
}

/// Finds the grant that allows running `command` as a plugin declared it.
///
/// A bare name is resolved on `path` as [`ExecGrant::resolve`] does, an
/// absolute path is taken as it is, and a relative path with `/` is refused
/// whatever is granted (it would depend on the directory it is started
/// from). The command is allowed if the file it resolves to has the
/// canonical path of a grant; run the grant's
/// [`program`](ExecGrant::program), not the command.
pub fn find_program<'a>(
    grants: &'a [ExecGrant],
    command: &str,
    path: Option<&OsStr>,
) -> Result<&'a ExecGrant, ExecDenied> {
    let denied = |resolved: Option<PathBuf>| ExecDenied {
        command: command.to_owned(),
        resolved,
    };
    let resolved = if command.is_empty() || command.contains('\0') {
        None
    } else if is_bare(command) {
        search(command, path).ok()
    } else if Path::new(command).is_absolute() {
        let program = PathBuf::from(command);
        check_program(&program).ok().map(|()| program)
    } else {
        None
    };
    let Some(resolved) = resolved else {
        return Err(denied(None));
    };
    let Ok(canonical) = resolved.canonicalize() else {
        return Err(denied(None));
    };
    grants
        .iter()
        .find(|grant| grant.canonical == canonical)
        .ok_or_else(|| denied(Some(resolved)))
}

/// Why a program is not allowed. Display is one line naming the program,
/// where it resolved, and the grant that would allow it:
/// `program "python3" (/usr/bin/python3) is not granted: add exec = [{
/// program = "python3" }] to the plugin's grants`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(.command, .resolved.as_deref()))]
#[non_exhaustive]
pub struct ExecDenied {
    /// The command as the plugin declared it.
    pub command: String,
    /// The file it resolved to; `None` if it resolved to no executable
    /// file (not on `PATH`, missing) or was refused before looking (a
    /// relative path, an empty command).
    pub resolved: Option<PathBuf>,
}

impl ExecDenied {
    /// The grant to add, as it is written in a config:
    /// `exec = [{ program = "python3" }]`. For a relative command, which
    /// no grant allows, it names the command as declared all the same;
    /// [`Display`](std::fmt::Display) says what to do instead.
    pub fn suggestion(&self) -> String {
        format!("exec = [{{ program = {} }}]", toml_string(&self.command))
    }
}

fn describe(command: &str, resolved: Option<&Path>) -> String {
    let quoted = format!("program {command:?}");
    let grant = format!(
        "exec = [{{ program = {} }}] to the plugin's grants",
        toml_string(command)
    );
    match resolved {
        Some(file) => format!("{quoted} ({}) is not granted: add {grant}", shown(file)),
        None if command.is_empty() => {
            format!("{quoted} names no program: declare a name on PATH or an absolute path")
        }
        None if is_bare(command) => {
            format!("{quoted} was not found on PATH: install it, then add {grant}")
        }
        None if Path::new(command).is_absolute() => {
            format!("{quoted} is not an executable file: install it, then add {grant}")
        }
        None => format!(
            "{quoted} is a relative path, which is never granted: declare it by a name on PATH or an absolute path, and grant that"
        ),
    }
}

/// Whether `name` is looked up on `PATH` (it has no `/`).
fn is_bare(name: &str) -> bool {
    !name.contains('/')
}

/// Why a bare name was not found on `PATH`.
enum Missing {
    /// `PATH` is unset or has no absolute directory.
    NoPath,
    /// No directory holds an executable file of that name; the first file
    /// of that name that was passed over, and why, if there was one.
    NotFound(Option<(PathBuf, String)>),
}

/// The first executable regular file `name` in an absolute directory of
/// `path`.
fn search(name: &str, path: Option<&OsStr>) -> Result<PathBuf, Missing> {
    let dirs: Vec<PathBuf> = path
        .map(|p| {
            std::env::split_paths(p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    if dirs.is_empty() {
        return Err(Missing::NoPath);
    }
    let mut passed_over = None;
    for dir in dirs {
        let candidate = dir.join(name);
        match check_program(&candidate) {
            Ok(()) => return Ok(std::path::absolute(&candidate).unwrap_or(candidate)),
            Err(why) if candidate.symlink_metadata().is_ok() => {
                passed_over.get_or_insert((candidate, why));
            }
            Err(_) => {}
        }
    }
    Err(Missing::NotFound(passed_over))
}

/// Whether `file` (symlinks followed) is an executable regular file; if
/// not, why, as the end of a sentence about it.
fn check_program(file: &Path) -> Result<(), String> {
    let meta = match std::fs::metadata(file) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("does not exist".into());
        }
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    if meta.is_dir() {
        return Err("is a directory, not a program".into());
    }
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    if !executable(file) {
        return Err("is not executable".into());
    }
    Ok(())
}

/// Whether this process may execute `file` (its mode, owner and mount).
#[cfg(unix)]
fn executable(file: &Path) -> bool {
    rustix::fs::access(file, rustix::fs::Access::EXEC_OK).is_ok()
}

#[cfg(not(unix))]
fn executable(_file: &Path) -> bool {
    true
}

/// Whether `file` (symlinks followed) is a Unix socket.
#[cfg(unix)]
fn is_socket(file: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(file).is_ok_and(|m| m.file_type().is_socket())
}

#[cfg(not(unix))]
fn is_socket(_file: &Path) -> bool {
    false
}
