//! The gateway's metrics, as `/metrics` serves them: the Prometheus text
//! exposition format, version 0.0.4.
//!
//! Invariants:
//! - No client can grow the label sets. A method is one of
//!   [`METHODS`] (anything else is `other`); a refusal's reason is a
//!   `&'static str` of the gateway's own; a call names a tool the client
//!   may see or is counted under `tool=""`; and at most [`MAX_SERIES`]
//!   `(tool, outcome)` series and as many tool histograms are kept by
//!   name, every later one folded into `tool="(other)"`.
//! - The call path is cheap: the per-method and per-reason counters and
//!   the in-flight gauge are atomics; a finished call takes one lock,
//!   briefly, and allocates only for a series it has not seen before.
//! - [`Metrics::render`] copies what it needs under that lock and formats
//!   after releasing it. Its output is deterministic: families in a fixed
//!   order, samples sorted by label values, every known method, reason
//!   and reload result present from the start (at 0).

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The prefix of every metric's name.
const PREFIX: &str = "tiny_harness_serve_";

/// The JSON-RPC methods counted by name, sorted; every other method is
/// `other`.
const METHODS: [&str; 5] = [
    "initialize",
    "other",
    "server/discover",
    "tools/call",
    "tools/list",
];

/// The reasons a request is refused before it reaches MCP, sorted.
const REASONS: [&str; 7] = [
    "busy",
    "forbidden",
    "rate_limited",
    "read_timeout",
    "sessions",
    "too_large",
    "unauthorized",
];

/// The most `(tool, outcome)` series, and the most tool histograms, kept
/// by tool name; later ones are counted under [`OTHER_TOOL`].
const MAX_SERIES: usize = 4096;

/// The tool label of what [`MAX_SERIES`] folds.
const OTHER_TOOL: &str = "(other)";

/// The upper bounds of the call-duration buckets, in nanoseconds (`+Inf`
/// is the count).
const BOUNDS_NANOS: [u64; 15] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
];

/// [`BOUNDS_NANOS`] as `le` labels, in seconds.
const BOUNDS_LE: [&str; 15] = [
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
    "2.5", "5", "10", "30",
];

/// The gateway's metrics. Shared behind an `Arc`; every method takes
/// `&self`.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    /// Requests by method, indexed as [`METHODS`].
    requests: [AtomicU64; METHODS.len()],
    /// Refusals by reason, indexed as [`REASONS`].
    refused: [AtomicU64; REASONS.len()],
    /// Refusals for a reason outside [`REASONS`] (a `&'static str` of the
    /// gateway's code, so bounded by it).
    refused_else: Mutex<BTreeMap<&'static str, u64>>,
    /// Calls in flight.
    in_flight: Arc<AtomicU64>,
    /// Calls finished, by tool and outcome, and their durations.
    calls: Mutex<Calls>,
    /// Reloads that succeeded.
    reloads_ok: AtomicU64,
    /// Reloads that failed.
    reloads_failed: AtomicU64,
}

/// The labelled families of finished calls.
#[derive(Debug, Default)]
struct Calls {
    /// Counts by tool, then outcome.
    counts: HashMap<Arc<str>, HashMap<Arc<str>, u64>>,
    /// How many `(tool, outcome)` series `counts` holds under a tool's
    /// own name (not [`OTHER_TOOL`]).
    series: usize,
    /// Durations by tool.
    durations: HashMap<Arc<str>, Histogram>,
}

/// One tool's call durations.
#[derive(Debug, Default, Clone, Copy)]
struct Histogram {
    /// Calls in each bucket of [`BOUNDS_NANOS`] (not cumulative); a call
    /// above the last bound is in none.
    buckets: [u64; BOUNDS_NANOS.len()],
    /// Calls observed.
    count: u64,
    /// Their durations' sum, in nanoseconds.
    sum_nanos: u64,
}

impl Histogram {
    /// Adds one call that took `nanos`.
    fn observe(&mut self, nanos: u64) {
        let bucket = BOUNDS_NANOS.partition_point(|bound| *bound < nanos);
        if let Some(slot) = self.buckets.get_mut(bucket) {
            *slot += 1;
        }
        self.count += 1;
        self.sum_nanos = self.sum_nanos.saturating_add(nanos);
    }
}

/// A call in flight, counted in `calls_in_flight` until dropped.
#[derive(Debug)]
#[must_use = "the call is counted in flight only while the guard lives"]
pub(crate) struct InFlight(Arc<AtomicU64>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    /// One MCP request received over any transport, by JSON-RPC method
    /// (`tools/list`, `tools/call`, `initialize`, `server/discover`, and
    /// `other` for anything else, so that a client cannot grow the label
    /// set).
    pub(crate) fn request(&self, method: &str) {
        let index = METHODS
            .iter()
            .position(|known| *known == method)
            .or_else(|| METHODS.iter().position(|known| *known == "other"));
        if let Some(counter) = index.and_then(|index| self.requests.get(index)) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request refused before it reached MCP, by reason: `unauthorized`,
    /// `forbidden`, `rate_limited`, `busy`, `too_large`, `read_timeout` or
    /// `sessions`.
    pub(crate) fn refused(&self, reason: &'static str) {
        match REASONS.iter().position(|known| *known == reason) {
            Some(index) => {
                if let Some(counter) = self.refused.get(index) {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                *self
                    .refused_else
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(reason)
                    .or_default() += 1;
            }
        }
    }

    /// A call begins: the returned guard counts it in flight until
    /// dropped.
    pub(crate) fn call_started(&self) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.in_flight.clone())
    }

    /// How many calls are in flight.
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// A call ended: `tool` is the registry name when the call named a
    /// tool the client may see, `None` otherwise (counted under `tool=""`
    /// so that unknown names cannot grow the series); `outcome` is a code
    /// such as `ok`, `tool_error`, `invalid_arguments`, `unknown_tool` or
    /// `cancelled`.
    pub(crate) fn call_finished(&self, tool: Option<&str>, outcome: &str, latency: Duration) {
        let tool = tool.unwrap_or("");
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let Calls {
            counts,
            series,
            durations,
        } = &mut *calls;

        // The (tool, outcome) series, or the (other) one past the bound.
        let named = counts
            .get(tool)
            .is_some_and(|outcomes| outcomes.contains_key(outcome));
        let counted_as = if named || *series < MAX_SERIES || tool == OTHER_TOOL {
            if !named && tool != OTHER_TOOL {
                *series += 1;
            }
            tool
        } else {
            OTHER_TOOL
        };
        let outcomes = match counts.get_mut(counted_as) {
            Some(outcomes) => outcomes,
            None => counts.entry(Arc::from(counted_as)).or_default(),
        };
        match outcomes.get_mut(outcome) {
            Some(count) => *count += 1,
            None => {
                outcomes.insert(Arc::from(outcome), 1);
            }
        }

        // The tool's histogram, or the (other) one past the bound.
        let histogram = match durations.get_mut(tool) {
            Some(histogram) => histogram,
            None => {
                let named = durations
                    .len()
                    .saturating_sub(usize::from(durations.contains_key(OTHER_TOOL)));
                let key = if named < MAX_SERIES { tool } else { OTHER_TOOL };
                durations.entry(Arc::from(key)).or_default()
            }
        };
        histogram.observe(nanos);
    }

    /// A reload of a plugin or of the config, by result.
    pub(crate) fn reload(&self, ok: bool) {
        let counter = if ok {
            &self.reloads_ok
        } else {
            &self.reloads_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The text of `/metrics`.
    pub(crate) fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = self.render_into(&mut out);
        out
    }

    /// Writes the text of `/metrics` to `out`.
    fn render_into(&self, out: &mut String) -> fmt::Result {
        // Copies of the locked families, taken briefly and sorted after.
        let mut refused: Vec<(&str, u64)> = REASONS
            .iter()
            .zip(&self.refused)
            .map(|(reason, counter)| (*reason, counter.load(Ordering::Relaxed)))
            .collect();
        refused.extend(
            self.refused_else
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(reason, count)| (*reason, *count)),
        );
        refused.sort_unstable();
        let (mut counts, mut durations) = {
            let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            let counts: Vec<(Arc<str>, Arc<str>, u64)> = calls
                .counts
                .iter()
                .flat_map(|(tool, outcomes)| {
                    outcomes
                        .iter()
                        .map(|(outcome, count)| (tool.clone(), outcome.clone(), *count))
                })
                .collect();
            let durations: Vec<(Arc<str>, Histogram)> = calls
                .durations
                .iter()
                .map(|(tool, histogram)| (tool.clone(), *histogram))
                .collect();
            (counts, durations)
        };
        counts.sort_unstable_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        durations.sort_unstable_by(|a, b| a.0.cmp(&b.0));

        let name = "requests_total";
        header(
            out,
            name,
            "counter",
            "MCP requests received, by JSON-RPC method.",
        )?;
        for (method, counter) in METHODS.iter().zip(&self.requests) {
            let count = counter.load(Ordering::Relaxed);
            writeln!(
                out,
                "{PREFIX}{name}{{method=\"{}\"}} {count}",
                Escaped(method)
            )?;
        }

        let name = "refused_total";
        header(
            out,
            name,
            "counter",
            "Requests refused before they reached MCP, by reason.",
        )?;
        for (reason, count) in &refused {
            writeln!(
                out,
                "{PREFIX}{name}{{reason=\"{}\"}} {count}",
                Escaped(reason)
            )?;
        }

        let name = "calls_total";
        header(
            out,
            name,
            "counter",
            "Tool calls finished, by tool and outcome.",
        )?;
        for (tool, outcome, count) in &counts {
            writeln!(
                out,
                "{PREFIX}{name}{{tool=\"{}\",outcome=\"{}\"}} {count}",
                Escaped(tool),
                Escaped(outcome)
            )?;
        }

        let name = "call_duration_seconds";
        header(out, name, "histogram", "Tool call durations, by tool.")?;
        for (tool, histogram) in &durations {
            let tool = Escaped(tool);
            let mut cumulative = 0;
            for (le, in_bucket) in BOUNDS_LE.iter().zip(histogram.buckets) {
                cumulative += in_bucket;
                writeln!(
                    out,
                    "{PREFIX}{name}_bucket{{tool=\"{tool}\",le=\"{le}\"}} {cumulative}"
                )?;
            }
            let count = histogram.count;
            writeln!(
                out,
                "{PREFIX}{name}_bucket{{tool=\"{tool}\",le=\"+Inf\"}} {count}"
            )?;
            // Exact to the nanosecond for sums below 2^53 ns (104 days).
            let sum = histogram.sum_nanos as f64 / 1e9;
            writeln!(out, "{PREFIX}{name}_sum{{tool=\"{tool}\"}} {sum}")?;
            writeln!(out, "{PREFIX}{name}_count{{tool=\"{tool}\"}} {count}")?;
        }

        let name = "calls_in_flight";
        header(out, name, "gauge", "Tool calls in flight.")?;
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        writeln!(out, "{PREFIX}{name} {in_flight}")?;

        let name = "reloads_total";
        header(
            out,
            name,
            "counter",
            "Reloads of a plugin or of the config, by result.",
        )?;
        let failed = self.reloads_failed.load(Ordering::Relaxed);
        let ok = self.reloads_ok.load(Ordering::Relaxed);
        writeln!(out, "{PREFIX}{name}{{result=\"failed\"}} {failed}")?;
        writeln!(out, "{PREFIX}{name}{{result=\"ok\"}} {ok}")
    }
}

/// Writes a family's `# HELP` and `# TYPE` lines (`help` is a constant
/// without a backslash or a newline, so it needs no escaping).
fn header(out: &mut String, name: &str, kind: &str, help: &str) -> fmt::Result {
    writeln!(out, "# HELP {PREFIX}{name} {help}")?;
    writeln!(out, "# TYPE {PREFIX}{name} {kind}")
}

/// A label value escaped for the text format: `\` as `\\`, `"` as `\"`,
/// a newline as `\n`.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['\\', '"', '\n']) {
            let (plain, special) = rest.split_at(at);
            f.write_str(plain)?;
            let mut chars = special.chars();
            f.write_str(match chars.next() {
                Some('\\') => "\\\\",
                Some('"') => "\\\"",
                _ => "\\n",
            })?;
            rest = chars.as_str();
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests;
