//! `tiny-harness replay FILE --provider P`: what a real model asked for,
//! run against the sandboxed plugins, one loop iteration per turn.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use tiny_harness_core::display::{block, one_line};
use tiny_harness_host::{Host, Provider};

use super::emit;

/// The largest recording read.
const MAX_RECORDING_BYTES: u64 = 64 << 20;

/// The turns of a recording: one response JSON document, or JSON Lines of
/// them (blank lines skipped).
fn turns(text: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    if let Ok(one) = serde_json::from_str::<serde_json::Value>(text) {
        return Ok(vec![one]);
    }
    let mut turns = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let turn = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "line {} is not JSON ({e}); give one provider response, or one per line",
                index + 1
            )
        })?;
        turns.push(turn);
    }
    if turns.is_empty() {
        anyhow::bail!("it holds no provider response");
    }
    Ok(turns)
}

/// Runs every turn of `file` as `provider`'s responses and prints what
/// each call returned (`--json`: the provider's tool-result messages).
/// With `workflow` (a state file and the actor), the turns' intrinsic
/// calls are applied to the state in it, which is written back after the
/// last turn.
pub(super) async fn replay(
    host: &Host,
    file: &Path,
    provider: Provider,
    json: bool,
    workflow: Option<(&Path, Option<&str>)>,
) -> anyhow::Result<ExitCode> {
    let mut state = match workflow {
        Some((path, _)) => Some(super::workflow::load(path)?),
        None => None,
    };
    let bytes = tiny_harness_core::file::read_regular(file, "recording", MAX_RECORDING_BYTES)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {}", file.display(), e.reason))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", file.display()))?;
    let turns = turns(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let mut any_error = false;
    let mut report = Vec::new();
    let mut out = String::new();
    // Each turn answers the request the turn before it made: with the
    // deferred tools its searches found.
    let mut request = host.offer(provider);
    let mut last_turn: Option<tiny_harness_host::Turn> = None;
    for (index, response) in turns.iter().enumerate() {
        let number = index + 1;
        host.begin_iteration();
        if let Some(last) = &last_turn {
            request = host.offer_next(&request, last);
        }
        let turn = match (&mut state, workflow) {
            (Some(state), Some((_, actor))) => {
                host.run_calls_in(&request, response, state, actor).await
            }
            _ => host.run_calls(&request, response).await,
        }
        .map_err(|e| anyhow::anyhow!("{} turn {number}: {e}", file.display()))?;
        any_error |= turn.any_error();
        if json {
            let calls: Vec<serde_json::Value> = turn
                .calls
                .iter()
                .zip(&turn.outcomes)
                .map(|(call, outcome)| {
                    serde_json::json!({
                        "id": call.id,
                        "wire_name": call.wire_name,
                        "tool": outcome.tool,
                        "outcome": outcome_code(outcome),
                    })
                })
                .collect();
            let mut entry = serde_json::json!({
                "turn": number,
                "calls": calls,
                "results": turn.results,
            });
            if state.is_some() {
                entry["commands"] = serde_json::to_value(&turn.commands)?;
            }
            if !turn.found.is_empty() {
                entry["found"] = serde_json::to_value(&turn.found)?;
            }
            report.push(entry);
            last_turn = Some(turn);
            continue;
        }
        let plural = if turn.calls.len() == 1 { "" } else { "s" };
        let _ = writeln!(out, "turn {number}: {} call{plural}", turn.calls.len());
        for (call, outcome) in turn.calls.iter().zip(&turn.outcomes) {
            let _ = writeln!(
                out,
                "call {} {} -> {}: {}",
                one_line(&call.id),
                one_line(&call.wire_name),
                one_line(&outcome.tool),
                outcome_code(outcome)
            );
            let _ = writeln!(out, "{}", block(outcome.render()));
        }
        if !turn.found.is_empty() {
            let names: Vec<_> = turn.found.iter().map(|n| one_line(n)).collect();
            let _ = writeln!(
                out,
                "found (offered from the next turn on): {}",
                names.join(", ")
            );
        }
        last_turn = Some(turn);
    }
    if let (Some(state), Some((path, _))) = (&state, workflow) {
        super::workflow::save(path, state)?;
    }
    if json {
        emit(&tiny_harness_core::display::json_pretty(&report)?)?;
    } else {
        emit(out.trim_end())?;
    }
    Ok(if any_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn outcome_code(outcome: &tiny_harness_host::CallOutcome) -> &'static str {
    match &outcome.result {
        Ok(result) if result.is_error => "tool_error",
        Ok(_) => "ok",
        Err(error) => error.code(),
    }
}
