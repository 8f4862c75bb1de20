//! Reading a plugin's component: its bytes (bundled, or a bounded regular
//! file) and the header that tells a component from anything else.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{LoadError, builtin};

/// The bytes of plugin `name`'s component: bundled (`builtin:NAME`) or a
/// regular file of at most
/// [`MAX_COMPONENT_BYTES`](tiny_harness_core::file::MAX_COMPONENT_BYTES).
pub(crate) fn read_component(name: &str, wasm: &Path) -> Result<Vec<u8>, LoadError> {
    match builtin::named(wasm) {
        Some(bundled) => builtin::component(bundled)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| LoadError::NotBundled {
                plugin: name.to_owned(),
                reason: builtin::unknown(bundled),
            }),
        None => tiny_harness_core::file::read_regular(
            wasm,
            "plugin component",
            tiny_harness_core::file::MAX_COMPONENT_BYTES,
        )
        .map_err(|source| LoadError::Read {
            plugin: name.to_owned(),
            path: wasm.to_owned(),
            source,
        }),
    }
}

/// Tells a component from a core module or a file that is not WebAssembly.
pub(crate) fn check_component_header(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err("the file is not WebAssembly (no \\0asm header)".into());
    }
    // Bytes 4..8: version and layer. Core modules are layer 0, components
    // layer 1.
    match (bytes[6], bytes[7]) {
        (0, 0) => Err(
            "it is a core WebAssembly module; build the plugin for wasm32-wasip2, which makes a component"
                .into(),
        ),
        (1, 0) => Ok(()),
        _ => Err("it has an unknown WebAssembly layer".into()),
    }
}

/// The sha256 of a plugin component file, as 64 hex digits (for writing
/// pins). Reads it as [`Plugin::load`](crate::Plugin::load) does: only a regular file of at most
/// [`MAX_COMPONENT_BYTES`](tiny_harness_core::file::MAX_COMPONENT_BYTES).
pub fn file_sha256(path: &Path) -> Result<String, tiny_harness_core::file::FileError> {
    let bytes = tiny_harness_core::file::read_regular(
        path,
        "plugin component",
        tiny_harness_core::file::MAX_COMPONENT_BYTES,
    )?;
    Ok(hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_tell_components_from_modules() {
        assert!(check_component_header(b"\0asm\x0d\x00\x01\x00rest").is_ok());
        let module = check_component_header(b"\0asm\x01\x00\x00\x00").unwrap_err();
        assert!(module.contains("core WebAssembly module"), "{module}");
        assert!(
            check_component_header(b"#!/bin/sh\n")
                .unwrap_err()
                .contains("not WebAssembly")
        );
        assert!(check_component_header(b"").is_err());
    }
}
