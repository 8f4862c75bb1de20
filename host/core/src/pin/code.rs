//! A server's installed code as the lock records it (`mcp install`): the
//! package, its exact version and registry integrity, and every
//! dependency's. What identifies code across machines; the hash of the
//! installed files, which differs between installs of the same code (a
//! venv holds its own path), is the store's (`mcp::store`).
//!
//! Invariant: a [`Code`] in a lock is consistent: its `kind` is one the
//! host installs, its `entry` a relative path inside the install, and it
//! holds at most [`MAX_DEPENDENCIES`] dependencies.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most dependencies one server's code may record: far above any real
/// server (server-everything has about 100), so that a lock (or a
/// registry) cannot make the host hold and compare without end.
pub const MAX_DEPENDENCIES: usize = 10_000;

/// One server's installed code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Code {
    /// `npm` or `pypi`.
    pub kind: String,
    /// The package's name.
    pub package: String,
    /// Its exact version.
    pub version: String,
    /// The registry's integrity of its archive: npm's `integrity`
    /// (`sha512-…`), or `sha256:<hex>` of a wheel.
    pub integrity: String,
    /// What runs, relative to the install's directory.
    pub entry: String,
    /// Every package installed with it: `name@version` to its integrity.
    #[serde(default)]
    pub dependencies: BTreeMap<String, String>,
    /// sha256 over the installed files, as any machine installing this
    /// code gets them wherever it puts it (npm: every file but npm's
    /// lockfiles; PyPI: the venv's `site-packages` but bytecode and each
    /// `RECORD`; a lock written before it was kept has none). `--locked`
    /// holds the installed files to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// The registry it was installed from (`scheme://host[:port]`), for
    /// people: a mirror gives the same code, so it is not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// The dependencies installed from elsewhere than [`Code::registry`]
    /// (a scoped registry the user's config names): `name@version` to
    /// where. Not compared either.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

/// The kinds of code the host installs.
pub const KINDS: &[&str] = &["npm", "pypi"];

impl Code {
    /// Why this code cannot be in a lock, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if !KINDS.contains(&self.kind.as_str()) {
            return Some(format!(
                "its kind {:?} is not one the host installs (npm, pypi)",
                crate::display::one_line(&self.kind)
            ));
        }
        let entry = std::path::Path::new(&self.entry);
        if self.entry.is_empty()
            || entry.is_absolute()
            || entry
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Some(format!(
                "its entry {:?} is not a plain relative path",
                crate::display::one_line(&self.entry)
            ));
        }
        if self.dependencies.len() > MAX_DEPENDENCIES {
            return Some(format!(
                "it records {} dependencies, more than {MAX_DEPENDENCIES}",
                self.dependencies.len()
            ));
        }
        None
    }

    /// One line for people: `npm @scope/name 1.2.3 (sha512-abc…)`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {} ({}…)",
            self.kind,
            crate::display::one_line(&self.package),
            crate::display::one_line(&self.version),
            crate::display::one_line(&self.integrity.chars().take(20).collect::<String>())
        )
    }

    /// Whether `installed` is this code, as recorded: everything equal,
    /// and the same tree unless this record has none (a lock written
    /// before trees were kept, which an install then completes).
    pub fn admits(&self, installed: &Code) -> bool {
        let Code { tree, .. } = installed;
        let without = |code: &Code| Code {
            tree: None,
            registry: None,
            sources: BTreeMap::new(),
            ..code.clone()
        };
        without(self) == without(installed) && (self.tree.is_none() || self.tree == *tree)
    }

    /// How `other` differs from this code, one line per difference.
    pub fn differences(&self, other: &Code) -> Vec<String> {
        let mut lines = Vec::new();
        if (&self.package, &self.version) != (&other.package, &other.version) {
            lines.push(format!(
                "{} {} -> {} {}",
                self.package, self.version, other.package, other.version
            ));
        }
        if self.integrity != other.integrity {
            lines.push(format!(
                "integrity {} -> {}",
                self.integrity, other.integrity
            ));
        }
        let added = other
            .dependencies
            .keys()
            .filter(|k| !self.dependencies.contains_key(*k));
        let removed = self
            .dependencies
            .keys()
            .filter(|k| !other.dependencies.contains_key(*k));
        let (added, removed): (Vec<_>, Vec<_>) = (added.collect(), removed.collect());
        if !added.is_empty() || !removed.is_empty() {
            lines.push(format!(
                "dependencies: {} added, {} removed{}",
                added.len(),
                removed.len(),
                added
                    .iter()
                    .take(5)
                    .map(|d| format!(" +{d}"))
                    .chain(removed.iter().take(5).map(|d| format!(" -{d}")))
                    .collect::<String>()
            ));
        }
        if self.entry != other.entry {
            lines.push(format!("entry {} -> {}", self.entry, other.entry));
        }
        if let (Some(before), Some(now)) = (&self.tree, &other.tree)
            && before != now
        {
            let short = |t: &str| t.chars().take(12).collect::<String>();
            lines.push(format!(
                "installed files (tree sha256 {} -> {})",
                short(before),
                short(now)
            ));
        }
        lines
            .iter()
            .map(|l| crate::display::one_line(l).into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Code;

    fn code(tree: Option<&str>) -> Code {
        Code {
            kind: "npm".to_owned(),
            package: "pkg".to_owned(),
            version: "1.0.0".to_owned(),
            integrity: "sha512-abc".to_owned(),
            entry: "node_modules/pkg/index.js".to_owned(),
            dependencies: Default::default(),
            tree: tree.map(str::to_owned),
            registry: None,
            sources: Default::default(),
        }
    }

    #[test]
    fn a_record_admits_its_own_tree_and_a_record_without_one_admits_any() {
        let (a, b) = (code(Some("aaaa")), code(Some("bbbb")));
        assert!(a.admits(&a));
        assert!(!a.admits(&b), "another tree");
        assert!(!a.admits(&code(None)), "an install that records none");
        assert!(code(None).admits(&a), "a lock written before trees");
        let mut mirrored = a.clone();
        mirrored.registry = Some("http://mirror.example".to_owned());
        assert!(a.admits(&mirrored), "the same code from a mirror");
        let mut other = a.clone();
        other.version = "1.0.1".to_owned();
        assert!(!code(None).admits(&other));
        assert_eq!(
            a.differences(&b),
            ["installed files (tree sha256 aaaa -> bbbb)"]
        );
    }
}
