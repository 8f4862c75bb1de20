//! What a component is, for `tiny-harness plugin inspect`: read with
//! wasmtime's own reading of it (wasmparser underneath), and of its code
//! only `register` run, sandboxed as any plugin's is, with no grants, an
//! empty config and the default limits.
//!
//! Invariant: inspecting a component grants it nothing. A component that
//! does not load as a plugin is still described as far as it can be read,
//! with why it does not load.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tiny_harness_core::declaration::Declaration;
use tiny_harness_core::source::PendingTool;

use super::{LoadError, Plugin, PluginEngine, PluginSpec, builtin};

/// What a component is, as far as it could be read.
#[derive(Debug)]
#[non_exhaustive]
pub struct Inspection {
    /// The file (or `builtin:NAME`) read.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its sha256, as 64 hex digits: what a config's `sha256` pins.
    pub sha256: String,
    /// The `tiny-harness:plugin` package version its interfaces name, when
    /// it names one.
    pub package_version: Option<String>,
    /// What it imports, in its order.
    pub imports: Vec<Import>,
    /// What it exports, in its order.
    pub exports: Vec<String>,
    /// What it registers with an empty config, or why it does not load.
    pub registration: Result<Registration, LoadError>,
    /// What it says it expects to be granted (none: it says nothing), or
    /// why that could not be read.
    pub expects: Result<Option<crate::expects::Expects>, crate::expects::ExpectsError>,
}

/// One import of a component.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Import {
    /// Its WIT name, such as `wasi:filesystem/types@0.2.6`.
    pub name: String,
    /// The grant it is of use with, when one is needed: without it the
    /// import is there but refuses everything.
    pub needs: Option<&'static str>,
}

/// What a component registered.
#[derive(Debug)]
#[non_exhaustive]
pub struct Registration {
    /// Its tools, with their server names.
    pub tools: Vec<PendingTool>,
    /// The MCP servers it declares.
    pub mcp_servers: Vec<Declaration>,
}

/// Reads `wasm` (a path, or `builtin:NAME`) and describes it. Fails only
/// when it cannot be read at all (or is not WebAssembly); anything after
/// that is part of the description.
pub async fn inspect(engine: &PluginEngine, wasm: &Path) -> Result<Inspection, LoadError> {
    // Messages name the plugin as a config would: by the file's name.
    let name = builtin::named(wasm)
        .map(str::to_owned)
        .or_else(|| wasm.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
        .unwrap_or_else(|| "plugin".to_owned());
    let name = name.as_str();
    let bytes = super::read_component(name, wasm)?;
    super::check_component_header(&bytes).map_err(|reason| LoadError::NotAComponent {
        plugin: name.to_owned(),
        path: wasm.to_owned(),
        reason,
    })?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let size = bytes.len();
    let compiled = engine.compile(&bytes, &sha256);
    let expects = crate::expects::read(&bytes);
    drop(bytes);
    let (imports, exports) = match &compiled {
        Ok((component, _)) => {
            let kind = component.component_type();
            let imports = kind
                .imports(engine.engine())
                .map(|(name, _)| Import {
                    name: name.to_owned(),
                    needs: needs(name),
                })
                .collect();
            let exports = kind
                .exports(engine.engine())
                .map(|(name, _)| name.to_owned())
                .collect();
            (imports, exports)
        }
        Err(_) => (Vec::new(), Vec::new()),
    };
    let package_version = crate::worlds::package_version(
        imports
            .iter()
            .map(|i: &Import| i.name.as_str())
            .chain(exports.iter().map(String::as_str)),
    );
    // Loading it is what a host does: the same checks, the same sandbox,
    // from the component compiled above (compiling is most of the cost).
    let registration = Plugin::load_compiled(
        engine,
        PluginSpec::new(name, wasm),
        compiled,
        sha256.clone(),
    )
    .await
    .map(|(plugin, tools)| Registration {
        tools,
        mcp_servers: plugin.mcp_sources().to_vec(),
    });
    Ok(Inspection {
        path: wasm.to_owned(),
        bytes: size,
        sha256,
        package_version,
        imports,
        exports,
        registration,
        expects,
    })
}

/// The grant an import is of use with.
fn needs(import: &str) -> Option<&'static str> {
    let interface = import.split('@').next().unwrap_or(import);
    if interface.starts_with("wasi:http/") {
        Some("net grants (grants.net: the hosts it may reach)")
    } else if interface == "tiny-harness:plugin/exec" {
        Some("exec grants (grants.exec: the programs it may run)")
    } else if interface.starts_with("wasi:filesystem/") {
        Some("directory grants (grants.dirs: the directories it may see)")
    } else if interface == "wasi:cli/environment" {
        Some("env grants (grants.env: the variables it may read)")
    } else if interface.starts_with("wasi:sockets/") {
        Some("a socket, which no grant opens: its calls fail")
    } else {
        None
    }
}
