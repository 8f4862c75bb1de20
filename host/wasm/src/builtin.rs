//! The plugins the host carries inside itself: `fs`, `shell`, `net` and
//! `mcp`, named in a config as `path = "builtin:NAME"`, so that a config
//! works in any directory, without a checkout of this repository.
//!
//! Invariants:
//! - A bundled plugin is an ordinary component: it is loaded, compiled,
//!   sandboxed, granted and pinned (its sha256, in the config and the
//!   lock) exactly like one read from a file.
//! - Only the exact text `builtin:NAME` names one; anything else is a file
//!   path. An unknown name is refused with the names there are.

use std::path::Path;

/// How a config names a bundled plugin: `builtin:mcp`.
pub const PREFIX: &str = "builtin:";

/// The bundled components, by name.
#[cfg(bundled_plugins)]
const BUNDLED: &[(&str, &[u8])] = &[
    (
        "fs",
        include_bytes!(concat!(env!("TINY_HARNESS_PLUGIN_DIR"), "/fs.wasm")),
    ),
    (
        "mcp",
        include_bytes!(concat!(env!("TINY_HARNESS_PLUGIN_DIR"), "/mcp.wasm")),
    ),
    (
        "net",
        include_bytes!(concat!(env!("TINY_HARNESS_PLUGIN_DIR"), "/net.wasm")),
    ),
    (
        "shell",
        include_bytes!(concat!(env!("TINY_HARNESS_PLUGIN_DIR"), "/shell.wasm")),
    ),
];

/// Built without the plugins (without the `bundled` feature): none.
#[cfg(not(bundled_plugins))]
const BUNDLED: &[(&str, &[u8])] = &[];

/// The name of the bundled plugin `path` names (`builtin:NAME`), if it
/// names one at all (known or not).
pub fn named(path: &Path) -> Option<&str> {
    path.to_str()?.strip_prefix(PREFIX)
}

/// The component bytes of bundled plugin `name`.
pub fn component(name: &str) -> Option<&'static [u8]> {
    BUNDLED.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// The names of the bundled plugins, in order.
pub fn names() -> Vec<&'static str> {
    BUNDLED.iter().map(|(n, _)| *n).collect()
}

/// Why `name` is not a bundled plugin, with the names there are.
pub fn unknown(name: &str) -> String {
    let names = names();
    if names.is_empty() {
        "this tiny-harness was built without its bundled plugins (the `bundled` \
         feature of tiny-harness-host): give the .wasm file's path instead"
            .to_owned()
    } else {
        format!(
            "there is no bundled plugin {:?}: the bundled ones are {}",
            tiny_harness_core::display::one_line(name),
            names
                .iter()
                .map(|n| format!("{PREFIX}{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_plugins_are_bundled_and_named_exactly() {
        assert_eq!(names(), ["fs", "mcp", "net", "shell"]);
        for name in names() {
            let bytes = component(name).unwrap();
            // A component, as the file it was built as.
            let file =
                std::path::Path::new(env!("TINY_HARNESS_PLUGIN_DIR")).join(format!("{name}.wasm"));
            assert_eq!(bytes, std::fs::read(file).unwrap().as_slice());
        }
        assert_eq!(named(Path::new("builtin:mcp")), Some("mcp"));
        assert_eq!(named(Path::new("./builtin:mcp")), None);
        assert_eq!(named(Path::new("/x/builtin:mcp")), None);
        assert!(component("hello").is_none());
        let why = unknown("hello");
        assert!(why.contains("builtin:fs, builtin:mcp"), "{why}");
    }
}
