//! `tiny-harness pins diff|update` and `tiny-harness mcp import`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use tiny_harness_core::display::one_line;
use tiny_harness_core::pin::diff_lines;
use tiny_harness_host::Host;
use tiny_harness_mcp::Change;

use super::emit;

/// The most tool names one warning line lists before `and N more`.
const NAMED: usize = 5;

/// Warning lines (for stderr) saying how the tools differ from their pins
/// as far as the host knows without starting anything: tools new since the
/// lock, tools changed, tools no longer offered; each with what to run.
pub(super) fn drift_warnings(host: &Host) -> Vec<String> {
    let mut new = Vec::new();
    let mut changed = Vec::new();
    let mut gone = Vec::new();
    for (server, drift) in host.known_drift() {
        let full = |tool: &str| format!("{server}.{tool}");
        new.extend(drift.added.iter().map(|t| full(&t.name)));
        for (pin, change) in &drift.changed {
            match change {
                Change::Removed => gone.push(full(&pin.definition.name)),
                _ => changed.push(full(&pin.definition.name)),
            }
        }
    }
    let line = |names: &[String], what: &str, todo: &str| {
        let count = names.len();
        let mut shown = names
            .iter()
            .take(NAMED)
            .map(|n| one_line(n))
            .collect::<Vec<_>>()
            .join(", ");
        if count > NAMED {
            let _ = write!(shown, " and {} more", count - NAMED);
        }
        let tools = if count == 1 { "tool" } else { "tools" };
        format!("{count} {tools} {what}: {shown}; {todo}")
    };
    let mut lines = Vec::new();
    if !new.is_empty() {
        lines.push(line(
            &new,
            "new since the lock, not callable yet",
            "review with tiny-harness pins diff, accept with tiny-harness pins update",
        ));
    }
    if !changed.is_empty() {
        lines.push(line(
            &changed,
            "changed since the lock, refused until accepted",
            "review with tiny-harness pins diff, accept with tiny-harness pins update",
        ));
    }
    if !gone.is_empty() {
        lines.push(line(
            &gone,
            "in the lock but no longer offered",
            "accept with tiny-harness pins update",
        ));
    }
    lines
}

/// One line (for stderr) per tool that loading a plugin marked `dev` pinned
/// again: new, changed (with which parts) or gone.
pub(super) fn repinned_lines(host: &Host) -> Vec<String> {
    let mut lines = Vec::new();
    for (server, drift) in host.repinned() {
        let plugin = server.split('/').next().unwrap_or(&server);
        let tool = |name: &str| one_line(&format!("{server}.{name}")).into_owned();
        let said = |what: String| format!("dev plugin {}: {what}", one_line(plugin));
        for added in &drift.added {
            lines.push(said(format!("{} is new: pinned", tool(&added.name))));
        }
        for (pin, change) in &drift.changed {
            let name = tool(&pin.definition.name);
            lines.push(said(match change {
                Change::Removed => format!("{name} is gone: unpinned"),
                Change::Changed { fields, .. } => {
                    format!("{name} changed ({}): pinned again", fields.join(", "))
                }
                _ => format!("{name} changed: pinned again"),
            }));
        }
    }
    lines
}

/// Prints how every chosen server differs from its pins; exit code 1 when
/// anything differs, as `git diff --exit-code` does.
pub(super) async fn diff(
    host: &Host,
    config: &tiny_harness_host::Config,
    server: Option<&str>,
) -> anyhow::Result<ExitCode> {
    // Installed code first: a server whose code differs is not started
    // (it would be refused), and its section says why.
    let code = host.code_drift(server);
    let changed: Vec<String> = code.iter().map(|drift| drift.server.clone()).collect();
    let drift = host.drift_except(server, &changed).await?;
    let mut text = String::new();
    let mut differs = false;
    for (server, drift) in drift {
        if drift.is_empty() {
            continue;
        }
        differs = true;
        let _ = writeln!(text, "{}:", one_line(&server));
        for (pin, change) in &drift.changed {
            let name = one_line(&pin.definition.name);
            match change {
                Change::Removed => {
                    let _ = writeln!(text, "  - {name}: removed (pinned {})", short(&pin.hash));
                }
                Change::Changed { current, hash, .. } => {
                    let _ = writeln!(
                        text,
                        "  ~ {name}: changed (pinned {}, now {})",
                        short(&pin.hash),
                        short(hash)
                    );
                    for line in diff_lines(&pin.definition, current) {
                        let _ = writeln!(text, "      {}", one_line(&line));
                    }
                }
                _ => {}
            }
        }
        for added in &drift.added {
            let _ = writeln!(
                text,
                "  + {}: new, not callable until `tiny-harness pins update`",
                one_line(&added.name)
            );
        }
    }
    // Installed code beside the definitions: what `mcp install` pinned.
    for drift in code {
        differs = true;
        let _ = writeln!(text, "{} (code):", one_line(&drift.server));
        for line in drift.differences {
            let _ = writeln!(text, "  ~ {}", one_line(&line));
        }
    }
    // Components from registries: whether their tags still name them.
    for (plugin, lines) in super::oci::moved_tags(config, server).await {
        differs = true;
        let _ = writeln!(text, "{} (component):", one_line(&plugin));
        for line in lines {
            let _ = writeln!(text, "  ~ {}", one_line(&line));
        }
    }
    if differs {
        emit(text.trim_end())?;
        Ok(ExitCode::from(1))
    } else {
        emit("every tool, every installed server and every tag is as pinned")?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Registers the chosen servers as they are now and rewrites the lock.
pub(super) async fn update(host: &Host, server: Option<&str>) -> anyhow::Result<ExitCode> {
    let done = host.reregister(server).await?;
    let mut text = String::new();
    for (server, count) in done {
        let _ = writeln!(text, "{}: {count} tools pinned", one_line(&server));
    }
    emit(text.trim_end())?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the `[plugins.mcp]` block for another client's MCP config.
pub(super) fn import(file: &Path, wasm: &str) -> anyhow::Result<ExitCode> {
    let bytes = tiny_harness_core::file::read_regular(
        file,
        "MCP config",
        crate::tooling::import::MAX_IMPORT_BYTES,
    )
    .map_err(|e| anyhow::anyhow!("cannot read {}: {}", file.display(), e.reason))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", file.display()))?;
    let block = crate::tooling::import::import(&text, wasm)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    emit(block.trim_end())?;
    Ok(ExitCode::SUCCESS)
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
