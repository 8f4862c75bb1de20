//! # tiny-harness-wasm
//!
//! Plugins: WebAssembly components that supply tools, run sandboxed, and
//! the outbound HTTP they may send under their grants ([`http`]). It
//! depends on `tiny-harness-core` and `tiny-harness-sandbox` only, never
//! on the MCP crate: a plugin's MCP declarations leave it as the core's
//! plain declaration types. The `tiny-harness-host` facade re-exports the
//! types an embedder names ([`Plugin`], [`PluginSpec`], [`Grants`],
//! [`Limits`], [`PluginEngine`], [`CompileCache`], [`LoadError`], ...) and
//! [`http::HttpLimits`] at its root, not these modules.
//!
//! Invariants:
//! - A plugin is compiled and linked once ([`Plugin::load`] builds an
//!   `InstancePre`); every call then runs in a fresh `Store` and instance,
//!   so no call sees what another left in memory, and a crash ends only the
//!   call that caused it.
//! - A plugin reaches nothing but what its [`Grants`] allow (see
//!   [`CallState`]), and no call outlives its [`Limits`]: the epoch deadline
//!   stops a running guest, and a host-side timeout stops a guest blocked
//!   in a host call.
//! - Everything a plugin returns is checked before it is trusted as a value
//!   (JSON parts must parse, schemas must compile) and is rendered as
//!   untrusted data.

// The crate exposes the WIT bindings, the bundled components and outbound
// HTTP as modules, and the rest at its root; every other module is its own.
pub mod bindings;
pub mod builtin;
mod cache;
mod component;
mod engine;
mod error;
mod exec;
pub mod expects;
mod failure;
mod handles;
pub mod http;
mod inspect;
mod lift;
mod limits;
mod log;
mod sandbox;
mod spec;
mod stand_in;
mod worlds;

use std::path::{Path, PathBuf};
use std::time::Instant;

use failure::{error_chain, without_http};
use sha2::{Digest, Sha256};
use wasmtime::{Store, UpdateDeadline};

pub use cache::{CompileCache, CompileOrigin};
pub use component::file_sha256;
use component::{check_component_header, read_component};
pub use engine::{
    EPOCH_TICK, MAX_BLOCKING_THREADS, MAX_CONCURRENT_INSTANCES, MAX_STALLED_CALLS, PluginEngine,
};
pub use error::LoadError;
/// The exec import's check and run outside a guest, for the facade's test
/// that an exec call and a stdio MCP server decide every grant case alike.
/// Not part of the API.
#[doc(hidden)]
pub use exec::{ExecAccess, ExecContext};
pub use inspect::{Import, Inspection, Registration, inspect};
pub use limits::Limits;
pub use log::{LOG_CAPTURE_BYTES, LOG_LINES, LOG_TAIL_BYTES, LOG_TAIL_LINES};
pub use sandbox::{CallState, DirGrant, DirMode, Grants};
pub use spec::PluginSpec;
pub use stand_in::{HttpRequest, HttpResponse, StandIn, StandInError};
pub use worlds::RELEASED as RELEASED_WORLDS;

use tiny_harness_core::declaration::Declaration;
use tiny_harness_core::display;
use tiny_harness_core::source::{CallFuture, CallLimits, ListFuture, PendingTool, ToolSource};
use tiny_harness_core::tool::{CallError, ResultBudget, ToolResult};

/// The WIT world a plugin must export, as reported in errors.
pub const WORLD: &str = "tiny-harness:plugin/plugin@0.3.0";

/// A loaded plugin: compiled, linked, registered, ready for calls.
pub struct Plugin {
    name: String,
    wasm: PathBuf,
    pinned: bool,
    /// Where the component came from when not a file ([`PluginSpec::source`]).
    source: Option<String>,
    engine: PluginEngine,
    pre: worlds::Pre,
    grants: Grants,
    limits: Limits,
    config_json: String,
    sha256: String,
    origin: CompileOrigin,
    mcp_sources: Vec<Declaration>,
    /// Its own tools, as it registered them.
    tools: Vec<PendingTool>,
    exec: std::sync::Arc<exec::ExecContext>,
    http: std::sync::Arc<crate::http::HttpPolicy>,
    /// Turns to run (`limits.concurrent_calls`), and how many calls wait.
    turns: tokio::sync::Semaphore,
    waiting: std::sync::atomic::AtomicUsize,
    /// Sandboxes of finished calls, kept for the next ones.
    spares: sandbox::Spares,
}

/// Counts a waiting call out when it stops waiting, however it stops.
struct Leave<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .field("grants", &self.grants)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Reads, checks, compiles and links the component, then runs its
    /// `register` in a sandbox with the plugin's grants. Returns the plugin
    /// and the tools it offers (not yet registered).
    pub async fn load(
        engine: &PluginEngine,
        spec: PluginSpec,
    ) -> Result<(Plugin, Vec<PendingTool>), LoadError> {
        let name = spec.name.clone();
        let bytes = read_component(&name, &spec.wasm)?;
        let actual = hex::encode(Sha256::digest(&bytes));
        if let Some(expected) = &spec.sha256
            && !expected.eq_ignore_ascii_case(&actual)
        {
            return Err(LoadError::HashMismatch {
                plugin: name,
                path: spec.wasm,
                expected: expected.clone(),
                actual,
            });
        }
        check_component_header(&bytes).map_err(|reason| LoadError::NotAComponent {
            plugin: name.clone(),
            path: spec.wasm.clone(),
            reason,
        })?;
        let compiled = engine.compile(&bytes, &actual);
        drop(bytes);
        Self::load_compiled(engine, spec, compiled, actual).await
    }

    /// The rest of [`Plugin::load`], from the compiled component (or why it
    /// did not compile) of a file with this sha256, read and checked.
    pub(crate) async fn load_compiled(
        engine: &PluginEngine,
        spec: PluginSpec,
        compiled: wasmtime::Result<(wasmtime::component::Component, CompileOrigin)>,
        actual: String,
    ) -> Result<(Plugin, Vec<PendingTool>), LoadError> {
        let name = spec.name.clone();
        let wrong_world = |reason: String| LoadError::WrongWorld {
            plugin: name.clone(),
            path: spec.wasm.clone(),
            reason,
        };
        let (component, origin) = compiled
            .map_err(|e| wrong_world(format!("it does not compile: {}", error_chain(&e))))?;
        let version = worlds::version_of(&component, engine.engine());
        if let Some(unknown) = version.as_deref().and_then(worlds::unreleased) {
            return Err(wrong_world(unknown));
        }
        let instance_pre = engine
            .linker()
            .instantiate_pre(&component)
            .map_err(|e| wrong_world(without_http(error_chain(&e))))?;
        let pre = worlds::Pre::bind(instance_pre, version.as_deref()).map_err(wrong_world)?;

        let exec_context = std::sync::Arc::new(exec::ExecContext {
            plugin: name.clone(),
            grants: spec.grants.clone(),
            limits: spec.limits,
            stand_in: spec.stand_in.clone(),
        });
        let http_policy = std::sync::Arc::new(
            crate::http::HttpPolicy::new(
                spec.grants.net().to_vec(),
                spec.limits.http,
                spec.resolver.clone(),
            )
            .with_stand_in(spec.stand_in.clone()),
        );
        let spares = sandbox::Spares::new(&spec.grants, &spec.limits);
        let plugin = Plugin {
            name: name.clone(),
            wasm: spec.wasm.clone(),
            pinned: spec.sha256.is_some(),
            source: spec.source.clone(),
            engine: engine.clone(),
            pre,
            grants: spec.grants,
            limits: spec.limits,
            config_json: spec.config.to_string(),
            sha256: actual,
            origin,
            mcp_sources: Vec::new(),
            tools: Vec::new(),
            exec: exec_context,
            http: http_policy,
            turns: tokio::sync::Semaphore::new(spec.limits.concurrent_calls.max(1)),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            spares,
        };
        let (tools, mcp_sources) = plugin.run_register().await?;
        let plugin = Plugin {
            mcp_sources,
            tools: tools.clone(),
            ..plugin
        };
        Ok((plugin, tools))
    }

    /// The name the host config gives this plugin.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sha256 of the component file, as 64 hex digits.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The component file it was loaded from.
    pub fn wasm_path(&self) -> &Path {
        &self.wasm
    }

    /// Whether the config pins the component's sha256.
    pub fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// Where its component came from when the file is a copy (the
    /// config's `oci://` reference); `None` for a file of the user's.
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// Whether its machine code was compiled at load or came from the
    /// compile cache.
    pub fn compile_origin(&self) -> CompileOrigin {
        self.origin
    }

    /// The engine it runs in.
    pub fn engine(&self) -> &PluginEngine {
        &self.engine
    }

    /// The MCP servers its registration declares, in its order. The host
    /// reaches them (the MCP crate); the plugin itself never does.
    pub fn mcp_sources(&self) -> &[Declaration] {
        &self.mcp_sources
    }

    /// What the plugin may touch.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// How much one call may use.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    async fn run_register(&self) -> Result<(Vec<PendingTool>, Vec<Declaration>), LoadError> {
        let plugin = || self.name.clone();
        let deadline = Instant::now() + self.limits.timeout;
        let outcome = self
            .run(deadline, true, async |plugin, store| {
                plugin.register(store, &self.config_json).await
            })
            .await
            .map_err(|e| match e {
                // wasmtime refused to copy that much (see `lift::fuel`).
                CallError::TooLarge { .. } => LoadError::OverLimit {
                    plugin: plugin(),
                    source: self.limits.registration.refusal(
                        &self.name,
                        "the registration",
                        tiny_harness_core::registry::RegistrationLimit::Total,
                        self.limits.registration.total_bytes as u64 + 1,
                        true,
                    ),
                },
                // "the tool crashed" would name the wrong thing here.
                CallError::Trapped(reason) => LoadError::Register {
                    plugin: plugin(),
                    reason,
                },
                other => LoadError::Register {
                    plugin: plugin(),
                    reason: other.to_string(),
                },
            })?;
        lift::registration(outcome, &self.name, &self.limits.registration).map_err(|refused| {
            match refused {
                lift::RegistrationRefused::Plugin(reason) => LoadError::Register {
                    plugin: plugin(),
                    reason,
                },
                lift::RegistrationRefused::Limit(source) => LoadError::OverLimit {
                    plugin: plugin(),
                    source,
                },
                lift::RegistrationRefused::Invalid(reason) => LoadError::InvalidRegistration {
                    plugin: plugin(),
                    reason: display::one_line(&reason).into_owned(),
                },
            }
        })
    }

    /// Runs one tool of this plugin in a fresh instance, with the plugin's
    /// time limit from now. `arguments` must already be validated against
    /// the tool's input schema.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<ToolResult, CallError> {
        let deadline = Instant::now() + self.limits.timeout;
        self.call_until(server, tool, arguments, deadline).await
    }

    /// As [`Plugin::call`], stopping the call at `deadline` (which the
    /// invoker sets before validation, so that the time limit covers it).
    /// A deadline already past is a timeout, and nothing runs.
    pub async fn call_until(
        &self,
        server: &str,
        tool: &str,
        arguments: &serde_json::Value,
        deadline: Instant,
    ) -> Result<ToolResult, CallError> {
        if Instant::now() >= deadline {
            return Err(CallError::Timeout {
                limit: self.limits.timeout,
            });
        }
        self.call_before(server, tool, arguments, deadline).await
    }

    /// As [`Plugin::call_until`], for a caller that has just seen the
    /// deadline ahead (the invoker checks it after validation): the clock
    /// is not read again.
    async fn call_before(
        &self,
        server: &str,
        tool: &str,
        arguments: &serde_json::Value,
        deadline: Instant,
    ) -> Result<ToolResult, CallError> {
        let _turn = self.turn(deadline).await?;
        // Serialised straight into bytes, not through `Display`'s
        // formatter: the same compact JSON, faster. (A `Value` always
        // serialises: its keys are strings.)
        let arguments = serde_json::to_string(arguments).unwrap_or_default();
        let budget = ResultBudget::new(self.limits.result_bytes, self.limits.result_parts);
        let outcome = self
            .run(deadline, false, async |plugin, store| {
                plugin
                    .call(store, &self.config_json, server, tool, &arguments)
                    .await
            })
            .await?;
        lift::call_outcome(outcome, budget)
    }

    /// A fresh sandbox and instance, and nothing called: what every call
    /// pays before the plugin runs (for the benchmarks). Not part of the
    /// API.
    #[doc(hidden)]
    pub async fn instantiate_only(&self) -> Result<(), CallError> {
        let deadline = Instant::now() + self.limits.timeout;
        self.run(deadline, false, async |_, _| Ok(())).await
    }

    /// A turn to run: at most `concurrent_calls` calls run at once, and a
    /// call waits for a turn within its deadline; too many waiting, or no
    /// turn in time, is `unavailable`.
    async fn turn(&self, deadline: Instant) -> Result<tokio::sync::SemaphorePermit<'_>, CallError> {
        let limit = self.limits.concurrent_calls;
        let busy = || {
            CallError::Unavailable(format!(
                "the plugin already runs its {limit} calls at once (limits.concurrent_calls) and more are waiting; try again later"
            ))
        };
        if let Ok(permit) = self.turns.try_acquire() {
            return Ok(permit);
        }
        let waiting = self
            .waiting
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _leave = Leave(&self.waiting);
        if waiting >= limit.saturating_mul(Limits::MAX_WAITING) {
            return Err(busy());
        }
        match tokio::time::timeout_at(deadline.into(), self.turns.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(busy()),
            Err(_) => Err(CallError::Timeout {
                limit: self.limits.timeout,
            }),
        }
    }

    /// Instantiates the plugin in a fresh store and runs `f` until
    /// `deadline`, classifying every way it can fail. Runs inside the
    /// engine's runtime (see [`engine::InEngine`]).
    async fn run<R>(
        &self,
        deadline: Instant,
        registering: bool,
        f: impl AsyncFnOnce(&worlds::Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let stalled = self.engine.stalled_calls();
        if stalled >= engine::MAX_STALLED_CALLS {
            return Err(CallError::Unavailable(format!(
                "{stalled} earlier calls are still blocked in host calls (a FIFO or an \
                 unresponsive file system in a granted directory?); try again later"
            )));
        }
        let limit = self.limits.timeout;
        let mut state = self
            .spares
            .take(&self.grants, &self.limits)
            .map_err(|e| CallError::Unavailable(e.to_string()))?;
        if !registering {
            state.exec = Some(exec::ExecAccess {
                context: self.exec.clone(),
                deadline,
            });
            state.http = crate::http::OutboundHttp::new(self.http.clone(), deadline);
        }
        state.deadline = Some(deadline);
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|state| &mut state.cap);
        store.set_hostcall_fuel(lift::fuel(&self.limits, registering));
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|store| {
            if store
                .data()
                .deadline
                .is_none_or(|deadline| Instant::now() >= deadline)
            {
                Ok(UpdateDeadline::Interrupt)
            } else {
                // Yield at every tick so that one busy guest cannot hold an
                // executor thread and starve other calls.
                Ok(UpdateDeadline::Yield(1))
            }
        });

        // The epoch deadline stops a guest that is running; the timeout
        // stops one that is blocked in a host call (a slow read, say). The
        // grace lets the epoch fire first, so that it names the cause.
        let grace = engine::EPOCH_TICK * 5;
        let outcome = engine::InEngine::new(&self.engine, deadline + grace, async {
            let instance = self.pre.instantiate(&mut store, registering).await;
            match instance {
                Ok(instance) => Ok(f(&instance, &mut store).await),
                Err(e) => Err(e),
            }
        })
        .await;
        let during = if registering { "register" } else { "call" };
        store.data().stdout.emit(&self.name, "stdout", during);
        store.data().stderr.emit(&self.name, "stderr", during);
        let outcome = match outcome {
            Err(_) => {
                // The guest is blocked in a host call that runs on: note its
                // descriptors, so that the engine can tell while it does.
                let abandoned = handles::Abandoned::of(store.data_mut().table());
                drop(store);
                self.engine.stalled().record(abandoned);
                return Err(CallError::Timeout { limit });
            }
            Ok(Err(instantiate_error)) => Err(self.classify(&store, instantiate_error, true)),
            Ok(Ok(outcome)) => outcome.map_err(|e| self.classify(&store, e, false)),
        };
        self.spares.give_back(store.into_data(), &self.limits);
        outcome
    }
}

impl ToolSource for Plugin {
    fn kind(&self) -> &'static str {
        "plugin"
    }

    fn call_limits(&self) -> CallLimits {
        CallLimits::new(self.limits.timeout, self.limits.arguments_bytes)
    }

    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: &'a serde_json::Value,
        deadline: Instant,
    ) -> CallFuture<'a> {
        // The invoker has just checked the deadline (after validation).
        Box::pin(self.call_before(server, tool, arguments, deadline))
    }

    /// Its own tools, as it registered them when it was loaded (a
    /// component does not change while it is loaded).
    fn list_tools(&self) -> ListFuture<'_> {
        let tools = self.tools.clone();
        Box::pin(std::future::ready(Ok(tools)))
    }
}
