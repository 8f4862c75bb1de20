//! `tiny-harness pins diff|update` and `tiny-harness mcp import`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use tiny_harness_host::Host;
use tiny_harness_host::display::one_line;
use tiny_harness_host::mcp::Change;
use tiny_harness_host::pin::diff_lines;

use super::emit;

/// Prints how every chosen server differs from its pins; exit code 1 when
/// anything differs, as `git diff --exit-code` does.
pub(super) async fn diff(host: &Host, server: Option<&str>) -> anyhow::Result<ExitCode> {
    let drift = host.drift(server).await?;
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
    if differs {
        emit(text.trim_end())?;
        Ok(ExitCode::from(1))
    } else {
        emit("every tool is as pinned")?;
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
    let bytes = tiny_harness_host::file::read_regular(
        file,
        "MCP config",
        tiny_harness_host::mcp::import::MAX_IMPORT_BYTES,
    )
    .map_err(|e| anyhow::anyhow!("cannot read {}: {}", file.display(), e.reason))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", file.display()))?;
    let block = tiny_harness_host::mcp::import::import(&text, wasm)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    emit(block.trim_end())?;
    Ok(ExitCode::SUCCESS)
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
