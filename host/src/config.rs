//! The host config (`tiny-harness.toml`): which plugins to load and exactly
//! what each may touch.
//!
//! ```toml
//! [plugins.fs]                       # the name is the first part of every tool name
//! path = "builtin:fs"               # a bundled plugin (fs, shell, net, mcp), a .wasm
//!                                    #   file, or oci://HOST/REPO:TAG@sha256:… (a
//!                                    #   registry's, run from the store beside the
//!                                    #   config; `plugin add` writes it)
//! sha256 = "…"                       # pin: a different component is refused
//!                                    #   (optional for a file, required for oci://)
//! confinement = "landlock"           # programs it starts: "landlock" (default) or "none"
//! dev = true                         # under development: its tools are pinned again
//!                                    #   as they are at every load, each change told;
//!                                    #   refused under --locked (default false)
//!
//! [plugins.fs.limits]                # every key optional; see docs/security.md
//! memory_mib = 64                    # all linear memories together; default 64
//! timeout_ms = 30000                 # per call, validation included; default 30000
//! result_kib = 1024                  # largest result per call; default 1024
//! result_parts = 1024                # most parts per result; default 1024
//! open_files = 256                   # most host handles per call; default 256
//! arguments_kib = 1024               # largest arguments per call; default 1024
//! concurrent_calls = 16              # calls at once; more wait, then fail; default 16
//! tools = 1024                       # registration: most tools; default 1024
//! servers = 64                       #   most servers; default 64
//! description_kib = 32               #   longest description; default 32
//! title_kib = 1                      #   longest title; default 1
//! schema_kib = 256                   #   largest schema; default 256
//! schema_cost = 1000                 #   costliest schema to evaluate
//! registration_kib = 8192            #   all of it together; default 8192
//! http_response_kib = 4096           # outbound HTTP: one response body; default 4096
//! http_request_kib = 4096            #   one request body; default 4096
//! http_timeout_ms = 30000            #   one request, body included; default 30000
//! http_requests = 32                 #   requests per call (redirects count); default 32
//! program_cpu_seconds = 3600         # each program it starts: CPU seconds per
//! program_memory_mib = 4096          #   process, address space per process,
//! program_processes = 256            #   processes at once; defaults as shown
//!
//! [plugins.fs.grants]                # everything is denied unless granted here
//! env = ["HOME"]                     # env vars passed through by name (also to
//!                                    #   the programs and MCP servers it declares)
//! dirs = [{ host = ".", guest = "/workspace", mode = "read-only" }]
//! exec = ["node"]                    # programs the host may start for it (short
//!                                    #   for [{ program = "node" }]): a bare
//!                                    #   name is looked up on PATH at load, a path
//!                                    #   is relative to this file; `read` adds
//!                                    #   paths it may read when confined:
//!                                    #   { program = "node", read = ["node_modules"] }
//! net = ["http://127.0.0.1:*"]       # scheme://host:port it may reach; `*` for any
//!                                    #   port, `*.example.com` for subdomains
//!
//! [plugins.fs.config]                # the plugin's own settings, passed as JSON
//! root = "/workspace"
//!
//! [skills]                           # optional: where the intrinsics read skills
//! root = "skills"                    # a directory of <name>/SKILL.md skills
//! skill_kib = 256                    # largest SKILL.md; default 256, at most 1024
//! resource_kib = 256                 # largest resource shown as text; default 256,
//!                                    #   at most 16384
//! resources = 256                    # most resources listed per skill; default 256,
//!                                    #   at most 65536
//! ```
//!
//! Invariants: every error names the file, the line and the key; unknown
//! keys are errors (a misspelt grant must not silently grant nothing, nor
//! a misspelt limit silently leave the default); relative paths are relative
//! to the config file's directory, not the working directory; a program is
//! resolved once, here, to the file that will run (see [`crate::grant`]).
//! Each capability is a key under `grants`, checked on its own, and one
//! granted twice (a guest directory, a program or a destination) is an error.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use grants::RawGrants;
use limits::RawLimits;

use crate::plugin::PluginSpec;
use crate::registry::check_segment;

/// A checked host config.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// The plugins, ordered by name.
    pub plugins: Vec<PluginSpec>,
    /// The plugins whose component comes from an OCI registry, by name:
    /// their spec's `wasm` is the component's place in the store beside
    /// the config ([`oci_store`]).
    pub oci: BTreeMap<String, OciOrigin>,
    /// The skills root (`[skills] root`), resolved against the config's
    /// directory, if set.
    pub skills_root: Option<PathBuf>,
    /// The bounds of `[skills]` (`skill_kib`, `resource_kib`,
    /// `resources`), the defaults where unset.
    #[cfg(feature = "intrinsics")]
    pub skill_limits: crate::intrinsic::SkillLimits,
    /// The `[serve]` table as written, for the gateway
    /// (`tiny-harness-serve`, which checks it); `None` without one.
    pub serve: Option<toml::Table>,
    /// `[search]`: which tools are deferred by name (`defer`) and which
    /// never are (`always`); the plugins marked `defer = true` are in
    /// their specs.
    pub search: tiny_harness_core::registry::Deferral,
}

/// Where a plugin's component came from when its `path` is an `oci://`
/// reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciOrigin {
    /// The reference as written: `oci://HOST[:PORT]/REPO[:TAG][@sha256:…]`.
    pub reference: tiny_harness_oci::Reference,
    /// The component's sha256 (the config's `sha256`, 64 lowercase hex
    /// digits): the blob fetched, and its name in the store.
    pub sha256: String,
}

/// The store of the components of a config's `oci://` plugins:
/// `NAME.store/oci.components` beside `NAME.toml` (in the store `mcp
/// install` uses; no plugin is named with a dot, so no server's install
/// can take this place), holding `sha256/HEX.wasm`.
pub fn oci_store(config_path: &Path) -> PathBuf {
    crate::pin::lock_path(config_path)
        .with_extension("store")
        .join("oci.components")
}

/// A config that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error("{}{}: {message}", .file.display(), .location.as_ref().map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
pub struct ConfigError {
    /// The config file.
    pub file: PathBuf,
    /// 1-based line and column, when the error has a place in the file.
    pub location: Option<(usize, usize)>,
    /// What is wrong and what to do.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a config: [plugins.NAME] tables, [skills], [serve], [search]"
)]
struct RawConfig {
    #[serde(default)]
    plugins: BTreeMap<Spanned<String>, RawPlugin>,
    skills: Option<RawSkills>,
    serve: Option<toml::Table>,
    #[serde(default)]
    search: RawSearch,
}

#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { defer = [\"mcp/*\"], always = [\"mcp/github.search\"], form = \"host\" }"
)]
struct RawSearch {
    #[serde(default)]
    defer: Vec<Spanned<String>>,
    #[serde(default)]
    always: Vec<Spanned<String>>,
    form: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { root = \"skills\" }"
)]
#[cfg_attr(not(feature = "intrinsics"), allow(dead_code))]
struct RawSkills {
    root: Spanned<String>,
    skill_kib: Option<Spanned<u64>>,
    resource_kib: Option<Spanned<u64>>,
    resources: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a plugin's table, with path = \"builtin:fs\" or the path of a .wasm file"
)]
struct RawPlugin {
    path: Spanned<String>,
    sha256: Option<Spanned<String>>,
    confinement: Option<Spanned<String>>,
    #[serde(default)]
    dev: bool,
    #[serde(default)]
    defer: bool,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    grants: RawGrants,
    #[serde(default)]
    config: Option<toml::Table>,
}

impl Config {
    /// The file name looked for when no `--config` is given.
    pub const DEFAULT_FILE: &'static str = "tiny-harness.toml";

    /// Reads and checks the config at `path`.
    ///
    /// The path may name anything: only a regular file of at most 1 MiB is
    /// read, and a FIFO or device is refused without blocking.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let error = |reason: String| ConfigError {
            file: path.to_owned(),
            location: None,
            message: format!("cannot read the config: {reason}"),
        };
        let bytes = crate::file::read_regular(path, "config file", crate::file::MAX_CONFIG_BYTES)
            .map_err(|e| error(e.reason.to_string()))?;
        let text =
            String::from_utf8(bytes).map_err(|e| error(format!("it is not UTF-8 text ({e})")))?;
        Config::parse(path, &text)
    }

    /// Checks `text` as the contents of the config file at `path` (which
    /// anchors relative paths and names the file in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let checker = Checker { file: path, text };
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            // toml puts a newline between the parts of some messages.
            let mut message = e.message().trim().replace('\n', " ");
            if let Some(key) = e.span().and_then(|span| key_at(text, span.start)) {
                message = format!("{key}: {message}");
            }
            // Both quote the file, which may hold any character.
            checker.error(
                e.span(),
                tiny_harness_core::display::one_line(&message).into_owned(),
            )
        })?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut plugins = Vec::new();
        let mut oci = BTreeMap::new();
        for (name, raw) in raw.plugins {
            let (spec, origin) = checker.plugin(path, base, name, raw)?;
            if let Some(origin) = origin {
                oci.insert(spec.name.clone(), origin);
            }
            plugins.push(spec);
        }
        #[cfg(feature = "intrinsics")]
        let mut skill_limits = crate::intrinsic::SkillLimits::default();
        let skills_root = match raw.skills {
            None => None,
            Some(skills) if skills.root.get_ref().trim().is_empty() => {
                return Err(checker.at(
                    &skills.root,
                    "skills.root: must name the directory that holds the skills",
                ));
            }
            // A host without the intrinsics reads no skills, so their
            // bounds are not checked.
            #[cfg(not(feature = "intrinsics"))]
            Some(skills) => Some(base.join(skills.root.get_ref())),
            #[cfg(feature = "intrinsics")]
            Some(skills) => {
                use crate::intrinsic::limits::{
                    MAX_RESOURCE_CEILING, MAX_RESOURCES_CEILING, MAX_SKILL_FILE_CEILING,
                };
                if let Some(kib) = &skills.skill_kib {
                    skill_limits.skill_file =
                        checker.in_range(kib, MAX_SKILL_FILE_CEILING >> 10, "skills.skill_kib")?
                            << 10;
                }
                if let Some(kib) = &skills.resource_kib {
                    skill_limits.resource =
                        checker.in_range(kib, MAX_RESOURCE_CEILING >> 10, "skills.resource_kib")?
                            << 10;
                }
                if let Some(count) = &skills.resources {
                    let count = checker.in_range(
                        count,
                        MAX_RESOURCES_CEILING as u64,
                        "skills.resources",
                    )?;
                    skill_limits.resources = usize::try_from(count).unwrap_or(usize::MAX);
                }
                Some(base.join(skills.root.get_ref()))
            }
        };
        let search = checker.search(raw.search)?;
        Ok(Config {
            path: path.to_owned(),
            plugins,
            oci,
            skills_root,
            #[cfg(feature = "intrinsics")]
            skill_limits,
            serve: raw.serve,
            search,
        })
    }
}

struct Checker<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Checker<'_> {
    fn error(&self, span: Option<Range<usize>>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.to_owned(),
            location: span.map(|s| line_col(self.text, s.start)),
            message: message.into(),
        }
    }

    fn at<T>(&self, spanned: &Spanned<T>, message: impl Into<String>) -> ConfigError {
        self.error(Some(spanned.span()), message)
    }

    /// The patterns of `[search]`, each checked where it is written.
    fn search(&self, raw: RawSearch) -> Result<tiny_harness_core::registry::Deferral, ConfigError> {
        use tiny_harness_core::registry::{Deferral, MAX_PATTERNS, Pattern, SearchForm};
        let mut deferral = Deferral::default();
        for (key, list, into) in [
            ("search.defer", &raw.defer, &mut deferral.defer),
            ("search.always", &raw.always, &mut deferral.always),
        ] {
            if list.len() > MAX_PATTERNS {
                return Err(self.at(
                    &list[MAX_PATTERNS],
                    format!("{key}: at most {MAX_PATTERNS} patterns; use * to cover more with one"),
                ));
            }
            for pattern in list {
                let checked = Pattern::new(pattern.get_ref())
                    .map_err(|e| self.at(pattern, format!("{key}: {e}")))?;
                into.push(checked);
            }
        }
        if let Some(form) = &raw.form {
            deferral.form = SearchForm::from_name(form.get_ref()).ok_or_else(|| {
                self.at(
                    form,
                    format!(
                        "search.form: {:?} is not a form; use \"host\", \"provider\" or \"provider-regex\"",
                        tiny_harness_core::display::one_line(form.get_ref())
                    ),
                )
            })?;
        }
        Ok(deferral)
    }

    /// A limit's value, if it lies in `1..=max`; else an error at `key`.
    fn in_range(&self, value: &Spanned<u64>, max: u64, key: &str) -> Result<u64, ConfigError> {
        let number = *value.get_ref();
        if (1..=max).contains(&number) {
            Ok(number)
        } else {
            Err(self.at(value, format!("{key}: must be between 1 and {max}")))
        }
    }

    fn plugin(
        &self,
        config_path: &Path,
        base: &Path,
        name: Spanned<String>,
        raw: RawPlugin,
    ) -> Result<(PluginSpec, Option<OciOrigin>), ConfigError> {
        let plugin = name.get_ref().clone();
        check_segment("plugin", &plugin)
            .map_err(|e| self.at(&name, format!("plugins.{plugin}: {e}")))?;
        let key = |k: &str| format!("plugins.{plugin}.{k}");

        if raw.path.get_ref().trim().is_empty() {
            return Err(self.at(
                &raw.path,
                format!("{}: must name the plugin's .wasm file", key("path")),
            ));
        }
        // `builtin:NAME` is a bundled plugin, not a path under the config.
        let written = Path::new(raw.path.get_ref());
        let mut wasm = match crate::plugin::builtin::named(written) {
            Some(_) => written.to_owned(),
            None => base.join(written),
        };

        let sha256 = match &raw.sha256 {
            None => None,
            Some(pin) => {
                let hex = pin.get_ref();
                if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(self.at(
                        pin,
                        format!(
                            "{}: must be 64 hex digits (the sha256 of the .wasm file)",
                            key("sha256")
                        ),
                    ));
                }
                Some(hex.to_ascii_lowercase())
            }
        };

        // An `oci://` reference runs from the store, by its sha256 only.
        let oci = match raw.path.get_ref().strip_prefix("oci:") {
            None if raw.path.get_ref().contains("://") => {
                return Err(self.at(
                    &raw.path,
                    format!(
                        "{}: a component is a .wasm file, builtin:NAME or an oci:// reference; \
                         download it, or publish it to a registry and write oci://HOST/REPO:TAG",
                        key("path")
                    ),
                ));
            }
            None => None,
            Some(_) => {
                let reference = raw
                    .path
                    .get_ref()
                    .parse::<tiny_harness_oci::Reference>()
                    .map_err(|e| self.at(&raw.path, format!("{}: {e}", key("path"))))?;
                let Some(sha256) = sha256.clone() else {
                    return Err(self.at(
                        &raw.path,
                        format!(
                            "{}: an oci:// plugin needs `sha256`, the digest of its component: \
                             `tiny-harness plugin add {plugin} {reference}` writes both",
                            key("path")
                        ),
                    ));
                };
                wasm = oci_store(config_path)
                    .join("sha256")
                    .join(format!("{sha256}.wasm"));
                Some(OciOrigin { reference, sha256 })
            }
        };

        let limits = self.limits(&raw.limits, &key)?;

        let mut grants = self.grants(base, &key("grants"), raw.grants)?;
        if let Some(mode) = &raw.confinement {
            grants.confinement = match mode.get_ref().as_str() {
                "landlock" => crate::confine::Mode::Landlock,
                "none" => crate::confine::Mode::None,
                other => {
                    return Err(self.at(
                        mode,
                        format!(
                            "{}: {other:?} is not a confinement: use \"landlock\" (the default) or \"none\"",
                            key("confinement")
                        ),
                    ));
                }
            };
        }
        grants.program_limits = self.program_limits(&raw.limits, &key)?;
        let config = match raw.config {
            None => serde_json::Value::Object(Default::default()),
            Some(table) => toml_to_json(toml::Value::Table(table)),
        };
        let mut spec = PluginSpec::new(plugin, wasm);
        spec.sha256 = sha256;
        spec.source = oci.as_ref().map(|o| o.reference.to_string());
        spec.grants = grants;
        spec.limits = limits;
        spec.config = config;
        spec.dev = raw.dev;
        spec.defer = raw.defer;
        Ok((spec, oci))
    }
}

/// The dotted key a byte offset belongs to, such as
/// `plugins.fs.limits.memory_mib`: the nearest table header above it, the
/// key its line assigns and, inside an inline table, the innermost key
/// before it. A best effort for messages; `None` when there is no key.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = text.floor_char_boundary(offset);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
    let bare_key = |segment: &str| {
        let key: String = segment
            .trim_end()
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"'))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        Some(key.trim_matches('"').to_owned()).filter(|k| !k.is_empty())
    };
    let prefix = &text[line_start..offset];
    let mut keys: Vec<String> = match prefix.rsplit_once('=') {
        Some(_) => {
            let segments: Vec<&str> = prefix.split('=').collect();
            segments[..segments.len() - 1]
                .iter()
                .filter_map(|s| bare_key(s))
                .collect()
        }
        // The offset is at the start of its line's key.
        None => text[line_start..line_end]
            .split_once('=')
            .and_then(|(key, _)| bare_key(key))
            .into_iter()
            .collect(),
    };
    if keys.len() > 2 {
        keys.drain(1..keys.len() - 1);
    }
    let path: Vec<String> = header.into_iter().chain(keys).collect();
    (!path.is_empty()).then(|| path.join("."))
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn toml_to_json(value: toml::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        toml::Value::String(s) => J::String(s),
        toml::Value::Integer(i) => J::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        toml::Value::Boolean(b) => J::Bool(b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(a) => J::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            J::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

mod grants;
mod limits;
#[cfg(test)]
mod tests;
