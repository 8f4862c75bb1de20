//! `dirs` grants: a host directory a plugin sees at a guest path.
//!
//! Invariant: a [`DirGrant`] is built only by [`DirGrant::new`], so its
//! guest path is absolute with no `.` or `..` segment, and its host path
//! is a directory as resolved when the grant was made (symlinks and `..`
//! followed once, then shown and opened by that real path).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::GrantError;

/// Whether a granted directory may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirMode {
    /// Files and directories may be read, never created, changed or removed.
    #[default]
    ReadOnly,
    /// Full access below the directory.
    ReadWrite,
}

/// A host directory the plugin sees at a guest path. Built by
/// [`DirGrant::new`], which checks both paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    host: PathBuf,
    guest: String,
    mode: DirMode,
}

impl DirGrant {
    /// The directory `host` seen by the plugin at `guest`, read-only or
    /// read-write as `mode` says.
    ///
    /// `guest` must be absolute and hold no `.` or `..` segment
    /// (`/workspace`, `/data/in`): else [`GrantError::GuestPath`].
    /// `host` must be a directory (a relative path is taken from the
    /// current directory; the config joins its own directory first): else
    /// [`GrantError::NotADirectory`]. It is resolved now, symlinks and
    /// `..` followed, and the real path is what the grant holds
    /// ([`GrantError::Unresolvable`] if that fails). Two grants at one
    /// guest path are refused where they meet, by [`Grants::add_dir`](super::Grants::add_dir).
    pub fn new(
        host: impl AsRef<Path>,
        guest: impl Into<String>,
        mode: DirMode,
    ) -> Result<DirGrant, GrantError> {
        let guest = guest.into();
        check_guest(&guest)?;
        let host = host.as_ref();
        if !host.is_dir() {
            return Err(GrantError::NotADirectory {
                host: host.to_owned(),
            });
        }
        let real = host.canonicalize().map_err(|e| GrantError::Unresolvable {
            path: host.to_owned(),
            source: Arc::new(e),
        })?;
        Ok(DirGrant {
            host: real,
            guest,
            mode,
        })
    }

    /// The directory on the host: its real path, resolved when granted.
    pub fn host(&self) -> &Path {
        &self.host
    }

    /// Where the plugin sees it: an absolute guest path such as
    /// `/workspace`.
    pub fn guest(&self) -> &str {
        &self.guest
    }

    /// Read-only or read-write.
    pub fn mode(&self) -> DirMode {
        self.mode
    }
}

/// Whether `guest` is an absolute guest path without `.` or `..`.
fn check_guest(guest: &str) -> Result<(), GrantError> {
    if !guest.starts_with('/') || guest.split('/').any(|s| s == ".." || s == ".") {
        return Err(GrantError::GuestPath {
            guest: guest.to_owned(),
        });
    }
    Ok(())
}
