//! The CPU time of the servers behind a paired row: each client's own
//! `node`, read from `/proc` before and after the row, per call. The
//! paired rows' CPU columns count the bench process only; a row's wall
//! ratio also holds what its server did (a request that asks the server
//! for more, or a server process that runs slower than the other).

use std::cell::Cell;
use std::collections::BTreeSet;
use std::time::Duration;

/// The processes this one started, by pid.
pub fn children() -> BTreeSet<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat_fields(pid).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(me))
        .collect()
}

/// The one process this one started while `start` ran (a host's server).
pub fn started_by<T>(start: impl FnOnce() -> T) -> (T, u32) {
    let before = children();
    let started = start();
    let new: Vec<u32> = children().difference(&before).copied().collect();
    assert_eq!(new.len(), 1, "one server started: {new:?}");
    (started, new[0])
}

/// The fields of `/proc/<pid>/stat` after the command's name, from the
/// state on (so the parent is field 1, user and system time 11 and 12).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split(' ').map(str::to_owned).collect())
}

/// The CPU time `pid` has used so far, user and system.
fn cpu(pid: u32) -> Option<Duration> {
    let fields = stat_fields(pid)?;
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second).ok().filter(|&hz| hz > 0)?;
    Some(Duration::from_nanos(ticks * 1_000_000_000 / per_second))
}

/// The two servers of a row, and the calls each served.
pub struct Servers {
    first: u32,
    second: u32,
    calls: Cell<u64>,
}

impl Servers {
    /// The servers of the first and the second client.
    pub fn new(first: u32, second: u32) -> Self {
        Servers {
            first,
            second,
            calls: Cell::new(0),
        }
    }

    /// Counts one call of each (call it once per iteration of the row).
    pub fn served(&self) {
        self.calls.set(self.calls.get() + 1);
    }

    /// Runs `row`; returns its result and each server's CPU time per call
    /// during it, in microseconds.
    pub fn around<T>(&self, row: impl FnOnce() -> T) -> (T, Option<(f64, f64)>) {
        let before = (cpu(self.first), cpu(self.second));
        self.calls.set(0);
        let result = row();
        let after = (cpu(self.first), cpu(self.second));
        let calls = self.calls.get();
        let per_call = |a: Option<Duration>, b: Option<Duration>| {
            Some((b? - a?).as_secs_f64() * 1e6 / calls as f64)
        };
        let both = (calls > 0)
            .then(|| Some((per_call(before.0, after.0)?, per_call(before.1, after.1)?)))
            .flatten();
        (result, both)
    }
}

/// Prints what each server of a row used per call.
pub fn report_servers(first: &str, second: &str, used: Option<(f64, f64)>) {
    if let Some((a, b)) = used {
        eprintln!(
            "servers' CPU per call: {first}'s {a:.1} µs, {second}'s {b:.1} µs, the second's extra {:.1} µs",
            b - a
        );
    }
}
