//! `tiny-harness tools --search QUERY [--limit N] [--json]`: the deferred
//! tools that best fit a query, as a model's search of the registry finds
//! them, with each score's parts; `--search -` reads one query per line
//! from standard input and prints one JSON line per query, so that a data
//! set is scored in one process.

use std::process::ExitCode;

use serde_json::{Value, json};
use tiny_harness_core::display::one_line;
use tiny_harness_host::{Host, SearchHit};

use super::emit;

/// The longest line read as a query from standard input; a longer one is
/// answered with the query's own refusal, and the rest of it skipped.
const MAX_LINE_BYTES: usize = 4 << 10;

/// Prints what `query` finds (or, for `-`, what each line of standard
/// input finds). Exit code 1 when a query is refused (the others are
/// still answered), 2 when nothing is deferred.
pub(super) fn search(
    host: &Host,
    query: &str,
    limit: Option<usize>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if host.registry().search_index().is_none() {
        anyhow::bail!(
            "nothing is deferred, so a search finds nothing: defer tools with [search] defer = [\"PATTERN\"] in the config (\"*\" for every tool), or defer = true on a plugin"
        );
    }
    if query != "-" {
        return Ok(match host.search(query, limit) {
            Ok(hits) if json => {
                emit(&answer(query, Ok(&hits)).to_string())?;
                ExitCode::SUCCESS
            }
            Ok(hits) => {
                emit(&table(&hits))?;
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tiny-harness: error: {e}");
                ExitCode::FAILURE
            }
        });
    }
    let mut refused = false;
    let mut input = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let (read, whole) = read_line(&mut input, &mut line)?;
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let found = if whole {
            host.search(text, limit).map_err(|e| e.to_string())
        } else {
            Err(format!(
                "the query is over {MAX_LINE_BYTES} bytes: shorten it to a few words"
            ))
        };
        refused |= found.is_err();
        emit(&answer(text, found.as_deref().map_err(String::as_str)).to_string())?;
    }
    Ok(if refused {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One line of `input` into `line` (at most [`MAX_LINE_BYTES`] kept, the
/// rest read and dropped): the bytes read, and whether it was kept whole.
fn read_line(
    input: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
) -> anyhow::Result<(usize, bool)> {
    let mut read = 0;
    let mut whole = true;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok((read, whole));
        }
        let (chunk, done) = match memchr(available) {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let take = chunk.len().min(MAX_LINE_BYTES.saturating_sub(line.len()));
        whole &= take == chunk.len();
        line.extend_from_slice(&chunk[..take]);
        let used = chunk.len();
        read += used;
        input.consume(used);
        if done {
            return Ok((read, whole));
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// `{"query", "hits": [{"name", "score", "parts", "definition_hash"}]}`,
/// or `{"query", "error"}`.
fn answer(query: &str, found: Result<&[SearchHit], &str>) -> Value {
    match found {
        Ok(hits) => json!({"query": query, "hits": hits}),
        Err(e) => json!({"query": query, "error": e}),
    }
}

/// The hits as a table: score, name, and the parts of the score.
fn table(hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return "no deferred tool fits the query".to_owned();
    }
    let width = hits
        .iter()
        .map(|h| one_line(&h.name).len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:>7}  {:width$}  {:>6}  {:>6}  {:>11}  {:>10}",
        "SCORE", "NAME", "NAME", "TITLE", "DESCRIPTION", "PARAMETERS"
    );
    for hit in hits {
        out.push_str(&format!(
            "\n{:>7.3}  {:width$}  {:>6.3}  {:>6.3}  {:>11.3}  {:>10.3}",
            hit.score,
            one_line(&hit.name),
            hit.parts.name,
            hit.parts.title,
            hit.parts.description,
            hit.parts.parameters
        ));
    }
    out
}
