//! `tiny-harness mcp add NAME [--env K[=V]]... [--write DIR]... -- COMMAND
//! ARGS...`: a stdio server added to a config, with the grants its launcher
//! needs to run confined ([`tiny_harness_mcp::launcher`]), the rest of the config kept
//! as it was (comments and order included).
//!
//! Invariants:
//! - The config is only ever added to: an existing server of that name is
//!   refused, never replaced; existing grants are widened only by what
//!   this server needs (a program's `read` and `env` lists, `dirs`, `env`).
//! - Nothing is granted that the server does not use, and never the
//!   network: the plan proposes, the person reviews what is printed.
//! - A value given as `--env K` or `--env K=${VAR}` is a reference to a
//!   host variable (granted in `env`); only `--env K=V` writes a value, as
//!   the person typed it.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use tiny_harness_core::display::one_line;
use tiny_harness_mcp::launcher::Plan;

/// One `mcp add`.
#[derive(Debug, Clone)]
pub struct Request {
    /// The server's name: the middle part of its tools' names.
    pub name: String,
    /// `--env`: `K` (the host's `K`), `K=${VAR}` or `K=V`.
    pub env: Vec<String>,
    /// `--write`: directories among its arguments to grant read-write.
    pub writable: Vec<PathBuf>,
    /// The component written for a new `[plugins.mcp]`.
    pub wasm: String,
}

/// What `mcp add` did.
#[derive(Debug, Clone)]
pub struct Added {
    /// The whole new config.
    pub text: String,
    /// Lines for the person to review: what runs, what is granted.
    pub review: Vec<String>,
}

/// Why a server was not added; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddError {
    /// The name is not a server name.
    #[error("{0}; a server name is 1 to 64 characters of a-z, 0-9, _ and -")]
    Name(#[source] tiny_harness_core::registry::RegistryError),
    /// The config is not TOML.
    #[error("it is not TOML: {}", one_line(&.0.to_string()))]
    NotToml(#[source] toml_edit::TomlError),
    /// An `--env` is not a variable the host gives a program.
    #[error("{0}")]
    Env(String),
    /// A `--write` directory that no argument of the server names.
    #[error("--write {}: no argument of the server names that directory", .0.display())]
    Write(PathBuf),
    /// A server of that name is in the config already.
    #[error(
        "it is in the config already: remove its [plugins.mcp.config.mcpServers.{0}] table \
         first, or choose another name"
    )]
    Exists(String),
    /// A part of the config the server goes into has another shape (a
    /// value where a table or a list belongs).
    #[error("{0}")]
    Shape(String),
}

/// Adds the server `plan` describes to the config `text` (empty for a new
/// one), as `request` says.
pub fn add(text: &str, request: &Request, plan: &Plan) -> Result<Added, AddError> {
    tiny_harness_core::registry::check_segment("server", &request.name).map_err(AddError::Name)?;
    let mut doc: DocumentMut = text.parse().map_err(AddError::NotToml)?;
    let env = environment(&request.env)?;
    let writable: Vec<PathBuf> = request
        .writable
        .iter()
        .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
        .collect();
    if let Some(missing) = writable.iter().find(|w| !plan.dirs.contains(w)) {
        return Err(AddError::Write(missing.clone()));
    }

    let plugins = table(doc.as_table_mut(), "plugins", true)?;
    let fresh = !plugins.contains_key("mcp");
    let mcp = table(plugins, "mcp", false)?;
    if fresh {
        mcp.insert("path", toml_edit::value(request.wasm.as_str()));
    }
    // Grants first, where a reader looks for them.
    table(mcp, "grants", false)?;
    let config = table(mcp, "config", true)?;
    let servers = table(config, "mcpServers", true)?;
    if servers.contains_key(&request.name) {
        return Err(AddError::Exists(request.name.clone()));
    }
    let mut server = Table::new();
    server.insert("command", toml_edit::value(plan.program.as_str()));
    if !plan.args.is_empty() {
        server.insert("args", toml_edit::value(strings(plan.args.iter())));
    }
    if !env.is_empty() {
        let mut pairs = InlineTable::new();
        for (key, value) in &env {
            pairs.insert(key, value.as_str().into());
        }
        server.insert("env", toml_edit::value(pairs));
    }
    servers.insert(&request.name, Item::Table(server));

    let mcp = table(table(doc.as_table_mut(), "plugins", true)?, "mcp", false)?;
    let grants = table(mcp, "grants", false)?;
    let names: Vec<String> = env.iter().map(|(k, _)| k.clone()).collect();
    exec_grant(grants, plan, &names)?;
    let mut review = vec![format!(
        "added mcp server {}: {} {}",
        request.name,
        plan.program,
        plan.args.join(" ")
    )];
    review.push(format!(
        "  exec grant: {}{}{}",
        plan.program,
        if plan.read.is_empty() {
            String::new()
        } else {
            format!(
                ", read {}",
                plan.read
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        if names.is_empty() {
            String::new()
        } else {
            format!(", variables {}", names.join(", "))
        }
    ));
    for dir in &plan.dirs {
        let mode = if writable.contains(dir) {
            "read-write"
        } else {
            "read-only"
        };
        add_dir(grants, dir, mode)?;
        review.push(format!(
            "  dir grant: {} ({mode}, named by its arguments{})",
            dir.display(),
            if mode == "read-only" {
                "; --write to make it writable"
            } else {
                ""
            }
        ));
    }
    let references: Vec<String> = env.iter().filter_map(|(_, v)| referenced(v)).collect();
    if !references.is_empty() {
        let list = array(grants, "env")?;
        for variable in &references {
            push_unique(list, variable);
        }
        review.push(format!(
            "  host variables it may name: {}",
            references.join(", ")
        ));
    }
    review
        .push("  network: none (add a net grant to plugins.mcp.grants if it needs one)".to_owned());
    for note in &plan.notes {
        review.push(format!("  note: {note}"));
    }
    Ok(Added {
        text: doc.to_string(),
        review,
    })
}

/// `--env` values as `(KEY, value)`: `K` becomes `${K}`.
fn environment(env: &[String]) -> Result<Vec<(String, String)>, AddError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for given in env {
        let (key, value) = match given.split_once('=') {
            Some((key, value)) => (key.to_owned(), value.to_owned()),
            None => (given.clone(), format!("${{{given}}}")),
        };
        let valid = !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !key.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(AddError::Env(format!(
                "--env {}: {:?} is not a variable name (letters, digits and _)",
                one_line(given),
                one_line(&key)
            )));
        }
        if tiny_harness_sandbox::grant::is_loader(&key) {
            return Err(AddError::Env(format!(
                "--env {key}: the dynamic loader's variables are never given to a program"
            )));
        }
        out.retain(|(k, _)| *k != key);
        out.push((key, value));
    }
    Ok(out)
}

/// The host variable `value` refers to, when it is exactly `${VAR}`.
fn referenced(value: &str) -> Option<String> {
    let inner = value.strip_prefix("${")?.strip_suffix('}')?;
    (!inner.is_empty()
        && inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    .then(|| inner.to_owned())
}

/// The exec grant for `plan.program`, added or widened.
fn exec_grant(grants: &mut Table, plan: &Plan, env: &[String]) -> Result<(), AddError> {
    let exec = array(grants, "exec")?;
    let existing = exec.iter_mut().find_map(|v| {
        v.as_inline_table_mut()
            .filter(|t| t.get("program").and_then(Value::as_str) == Some(plan.program.as_str()))
    });
    let entry = match existing {
        Some(entry) => entry,
        None => {
            let mut entry = InlineTable::new();
            entry.insert("program", plan.program.as_str().into());
            exec.push(entry);
            exec.iter_mut()
                .last()
                .and_then(Value::as_inline_table_mut)
                .ok_or_else(|| {
                    AddError::Shape("cannot add to plugins.mcp.grants.exec".to_owned())
                })?
        }
    };
    for (key, items) in [
        (
            "read",
            plan.read
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
        ),
        ("env", env.to_vec()),
    ] {
        if items.is_empty() {
            continue;
        }
        let list = entry
            .entry(key)
            .or_insert_with(|| Value::Array(Array::new()))
            .as_array_mut()
            .ok_or_else(|| {
                AddError::Shape(format!(
                    "plugins.mcp.grants.exec: {key} of {} is not a list",
                    plan.program
                ))
            })?;
        for item in &items {
            push_unique(list, item);
        }
    }
    Ok(())
}

/// A `dirs` grant of `dir` (seen by the plugin at the same path), unless
/// one grants it already.
fn add_dir(grants: &mut Table, dir: &Path, mode: &str) -> Result<(), AddError> {
    let dirs = array(grants, "dirs")?;
    let host = dir.display().to_string();
    let known = dirs.iter().any(|v| {
        v.as_inline_table()
            .and_then(|t| t.get("host"))
            .and_then(Value::as_str)
            == Some(host.as_str())
    });
    if !known {
        let mut entry = InlineTable::new();
        entry.insert("host", host.as_str().into());
        entry.insert("guest", host.as_str().into());
        entry.insert("mode", mode.into());
        dirs.push(entry);
    }
    Ok(())
}

/// The table `key` of `parent`, made when missing (`implicit`: a table
/// that holds only tables, written as `[a.b]` headers alone).
fn table<'a>(parent: &'a mut Table, key: &str, implicit: bool) -> Result<&'a mut Table, AddError> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(implicit);
        Item::Table(table)
    });
    if let Some(inline) = item.as_inline_table().cloned() {
        *item = Item::Table(inline.into_table());
    }
    item.as_table_mut()
        .ok_or_else(|| AddError::Shape(format!("{key} in the config is not a table")))
}

/// The list `key` of `grants`, made when missing.
fn array<'a>(grants: &'a mut Table, key: &str) -> Result<&'a mut Array, AddError> {
    grants
        .entry(key)
        .or_insert_with(|| toml_edit::value(Array::new()))
        .as_array_mut()
        .ok_or_else(|| AddError::Shape(format!("plugins.mcp.grants.{key} is not a list")))
}

fn push_unique(list: &mut Array, item: &str) {
    if !list.iter().any(|v| v.as_str() == Some(item)) {
        list.push(item);
    }
}

fn strings<'a>(items: impl Iterator<Item = &'a String>) -> Array {
    items.map(String::as_str).collect()
}

#[cfg(test)]
mod tests;
