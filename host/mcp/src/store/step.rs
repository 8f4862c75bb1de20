//! One package manager step of an install (`npm install`, `python3 -m
//! venv`, `pip install`), run confined within what is left of the
//! install's limits: its time, all steps together, and its room, measured
//! while the step runs (see `room`).
//!
//! Invariant: a step past either limit is stopped with everything it
//! started, and its failure is one line in the package manager's own
//! words, or naming the limit and how to raise it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{MAX_TREE_FILES, room};

/// The first executable file `name` on `path` (the launcher's lookup).
pub fn find(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    super::super::launcher::locate(name, path, Path::new("/"))
}

/// The host variables every package manager step gets (`PATH`, `LANG`,
/// `TZ`, as the host has them), before what each adds.
pub(super) fn base_env() -> Vec<(String, String)> {
    ["PATH", "LANG", "TZ"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect()
}

/// Those of `paths` that exist: a package manager's config files, read
/// when present.
pub(super) fn present(
    paths: impl IntoIterator<Item = Option<PathBuf>>,
) -> impl Iterator<Item = PathBuf> {
    paths.into_iter().flatten().filter(|p| p.exists())
}

/// The user's home, for the package managers' own config and cache.
pub(super) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// One package manager run: `program` with `args` in `cwd`, with exactly
/// `env`, confined to read `read`, write `write` and connect to `ports`;
/// `registry` is what it fetches from (for people, no secret in it), if
/// it fetches.
pub(super) struct Step {
    pub(super) program: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
    pub(super) cwd: PathBuf,
    pub(super) read: Vec<PathBuf>,
    pub(super) write: Vec<PathBuf>,
    pub(super) ports: Vec<u16>,
    pub(super) registry: Option<String>,
}

/// What one install may take: time, all its steps together (a registry
/// that takes the connection and never answers, or answers a byte at a
/// time, must not hold `mcp install` for ever), and room (a registry that
/// serves a huge package, or one that unpacks to a huge tree, must not
/// fill the disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstallLimits {
    /// The longest it may take (`mcp install --timeout`).
    pub time: Duration,
    /// The most bytes its downloads, its package manager's cache and
    /// temporary files, and what they unpack to may hold together while it
    /// is made (`mcp install --max-size`); no one file may be larger
    /// either.
    pub bytes: u64,
}

impl InstallLimits {
    /// The limits of `time` and `bytes`.
    pub fn new(time: Duration, bytes: u64) -> InstallLimits {
        InstallLimits { time, bytes }
    }
}

impl Default for InstallLimits {
    fn default() -> Self {
        InstallLimits {
            time: DEFAULT_INSTALL_TIMEOUT,
            bytes: DEFAULT_INSTALL_SIZE,
        }
    }
}

/// The default of `mcp install --max-size`: room for the largest real
/// servers (a few hundred npm packages, or a venv with compiled
/// dependencies, are tens of MiB) many times over.
pub const DEFAULT_INSTALL_SIZE: u64 = 512 << 20;

/// The most `mcp install --max-size` allows.
pub const MAX_INSTALL_SIZE: u64 = 64 << 30;

/// What is left of one install's [`InstallLimits`] as it is made.
pub(super) struct Budget {
    limit: Duration,
    deadline: Instant,
    bytes: u64,
    /// The staging directory, whose size is watched.
    staging: PathBuf,
}

impl Budget {
    /// The whole of `limits`, from now, for the install staged at
    /// `staging`.
    pub(super) fn new(limits: InstallLimits, staging: &Path) -> Budget {
        Budget {
            limit: limits.time,
            deadline: Instant::now() + limits.time,
            bytes: limits.bytes,
            staging: staging.to_owned(),
        }
    }

    /// What is left of it.
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The timeout to give a package manager's own requests: at most
    /// `cap`, and never past the budget, so that it gives up (and says
    /// why) before it is stopped.
    pub(super) fn per_request(&self, cap: Duration) -> Duration {
        cap.min(self.limit).max(Duration::from_secs(1))
    }

    /// Why the install is over its room, if it is.
    async fn over(&self) -> Option<String> {
        let (staging, bytes) = (self.staging.clone(), self.bytes);
        let over = tokio::task::spawn_blocking(move || room::over(&staging, bytes))
            .await
            .ok()??;
        Some(self.too_big(over))
    }

    /// The refusal of an install past its room.
    fn too_big(&self, over: room::Over) -> String {
        let what = match over {
            room::Over::Bytes => format!(
                "it grew past the install's limit of {} MiB (what it downloads and what that \
                 unpacks to, together)",
                room::mib(self.bytes)
            ),
            room::Over::Entries => format!(
                "it grew past the install's limit of {MAX_TREE_FILES} files (or nests too deep)"
            ),
        };
        format!(
            "{what}: nothing was kept; if the package is meant to be that large, allow more \
             with tiny-harness mcp install --max-size MIB"
        )
    }
}

/// How often the size of an install is measured while it is made (at
/// most).
const ROOM_POLL: Duration = Duration::from_millis(200);

/// The default of `mcp install --timeout`: time for the largest real
/// servers (a cold npm cache, a few hundred packages) on a slow link.
pub const DEFAULT_INSTALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The most `mcp install --timeout` allows.
pub const MAX_INSTALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Runs `step` (confined when `confined`) within what is left of `budget`;
/// on failure, its last words.
pub(super) async fn run(step: Step, confined: bool, budget: &Budget) -> Result<(), String> {
    let Step {
        program,
        args,
        env,
        cwd,
        read,
        write,
        ports,
        registry,
    } = step;
    use tiny_harness_sandbox::confine::{Network, Policy, Rlimits, Stdio3};
    let mut rlimits = Rlimits::default();
    // No one file past the install's room: a huge download ends at once,
    // whatever the measure between two looks would let through.
    rlimits.file_size = budget.bytes;
    let policy = confined.then(|| Policy {
        read,
        write,
        network: if ports.is_empty() {
            Network::None
        } else {
            Network::Ports(ports)
        },
        unix_sockets: Vec::new(),
        rlimits,
    });
    let what = Stdio3 {
        program: program.clone(),
        args,
        env,
        cwd: Some(cwd),
        stdin: Vec::new(),
    };
    let timed_out = || {
        let why = match &registry {
            Some(registry) => format!(" (is the registry {registry} answering?)"),
            None => String::new(),
        };
        format!(
            "it did not finish within the install's limit of {} s{why}: check the registry, or \
             allow more with tiny-harness mcp install --timeout SECS",
            budget.limit.as_secs()
        )
    };
    let left = budget.left();
    if left.is_zero() {
        return Err(timed_out());
    }
    let running = tiny_harness_sandbox::confine::run(what, policy, 1 << 20, left);
    tokio::pin!(running);
    // Measured every ROOM_POLL, or less often when a measure takes long
    // (a large tree): the measure takes at most a fifth of a core.
    let mut pause = ROOM_POLL;
    let ran = loop {
        tokio::select! {
            ran = &mut running => break ran,
            _ = tokio::time::sleep(pause) => {
                let began = Instant::now();
                // Dropping the run kills the package manager and all it
                // started.
                if let Some(why) = budget.over().await {
                    return Err(why);
                }
                pause = ROOM_POLL.max(began.elapsed() * 4);
            }
        }
    };
    let ran = ran.map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if ran.timed_out {
        return Err(timed_out());
    }
    // What it wrote after the last look.
    if let Some(why) = budget.over().await {
        return Err(why);
    }
    // A file past the room's size was refused by the kernel: the
    // process got SIGXFSZ, or (where it ignores it) EFBIG.
    let refused = |said: &[u8]| {
        let said = String::from_utf8_lossy(said);
        said.contains("EFBIG") || said.contains("File too large")
    };
    if ran.exited
        == tiny_harness_sandbox::confine::Exited::Signal(rustix::process::Signal::XFSZ.as_raw())
        || (ran.exited != tiny_harness_sandbox::confine::Exited::Code(0)
            && (refused(&ran.stderr) || refused(&ran.stdout)))
    {
        return Err(budget.too_big(room::Over::Bytes));
    }
    if ran.exited == tiny_harness_sandbox::confine::Exited::Code(0) {
        return Ok(());
    }
    let said = if ran.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
        &ran.stderr
    } else {
        &ran.stdout
    };
    Err(last_words(&String::from_utf8_lossy(said)))
}

/// What a failed package manager said that matters: pip's last `ERROR:`
/// line, npm's first `npm error` line after its code, or the last line.
pub(super) fn last_words(said: &str) -> String {
    let lines: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let pip = lines.iter().rev().find(|l| l.starts_with("ERROR:"));
    let npm = lines.iter().find(|l| {
        l.starts_with("npm error")
            && !l.starts_with("npm error code")
            && !l.contains("A complete log of this run")
            && l.len() > "npm error ".len() + 4
    });
    let line = pip
        .or(npm)
        .or(lines.last())
        .copied()
        .unwrap_or("it said nothing");
    tiny_harness_core::display::one_line(&line.chars().take(400).collect::<String>()).into_owned()
}

/// A registry URL for people: no userinfo, query or fragment.
pub(super) fn shown_registry(url: &str) -> String {
    tiny_harness_core::display::redact_url(url.trim())
}
