//! `tiny-harness plugin inspect FILE.wasm [--json]`: a component described
//! before anything is granted to it (see `tiny_harness_wasm::inspect`).

use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};
use tiny_harness_core::display::one_line;
use tiny_harness_wasm::{CompileCache, Inspection, PluginEngine, RELEASED_WORLDS, WORLD};

pub(super) async fn inspect(
    file: &Path,
    as_json: bool,
    no_cache: bool,
) -> anyhow::Result<ExitCode> {
    let cache = if no_cache { None } else { CompileCache::user() };
    let engine = PluginEngine::with_compile_cache(cache)
        .map_err(|e| anyhow::anyhow!("cannot start the plugin engine: {e}"))?;
    // A file that cannot be read as a component does not load: exit 1, as
    // for one that fails to register.
    let seen = match tiny_harness_wasm::inspect(&engine, file).await {
        Ok(seen) => seen,
        Err(why) => {
            eprintln!("tiny-harness: error: {}", one_line(&why.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let loads = seen.registration.is_ok();
    if as_json {
        super::emit(&serde_json::to_string_pretty(&to_json(&seen))?)?;
    } else {
        super::emit(text(&seen).trim_end())?;
    }
    Ok(if loads {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The host's own package version, from the world it loads.
fn host_version() -> &'static str {
    WORLD.rsplit_once('@').map_or(WORLD, |(_, version)| version)
}

fn text(seen: &Inspection) -> String {
    let mut out = format!(
        "component: {} ({} bytes)\nsha256: {}\n",
        seen.path.display(),
        seen.bytes,
        seen.sha256
    );
    out.push_str(&match &seen.package_version {
        Some(version) => format!(
            "targets: tiny-harness:plugin@{version} (this host loads {})\n",
            RELEASED_WORLDS.join(" and ")
        ),
        None => "targets: no tiny-harness:plugin interface\n".to_owned(),
    });
    out.push_str("imports:\n");
    if seen.imports.is_empty() {
        out.push_str("  (none read)\n");
    }
    // "Can use": whether the plugin needs a grant is its author's to say;
    // std brings `wasi:cli/environment` and `wasi:filesystem` into every
    // Rust component whether it reads a variable or a file or not.
    for import in &seen.imports {
        match import.needs {
            Some(needs) => out.push_str(&format!("  {}  can use {needs}\n", import.name)),
            None => out.push_str(&format!("  {}\n", import.name)),
        }
    }
    out.push_str(&format!("exports: {}\n", seen.exports.join(", ")));
    match &seen.registration {
        Ok(registration) => {
            out.push_str("tools (registered with no grants and an empty config):\n");
            if registration.tools.is_empty() {
                out.push_str("  (none)\n");
            }
            for tool in &registration.tools {
                let d = &tool.definition;
                let hints = hints(&d.annotations);
                out.push_str(&format!(
                    "  {}.{}{}  {}\n",
                    tool.server,
                    d.name,
                    if hints.is_empty() {
                        String::new()
                    } else {
                        format!(" [{}]", hints.join(", "))
                    },
                    one_line(&super::tools::summary(&d.description))
                ));
            }
            out.push_str("mcp servers declared:");
            if registration.mcp_servers.is_empty() {
                out.push_str(" none");
            }
            out.push('\n');
            for server in &registration.mcp_servers {
                out.push_str(&format!("  {}\n", server.name));
            }
        }
        Err(why) => out.push_str(&format!("it does not load: {why}\n")),
    }
    out.push_str(&grants_block(seen));
    out
}

/// A `[plugins.NAME.grants]` block to paste into a config, with one line,
/// commented out, per kind of grant the component's imports can use: the
/// plugin is granted nothing until a line is kept and filled in.
fn grants_block(seen: &Inspection) -> String {
    let can_use = |prefix: &str| {
        seen.imports.iter().any(|i| {
            let interface = i.name.split('@').next().unwrap_or(&i.name);
            interface.starts_with(prefix)
        })
    };
    // What the plugin says it expects, in the config's words, by kind.
    let mut out = String::new();
    let expected = match &seen.expects {
        Ok(Some(expects)) => expects.grant_lines(),
        Ok(None) => Vec::new(),
        Err(why) => {
            out.push_str(&format!(
                "expects: cannot be read: {}\n",
                one_line(&why.to_string())
            ));
            Vec::new()
        }
    };
    if !expected.is_empty() {
        out.push_str("expects (what the plugin says it needs; only the config grants):\n");
        for line in &expected {
            out.push_str(&format!("  {}\n", one_line(line)));
        }
    }
    let lines: Vec<String> = [
        (
            "wasi:filesystem/",
            "dirs",
            "dirs = [{ host = \".\", guest = \"/workspace\", mode = \"read-only\" }]",
        ),
        ("wasi:cli/environment", "env", "env = [\"HOME\"]"),
        ("tiny-harness:plugin/exec", "exec", "exec = [\"wc\"]"),
        ("wasi:http/", "net", "net = [\"https://api.example.com\"]"),
    ]
    .into_iter()
    .filter(|(prefix, _, _)| can_use(prefix))
    .map(|(_, kind, example)| {
        let line = expected
            .iter()
            .find(|l| l.starts_with(&format!("{kind} = ")))
            .map_or(example, String::as_str);
        format!("# {}", one_line(line))
    })
    .collect();
    if lines.is_empty() {
        out.push_str("grants: none of its imports can use one\n");
        return out;
    }
    let name = seen
        .path
        .to_str()
        .and_then(|p| p.strip_prefix(tiny_harness_wasm::builtin::PREFIX))
        .map(str::to_owned)
        .or_else(|| {
            seen.path
                .file_stem()
                .and_then(|s| s.to_str())
                .map(|s| s.replace('_', "-"))
        })
        .unwrap_or_else(|| "NAME".to_owned());
    out.push_str(&format!(
        "grants it can use, to paste and keep what it needs (it is granted nothing else):\n  [plugins.{}.grants]\n",
        one_line(&name)
    ));
    for line in lines {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// The annotations a tool declares, by name.
fn hints(a: &tiny_harness_core::tool::Annotations) -> Vec<&'static str> {
    [
        (a.read_only, "read-only"),
        (a.idempotent, "idempotent"),
        (a.destructive, "destructive"),
        (a.open_world, "open-world"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}

fn to_json(seen: &Inspection) -> Value {
    let imports: Vec<Value> = seen
        .imports
        .iter()
        .map(|i| json!({"name": i.name, "needs": i.needs}))
        .collect();
    let mut out = json!({
        "path": seen.path.display().to_string(),
        "bytes": seen.bytes,
        "sha256": seen.sha256,
        "package_version": seen.package_version,
        "host_version": host_version(),
        "host_loads": RELEASED_WORLDS,
        "imports": imports,
        "exports": seen.exports,
        "loads": seen.registration.is_ok(),
    });
    match &seen.expects {
        Ok(Some(e)) => {
            let dirs: Vec<Value> = e
                .dirs
                .iter()
                .map(|(guest, write)| {
                    json!({"guest": guest, "mode": if *write { "read-write" } else { "read-only" }})
                })
                .collect();
            out["expects"] = json!({"dirs": dirs, "env": e.env, "exec": e.exec, "net": e.net});
        }
        Ok(None) => out["expects"] = Value::Null,
        Err(why) => out["expects_error"] = json!(why.to_string()),
    }
    match &seen.registration {
        Ok(registration) => {
            let tools: Vec<Value> = registration
                .tools
                .iter()
                .map(|t| {
                    let mut tool = serde_json::to_value(&t.definition).unwrap_or(Value::Null);
                    if let Some(tool) = tool.as_object_mut() {
                        tool.insert("server".into(), json!(t.server));
                    }
                    tool
                })
                .collect();
            let servers: Vec<Value> = registration
                .mcp_servers
                .iter()
                .map(|s| json!(s.name))
                .collect();
            out["tools"] = json!(tools);
            out["mcp_servers"] = json!(servers);
        }
        Err(why) => out["error"] = json!(why.to_string()),
    }
    out
}
