//! The call journal: one JSON line per call, appended to a file, so that a
//! user can show afterwards what ran, under which definition, and what the
//! model was shown.
//!
//! Each line holds the time (UTC, RFC 3339), the call id, the registry
//! name, the wire name when the call came through a provider adapter, the
//! sha256 of the arguments' RFC 8785 canonical JSON, the sha256 of the
//! tool's whole definition (as registered; `null` for a name that is not
//! registered), the gateway's client when a gateway served the call,
//! the outcome (`ok`, `tool_error` or the error code) and the
//! sha256 of the rendered block, which is exactly the text the model is
//! sent ([`CallOutcome::render`] renders once). With `full`, the arguments
//! and the rendered block themselves are included too.
//!
//! A search of the deferred tools is a line with `"event": "search"`: the
//! search call's id, the sha256 of the query's text, and `tools`, each
//! found tool's registry name and definition hash, best first (with
//! `full`, the query too). Found tools loaded into the tools offered from
//! the next request on are a line with `"event": "load"` and `tools`. A
//! call's line has no `event`.
//!
//! Invariants: a line is written whole or not at all. It is formatted
//! first and then written with one `write` on a descriptor opened with
//! `O_APPEND`, under a lock held for that write, so lines of concurrent
//! calls (in this process, and in practice across processes, since an
//! appending write of a regular file is positioned atomically) never
//! interleave. A failed write does not change the call's outcome: the
//! first failure is kept for the embedder to report ([`Journal::take_error`]).

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde::Serialize;

use crate::invoke::{CallOutcome, CallRecorder, Caller, Disclosed, Disclosure, ToolCall};
use crate::schema::SchemaHash;

/// An open call journal.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    full: bool,
    file: Mutex<File>,
    error: Mutex<Option<std::io::Error>>,
}

/// One line of the journal.
#[derive(Debug, Serialize)]
struct Line<'a> {
    time: String,
    call_id: &'a str,
    tool: &'a str,
    wire_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client: Option<&'a str>,
    arguments_sha256: SchemaHash,
    definition_sha256: Option<&'a SchemaHash>,
    outcome: &'a str,
    rendered_sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rendered: Option<&'a str>,
}

/// The line of a search, or of found tools loaded into an offer.
#[derive(Debug, Serialize)]
struct DisclosureLine<'a> {
    time: String,
    event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wire_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    query_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<&'a str>,
    tools: Vec<DisclosedLine<'a>>,
}

#[derive(Debug, Serialize)]
struct DisclosedLine<'a> {
    tool: &'a str,
    definition_sha256: &'a SchemaHash,
}

fn disclosed<'a>(tools: &[Disclosed<'a>]) -> Vec<DisclosedLine<'a>> {
    tools
        .iter()
        .map(|d| DisclosedLine {
            tool: d.tool,
            definition_sha256: d.definition,
        })
        .collect()
}

impl Journal {
    /// Opens (creating it, readable by its owner only) the journal at
    /// `path` for appending. With `full`, lines carry the arguments and
    /// the rendered block, not only their hashes.
    pub fn open(path: &Path, full: bool) -> std::io::Result<Journal> {
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let file = options.open(path)?;
        Ok(Journal {
            path: path.to_owned(),
            full,
            file: Mutex::new(file),
            error: Mutex::new(None),
        })
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first write that failed, if any (and forgets it).
    pub fn take_error(&self) -> Option<std::io::Error> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Appends `line` and a newline with one write, keeping a failure.
    fn append(&self, line: &impl Serialize) {
        let mut text = match serde_json::to_vec(line) {
            Ok(text) => text,
            Err(e) => return self.keep(std::io::Error::other(e)),
        };
        text.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = file.write_all(&text) {
            drop(file);
            self.keep(e);
        }
    }

    fn keep(&self, error: std::io::Error) {
        let mut kept = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.is_none() {
            *kept = Some(error);
        }
    }
}

impl CallRecorder for Journal {
    /// Appends the line for `call`, which ended in `outcome`. `definition`
    /// is the registered tool's definition hash, `wire_name` the name the
    /// provider used. A failure is kept, not returned (see the module docs).
    fn record(
        &self,
        call: &ToolCall,
        outcome: &CallOutcome,
        definition: Option<&SchemaHash>,
        wire_name: Option<&str>,
    ) {
        self.record_from(call, outcome, definition, Caller::new(wire_name, None));
    }

    /// As [`Journal::record`], with the gateway's client when there is
    /// one (`client` in the line).
    fn record_from(
        &self,
        call: &ToolCall,
        outcome: &CallOutcome,
        definition: Option<&SchemaHash>,
        caller: Caller<'_>,
    ) {
        let rendered = outcome.render();
        let code = match &outcome.result {
            Ok(result) if result.is_error => "tool_error",
            Ok(_) => "ok",
            Err(error) => error.code(),
        };
        let line = Line {
            time: rfc3339_utc(SystemTime::now()),
            call_id: &call.id,
            tool: &call.name,
            wire_name: caller.wire_name,
            client: caller.client,
            arguments_sha256: SchemaHash::of(&call.arguments),
            definition_sha256: definition,
            outcome: code,
            rendered_sha256: sha256_hex(rendered.as_bytes()),
            arguments: self.full.then_some(&call.arguments),
            rendered: self.full.then_some(rendered),
        };
        self.append(&line);
    }

    /// Appends a line with `event` `search` (the call's id, the sha256 of
    /// the query's text, and each tool found with its definition's hash,
    /// best first) or `load` (each tool loaded with its definition's
    /// hash). With `full`, a search's line carries the query too.
    fn record_disclosure(&self, disclosure: &Disclosure<'_>, caller: Caller<'_>) {
        let mut line = DisclosureLine {
            time: rfc3339_utc(SystemTime::now()),
            event: "load",
            call_id: None,
            wire_name: caller.wire_name,
            client: caller.client,
            query_sha256: None,
            query: None,
            tools: Vec::new(),
        };
        match *disclosure {
            Disclosure::Search { id, query, found } => {
                line.event = "search";
                line.call_id = Some(id);
                line.query_sha256 = Some(sha256_hex(query.as_bytes()));
                line.query = self.full.then_some(query);
                line.tools = disclosed(found);
            }
            Disclosure::Load { tools } => line.tools = disclosed(tools),
        }
        self.append(&line);
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn rfc3339_utc(time: SystemTime) -> String {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = crate::display::civil_from_days(i64::try_from(days).unwrap_or(0));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_rfc3339_utc() {
        let at = |secs: u64| rfc3339_utc(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_795_000_000), "2026-11-18T11:06:40.000Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59.000Z");
    }
}
