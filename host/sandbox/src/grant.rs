//! Grants of capabilities that reach outside the sandbox: programs the host
//! may start for a plugin ([`ExecGrant`]) and network destinations it may
//! reach for one ([`NetGrant`]), one plugin's grants together
//! ([`Grants`], with its directories), and what they give a program the
//! host starts (`start`: its environment, cwd and confinement policy).
//!
//! Invariant: deny by default, and a grant means exactly what it says. A
//! program is allowed only if it is the very file a grant resolved (matched
//! by canonical path, so neither a name nor a `PATH` can pose as it), and
//! what is run is the grant's path, not the command as declared. A URL is
//! allowed only if its scheme, host and port all match one grant; hosts are
//! compared as names or as addresses, never by prefix or substring. Every
//! refusal is one line that names what was refused and the grant that would
//! allow it, and never shows a URL's userinfo, query or fragment.
//!
//! This module checks; it does not confine. The processes and connections
//! it allows are started elsewhere (and confined by the kernel there, by
//! `confine`, the one module it imports besides `display`): `plugin`,
//! `config` and `mcp` import it.

mod dir;
mod env;
mod error;
mod exec;
mod net;
mod set;
pub mod start;

pub use dir::{DirGrant, DirMode};
pub use env::{EnvNames, is_loader};
pub use error::GrantError;
pub use exec::{ArgPatterns, ExecDenied, ExecGrant, ResolveError, UnusableProgram, find_program};
pub use net::{NetDenied, NetGrant, find_net};
pub use set::Grants;
pub use start::LaunchError;

/// A path as one line of text.
fn shown(path: &std::path::Path) -> String {
    tiny_harness_core::display::one_line(&path.to_string_lossy()).into_owned()
}

/// `text` as a TOML basic string, quotes included: `"` and `\` escaped, and
/// every control character as `\uXXXX`, so that it is one line and pastes
/// into a config as it is.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[cfg(unix)]
mod tests;
