//! The sandbox of one call: exactly what one plugin may touch (its
//! [`Grants`]), with its memory capped as its [`Limits`] say.
//!
//! Invariant: deny by default. A store built here sees no host file,
//! directory, environment variable, socket or stdio unless its [`Grants`]
//! name it. Directories are WASI preopens, so paths outside them (through
//! `..`, absolute paths or symlinks) are refused by the sandbox itself, not
//! by plugin code. Each capability owns its part of the grants, so a new one
//! (exec, network) is added beside the others without touching them.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::tiny_harness::plugin::exec::{self as exec_wit, Command, ExecError, Output};

pub use super::limits::Limits;

pub use tiny_harness_sandbox::grant::{DirGrant, DirMode, Grants};

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
    /// What the guest writes to standard output and standard error.
    pub(crate) stdout: crate::log::LogPipe,
    pub(crate) stderr: crate::log::LogPipe,
    /// The most handles the call may open (see [`super::handles`]).
    pub(crate) open_files: usize,
    /// What the call may run through `exec` (none while registering).
    pub(crate) exec: Option<super::exec::ExecAccess>,
    #[cfg(feature = "http")]
    http_ctx: wasmtime_wasi_http::WasiHttpCtx,
    /// What the call may send through `wasi:http` (nothing while
    /// registering).
    pub(crate) http: crate::http::OutboundHttp,
    /// Whether the guest read the insecure generator or its seed (see
    /// [`mark_insecure_random`]).
    insecure_drawn: bool,
    /// When the call must stop (read by the epoch callback, which so
    /// captures nothing and costs no allocation per call).
    pub(crate) deadline: Option<std::time::Instant>,
}

/// Links `wasi:random/insecure` and `insecure-seed` again, as wasmtime-wasi
/// does, but noting in the call's state that the guest used them: a kept
/// sandbox draws its random state again only after a call that did.
pub(crate) fn mark_insecure_random(
    linker: &mut wasmtime::component::Linker<CallState>,
) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::random::{insecure, insecure_seed};
    use wasmtime_wasi::random::WasiRandom;
    fn drawn(state: &mut CallState) -> &mut wasmtime_wasi::random::WasiRandomCtx {
        state.insecure_drawn = true;
        state.wasi.random()
    }
    linker.allow_shadowing(true);
    insecure::add_to_linker::<CallState, WasiRandom>(linker, drawn)?;
    insecure_seed::add_to_linker::<CallState, WasiRandom>(linker, drawn)?;
    linker.allow_shadowing(false);
    Ok(())
}

impl CallState {
    /// Builds the sandbox for one call from the plugin's grants.
    pub(crate) fn new(grants: &Grants, limits: &Limits) -> Result<Self, std::io::Error> {
        let stdout = crate::log::LogPipe::default();
        let stderr = crate::log::LogPipe::default();
        let mut builder = WasiCtxBuilder::new();
        // Spelled out although they are the defaults: no network at all.
        // (The default address check refuses every address too; setting
        // our own would cost an allocation per call.)
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .stdout(stdout.clone())
            .stderr(stderr.clone());
        for name in grants.env() {
            if let Ok(value) = std::env::var(name) {
                builder.env(name, value);
            }
        }
        for dir in grants.dirs() {
            let perms = match dir.mode() {
                DirMode::ReadOnly => FsPerms::ReadOnly,
                DirMode::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(dir.host(), dir.guest(), perms)
                .map_err(|e| {
                    std::io::Error::other(format!(
                        "cannot open granted directory {}: {e}",
                        dir.host().display()
                    ))
                })?;
        }
        let mut table = ResourceTable::new();
        super::handles::cap_table(&mut table, limits.open_files);
        Ok(CallState {
            wasi: builder.build(),
            table,
            cap: MemoryCap::new(limits.memory_bytes),
            stdout,
            stderr,
            open_files: limits.open_files,
            exec: None,
            #[cfg(feature = "http")]
            http_ctx: wasmtime_wasi_http::WasiHttpCtx::new(),
            http: crate::http::OutboundHttp::closed(),
            insecure_drawn: false,
            deadline: None,
        })
    }

    /// Makes a finished call's sandbox ready for the next call of the same
    /// plugin: nothing the guest could write carries over. The resource
    /// table, the memory count and the captured output start empty, and
    /// after a call that read the insecure generator or its seed, the
    /// random state is drawn afresh (the next call could otherwise work out
    /// how much the one before it drew: a channel from one call to the
    /// next). The secure generator is not reset: its output says nothing
    /// of what was drawn before. What is kept is what the grants fixed:
    /// environment, clocks and the closed network, none of which a guest
    /// can change.
    fn reset(&mut self, limits: &Limits) {
        if std::mem::take(&mut self.insecure_drawn) {
            *self.wasi.random() = wasmtime_wasi::random::WasiRandomCtx::default();
        }
        self.table = ResourceTable::new();
        super::handles::cap_table(&mut self.table, limits.open_files);
        self.cap = MemoryCap::new(limits.memory_bytes);
        self.stdout.clear();
        self.stderr.clear();
        self.open_files = limits.open_files;
        self.exec = None;
        #[cfg(feature = "http")]
        {
            self.http_ctx = wasmtime_wasi_http::WasiHttpCtx::new();
        }
        self.http = crate::http::OutboundHttp::closed();
        self.deadline = None;
    }

    /// The call's resource table: every host handle it holds.
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// The tail of what the guest wrote to standard error (lossy UTF-8).
    pub(crate) fn stderr_tail(&self, max: usize) -> String {
        String::from_utf8_lossy(&self.stderr.last(max))
            .trim()
            .to_owned()
    }
}

/// The sandboxes of a plugin's finished calls, kept for its next calls:
/// building a WASI context afresh costs about 3 % of a trivial call (two
/// sets of random generators, boxed streams and clocks).
///
/// Only a plugin granted no directory and no environment variable keeps
/// them: a preopened directory is an open handle, and a kept one would go
/// on naming a directory that was removed and made again between calls;
/// a granted variable is passed with its value at each call, and a kept
/// context would hold the value it had when it was built. At most
/// `concurrent_calls` are kept, so what a plugin holds stays bounded by
/// its limits; a call that was stopped while blocked in a host call never
/// gives its sandbox back.
pub(crate) struct Spares {
    kept: std::sync::Mutex<Vec<CallState>>,
    max: usize,
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spares")
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Spares {
    pub(crate) fn new(grants: &Grants, limits: &Limits) -> Self {
        let max = if grants.dirs().is_empty() && grants.env().is_empty() {
            limits.concurrent_calls.max(1)
        } else {
            0
        };
        Spares {
            kept: std::sync::Mutex::new(Vec::new()),
            max,
        }
    }

    /// A kept sandbox, or a new one built from `grants`.
    pub(crate) fn take(
        &self,
        grants: &Grants,
        limits: &Limits,
    ) -> Result<CallState, std::io::Error> {
        if self.max > 0
            && let Some(state) = self.kept.lock().ok().and_then(|mut kept| kept.pop())
        {
            return Ok(state);
        }
        CallState::new(grants, limits)
    }

    /// Keeps `state` for a later call, made ready for it, if there is room.
    pub(crate) fn give_back(&self, mut state: CallState, limits: &Limits) {
        if self.max == 0 {
            return;
        }
        state.reset(limits);
        if let Ok(mut kept) = self.kept.lock()
            && kept.len() < self.max
        {
            kept.push(state);
        }
    }
}

impl exec_wit::Host for CallState {
    async fn run(&mut self, command: Command) -> Result<Output, ExecError> {
        let Some(access) = self.exec.clone() else {
            return Err(ExecError::Denied(
                "this host runs no programs for this plugin".to_owned(),
            ));
        };
        access.run(command).await
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

#[cfg(feature = "http")]
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

    use super::{DirGrant, DirMode, Grants, Limits, MemoryCap, Spares};

    fn kept(spares: &Spares) -> usize {
        spares.kept.lock().unwrap().len()
    }

    #[test]
    fn at_most_concurrent_calls_sandboxes_are_kept_and_none_with_a_directory_or_a_variable() {
        let limits = Limits {
            concurrent_calls: 2,
            ..Limits::default()
        };
        let grants = Grants::default();
        let spares = Spares::new(&grants, &limits);
        let states: Vec<_> = (0..3)
            .map(|_| spares.take(&grants, &limits).unwrap())
            .collect();
        for state in states {
            spares.give_back(state, &limits);
        }
        assert_eq!(kept(&spares), 2);
        let taken = spares.take(&grants, &limits).unwrap();
        assert_eq!(kept(&spares), 1);
        drop(taken);

        let dir = tempfile::tempdir().unwrap();
        let mut granted = Grants::default();
        granted
            .add_dir(DirGrant::new(dir.path(), "/workspace", DirMode::ReadOnly).unwrap())
            .unwrap();
        let spares = Spares::new(&granted, &limits);
        let state = spares.take(&granted, &limits).unwrap();
        spares.give_back(state, &limits);
        assert_eq!(kept(&spares), 0);

        let mut granted = Grants::default();
        granted.add_env("HOME").unwrap();
        let spares = Spares::new(&granted, &limits);
        let state = spares.take(&granted, &limits).unwrap();
        spares.give_back(state, &limits);
        assert_eq!(kept(&spares), 0);
    }

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
