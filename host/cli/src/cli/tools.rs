//! `tiny-harness tools [--provider P] [--json]`: the registered tools as a
//! table or JSON, or as one provider sees them (wire names and
//! definitions).

use std::fmt::Write as _;

use tiny_harness_core::display::one_line;
use tiny_harness_host::{Host, Provider};
use tiny_harness_provider::{GeminiSchema, SEARCH_TOOL};

use super::emit;

pub(super) fn print_tools(host: &Host, json: bool) -> anyhow::Result<()> {
    let registry = host.registry();
    if json {
        let tools: Vec<serde_json::Value> = registry
            .tools()
            .map(|t| {
                serde_json::json!({
                    "name": t.name.as_str(),
                    "plugin": t.name.plugin(),
                    "server": t.name.server(),
                    "tool": t.name.tool(),
                    "description": t.definition.description,
                    "idempotent": t.definition.annotations.retry_safe(),
                    "annotations": t.definition.annotations,
                    "input_schema_sha256": t.schema_hash().as_str(),
                    "input_schema": t.definition.input_schema,
                    "output_schema_sha256": t.output_schema_hash().map(|h| h.as_str()),
                    "output_schema": t.definition.output_schema,
                })
            })
            .collect();
        return emit(&tiny_harness_core::display::json_pretty(&tools)?);
    }
    if registry.is_empty() {
        return emit(&no_tools(host));
    }
    let width = registry
        .tools()
        .map(|t| one_line(t.name.as_str()).len())
        .max()
        .unwrap_or(4);
    let mut table = format!(
        "{:width$}  {:10}  {:12}  {:64}  DESCRIPTION",
        "NAME", "IDEMPOTENT", "PLUGIN", "INPUT SCHEMA SHA256"
    );
    for t in registry.tools() {
        // The plugin's own words: the first line, escaped, so that the row
        // stays one row and the terminal does only what the table asks.
        let description = summary(&t.definition.description);
        let _ = write!(
            table,
            "\n{:width$}  {:10}  {:12}  {:64}  {}",
            one_line(t.name.as_str()),
            if t.definition.annotations.retry_safe() {
                "yes"
            } else {
                "no"
            },
            if t.name.is_bare() {
                t.source.kind().into()
            } else {
                one_line(t.name.plugin())
            },
            t.schema_hash().as_str(),
            one_line(&description)
        );
    }
    emit(&table)
}

/// `tools --provider`: each tool's wire name and its definition as
/// `provider` is sent it (in `--json`), and for Gemini which field holds
/// its schema and, for the subset, how many lossy rewrites it needed.
pub(super) fn print_wire_tools(
    host: &Host,
    provider: Provider,
    gemini: GeminiSchema,
    json: bool,
) -> anyhow::Result<()> {
    let registry = host.registry();
    let request = host.offer_with(provider, gemini);
    let entries = request.entries();
    let rewrites = |name: &str| {
        request
            .rewrites
            .iter()
            .find(|r| r.tool == name)
            .map(|r| r.rewrites.as_slice())
            .unwrap_or_default()
    };
    let lossy = |name: &str| rewrites(name).iter().filter(|w| w.lossy).count();
    // Each entry by the wire name it offers (a namespace's functions
    // each by theirs); the others (the search, namespaces) are listed
    // after the tools.
    let mut by_wire = std::collections::HashMap::new();
    let mut others = Vec::new();
    for entry in &entries {
        match entry_name(provider, entry) {
            Some(wire) if request.codec.decode(wire).is_ok_and(|n| n != SEARCH_TOOL) => {
                by_wire.insert(wire, *entry);
            }
            _ => {
                for inner in entry["tools"].as_array().into_iter().flatten() {
                    if let Some(wire) = inner["name"].as_str() {
                        by_wire.insert(wire, inner);
                    }
                }
                others.push(*entry);
            }
        }
    }
    let rows: Vec<(&str, &str, usize, Option<&serde_json::Value>)> = registry
        .tools()
        .map(|tool| {
            let name = tool.name.as_str();
            let wire = request.codec.encode(name).unwrap_or("");
            (name, wire, lossy(name), by_wire.get(wire).copied())
        })
        .collect();
    if json {
        let mut list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(name, wire, _, definition)| {
                let mut view =
                    serde_json::json!({"name": name, "wire_name": wire, "definition": definition});
                if registry.is_deferred(name) {
                    view["deferred"] = true.into();
                }
                if provider == Provider::Gemini {
                    view["schema_field"] = gemini.field().into();
                }
                let changed = rewrites(name);
                if !changed.is_empty() {
                    view["schema_rewrites"] = changed
                        .iter()
                        .map(|w| serde_json::json!({"pointer": w.pointer, "what": w.what, "lossy": w.lossy}))
                        .collect();
                }
                view
            })
            .collect();
        for entry in &others {
            let offered = if entry["type"] == "namespace" {
                "namespace"
            } else {
                "search"
            };
            let wire = entry_name(provider, entry).or_else(|| entry["type"].as_str());
            list.push(serde_json::json!({
                "name": null, "wire_name": wire, "offered": offered, "definition": entry,
            }));
        }
        return emit(&tiny_harness_core::display::json_pretty(&list)?);
    }
    if rows.is_empty() {
        return emit(&no_tools(host));
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(4);
    let mut table = format!("{:width$}  WIRE NAME ({provider})", "NAME");
    for (name, wire, lossy, _) in &rows {
        let _ = write!(table, "\n{:width$}  {}", one_line(name), one_line(wire));
        if *lossy > 0 {
            let plural = if *lossy == 1 { "" } else { "s" };
            let _ = write!(
                table,
                "  ({lossy} lossy schema rewrite{plural}; see --json)"
            );
        }
    }
    if let Some(search) = &request.search {
        let _ = write!(
            table,
            "\n({} deferred tools, listed once a search finds them; the search is {}'s)",
            search.deferred,
            if search.by_host() {
                "the host"
            } else {
                provider.as_str()
            }
        );
    }
    emit(&table)
}

/// The name an entry of `provider`'s payload offers, if it has one.
fn entry_name(provider: Provider, entry: &serde_json::Value) -> Option<&str> {
    match provider {
        Provider::OpenAiChat => entry["function"]["name"].as_str(),
        Provider::Bedrock => entry["toolSpec"]["name"].as_str(),
        _ if entry["type"] == "namespace" => None,
        _ => entry["name"].as_str(),
    }
}

/// The most characters of a description the `tools` table shows.
const SUMMARY_CHARS: usize = 200;

/// A description's first line, at most [`SUMMARY_CHARS`] long, with ` …`
/// when there is more (the whole is in `tools --json`).
pub(super) fn summary(description: &str) -> String {
    let trimmed = description.trim();
    let first = trimmed.lines().next().unwrap_or("");
    let cut: String = first.chars().take(SUMMARY_CHARS).collect();
    if cut.len() < trimmed.len() {
        format!("{cut} …")
    } else {
        cut
    }
}

/// What `tools` says when nothing is registered.
fn no_tools(host: &Host) -> String {
    use tiny_harness_mcp::State;
    let failed: Vec<String> = host
        .mcp_sources()
        .iter()
        .filter(|(_, source)| matches!(source.status().state, State::Failed(_)))
        .map(|(plugin, source)| format!("{plugin}/{}", one_line(source.server())))
        .collect();
    if !failed.is_empty() {
        format!(
            "no tools are registered: MCP server{} {} did not start (see the warnings above; `tiny-harness plugins` shows why)",
            if failed.len() == 1 { "" } else { "s" },
            failed.join(", ")
        )
    } else if host.known_drift().is_empty() {
        "no tools: the config loads no plugin that supplies any".into()
    } else {
        "no tools are registered: the tools offered differ from the lock (see the warnings above)"
            .into()
    }
}
