//! The wasmtime engine shared by every plugin: configuration, the linker
//! with WASI preview 2, and the epoch ticker that enforces call deadlines.
//!
//! Invariant: one engine per host. Compiled components, instance pools,
//! the epoch clock and the threads that run plugins' blocking host calls all
//! belong to it. The ticker thread stops when the last handle to the engine
//! is dropped, and dropping the engine never waits for a blocked host call:
//! those run on the engine's own runtime (not the embedder's), which is shut
//! down in the background.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::{CompileCache, CompileOrigin};
use super::handles::{self, Stalled};
use super::sandbox::CallState;

/// How often the epoch advances. A running guest is checked (and yields to
/// the async executor) once per tick, so this bounds both how late a
/// deadline can fire and how long one guest can hold an executor thread.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The most plugin instances alive at once, across all plugins. Concurrent
/// calls beyond this fail with `unavailable` instead of exhausting memory.
pub const MAX_CONCURRENT_INSTANCES: u32 = 256;

/// How much of each linear memory slot stays resident between calls. A
/// Rust plugin's instance touches its shadow stack (1 MiB by default) and
/// its data; keeping that resident turns page faults on every call into a
/// memset of what was touched.
pub const KEEP_RESIDENT_BYTES: usize = 2 << 20;

/// How much of each table slot stays resident between calls.
pub const KEEP_RESIDENT_TABLE_BYTES: usize = 64 << 10;

/// The most threads that run plugins' blocking host calls (file system
/// operations) at once, across all plugins. More calls queue for a thread.
pub const MAX_BLOCKING_THREADS: usize = 64;

/// How many calls abandoned at their deadline may still hold a blocking
/// thread before the engine refuses new calls (`unavailable`), so that the
/// stuck ones cannot take every thread.
pub const MAX_STALLED_CALLS: usize = MAX_BLOCKING_THREADS / 2;

/// A shareable handle to the engine, its linker and its epoch ticker.
#[derive(Clone)]
pub struct PluginEngine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<CallState>,
    ticker_stop: Arc<AtomicBool>,
    cache: Option<CompileCache>,
    /// Where plugins' blocking host calls run. `None` only while dropping.
    io: Option<tokio::runtime::Runtime>,
    io_handle: tokio::runtime::Handle,
    stalled: Stalled,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
        if let Some(io) = self.io.take() {
            // Never wait for a host call that is blocked for good; this is
            // also the only way to drop a runtime from async code.
            io.shutdown_background();
        }
    }
}

impl PluginEngine {
    /// Builds the engine: async support, epoch interruption, the pooling
    /// allocator sized for 256 instances alive at once, and a linker that
    /// provides WASI preview 2 (and nothing else) to plugins. Every plugin
    /// is compiled when it is loaded.
    pub fn new() -> wasmtime::Result<Self> {
        Self::with_compile_cache(None)
    }

    /// As [`PluginEngine::new`], keeping compiled plugins in `cache` (if
    /// given) so that a later engine loads them without compiling.
    pub fn with_compile_cache(cache: Option<CompileCache>) -> wasmtime::Result<Self> {
        let mut pool = PoolingAllocationConfig::new();
        // A Rust component is a few core instances (the program plus
        // adapter shims), each with at most one memory and a few tables.
        pool.total_component_instances(MAX_CONCURRENT_INSTANCES)
            .total_core_instances(MAX_CONCURRENT_INSTANCES * 8)
            .total_memories(MAX_CONCURRENT_INSTANCES * 2)
            .total_tables(MAX_CONCURRENT_INSTANCES * 8)
            .total_stacks(MAX_CONCURRENT_INSTANCES)
            .max_memories_per_component(4)
            .max_tables_per_component(16)
            .max_core_instances_per_component(32)
            // Reset the low pages of a memory slot with memset instead of
            // returning them to the kernel, so that the next call's instance
            // does not page-fault its stack and data back in. With
            // PAGEMAP_SCAN (Linux 6.7+) only the pages a call touched are
            // reset.
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(KEEP_RESIDENT_TABLE_BYTES)
            .pagemap_scan(wasmtime::Enabled::Auto);
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        // Outbound HTTP for every plugin, each request checked against the
        // calling plugin's net grants (none: every request refused).
        #[cfg(feature = "http")]
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;

        handles::limit_opens(&mut linker)?;
        super::sandbox::mark_insecure_random(&mut linker)?;
        // Programs, only as each plugin's grants allow (see `exec`).
        super::bindings::tiny_harness::plugin::exec::add_to_linker::<
            CallState,
            wasmtime::component::HasSelf<CallState>,
        >(&mut linker, |state| state)?;
        // The same, under the names older worlds import it by.
        super::worlds::link_older_exec(&mut linker)?;

        let io = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .thread_name("tiny-harness-io")
            .enable_all()
            .build()
            .map_err(|e| {
                wasmtime::Error::msg(format!("cannot start the plugin I/O runtime: {e}"))
            })?;
        let io_handle = io.handle().clone();

        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.weak(), ticker_stop.clone()).map_err(|e| {
            // Without a ticker deadlines would never fire: refuse to run.
            wasmtime::Error::msg(format!("cannot start the epoch ticker thread: {e}"))
        })?;
        Ok(PluginEngine {
            inner: Arc::new(Inner {
                engine,
                linker,
                ticker_stop,
                cache,
                io: Some(io),
                io_handle,
                stalled: Stalled::default(),
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The linker every plugin is instantiated through.
    pub(crate) fn linker(&self) -> &Linker<CallState> {
        &self.inner.linker
    }

    /// How many calls were stopped at their deadline while a host call of
    /// theirs blocked, and still have that host call running on one of the
    /// engine's threads for blocking work (64). Past half that many, new
    /// calls are refused as `unavailable` until some return.
    pub fn stalled_calls(&self) -> usize {
        self.inner.stalled.count()
    }

    pub(crate) fn stalled(&self) -> &Stalled {
        &self.inner.stalled
    }

    /// The runtime plugins' host calls run in (see [`InEngine`]).
    pub(crate) fn io(&self) -> &tokio::runtime::Handle {
        &self.inner.io_handle
    }

    /// The compile cache, if the engine has one.
    pub fn compile_cache(&self) -> Option<&CompileCache> {
        self.inner.cache.as_ref()
    }

    /// Compiles a component (whose file has this sha256), or loads it from
    /// the compile cache.
    pub(crate) fn compile(
        &self,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<(Component, CompileOrigin)> {
        match &self.inner.cache {
            Some(cache) => cache.load_or_compile(&self.inner.engine, bytes, sha256),
            None => Ok((
                Component::new(&self.inner.engine, bytes)?,
                CompileOrigin::Compiled,
            )),
        }
    }
}

fn spawn_ticker(engine: wasmtime::EngineWeak, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("tiny-harness-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                match engine.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .map(drop)
}

pin_project_lite::pin_project! {
    /// A future polled inside the engine's runtime context, so that whatever
    /// it spawns (wasmtime-wasi's blocking file operations, its timers)
    /// lands on the engine's threads rather than the embedder's, wherever it
    /// is awaited; and given up at a deadline (`Err(TimedOut)`). Held in
    /// place, not boxed (the call's future is boxed once, by the source
    /// that runs it), and the deadline's timer is made only if the future
    /// does not finish at its first poll.
    pub(crate) struct InEngine<'a, F> {
        handle: &'a tokio::runtime::Handle,
        deadline: tokio::time::Instant,
        timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
        #[pin]
        inner: F,
    }
}

/// An [`InEngine`] future reached its deadline.
#[derive(Debug)]
pub(crate) struct TimedOut;

impl<'a, F: std::future::Future> InEngine<'a, F> {
    pub(crate) fn new(engine: &'a PluginEngine, deadline: std::time::Instant, inner: F) -> Self {
        InEngine {
            handle: engine.io(),
            deadline: deadline.into(),
            timer: None,
            inner,
        }
    }
}

impl<F: std::future::Future> std::future::Future for InEngine<'_, F> {
    type Output = Result<F::Output, TimedOut>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let _context = this.handle.enter();
        if let std::task::Poll::Ready(output) = this.inner.poll(cx) {
            return std::task::Poll::Ready(Ok(output));
        }
        let deadline = *this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        timer.as_mut().poll(cx).map(|()| Err(TimedOut))
    }
}
