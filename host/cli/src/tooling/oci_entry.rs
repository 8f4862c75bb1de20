//! `[plugins.NAME]` for a component from an OCI registry, written into a
//! config by `plugin add` (or moved by `plugin add --upgrade`), the rest
//! of the config kept as it was (comments and order included).
//!
//! Invariants:
//! - `add` only adds: a plugin of that name already in the config is
//!   refused, never replaced. `upgrade` changes only the `path` and
//!   `sha256` of a plugin whose `path` is an `oci://` reference already.
//! - Nothing is granted: the grants a component's imports can use are
//!   written as comments for the person to review and uncomment.

use toml_edit::{DocumentMut, Item, Table};

/// One component to write.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The plugin's name in the config.
    pub name: String,
    /// `oci://HOST/REPO[:TAG]@sha256:MANIFEST`.
    pub path: String,
    /// The component's sha256, 64 lowercase hex digits.
    pub sha256: String,
    /// The grants its imports can use (`grants.dirs`, `grants.net`, ...),
    /// each once, in the order first imported.
    pub grants: Vec<&'static str>,
    /// The grant lines the component says it expects (`exec = ["git"]`),
    /// from its `tiny-harness:expects` section.
    pub expected: Vec<String>,
}

/// Why the config was not changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The config is not TOML.
    #[error("it is not TOML: {}", tiny_harness_core::display::one_line(&.0.to_string()))]
    NotToml(#[source] toml_edit::TomlError),
    /// `add` of a plugin the config has.
    #[error(
        "plugin {0} is in the config already: to move it to another version, run plugin add \
         --upgrade {0}; to add this one beside it, choose another name"
    )]
    Exists(String),
    /// `upgrade` of a plugin the config lacks.
    #[error("plugin {0} is not in the config: add it first, with plugin add {0} oci://...")]
    Missing(String),
    /// `upgrade` of a plugin that does not come from a registry.
    #[error(
        "plugin {0} is not from an OCI registry (its path is not oci://...): only such a \
         plugin can be upgraded"
    )]
    NotOci(String),
    /// A part of the config has another shape than a config's.
    #[error("{0}")]
    Shape(String),
}

/// Whether a plugin `name` can be added to the config `text`: checked
/// before anything is downloaded.
pub fn check_absent(text: &str, name: &str) -> Result<(), EntryError> {
    let mut doc: DocumentMut = text.parse().map_err(EntryError::NotToml)?;
    match plugins(&mut doc)?.contains_key(name) {
        true => Err(EntryError::Exists(name.to_owned())),
        false => Ok(()),
    }
}

/// The config `text` (empty for a new one) with `entry` added: its table
/// appended after everything else, whatever the text ends with.
pub fn add(text: &str, entry: &Entry) -> Result<String, EntryError> {
    check_absent(text, &entry.name)?;
    let mut table = Table::new();
    table.insert("path", toml_edit::value(entry.path.as_str()));
    table.insert("sha256", toml_edit::value(entry.sha256.as_str()));
    let mut added = DocumentMut::new();
    let mut plugins = Table::new();
    plugins.set_implicit(true);
    plugins.insert(&entry.name, Item::Table(table));
    added.insert("plugins", Item::Table(plugins));
    let mut out = text.to_owned();
    if !out.is_empty() {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(&added.to_string());
    out.push_str(&suggestions(entry));
    Ok(out)
}

/// The config `text` with the plugin `entry` names moved to `entry`'s
/// `path` and `sha256`; and the `path` it had.
pub fn upgrade(text: &str, entry: &Entry) -> Result<(String, String), EntryError> {
    let mut doc: DocumentMut = text.parse().map_err(EntryError::NotToml)?;
    let plugins = plugins(&mut doc)?;
    let Some(table) = plugins
        .get_mut(&entry.name)
        .and_then(Item::as_table_like_mut)
    else {
        return Err(EntryError::Missing(entry.name.clone()));
    };
    let before = table
        .get("path")
        .and_then(Item::as_str)
        .filter(|p| p.starts_with("oci://"))
        .ok_or_else(|| EntryError::NotOci(entry.name.clone()))?
        .to_owned();
    set_keeping_decor(table, "path", &entry.path);
    set_keeping_decor(table, "sha256", &entry.sha256);
    Ok((doc.to_string(), before))
}

/// Sets `key` to the string `value`, keeping the comments around the old
/// value.
fn set_keeping_decor(table: &mut dyn toml_edit::TableLike, key: &str, value: &str) {
    match table.get_mut(key).and_then(Item::as_value_mut) {
        Some(old) => {
            let decor = old.decor().clone();
            *old = toml_edit::Value::from(value);
            *old.decor_mut() = decor;
        }
        None => {
            table.insert(key, toml_edit::value(value));
        }
    }
}

/// The `[plugins]` table, made if missing.
fn plugins(doc: &mut DocumentMut) -> Result<&mut Table, EntryError> {
    let item = doc.as_table_mut().entry("plugins").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_mut().ok_or_else(|| {
        EntryError::Shape("`plugins` is not a table: write [plugins.NAME] tables".to_owned())
    })
}

/// The commented-out grants a component's imports can use.
fn suggestions(entry: &Entry) -> String {
    if entry.grants.is_empty() {
        return format!(
            "# plugin {} imports nothing a grant opens: it needs no grants.\n",
            entry.name
        );
    }
    let mut out = format!(
        "# Grants its imports can use, none given: review, then uncomment what it should have.\n\
         # [plugins.{}.grants]\n",
        entry.name
    );
    for grant in &entry.grants {
        let expected = entry
            .expected
            .iter()
            .find(|l| l.starts_with(&format!("{grant} = ")));
        if let Some(line) = expected {
            out.push_str(&format!("# {line}  # what the plugin says it expects\n"));
            continue;
        }
        let line = match *grant {
            "dirs" => "dirs = [{ host = \".\", guest = \"/workspace\", mode = \"read-only\" }]",
            "net" => "net = [\"https://api.example.com:443\"]",
            "exec" => "exec = [\"PROGRAM\"]",
            "env" => "env = [\"NAME\"]",
            _ => continue,
        };
        out.push_str(&format!("# {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            name: "fs".into(),
            path: format!(
                "oci://127.0.0.1:5000/plugins/fs:1.0@sha256:{}",
                "a".repeat(64)
            ),
            sha256: "b".repeat(64),
            grants: vec!["dirs"],
            expected: Vec::new(),
        }
    }

    #[test]
    fn adding_keeps_the_config_and_grants_nothing() {
        let text = "# my tools\n[plugins.shell] # the shell\npath = \"builtin:shell\"\n";
        let out = add(text, &entry()).unwrap();
        assert!(out.starts_with(text), "{out}");
        let doc: DocumentMut = out.parse().unwrap();
        assert_eq!(
            doc["plugins"]["fs"]["path"].as_str(),
            Some(entry().path.as_str())
        );
        assert_eq!(
            doc["plugins"]["fs"]["sha256"].as_str(),
            Some(&*"b".repeat(64))
        );
        assert!(doc["plugins"]["fs"].get("grants").is_none(), "{out}");
        assert!(out.contains("# [plugins.fs.grants]\n# dirs = [{"), "{out}");
        assert!(matches!(add(&out, &entry()), Err(EntryError::Exists(_))));
    }

    #[test]
    fn what_the_plugin_expects_is_written_commented_in_place_of_the_example() {
        let mut expecting = entry();
        expecting.grants.push("exec");
        expecting.expected =
            vec!["dirs = [{ host = \"HOST\", guest = \"/data\", mode = \"read-only\" }]".into()];
        let out = add("", &expecting).unwrap();
        assert!(
            out.contains(
                "# dirs = [{ host = \"HOST\", guest = \"/data\", mode = \"read-only\" }]  # what the plugin says it expects\n# exec = [\"PROGRAM\"]\n"
            ),
            "{out}"
        );
        let doc: DocumentMut = out.parse().unwrap();
        assert!(doc["plugins"]["fs"].get("grants").is_none(), "{out}");
    }

    #[test]
    fn upgrading_moves_only_the_path_and_the_digest() {
        let text = add("", &entry())
            .unwrap()
            .replace("sha256 = ", "# pinned by plugin add\nsha256 = ")
            + "[plugins.fs.config]\nroot = \"/w\"\n";
        let mut moved = entry();
        moved.path = moved.path.replace(&"a".repeat(64), &"c".repeat(64));
        moved.sha256 = "d".repeat(64);
        let (out, before) = upgrade(&text, &moved).unwrap();
        assert_eq!(before, entry().path);
        assert_eq!(
            out,
            text.replace(&"a".repeat(64), &"c".repeat(64))
                .replace(&"b".repeat(64), &"d".repeat(64))
        );
        let file = "[plugins.fs]\npath = \"fs.wasm\"\n";
        assert!(matches!(upgrade(file, &moved), Err(EntryError::NotOci(_))));
        assert!(matches!(upgrade("", &moved), Err(EntryError::Missing(_))));
    }
}
