//! Grants and limits: exactly what one plugin may touch, and how much.
//!
//! Invariant: deny by default. A store built here sees no host file,
//! directory, environment variable, socket or stdio unless its [`Grants`]
//! name it. Directories are WASI preopens, so paths outside them (through
//! `..`, absolute paths or symlinks) are refused by the sandbox itself, not
//! by plugin code. Each capability owns its part of the grants, so a new one
//! (exec, network) is added beside the others without touching them.

use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::registry::RegistrationLimits;

/// How much of the guest's standard error is kept to explain a trap.
pub const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

pub use crate::grant::{DirGrant, DirMode, Grants};

/// How much one call may use. Non-exhaustive: start from
/// [`Limits::default`] and set what differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The most bytes the plugin's linear memories may hold together during
    /// one call (a component may have several). A plugin is someone else's
    /// code: without a cap, one call could take the host's memory.
    pub memory_bytes: usize,
    /// The longest one call (or `register`) may run before it is stopped.
    /// Without it, a loop in a plugin would hold a model's turn forever.
    pub timeout: Duration,
    /// The most bytes one call may return: the text and JSON of all its
    /// parts together, or the message of its error. A larger result
    /// reaches the model as a `too_large` error, so a tool cannot flood the
    /// model's context. Each part also costs
    /// [`PART_FRAMING_BYTES`](crate::tool::PART_FRAMING_BYTES) of framing.
    pub result_bytes: usize,
    /// The most content parts one result may have. Parts are counted before
    /// any is read; a result of a million empty parts costs the host
    /// seconds and a gigabyte to render, a real tool a handful.
    pub result_parts: usize,
    /// The most host handles (open files and directories, streams) one call
    /// may hold at once. Past it, opening a file fails inside the guest with
    /// an ordinary I/O error (see [`super::handles`]); without it one call
    /// could hold every descriptor the host process may open.
    pub open_files: usize,
    /// The largest arguments (compact JSON) a call may pass. They come from
    /// a model, and validating and copying them costs the host in
    /// proportion.
    pub arguments_bytes: usize,
    /// The most calls of the plugin that run at once. More wait for a turn
    /// within their own deadline (at most [`Limits::MAX_WAITING`] times this
    /// many wait), then fail `unavailable`: one busy or hostile plugin
    /// cannot take every instance and thread of the host.
    pub concurrent_calls: usize,
    /// What the plugin may register.
    pub registration: RegistrationLimits,
    /// What one call may spend on outbound HTTP (see [`crate::http`]).
    pub http: crate::http::HttpLimits,
}

impl Limits {
    /// 64 MiB.
    pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;
    /// 30 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// 1 MiB.
    pub const DEFAULT_RESULT_BYTES: usize = 1 << 20;
    /// 1024 parts.
    pub const DEFAULT_RESULT_PARTS: usize = 1024;
    /// 256 handles.
    pub const DEFAULT_OPEN_FILES: usize = 256;
    /// 1 MiB.
    pub const DEFAULT_ARGUMENTS_BYTES: usize = 1 << 20;
    /// 16 calls.
    pub const DEFAULT_CONCURRENT_CALLS: usize = 16;
    /// How many times `concurrent_calls` may wait for a turn.
    pub const MAX_WAITING: usize = 16;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
            result_bytes: Self::DEFAULT_RESULT_BYTES,
            result_parts: Self::DEFAULT_RESULT_PARTS,
            open_files: Self::DEFAULT_OPEN_FILES,
            arguments_bytes: Self::DEFAULT_ARGUMENTS_BYTES,
            concurrent_calls: Self::DEFAULT_CONCURRENT_CALLS,
            registration: RegistrationLimits::default(),
            http: crate::http::HttpLimits::default(),
        }
    }
}

/// Caps the total of a store's linear memories (and, separately, of its
/// tables) and remembers whether the cap was hit, so that a failure can be
/// reported as `memory_limit` rather than a bare trap.
///
/// wasmtime asks once per memory, at creation and at each growth, with that
/// memory's current and desired size; summing the answers keeps a component
/// with several memories to one budget rather than one per memory.
#[derive(Debug)]
pub(crate) struct MemoryCap {
    limit: usize,
    memory_total: usize,
    table_total: usize,
    pub(crate) hit: bool,
}

impl MemoryCap {
    pub(crate) fn new(limit: usize) -> Self {
        MemoryCap {
            limit,
            memory_total: 0,
            table_total: 0,
            hit: false,
        }
    }

    /// Admits one resource growing from `current` to `desired` bytes into
    /// `total` if the new total stays within `limit`; else records the hit.
    fn admit(
        total: &mut usize,
        hit: &mut bool,
        limit: usize,
        current: usize,
        desired: usize,
    ) -> bool {
        let grown = total.saturating_sub(current).saturating_add(desired);
        if grown <= limit {
            *total = grown;
        } else {
            *hit = true;
        }
        grown <= limit
    }
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(Self::admit(
            &mut self.memory_total,
            &mut self.hit,
            self.limit,
            current,
            desired,
        ))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Table elements are pointer-sized host memory: hold them to the same
        // budget as linear memory.
        let bytes = |elements: usize| elements.saturating_mul(size_of::<usize>());
        Ok(Self::admit(
            &mut self.table_total,
            &mut self.hit,
            self.limit,
            bytes(current),
            bytes(desired),
        ))
    }
}

/// The state of one store: one call (or one `register`) of one plugin.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) cap: MemoryCap,
    stderr: MemoryOutputPipe,
    /// The most handles the call may open (see [`super::handles`]).
    pub(crate) open_files: usize,
    /// What the call may run through `exec` (none while registering).
    pub(crate) exec: Option<super::exec::ExecAccess>,
    http_ctx: wasmtime_wasi_http::WasiHttpCtx,
    /// What the call may send through `wasi:http` (nothing while
    /// registering).
    pub(crate) http: crate::http::OutboundHttp,
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
        let mut table = ResourceTable::new();
        super::handles::cap_table(&mut table, limits.open_files);
        Ok(CallState {
            wasi: builder.build(),
            table,
            cap: MemoryCap::new(limits.memory_bytes),
            stderr,
            open_files: limits.open_files,
            exec: None,
            http_ctx: wasmtime_wasi_http::WasiHttpCtx::new(),
            http: crate::http::OutboundHttp::closed(),
        })
    }

    /// The call's resource table: every host handle it holds.
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
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

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http_ctx,
            table: &mut self.table,
            hooks: &mut self.http,
        }
    }
}

#[cfg(test)]
mod tests {
    use wasmtime::ResourceLimiter;

    use super::MemoryCap;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_cap_holds_all_memories_to_one_budget() {
        let mut cap = MemoryCap::new(32 * MIB);
        // Two memories created at 1 MiB each, then grown one after the other.
        assert!(cap.memory_growing(0, MIB, None).unwrap());
        assert!(cap.memory_growing(0, MIB, None).unwrap());
        assert!(cap.memory_growing(MIB, 20 * MIB, None).unwrap());
        assert!(!cap.hit);
        // 20 + 20 would pass a per-memory cap of 32 MiB but not the total.
        assert!(!cap.memory_growing(MIB, 20 * MIB, None).unwrap());
        assert!(cap.hit);
        // What is left still fits.
        assert!(cap.memory_growing(MIB, 12 * MIB, None).unwrap());
        assert!(!cap.memory_growing(12 * MIB, 12 * MIB + 1, None).unwrap());
    }

    #[test]
    fn tables_have_a_budget_of_their_own() {
        let mut cap = MemoryCap::new(MIB);
        let elements = MIB / size_of::<usize>();
        assert!(cap.memory_growing(0, MIB, None).unwrap());
        assert!(cap.table_growing(0, elements / 2, None).unwrap());
        assert!(!cap.hit);
        assert!(!cap.table_growing(0, elements / 2 + 1, None).unwrap());
        assert!(cap.hit);
    }
}
