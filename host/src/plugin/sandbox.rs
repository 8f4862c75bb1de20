//! Grants and limits: exactly what one plugin may touch, and how much.
//!
//! Invariant: deny by default. A store built here sees no host file,
//! directory, environment variable, socket or stdio unless its [`Grants`]
//! name it. Directories are WASI preopens, so paths outside them (through
//! `..`, absolute paths or symlinks) are refused by the sandbox itself, not
//! by plugin code. Each capability owns its part of the grants, so a new one
//! (exec, network) is added beside the others without touching them.

use std::path::PathBuf;
use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// How much of the guest's standard error is kept to explain a trap.
pub const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Host directories visible to the plugin. Default: none.
    pub dirs: Vec<DirGrant>,
    /// Names of host environment variables passed through with their
    /// current values (a name that is unset on the host is simply absent).
    /// Default: none.
    pub env: Vec<String>,
}

/// How much one call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes any one linear memory of the plugin may grow to. A
    /// plugin is someone else's code: without a cap, one call could take
    /// the host's memory.
    pub memory_bytes: usize,
    /// The longest one call (or `register`) may run before it is stopped.
    /// Without it, a loop in a plugin would hold a model's turn forever.
    pub timeout: Duration,
}

impl Limits {
    /// 64 MiB.
    pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;
    /// 30 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// Caps linear-memory growth and remembers whether the cap was hit, so a
/// failure can be reported as `memory_limit` rather than a bare trap.
#[derive(Debug)]
pub(crate) struct MemoryCap {
    limit: usize,
    pub(crate) hit: bool,
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Table elements are pointer-sized host memory: hold them to the same
        // budget as linear memory.
        Ok(desired.saturating_mul(size_of::<usize>()) <= self.limit)
    }
}

/// The state of one store: one call (or one `register`) of one plugin.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) cap: MemoryCap,
    stderr: MemoryOutputPipe,
}

impl CallState {
    /// Builds the sandbox for one call from the plugin's grants.
    pub(crate) fn new(grants: &Grants, limits: &Limits) -> Result<Self, std::io::Error> {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
        let mut builder = WasiCtxBuilder::new();
        // Spelled out although they are the defaults: no network at all.
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }))
            .stderr(stderr.clone());
        for name in &grants.env {
            if let Ok(value) = std::env::var(name) {
                builder.env(name, value);
            }
        }
        for dir in &grants.dirs {
            let perms = match dir.mode {
                DirMode::ReadOnly => FsPerms::ReadOnly,
                DirMode::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| {
                    std::io::Error::other(format!(
                        "cannot open granted directory {}: {e}",
                        dir.host.display()
                    ))
                })?;
        }
        Ok(CallState {
            wasi: builder.build(),
            table: ResourceTable::new(),
            cap: MemoryCap {
                limit: limits.memory_bytes,
                hit: false,
            },
            stderr,
        })
    }

    /// The tail of what the guest wrote to standard error (lossy UTF-8).
    pub(crate) fn stderr_tail(&self, max: usize) -> String {
        let bytes = self.stderr.contents();
        let start = bytes.len().saturating_sub(max);
        String::from_utf8_lossy(&bytes[start..]).trim().to_owned()
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
