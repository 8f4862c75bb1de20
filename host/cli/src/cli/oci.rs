//! `tiny-harness plugin publish FILE oci://...` and `plugin add NAME
//! oci://...` (`--upgrade`): components to and from OCI registries.
//!
//! Invariants:
//! - A component is published only if it loads here: the annotations
//!   say what `plugin inspect` says (world, version, tools).
//! - `plugin add` writes nothing (config, store) until the component is
//!   fetched whole, its digest checked and it loads in this host; then
//!   the store first, the config last, so a config never names a
//!   component the store lacks.
//! - A password never comes from the command line: `--password-stdin`,
//!   or the Docker config and its credential helpers.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use tiny_harness_core::display::one_line;
use tiny_harness_host::Config;
use tiny_harness_oci::{Client, Credentials, Digest, Limits, Reference, Store, Transport};
use tiny_harness_wasm::{CompileCache, Inspection, LoadError, PluginEngine};

use crate::tooling::oci_entry::{self, Entry};

/// The longest password read from standard input.
const MAX_PASSWORD: u64 = 4096;

/// The annotation keys written beside the OCI ones.
const WORLD_KEY: &str = "dev.tiny-harness.plugin.world";
const TOOLS_KEY: &str = "dev.tiny-harness.plugin.tools";
const MCP_KEY: &str = "dev.tiny-harness.plugin.mcp-servers";

/// The most tool names listed in an annotation (the rest counted).
const MAX_LISTED: usize = 200;

/// `--user` and `--password-stdin`, when given.
pub(super) struct Login<'a> {
    pub(super) user: Option<&'a str>,
    pub(super) password_stdin: bool,
}

async fn credentials(reference: &Reference, login: &Login<'_>) -> anyhow::Result<Credentials> {
    match (login.user, login.password_stdin) {
        (Some(user), true) => {
            let mut password = String::new();
            std::io::stdin()
                .take(MAX_PASSWORD + 1)
                .read_to_string(&mut password)
                .context("cannot read the password from standard input")?;
            anyhow::ensure!(
                password.len() as u64 <= MAX_PASSWORD,
                "the password on standard input is longer than {MAX_PASSWORD} bytes"
            );
            let password = password.trim_end_matches(['\r', '\n']).to_owned();
            anyhow::ensure!(
                !password.is_empty(),
                "the password on standard input is empty"
            );
            Ok(Credentials::Basic {
                username: user.to_owned(),
                password,
            })
        }
        (Some(_), false) => anyhow::bail!(
            "--user needs --password-stdin (a password is never taken from the command line)"
        ),
        (None, true) => anyhow::bail!("--password-stdin needs --user"),
        (None, false) => Ok(Credentials::for_registry(reference.registry()).await?),
    }
}

async fn client(reference: &Reference, login: &Login<'_>) -> anyhow::Result<Client> {
    let credentials = credentials(reference, login).await?;
    Ok(Client::new(
        Limits::default(),
        credentials,
        Transport::for_reference(reference),
    )?)
}

fn engine(no_cache: bool) -> anyhow::Result<PluginEngine> {
    let cache = if no_cache { None } else { CompileCache::user() };
    PluginEngine::with_compile_cache(cache)
        .map_err(|e| anyhow::anyhow!("cannot start the plugin engine: {e}"))
}

/// `plugin publish FILE REFERENCE`.
pub(super) async fn publish(
    file: &Path,
    reference: &str,
    login: &Login<'_>,
    no_cache: bool,
) -> anyhow::Result<ExitCode> {
    let reference: Reference = reference.parse()?;
    // Every refusal names the file and the reference as they were typed.
    let refused = |why: &str, e: &dyn std::fmt::Display| {
        anyhow::anyhow!(
            "{} was not published to {reference}: {why}{}",
            one_line(&file.display().to_string()),
            one_line(&e.to_string())
        )
    };
    let seen = tiny_harness_wasm::inspect(&engine(no_cache)?, file)
        .await
        .map_err(|e| refused("", &e))?;
    let registration = seen
        .registration
        .as_ref()
        .map_err(|e| refused("it does not load in this host: ", e))?;
    let bytes = tiny_harness_core::file::read_regular(
        file,
        "component",
        tiny_harness_core::file::MAX_COMPONENT_BYTES,
    )
    .map_err(|e| anyhow::anyhow!("cannot read {}: {}", file.display(), e.reason))?;
    let mut annotations = BTreeMap::new();
    let title = file.file_name().map(|s| s.to_string_lossy().into_owned());
    if let Some(title) = title {
        annotations.insert("org.opencontainers.image.title".to_owned(), title);
    }
    if let Some(version) = &seen.package_version {
        annotations.insert(
            WORLD_KEY.to_owned(),
            format!("tiny-harness:plugin/plugin@{version}"),
        );
    }
    let tools: Vec<String> = registration
        .tools
        .iter()
        .map(|t| format!("{}.{}", t.server, t.definition.name))
        .collect();
    annotations.insert(TOOLS_KEY.to_owned(), listed(&tools));
    let servers: Vec<String> = registration
        .mcp_servers
        .iter()
        .map(|d| d.name.clone())
        .collect();
    if !servers.is_empty() {
        annotations.insert(MCP_KEY.to_owned(), listed(&servers));
    }
    let pushed = client(&reference, login)
        .await?
        .push(&reference, &bytes, annotations)
        .await?;
    let pinned = reference.with_digest(pushed.manifest_digest);
    super::emit(&format!(
        "published {reference}\n  manifest {}\n  component {} ({} bytes, {} tool{})\nadd it to a \
         config with: tiny-harness plugin add NAME {}",
        pushed.manifest_digest,
        pushed.layer_digest,
        pushed.size,
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        tagged(&reference, &pinned),
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `a, b, c` with at most [`MAX_LISTED`] names.
fn listed(names: &[String]) -> String {
    let mut out = names
        .iter()
        .take(MAX_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(",");
    if names.len() > MAX_LISTED {
        out.push_str(&format!(",... ({} more)", names.len() - MAX_LISTED));
    }
    out
}

/// `oci://HOST/REPO:TAG@sha256:...`: the tag it came from kept beside
/// the digest that pins it.
fn tagged(reference: &Reference, pinned: &Reference) -> String {
    match (reference.tag(), pinned.digest()) {
        (Some(tag), Some(digest)) => format!(
            "oci://{}/{}:{tag}@{digest}",
            reference.registry(),
            reference.repository()
        ),
        _ => pinned.to_string(),
    }
}

/// `plugin add NAME REFERENCE` or `plugin add --upgrade NAME [REFERENCE]`.
pub(super) async fn add(
    config: &Path,
    name: &str,
    reference: Option<&str>,
    upgrade: bool,
    login: &Login<'_>,
    no_cache: bool,
) -> anyhow::Result<ExitCode> {
    tiny_harness_core::registry::check_segment("plugin", name)
        .map_err(|e| anyhow::anyhow!("plugin {}: {e}", one_line(name)))?;
    let text = super::mcp::config_text(config)?;
    if !upgrade {
        oci_entry::check_absent(&text, name)
            .map_err(|e| anyhow::anyhow!("{}: {e}", config.display()))?;
    }
    let before = upgrade.then(|| Config::parse(config, &text)).transpose()?;
    let origin = before.as_ref().and_then(|c| c.oci.get(name).cloned());
    let reference: Reference = match (reference, &origin) {
        (Some(given), _) => given.parse()?,
        (None, Some(origin)) => origin.reference.clone(),
        (None, None) if upgrade => anyhow::bail!(
            "plugin {name} is not from an OCI registry in {}: give its oci:// reference",
            config.display()
        ),
        (None, None) => anyhow::bail!("give the component's oci://HOST/REPO:TAG reference"),
    };
    if upgrade && reference.tag().is_none() {
        anyhow::bail!(
            "plugin {name} is pinned by digest alone ({reference}): there is no tag to follow; \
             give the reference to move it to"
        );
    }
    // An upgrade follows the tag, not the digest it is pinned at.
    let asked = match (upgrade, reference.tag()) {
        (true, Some(_)) => reference.without_digest(),
        _ => reference.clone(),
    };
    let client = client(&asked, login).await?;
    let resolved = client.resolve(&asked).await?;
    let pinned = tagged(&asked, &asked.with_digest(resolved.manifest_digest));
    if let Some(origin) = &origin
        && origin.sha256 == resolved.layer_digest.hex()
    {
        super::emit(&format!(
            "plugin {name} is at {} already: nothing moved",
            origin.reference
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let bytes = client.fetch(&asked, &resolved.layer_digest).await?;
    // Loaded before anything is written: a component this host cannot
    // run is not added.
    let staging = tempfile::Builder::new()
        .suffix(".wasm")
        .tempfile()
        .context("cannot make a temporary file for the component")?;
    std::fs::write(staging.path(), &bytes)
        .context("cannot write the component to a temporary file")?;
    let engine = engine(no_cache)?;
    let seen = tiny_harness_wasm::inspect(&engine, staging.path())
        .await
        .map_err(|e| match e {
            // Named by the reference typed, not the temporary file.
            LoadError::NotAComponent { reason, .. } => anyhow::anyhow!(
                "{asked}: not added: it is not a WebAssembly component: {}",
                one_line(&reason)
            ),
            other => anyhow::anyhow!("{asked}: not added: {}", one_line(&other.to_string())),
        })?;
    refuse_unloadable(&asked, &seen)?;
    let entry = Entry {
        name: name.to_owned(),
        path: pinned.clone(),
        sha256: resolved.layer_digest.hex(),
        grants: grants(&seen),
        expected: match &seen.expects {
            Ok(Some(expects)) => expects.grant_lines(),
            _ => Vec::new(),
        },
    };
    // The config as it is now, under its edit lock: another command may
    // have changed it while the component was fetched, and its change is
    // kept (or, if it added a plugin of this name, this add is refused).
    let _editing = tiny_harness_core::file::edit::EditLock::take(config)?;
    let text = super::mcp::config_text(config)?;
    let in_config = |e: oci_entry::EntryError| anyhow::anyhow!("{}: {e}", config.display());
    let (new_text, moved_from) = match upgrade {
        false => (oci_entry::add(&text, &entry).map_err(in_config)?, None),
        true => {
            let (text, from) = oci_entry::upgrade(&text, &entry).map_err(in_config)?;
            (text, Some(from))
        }
    };
    Config::parse(config, &new_text).map_err(|e| {
        anyhow::anyhow!("plugin {name} was not added: the config would not load with it: {e}")
    })?;
    let store = Store::new(tiny_harness_host::oci_store(config));
    let stored = store.put(&resolved.layer_digest, &bytes)?;
    tiny_harness_core::file::replace(config, new_text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", config.display()))?;

    let mut lines = vec![format!("{}:", config.display())];
    match &moved_from {
        None => lines.push(format!("added plugin {name}: {pinned}")),
        Some(from) => lines.push(format!("moved plugin {name}: {from} -> {pinned}")),
    }
    let was = origin
        .as_ref()
        .map(|o| format!("sha256:{} -> ", o.sha256))
        .unwrap_or_default();
    lines.push(format!(
        "  component {was}{} ({} bytes), in {}",
        resolved.layer_digest,
        bytes.len(),
        stored.display()
    ));
    if let Some(origin) = &origin {
        let old = store.get(&format!("sha256:{}", origin.sha256).parse::<Digest>()?);
        lines.extend(tool_changes(&engine, old.as_deref(), &seen).await);
    } else {
        lines.extend(tool_lines(&seen));
    }
    if !entry.grants.is_empty() {
        lines.push(format!(
            "  it is granted nothing: its imports can use {} (suggested, commented, in {})",
            entry.grants.join(", "),
            config.display()
        ));
    }
    lines.push(format!(
        "review it, then: tiny-harness{} tools",
        if config == Path::new(Config::DEFAULT_FILE) {
            String::new()
        } else {
            format!(" --config {}", config.display())
        }
    ));
    super::emit(
        &lines
            .iter()
            .map(|l| one_line(l).into_owned())
            .collect::<Vec<_>>()
            .join("\n"),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses a component of a world this host does not load (or not a
/// component at all); one that loads but does not register with an empty
/// config is added (its config may be what it needs).
fn refuse_unloadable(reference: &Reference, seen: &Inspection) -> anyhow::Result<()> {
    match &seen.registration {
        Ok(_) | Err(LoadError::Register { .. }) => Ok(()),
        Err(e) => anyhow::bail!(
            "{reference}: not added: it does not load in this host: {}",
            one_line(&e.to_string())
        ),
    }
}

/// The grants its imports can use, each once.
fn grants(seen: &Inspection) -> Vec<&'static str> {
    let mut out = Vec::new();
    for import in &seen.imports {
        let interface = import.name.split('@').next().unwrap_or(&import.name);
        let grant = if interface.starts_with("wasi:filesystem/") {
            "dirs"
        } else if interface.starts_with("wasi:http/") {
            "net"
        } else if interface == "tiny-harness:plugin/exec" {
            "exec"
        } else if interface == "wasi:cli/environment" {
            "env"
        } else {
            continue;
        };
        if !out.contains(&grant) {
            out.push(grant);
        }
    }
    out
}

fn tool_lines(seen: &Inspection) -> Vec<String> {
    match &seen.registration {
        Ok(registration) => registration
            .tools
            .iter()
            .map(|t| format!("  tool {}.{}", t.server, t.definition.name))
            .collect(),
        Err(e) => vec![format!(
            "  it did not register with an empty config (give it its config): {}",
            one_line(&e.to_string())
        )],
    }
}

/// The tools added, removed and changed from the component at `old` (in
/// the store) to `new`.
async fn tool_changes(engine: &PluginEngine, old: Option<&Path>, new: &Inspection) -> Vec<String> {
    let Some(old) = old else {
        let mut lines = vec![
            "  (the component it had is not in the store: its tools are not compared)".to_owned(),
        ];
        lines.extend(tool_lines(new));
        return lines;
    };
    let definitions = |seen: &Inspection| -> BTreeMap<String, String> {
        seen.registration
            .as_ref()
            .map(|r| {
                r.tools
                    .iter()
                    .map(|t| {
                        let name = format!("{}.{}", t.server, t.definition.name);
                        (name, tiny_harness_core::pin::definition_hash(&t.definition))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = match tiny_harness_wasm::inspect(engine, old).await {
        Ok(seen) => definitions(&seen),
        Err(_) => BTreeMap::new(),
    };
    let after = definitions(new);
    let mut lines = Vec::new();
    for (tool, hash) in &after {
        match before.get(tool) {
            None => lines.push(format!("  tool added: {tool}")),
            Some(old) if old != hash => lines.push(format!("  tool changed: {tool}")),
            Some(_) => {}
        }
    }
    for tool in before.keys().filter(|t| !after.contains_key(*t)) {
        lines.push(format!("  tool removed: {tool}"));
    }
    if lines.is_empty() {
        lines.push("  its tools are as they were".to_owned());
    } else {
        lines.push("  the lock pins the tools it had: review with tiny-harness pins diff, accept with pins update".to_owned());
    }
    lines
}

/// For `pins diff`: each `oci://` plugin of `config` (only `only`, a
/// plugin or `<plugin>/<server>`, when given) whose tag names another
/// component now than the one pinned, with the old and new digests; or
/// why the registry could not say. The config's own credentials as for
/// `plugin add` (the Docker config); nothing is fetched or written.
pub(super) async fn moved_tags(config: &Config, only: Option<&str>) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let wanted = only.map(|o| o.split('/').next().unwrap_or(o));
    for (plugin, origin) in &config.oci {
        if wanted.is_some_and(|w| w != plugin) || origin.reference.tag().is_none() {
            continue;
        }
        let tag = origin.reference.without_digest();
        let login = Login {
            user: None,
            password_stdin: false,
        };
        let resolved = match client(&tag, &login).await {
            Ok(client) => client.resolve(&tag).await.map_err(anyhow::Error::from),
            Err(e) => Err(e),
        };
        let lines = match resolved {
            Err(e) => vec![format!(
                "{tag}: cannot ask the registry: {}",
                one_line(&e.to_string())
            )],
            Ok(now) if now.layer_digest.hex() == origin.sha256 => continue,
            Ok(now) => vec![
                format!(
                    "{tag} moved: it names component {} now, pinned sha256:{}",
                    now.layer_digest, origin.sha256
                ),
                format!(
                    "manifest {} now{}",
                    now.manifest_digest,
                    origin
                        .reference
                        .digest()
                        .map(|d| format!(", pinned {d}"))
                        .unwrap_or_default()
                ),
                format!(
                    "what runs is the pinned one; move it with: tiny-harness plugin add --upgrade {plugin}"
                ),
            ],
        };
        out.push((plugin.clone(), lines));
    }
    out
}
