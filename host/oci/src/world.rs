//! What a component imports and exports, for the `component` field of the
//! Wasm artifact's config.
//!
//! Invariants: only the component's own (top-level) import and export
//! sections are read; nested modules and components are walked past, not
//! read for names. The names are the component's extern names as
//! written, which for a component built from WIT are the world's keys as
//! wit-component names them (`wasi:cli/environment@0.2.0`, or a plain name
//! for a function), so they match what `wkg` writes. Bytes that are not a
//! component (a core module, garbage) are refused with the parser's reason.

use wasmparser::{Encoding, Parser, Payload};

/// Why bytes are not a component: the parser's words, on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotAComponent(pub String);

impl From<wasmparser::BinaryReaderError> for NotAComponent {
    fn from(error: wasmparser::BinaryReaderError) -> NotAComponent {
        NotAComponent(crate::error::one_line(&error.to_string()))
    }
}

/// A component's imports and exports, in the order the component lists
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct World {
    /// The names of its imports.
    pub(crate) imports: Vec<String>,
    /// The names of its exports.
    pub(crate) exports: Vec<String>,
}

impl World {
    /// The imports and exports of the component `bytes`, or why they are
    /// not a component.
    pub(crate) fn of(bytes: &[u8]) -> Result<World, NotAComponent> {
        let mut world = World::default();
        // How many nested modules or components the parser is inside.
        let mut depth = 0usize;
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload?;
            match payload {
                Payload::Version { encoding, .. }
                    if depth == 0 && encoding != Encoding::Component =>
                {
                    return Err(NotAComponent(
                        "it is a core module, not a component".to_owned(),
                    ));
                }
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::ComponentImportSection(reader) if depth == 0 => {
                    for import in reader {
                        let import = import?;
                        world.imports.push(import.name.name.to_owned());
                    }
                }
                Payload::ComponentExportSection(reader) if depth == 0 => {
                    for export in reader {
                        let export = export?;
                        world.exports.push(export.name.name.to_owned());
                    }
                }
                _ => {}
            }
        }
        Ok(world)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_modules_and_garbage_are_not_components() {
        let module = b"\0asm\x01\0\0\0";
        assert!(World::of(module).unwrap_err().0.contains("core module"));
        assert!(World::of(b"not wasm").is_err());
        assert!(World::of(b"").is_err());
    }

    #[test]
    fn an_empty_component_has_an_empty_world() {
        let component = b"\0asm\x0d\0\x01\0";
        assert_eq!(World::of(component).unwrap(), World::default());
    }
}
