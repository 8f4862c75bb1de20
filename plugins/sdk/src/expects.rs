//! What a plugin expects its user to grant, declared in its component:
//! [`expects!`](crate::expects) writes the custom section
//! `tiny-harness:expects`, which `tiny-harness plugin inspect` shows and
//! `plugin add` writes into the config as comments. It grants nothing:
//! only the user's config does.
//!
//! The section is text, one expectation per line, `KIND VALUE`: `dirs
//! /workspace:read-write`, `exec git`, `net https://api.github.com`,
//! `env GITHUB_TOKEN`. Sections of several crates are concatenated by the
//! linker, which keeps every line.

/// The custom section's name.
pub const SECTION: &str = "tiny-harness:expects";

/// `N` bytes of `text` (its length), for the section's static.
#[doc(hidden)]
pub const fn bytes<const N: usize>(text: &str) -> [u8; N] {
    let from = text.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = from[i];
        i += 1;
    }
    out
}

/// Declares what the plugin expects to be granted, for its users to read
/// before they grant it (`tiny-harness plugin inspect`) and in the config
/// `plugin add` writes. Use it once, at the crate's root:
///
/// ```ignore
/// tiny_harness_plugin::expects! {
///     dirs = ["/workspace:read-write"],   // a guest path, and :read-only (the default) or :read-write
///     exec = ["git"],
///     net = ["https://api.github.com"],
///     env = ["GITHUB_TOKEN"],
/// }
/// ```
///
/// A kind other than `dirs`, `env`, `exec` and `net` does not compile.
#[macro_export]
macro_rules! expects {
    ($($kind:ident = [$($value:literal),* $(,)?]),* $(,)?) => {
        $($crate::__expects_kind!($kind);)*
        const _: () = {
            const TEXT: &str =
                ::core::concat!($($(::core::stringify!($kind), " ", $value, "\n",)*)*);
            #[cfg_attr(target_family = "wasm", unsafe(link_section = "tiny-harness:expects"))]
            #[used]
            static EXPECTS: [u8; TEXT.len()] = $crate::__private::expects_bytes(TEXT);
        };
    };
}

/// Checks a kind of [`expects!`]; not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! __expects_kind {
    (dirs) => {};
    (env) => {};
    (exec) => {};
    (net) => {};
    ($other:ident) => {
        ::core::compile_error!(::core::concat!(
            "expects!: `",
            ::core::stringify!($other),
            "` is not a kind of grant: use dirs, env, exec or net"
        ));
    };
}
