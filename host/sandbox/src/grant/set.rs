//! The grants of one plugin together: its directories, environment
//! variables, programs and network destinations, and how the programs it
//! has the host start are confined.
//!
//! Invariant: the default grants nothing; every capability added later is
//! a new field, denied by default. The grants are valid by construction:
//! each one is checked when it is made (see [`DirGrant::new`],
//! [`ExecGrant::resolve`], [`NetGrant::parse`]) and the set is checked as
//! each is added (no two directories at one guest path, no program or
//! destination granted twice, no malformed variable name), so the config,
//! the host builder and the test harness all refuse the same grants in
//! the same words.

use super::{DirGrant, ExecGrant, GrantError, NetGrant, UnusableProgram};

/// Everything one plugin may touch. The default grants nothing; grants
/// are added one by one with the `add_*` methods, each checked against
/// the rest.
///
/// Non-exhaustive: new capabilities arrive as new fields, each denied by
/// default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Grants {
    dirs: Vec<DirGrant>,
    env: Vec<String>,
    exec: Vec<ExecGrant>,
    unusable: Vec<UnusableProgram>,
    net: Vec<NetGrant>,
    /// How the kernel confines the programs the host starts for the
    /// plugin. Default: Landlock, fail closed.
    pub confinement: crate::confine::Mode,
    /// The resource limits of those programs (the config's `limits.program_*`
    /// keys), applied with Landlock; the process count wherever the host
    /// can make a control group.
    pub program_limits: crate::confine::Rlimits,
}

impl Grants {
    /// Grants the directory `dir`. Refused with [`GrantError::GuestTwice`]
    /// if a directory is already granted at its guest path (one would hide
    /// the other). A directory at a path below another's guest path (say
    /// `/workspace/data` in `/workspace`) is allowed: the plugin sees it
    /// there.
    pub fn add_dir(&mut self, dir: DirGrant) -> Result<&mut Grants, GrantError> {
        if self.dirs.iter().any(|d| d.guest() == dir.guest()) {
            return Err(GrantError::GuestTwice {
                guest: dir.guest().to_owned(),
            });
        }
        self.dirs.push(dir);
        Ok(self)
    }

    /// Passes the host environment variable `name` through to the plugin
    /// with its current value (absent if unset on the host); it is also
    /// one of the only host variables the programs and MCP servers the
    /// plugin declares may be given. Refused with [`GrantError::EnvName`]
    /// if the name is empty or holds `=` or a NUL byte. Granting a name
    /// twice is harmless.
    pub fn add_env(&mut self, name: impl Into<String>) -> Result<&mut Grants, GrantError> {
        let name = name.into();
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(GrantError::EnvName { name });
        }
        self.env.push(name);
        Ok(self)
    }

    /// Lets the host start `grant`'s program for the plugin. Refused with
    /// [`GrantError::ProgramTwice`] if that file (compared by canonical
    /// path, so `node` and `/usr/bin/node` are one) is already granted:
    /// two grants of one program would leave it unclear which arguments
    /// and variables apply.
    pub fn add_exec(&mut self, grant: ExecGrant) -> Result<&mut Grants, GrantError> {
        if let Some(twin) = self
            .exec
            .iter()
            .find(|g| g.canonical() == grant.canonical())
        {
            return Err(GrantError::ProgramTwice {
                written: grant.written().to_owned(),
                twin: twin.written().to_owned(),
            });
        }
        self.exec.push(grant);
        Ok(self)
    }

    /// Keeps an exec grant whose program is not on this machine, so that
    /// whatever needs it fails with its reason. Refused with
    /// [`GrantError::UnusableTwice`] if a program written the same way is
    /// already kept.
    pub fn add_unusable(&mut self, program: UnusableProgram) -> Result<&mut Grants, GrantError> {
        if self
            .unusable
            .iter()
            .any(|u| u.written() == program.written())
        {
            return Err(GrantError::UnusableTwice {
                written: program.written().to_owned(),
            });
        }
        self.unusable.push(program);
        Ok(self)
    }

    /// Lets the host reach the destination `grant` for the plugin. Refused
    /// with [`GrantError::NetTwice`] if the same destination is already
    /// granted, however it is written (`HTTP://Example.com:80/` is
    /// `http://example.com`).
    pub fn add_net(&mut self, grant: NetGrant) -> Result<&mut Grants, GrantError> {
        if let Some(twin) = self.net.iter().find(|g| g.same_destination(&grant)) {
            return Err(GrantError::NetTwice {
                written: grant.as_str().to_owned(),
                twin: twin.as_str().to_owned(),
            });
        }
        self.net.push(grant);
        Ok(self)
    }

    /// Takes back the directory granted at `guest`, if there is one.
    pub fn remove_dir(&mut self, guest: &str) -> Option<DirGrant> {
        let at = self.dirs.iter().position(|d| d.guest() == guest)?;
        Some(self.dirs.remove(at))
    }

    /// Takes back the exec grant of the program written `written`, if
    /// there is one (to change it and add it again, say).
    pub fn remove_exec(&mut self, written: &str) -> Option<ExecGrant> {
        let at = self.exec.iter().position(|g| g.written() == written)?;
        Some(self.exec.remove(at))
    }

    /// Host directories visible to the plugin. Default: none.
    pub fn dirs(&self) -> &[DirGrant] {
        &self.dirs
    }

    /// Names of host environment variables passed through with their
    /// current values (a name that is unset on the host is simply absent).
    /// They are also the only host variables the programs and MCP servers
    /// the plugin declares may be given. Default: none.
    pub fn env(&self) -> &[String] {
        &self.env
    }

    /// Programs the host may start for the plugin, each resolved to one
    /// file when it was granted. The command of every stdio MCP server the
    /// plugin declares is checked against them when the plugin is loaded
    /// and so is every exec call it makes, by the file it resolves to; the
    /// grant's path is what runs. The sandbox itself is unchanged: the
    /// plugin cannot start anything. Default: none.
    pub fn exec(&self) -> &[ExecGrant] {
        &self.exec
    }

    /// Exec grants whose program is not on this machine, each with why (a
    /// line naming the config's place). Whatever needs one (an MCP server
    /// it starts, an exec call of it) fails with that reason; the rest of
    /// the plugin works. Default: none.
    pub fn unusable(&self) -> &[UnusableProgram] {
        &self.unusable
    }

    /// Network destinations (`scheme://host:port`) the host may reach for
    /// the plugin. The URL of every HTTP MCP server the plugin declares is
    /// checked against them when the plugin is loaded, and so is every
    /// `wasi:http` request the plugin sends, after the host resolves its
    /// name (see the host's `http` module). They open no socket:
    /// `wasi:sockets` stays denied. Default: none.
    pub fn net(&self) -> &[NetGrant] {
        &self.net
    }
}
