//! The grants of one plugin together: its directories, environment
//! variables, programs and network destinations, and how the programs it
//! has the host start are confined.
//!
//! Invariant: the default grants nothing; every capability added later is
//! a new field, denied by default.

use std::path::PathBuf;

use super::{ExecGrant, NetGrant, UnusableProgram};

/// Whether a granted directory may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirMode {
    /// Files and directories may be read, never created, changed or removed.
    #[default]
    ReadOnly,
    /// Full access below the directory.
    ReadWrite,
}

/// A host directory the plugin sees at `guest` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the plugin sees it: an absolute guest path such as `/workspace`.
    pub guest: String,
    /// Read-only or read-write.
    pub mode: DirMode,
}

/// Everything one plugin may touch. The default grants nothing.
/// Non-exhaustive: new capabilities arrive as new fields, each denied by
/// default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Grants {
    /// Host directories visible to the plugin. Default: none.
    pub dirs: Vec<DirGrant>,
    /// Names of host environment variables passed through with their
    /// current values (a name that is unset on the host is simply absent).
    /// They are also the only host variables the programs and MCP servers
    /// the plugin declares may be given. Default: none.
    pub env: Vec<String>,
    /// Programs the host may start for the plugin, each resolved to one
    /// file when the config is loaded. The command of every stdio MCP
    /// server the plugin declares is checked against them when the plugin
    /// is loaded and so is every exec call it makes, by the file it
    /// resolves to; the grant's path is what runs. The sandbox itself is
    /// unchanged: the plugin cannot start anything. Default: none.
    pub exec: Vec<ExecGrant>,
    /// Exec grants whose program is not on this machine, each with why (a
    /// line naming the config's place). Whatever needs one (an MCP server
    /// it starts, an exec call of it) fails with that reason; the rest of
    /// the plugin works. Default: none.
    pub unusable: Vec<UnusableProgram>,
    /// Network destinations (`scheme://host:port`) the host may reach for
    /// the plugin. The URL of every HTTP MCP server the plugin declares is
    /// checked against them when the plugin is loaded, and so is every
    /// `wasi:http` request the plugin sends, after the host resolves its
    /// name (see the host's `http` module). They open no socket: `wasi:sockets`
    /// stays denied. Default: none.
    pub net: Vec<NetGrant>,
    /// How the kernel confines the programs the host starts for the plugin
    /// (see [`crate::confine`]). Default: Landlock, fail closed.
    pub confinement: crate::confine::Mode,
    /// The resource limits of those programs (the config's `limits.program_*`
    /// keys), applied with Landlock; the process count wherever the host
    /// can make a control group.
    pub program_limits: crate::confine::Rlimits,
}
