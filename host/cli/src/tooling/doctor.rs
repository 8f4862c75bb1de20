//! `tiny-harness mcp doctor SERVER`: a stdio server started as the host
//! starts it (same program, environment and confinement), under `strace`,
//! through the session's own handshake and a tool listing; every file
//! access and connection the kernel denied it, and the grants that would
//! allow them.
//!
//! Invariants:
//! - The server runs exactly as confined as it would run for the host
//!   (`strace` runs inside the same confinement, tracing only its child);
//!   the only thing added is a private file for the trace.
//! - Everything it reports is bounded: at most [`MAX_TRACE_BYTES`] of trace
//!   are read and at most [`MAX_DENIALS`] denials kept; paths and addresses
//!   are shown escaped.
//! - A suggestion is never `/`, never a whole home directory, never
//!   `/proc`, `/sys` or `/dev` (those are said, not granted).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tiny_harness_mcp::launch::{Launch, Program, Target};
use tiny_harness_mcp::{McpSource, Once, once};

/// The most trace read.
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// The most denials kept.
pub const MAX_DENIALS: usize = 200;

/// What was denied.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    /// Reading (or listing, or stating) a path.
    Read(String),
    /// Writing (creating, removing, renaming) at a path.
    Write(String),
    /// Running a program.
    Execute(String),
    /// A TCP connection to `address:port`.
    Connect(String, u16),
    /// A Unix socket.
    UnixSocket,
}

/// What `mcp doctor` found.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    /// How long the server ran.
    pub ran: Duration,
    /// How the session went, for people: the tools it listed, or why it
    /// listed none.
    pub ended: String,
    /// Whether it listed its tools.
    pub listed: bool,
    /// What the kernel denied it, in order, without repeats.
    pub denied: Vec<Denied>,
    /// Config lines that would allow them.
    pub fixes: Vec<String>,
    /// What cannot be granted, with why.
    pub notes: Vec<String>,
}

/// Why a server could not be diagnosed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DoctorError {
    /// The server cannot be started at all (its grants refuse it, or its
    /// install): how it stands.
    #[error("{0}")]
    Unusable(String),
    /// It is reached over HTTP: there is no program to trace.
    #[error("it is reached over HTTP: mcp doctor starts stdio servers")]
    OverHttp,
    /// `strace` is not on `PATH`.
    #[error(
        "mcp doctor traces the server with strace, which is not on PATH: install it \
         (apt install strace)"
    )]
    NoStrace,
    /// The private directory for the trace could not be made.
    #[error("cannot make a directory for the trace: {0}")]
    TraceDirectory(#[source] std::io::Error),
}

/// Starts the stdio server of `source` under `strace`, as confined as the
/// host confines it (its install checked first, as at every start), and
/// opens a session with it the way every session opens (`server/discover`,
/// then `initialize` at 2025-11-25), lists its tools, closes it, and reads
/// what the kernel denied it. Bounded by the server's start and call
/// timeouts.
pub async fn diagnose(source: &McpSource) -> Result<Diagnosis, DoctorError> {
    let Some(launch) = source.launch() else {
        return Err(DoctorError::Unusable(source.status().state.to_string()));
    };
    let Target::Process(program) = &launch.target else {
        return Err(DoctorError::OverHttp);
    };
    let path = std::env::var_os("PATH");
    let strace =
        tiny_harness_mcp::store::find("strace", path.as_deref()).ok_or(DoctorError::NoStrace)?;
    let trace_dir = tiny_harness_sandbox::confine::PrivateDir::create("doctor")
        .map_err(DoctorError::TraceDirectory)?;
    let trace = trace_dir.path().join("trace");
    // Appended to: a server that does not answer server/discover is
    // started again for initialize, and both starts are read.
    let mut args: Vec<String> = [
        "-f",
        "-qq",
        "-A",
        "-s",
        "4096",
        "-e",
        "trace=%file,connect,socket",
        "-e",
        "status=failed",
        "-o",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    args.push(trace.display().to_string());
    args.push("--".to_owned());
    args.push(program.program.display().to_string());
    args.extend(program.args.iter().cloned());
    let policy = program.policy.clone().map(|mut policy| {
        policy.read.push(strace.clone());
        policy.write.push(trace_dir.path().to_owned());
        policy
    });
    let traced = Launch {
        server: launch.server.clone(),
        target: Target::Process(Program {
            command: program.command.clone(),
            program: strace,
            args,
            env: program.env.clone(),
            cwd: program.cwd.clone(),
            policy,
            secrets: program.secrets.clone(),
        }),
        timeout: launch.timeout,
        start_timeout: launch.start_timeout,
        eager: false,
        roots: launch.roots.clone(),
        store_check: launch.store_check.clone(),
    };
    let started = Instant::now();
    let went = once(&traced, source.plugin(), source.limits()).await;
    let ran = started.elapsed();
    let (listed, ended) = match went {
        Once::Listed(tools) => (
            true,
            format!("it listed its tools ({tools} on the first page)"),
        ),
        Once::Unopened { failure, .. } => (
            false,
            format!(
                "it did not list its tools: it did not open a session: {}",
                failure.detailed()
            ),
        ),
        Once::Unlisted { reason, .. } => (false, format!("it did not list its tools: {reason}")),
    };
    let text = tiny_harness_core::file::read_regular(&trace, "trace", MAX_TRACE_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let denied = denials(&text);
    let (fixes, notes) = fixes(&denied, source.plugin(), program);
    Ok(Diagnosis {
        ran,
        ended,
        listed,
        denied,
        fixes,
        notes,
    })
}

/// The denials in a trace (`strace -e status=failed` lines ending in
/// `-1 EACCES` or `-1 EPERM`, and refused connections).
pub fn denials(trace: &str) -> Vec<Denied> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in trace.lines() {
        if out.len() >= MAX_DENIALS {
            break;
        }
        let Some(denial) = denial(line) else {
            continue;
        };
        if seen.insert(denial.clone()) {
            out.push(denial);
        }
    }
    out
}

fn denial(line: &str) -> Option<Denied> {
    let (call, rest) = line
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ')
        .split_once('(')?;
    let result = rest.rsplit_once(") = ")?.1;
    let refused = result.contains("EACCES") || result.contains("EPERM");
    if call == "connect" {
        let port = between(rest, "htons(", ")")?.parse().ok()?;
        let address = between(rest, "inet_addr(\"", "\"")
            .or_else(|| between(rest, "inet_pton(AF_INET6, \"", "\""))?;
        let unreachable = result.contains("ENETUNREACH") || refused;
        return unreachable.then(|| Denied::Connect(address.to_owned(), port));
    }
    if call == "socket" {
        return (refused && rest.starts_with("AF_UNIX")).then_some(Denied::UnixSocket);
    }
    if !refused {
        return None;
    }
    let path = quoted(rest)?;
    if call == "execve" || call == "execveat" {
        return Some(Denied::Execute(path));
    }
    let writes = [
        "mkdir",
        "mkdirat",
        "unlink",
        "unlinkat",
        "rmdir",
        "rename",
        "renameat",
        "renameat2",
        "link",
        "linkat",
        "symlink",
        "symlinkat",
        "truncate",
        "chmod",
        "fchmodat",
        "chown",
        "fchownat",
        "utimensat",
        "mknod",
        "mknodat",
        "creat",
    ];
    let opened_for_writing = (call == "openat" || call == "open")
        && ["O_WRONLY", "O_RDWR", "O_CREAT"]
            .iter()
            .any(|f| rest.contains(f));
    if writes.contains(&call) || opened_for_writing {
        Some(Denied::Write(path))
    } else {
        Some(Denied::Read(path))
    }
}

/// The first `"…"` in `text`, unescaped as strace escapes.
fn quoted(text: &str) -> Option<String> {
    let start = text.find('"')? + 1;
    let end = start + text[start..].find('"')?;
    Some(text[start..end].replace("\\\\", "\\"))
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = start + text[start..].find(close)?;
    Some(&text[start..end])
}

/// Config lines that would allow `denied`, and what cannot be granted.
fn fixes(denied: &[Denied], plugin: &str, program: &Program) -> (Vec<String>, Vec<String>) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut read = BTreeSet::new();
    let mut write = BTreeSet::new();
    let mut net = BTreeSet::new();
    let mut notes = Vec::new();
    for denial in denied {
        match denial {
            Denied::Read(path) | Denied::Execute(path) => {
                if let Some(dir) = grantable(path, home.as_deref(), &mut notes) {
                    read.insert(dir);
                }
            }
            Denied::Write(path) if path.contains("/__pycache__") => notes.push(
                "Python could not write its bytecode cache (harmless: it runs from source; \
                 PYTHONDONTWRITEBYTECODE=1 in its env stops it trying)"
                    .to_owned(),
            ),
            Denied::Write(path) => {
                if let Some(dir) = grantable(path, home.as_deref(), &mut notes) {
                    write.insert(dir);
                }
            }
            Denied::Connect(address, port) => {
                let scheme = if *port == 80 { "http" } else { "https" };
                let host = if address.contains(':') {
                    format!("[{address}]")
                } else {
                    address.clone()
                };
                net.insert(format!("{scheme}://{host}:{port}"));
            }
            Denied::UnixSocket => notes.push(
                "it opened a Unix socket: give its exec grant sockets = [\"/path/to/the.sock\"] \
                 for each socket file it needs"
                    .to_owned(),
            ),
        }
    }
    let read: Vec<String> = minimal(read.into_iter().collect());
    let write: Vec<String> = minimal(write.into_iter().collect());
    let quote = |s: &str| format!("{:?}", tiny_harness_core::display::one_line(s));
    let mut lines = Vec::new();
    if !read.is_empty() {
        lines.push(format!(
            "[plugins.{plugin}.grants] exec = [{{ program = {}, read = [{}] }}]",
            quote(&program.command),
            read.iter().map(|r| quote(r)).collect::<Vec<_>>().join(", ")
        ));
    }
    for dir in &write {
        lines.push(format!(
            "[plugins.{plugin}.grants] dirs = [{{ host = {}, guest = {}, mode = \"read-write\" }}]",
            quote(dir),
            quote(dir)
        ));
    }
    if !net.is_empty() {
        lines.push(format!(
            "[plugins.{plugin}.grants] net = [{}]  (better: the host names it connects to)",
            net.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ")
        ));
    }
    notes.sort();
    notes.dedup();
    (lines, notes)
}

/// The directory to grant for a denied `path`: its own directory for a
/// file; never `/`, a home as a whole, or the kernel's file systems.
fn grantable(path: &str, home: Option<&Path>, notes: &mut Vec<String>) -> Option<String> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    if ["/proc", "/sys", "/dev"]
        .iter()
        .any(|k| path.starts_with(k))
    {
        notes.push(format!(
            "{} was denied: the kernel's file systems are not granted to programs",
            tiny_harness_core::display::one_line(&path.display().to_string())
        ));
        return None;
    }
    // A link is read where it leads (the kernel's file systems above are
    // the server's own, not the host's, and are never resolved here).
    let real = path.canonicalize().ok();
    let path = real.as_deref().unwrap_or(path);
    let dir = if path.is_dir() {
        path.to_owned()
    } else {
        path.parent()?.to_owned()
    };
    let too_wide = dir == Path::new("/") || home.is_some_and(|h| dir == h);
    if too_wide {
        notes.push(format!(
            "{} was denied: grant the file itself rather than {}",
            tiny_harness_core::display::one_line(&path.display().to_string()),
            dir.display()
        ));
        return Some(path.display().to_string());
    }
    Some(dir.display().to_string())
}

/// `paths`, sorted, without any inside another.
fn minimal(paths: Vec<String>) -> Vec<String> {
    let mut paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    paths.sort();
    tiny_harness_mcp::launcher::outermost(paths)
        .into_iter()
        .map(|p| p.display().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_are_read_from_a_trace_and_only_denials() {
        let trace = r#"12 openat(AT_FDCWD, "/root/.config/app/settings.json", O_RDONLY|O_CLOEXEC) = -1 EACCES (Permission denied)
12 openat(AT_FDCWD, "/usr/lib/x", O_RDONLY) = -1 ENOENT (No such file or directory)
13 mkdir("/var/cache/app", 0777) = -1 EACCES (Permission denied)
13 openat(AT_FDCWD, "/srv/data/out.log", O_WRONLY|O_CREAT|O_APPEND, 0666) = -1 EACCES (Permission denied)
14 connect(21, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("140.82.112.3")}, 16) = -1 ENETUNREACH (Network is unreachable)
14 connect(22, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("140.82.112.3")}, 16) = -1 ENETUNREACH (Network is unreachable)
15 socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0) = -1 EACCES (Permission denied)
16 execve("/opt/tool/bin/helper", ["helper"], 0x7ffd /* 3 vars */) = -1 EACCES (Permission denied)
16 statx(AT_FDCWD, "/proc/self/fd", AT_STATX_SYNC_AS_STAT, STATX_ALL, 0x7ff) = -1 EACCES (Permission denied)
"#;
        assert_eq!(
            denials(trace),
            [
                Denied::Read("/root/.config/app/settings.json".into()),
                Denied::Write("/var/cache/app".into()),
                Denied::Write("/srv/data/out.log".into()),
                Denied::Connect("140.82.112.3".into(), 443),
                Denied::UnixSocket,
                Denied::Execute("/opt/tool/bin/helper".into()),
                Denied::Read("/proc/self/fd".into()),
            ]
        );
        let program = Program {
            command: "node".into(),
            program: "/usr/bin/node".into(),
            args: vec![],
            env: vec![],
            cwd: None,
            policy: None,
            secrets: vec![],
        };
        let (fixes, notes) = fixes(&denials(trace), "mcp", &program);
        assert_eq!(
            fixes,
            [
                r#"[plugins.mcp.grants] exec = [{ program = "node", read = ["/opt/tool/bin", "/root/.config/app"] }]"#,
                r#"[plugins.mcp.grants] dirs = [{ host = "/srv/data", guest = "/srv/data", mode = "read-write" }]"#,
                r#"[plugins.mcp.grants] dirs = [{ host = "/var/cache", guest = "/var/cache", mode = "read-write" }]"#,
                r#"[plugins.mcp.grants] net = ["https://140.82.112.3:443"]  (better: the host names it connects to)"#,
            ]
        );
        assert!(
            notes.iter().any(|n| n.contains("/proc/self/fd")),
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("sockets = [")), "{notes:?}");
    }
}
