//! `tiny-harness call NAME ARGS --workflow STATE.json [--actor ID]` and
//! `tiny-harness workflow apply COMMANDS.jsonl`: intrinsics run against a
//! workflow kept in a file, and recorded command lists replayed.
//!
//! Invariants: the state file is replaced atomically (a temporary file
//! beside it, synced, renamed over it) and only when a command was
//! applied; a refused call, or one of a read-only intrinsic, leaves it
//! byte for byte as it was. A missing state file is a new task.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use tiny_harness_core::display::{block, one_line};
use tiny_harness_host::{Host, ToolCall, Workflow, WorkflowCommand};

use super::emit;

/// The largest state file or command list read.
const MAX_FILE_BYTES: u64 = 64 << 20;

fn read_text(path: &Path, what: &'static str) -> anyhow::Result<String> {
    let bytes = tiny_harness_core::file::read_regular(path, what, MAX_FILE_BYTES)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {}", path.display(), e.reason))?;
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", path.display()))
}

/// The workflow in `path`, or a new task if there is no such file.
pub(super) fn load(path: &Path) -> anyhow::Result<Workflow> {
    if fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(Workflow::new());
    }
    let text = read_text(path, "workflow state")?;
    Workflow::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Runs `call` against the workflow in `state`, for `actor`.
pub(super) async fn call(
    host: &Host,
    call: &ToolCall,
    state: &Path,
    actor: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut workflow = load(state)?;
    host.begin_iteration();
    let done = host.call_intrinsic(call, &mut workflow, actor).await;
    if done.command.is_some() {
        save(state, &workflow)?;
    }
    print(&done, json)
}

/// Prints an intrinsic's outcome (`--json`: with its command), and the
/// exit code it means.
fn print(done: &tiny_harness_host::IntrinsicOutcome, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        let mut view = done.outcome.to_json();
        view["command"] = serde_json::to_value(&done.command)?;
        emit(&tiny_harness_core::display::json_pretty(&view)?)?;
    } else {
        emit(&block(done.outcome.render()))?;
    }
    Ok(if done.outcome.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The intrinsic named `name`, if it is one.
pub(super) fn intrinsic(name: &str) -> Option<&'static tiny_harness_intrinsic::Spec> {
    tiny_harness_intrinsic::SPECS
        .iter()
        .find(|spec| spec.name == name)
}

/// An intrinsic called without `--workflow`: one that only reads (the
/// skill listings and loads) runs against a new task; one that changes a
/// task's state is refused, since the change would be lost.
pub(super) async fn call_unbound(
    host: &Host,
    call: &ToolCall,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if intrinsic(&call.name).is_some_and(|spec| !spec.read_only) {
        anyhow::bail!(
            "{} changes a task's state: pass --workflow FILE (a task state file, created if missing) to keep it",
            call.name
        );
    }
    let mut workflow = Workflow::new();
    host.begin_iteration();
    let done = host.call_intrinsic(call, &mut workflow, None).await;
    print(&done, json)
}

/// Writes `workflow` to `path` as pretty JSON, atomically.
pub(super) fn save(path: &Path, workflow: &Workflow) -> anyhow::Result<()> {
    let mut text = tiny_harness_core::display::json_pretty(workflow)?;
    text.push('\n');
    tiny_harness_core::file::replace(path, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Replays the commands of `file` (JSON Lines) from a new task, or from
/// the state in `from`, and prints the final state as JSON.
pub(super) fn apply(file: &Path, from: Option<&Path>) -> anyhow::Result<ExitCode> {
    let text = read_text(file, "command list")?;
    let mut commands = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let command: WorkflowCommand = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: not a workflow command ({e}); each line is one JSON object with a \
                 \"command\" tag",
                file.display(),
                index + 1
            )
        })?;
        commands.push((index + 1, command));
    }
    let mut workflow = match from {
        Some(path) => load(path)?,
        None => Workflow::new(),
    };
    for (line, command) in &commands {
        if let Err(error) = workflow.apply(command) {
            eprintln!(
                "tiny-harness: {} line {line}: {} refused: {}: {}",
                one_line(&file.display().to_string()),
                command.name(),
                error.code(),
                one_line(&error.to_string())
            );
            return Ok(ExitCode::from(1));
        }
    }
    emit(&tiny_harness_core::display::json_pretty(&workflow)?)?;
    Ok(ExitCode::SUCCESS)
}
