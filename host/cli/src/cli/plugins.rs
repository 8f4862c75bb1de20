//! `tiny-harness plugins`: each plugin, what it is granted, and the MCP
//! servers it declares with their state.

use std::fmt::Write as _;

use tiny_harness_core::display::one_line;
use tiny_harness_host::{DirMode, Grants, Host};
use tiny_harness_mcp::{McpSource, State};
use tiny_harness_wasm::CompileOrigin;

use super::emit;

/// What a plugin is granted, in one line: `dirs: GUEST=HOST (mode), ...;
/// env: NAME, ...; exec: /ABSOLUTE/PROGRAM, ...; net: GRANT, ...`, or
/// `nothing`. Programs are shown as resolved (the file that runs), those
/// not on this machine with why (`exec unusable here: ...`), net grants as
/// written.
fn describe_grants(grants: &Grants) -> String {
    let mut parts = Vec::new();
    if !grants.dirs().is_empty() {
        let dirs: Vec<String> = grants
            .dirs()
            .iter()
            .map(|d| {
                format!(
                    "{}={} ({})",
                    d.guest(),
                    d.host().display(),
                    mode_name(d.mode())
                )
            })
            .collect();
        parts.push(format!("dirs: {}", dirs.join(", ")));
    }
    if !grants.env().is_empty() {
        parts.push(format!("env: {}", grants.env().join(", ")));
    }
    if !grants.exec().is_empty() {
        let programs: Vec<String> = grants
            .exec()
            .iter()
            .map(|g| {
                let mut extra = Vec::new();
                if let Some(args) = g.args() {
                    extra.push(format!(
                        "args: {}",
                        one_line(&format!("{:?}", args.written()))
                    ));
                }
                if !g.env().written().is_empty() {
                    extra.push(format!(
                        "env: {}",
                        one_line(&format!("{:?}", g.env().written()))
                    ));
                }
                if !g.sockets().is_empty() {
                    let sockets: Vec<String> = g
                        .sockets()
                        .iter()
                        .map(|s| s.display().to_string())
                        .collect();
                    extra.push(format!("sockets: {}", one_line(&sockets.join(", "))));
                }
                if extra.is_empty() {
                    g.program().display().to_string()
                } else {
                    format!("{} ({})", g.program().display(), extra.join("; "))
                }
            })
            .collect();
        parts.push(format!("exec: {}", programs.join(", ")));
    }
    if !grants.unusable().is_empty() {
        // Granted, but not on this machine: what needs them fails, and why.
        let missing: Vec<String> = grants
            .unusable()
            .iter()
            .map(|u| format!("{} ({})", one_line(u.written()), one_line(u.reason())))
            .collect();
        parts.push(format!("exec unusable here: {}", missing.join(", ")));
    }
    if !grants.net().is_empty() {
        let net: Vec<&str> = grants.net().iter().map(|g| g.as_str()).collect();
        parts.push(format!("net: {}", net.join(", ")));
    }
    if !grants.exec().is_empty() {
        // What holds the programs it may start (see `confine`).
        parts.push(format!(
            "programs confined by: {}",
            match grants.confinement {
                tiny_harness_sandbox::confine::Mode::Landlock =>
                    tiny_harness_sandbox::confine::in_force(
                        grants.exec().iter().any(|g| !g.sockets().is_empty())
                    ),
                tiny_harness_sandbox::confine::Mode::None =>
                    "nothing (confinement = \"none\")".into(),
                _ => "unknown".into(),
            }
        ));
        parts.push(format!(
            "processes kept by: {}",
            tiny_harness_sandbox::confine::containment()
        ));
    }
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join("; ")
    }
}

fn mode_name(mode: DirMode) -> &'static str {
    match mode {
        DirMode::ReadOnly => "read-only",
        DirMode::ReadWrite => "read-write",
    }
}

pub(super) fn print_plugins(host: &Host, json: bool) -> anyhow::Result<()> {
    let registry = host.registry();
    let plugins = host.plugins();
    let tool_count = |name: &str| registry.tools().filter(|t| t.name.plugin() == name).count();
    let sources = host.mcp_sources();
    // A server not started yet is shown as its next start would find its
    // install (a changed one is failed, with why).
    for (_, source) in &sources {
        let _ = source.check_install();
    }
    let sources_of = |name: &str| -> Vec<&McpSource> {
        sources
            .iter()
            .filter(|(plugin, _)| plugin == name)
            .map(|(_, s)| s.as_ref())
            .collect()
    };
    if json {
        let list: Vec<serde_json::Value> = plugins
            .iter()
            .map(|(name, plugin)| {
                let grants = plugin.grants();
                let limits = plugin.limits();
                serde_json::json!({
                    "name": name,
                    "path": plugin.wasm_path().display().to_string(),
                    "sha256": plugin.sha256(),
                    "pinned": plugin.is_pinned(),
                    "source": plugin.source(),
                    "tools": tool_count(name),
                    "from_compile_cache": plugin.compile_origin() == CompileOrigin::Cached,
                    "grants": {
                        "dirs": grants.dirs().iter().map(|d| serde_json::json!({
                            "host": d.host().display().to_string(),
                            "guest": d.guest(),
                            "mode": mode_name(d.mode()),
                        })).collect::<Vec<_>>(),
                        "env": grants.env(),
                        "exec": grants.exec().iter().map(|g| serde_json::json!({
                            "program": g.written(),
                            "path": g.program().display().to_string(),
                            "args": g.args().map(|a| a.written()),
                            "env": g.env().written(),
                            "sockets": g.sockets().iter().map(|s| s.display().to_string()).collect::<Vec<_>>(),
                        })).collect::<Vec<_>>(),
                        "exec_unusable": grants.unusable().iter().map(|u| serde_json::json!({
                            "program": u.written(),
                            "reason": u.reason(),
                        })).collect::<Vec<_>>(),
                        "net": grants.net().iter().map(|g| g.as_str()).collect::<Vec<_>>(),
                    },
                    "confinement": grants.confinement.to_string(),
                    "processes": tiny_harness_sandbox::confine::containment(),
                    "mcp_sources": sources_of(name).iter().map(|s| source_json(s)).collect::<Vec<_>>(),
                    "limits": {
                        "memory_mib": limits.memory_bytes >> 20,
                        "timeout_ms": u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
                        "result_kib": limits.result_bytes >> 10,
                        "result_parts": limits.result_parts,
                        "open_files": limits.open_files,
                        "arguments_kib": limits.arguments_bytes >> 10,
                        "concurrent_calls": limits.concurrent_calls,
                        "program_cpu_seconds": grants.program_limits.cpu_seconds,
                        "program_memory_mib": grants.program_limits.address_space >> 20,
                        "program_processes": grants.program_limits.processes,
                        "tools": limits.registration.tools,
                        "servers": limits.registration.servers,
                        "description_kib": limits.registration.description_bytes >> 10,
                        "title_kib": limits.registration.title_bytes >> 10,
                        "schema_kib": limits.registration.schema_bytes >> 10,
                        "schema_cost": limits.registration.schema_cost,
                        "registration_kib": limits.registration.total_bytes >> 10,
                    },
                })
            })
            .collect();
        return emit(&tiny_harness_core::display::json_pretty(&list)?);
    }
    if plugins.is_empty() {
        return emit("no plugins: the config loads none");
    }
    let width = plugins
        .iter()
        .map(|(n, _)| one_line(n).len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut table = format!(
        "{:width$}  {:5}  {:64}  {:6}  GRANTS",
        "NAME", "TOOLS", "SHA256", "PINNED"
    );
    for (name, plugin) in &plugins {
        let _ = write!(
            table,
            "\n{:width$}  {:5}  {:64}  {:6}  {}",
            one_line(name),
            tool_count(name),
            one_line(plugin.sha256()),
            if plugin.is_pinned() { "yes" } else { "no" },
            // Host paths and variable names may hold any byte but NUL.
            one_line(&describe_grants(plugin.grants()))
        );
        if let Some(source) = plugin.source() {
            let _ = write!(table, "\n  from {}", one_line(source));
        }
        for source in sources_of(name) {
            describe_source(&mut table, source);
        }
    }
    emit(&table)
}

/// One MCP source as JSON.
fn source_json(source: &McpSource) -> serde_json::Value {
    let status = source.status();
    let (state, reason) = match &status.state {
        State::Failed(why) => ("failed", Some(why.as_str())),
        State::Disconnected(why) => ("disconnected", Some(why.as_str())),
        other => (state_name(other), None),
    };
    let login = login_of(source).map(|state| match state {
        Ok(Some(state)) => serde_json::json!({
            "logged_in": true,
            "until": state.until,
            "refreshable": state.refreshable,
            "scopes": state.scopes,
        }),
        Ok(None) => serde_json::json!({ "logged_in": false }),
        Err(why) => serde_json::json!({ "logged_in": false, "error": why }),
    });
    serde_json::json!({
        "login": login,
        "server": source.server(),
        "transport": status.transport,
        "target": status.target,
        "protocol": status.protocol,
        "protocol_because": status.protocol_because,
        "state": state,
        "reason": reason,
        "tools": status.tools,
        "skipped": status.skipped.iter().map(|s| serde_json::json!({
            "name": s.name,
            "reason": s.reason,
        })).collect::<Vec<_>>(),
    })
}

fn state_name(state: &State) -> &'static str {
    match state {
        State::NotStarted => "not started",
        State::Connected => "connected",
        State::Stale => "stale",
        State::Disconnected(_) => "disconnected",
        _ => "failed",
    }
}

/// One MCP source under its plugin's row: transport, target, protocol,
/// state, tools, and every tool skipped with its reason.
fn describe_source(table: &mut String, source: &McpSource) {
    let status = source.status();
    let protocol = status
        .protocol
        .as_deref()
        .map(|p| match &status.protocol_because {
            Some(why) => format!("protocol {} ({}); ", one_line(p), one_line(why)),
            None => format!("protocol {}; ", one_line(p)),
        })
        .unwrap_or_default();
    let transport = if status.transport.is_empty() {
        String::new()
    } else {
        format!("{} {}; ", status.transport, one_line(&status.target))
    };
    let _ = write!(
        table,
        "\n  mcp server {}: {transport}{protocol}{}; {} tools",
        one_line(source.server()),
        one_line(&status.state.to_string()),
        status.tools.len()
    );
    match login_of(source) {
        Some(Ok(Some(state))) => {
            let until = match state.until {
                Some(until) => format!("until {}", tiny_harness_core::display::utc_minute(until)),
                None => "with no expiry given".to_owned(),
            };
            let _ = write!(
                table,
                "\n    logged in {until}{}; scopes: {}",
                if state.refreshable {
                    ", refreshed by the host"
                } else {
                    ", no refresh token"
                },
                if state.scopes.is_empty() {
                    "none named".to_owned()
                } else {
                    one_line(&state.scopes.join(" ")).into_owned()
                }
            );
        }
        Some(Ok(None)) => {}
        Some(Err(why)) => {
            let _ = write!(table, "\n    login unusable: {}", one_line(&why));
        }
        None => {}
    }
    for skipped in &status.skipped {
        let _ = write!(
            table,
            "\n    skipped {}: {}",
            one_line(&skipped.name),
            one_line(&skipped.reason)
        );
    }
}

/// The login of an HTTP source, when the host keeps logins: `Ok(None)`
/// when there is none.
fn login_of(
    source: &McpSource,
) -> Option<Result<Option<tiny_harness_mcp::oauth::LoginState>, String>> {
    use tiny_harness_mcp::launch::Target;
    let Target::Http(endpoint) = &source.launch()?.target else {
        return None;
    };
    Some(endpoint.login.as_ref()?.state().map_err(|e| e.to_string()))
}
