//! One MCP server as a source of tools: a persistent session, reconnected
//! when it breaks, with retries only for idempotent tools.
//!
//! Invariants:
//! - One session per source, shared by every call; a call never opens a
//!   session of its own. A session that broke is replaced by the next call
//!   that needs it (one reconnect per call at most).
//! - Only a tool whose annotations say it is idempotent or read-only is
//!   retried, and only after a transport failure or a timeout: at most
//!   [`MAX_ATTEMPTS`] attempts in all, with jittered backoff, all within
//!   the call's deadline. An error result (`isError`) is a result.
//! - A call that runs out of time is abandoned, which sends
//!   `notifications/cancelled` to the server.
//! - The server's `tools/list_changed` re-lists lazily (before the next
//!   call); [`McpSource::tool_changes`] lets a gateway re-list at once.
//! - Dropping the source kills the server's process group; [`McpSource::shutdown`]
//!   first closes its stdin and gives it [`super::child::SHUTDOWN_GRACE`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use tiny_harness_core::registry::RegistrationLimits;
use tiny_harness_core::source::CallLimits;
use tiny_harness_core::tool::{CallError, ToolDefinition};

use super::client::{Handler, Shared};
use super::connect::{self, Connection, close, listen};
use super::convert::{self, Skipped};
use super::deadline::Kept;
use super::launch::{Launch, LaunchRefused};
use super::store::StoreError;
use super::watch::{Drift, Watch};

mod calls;
mod listing;
mod probe;
#[cfg(test)]
mod tests;

pub use probe::Unauthenticated;
pub use probe::{Once, once};

/// Attempts of one idempotent call, the first included.
pub const MAX_ATTEMPTS: u32 = 3;

pub use super::connect::MAX_PAGES;

/// Why a source could not be listed, or its install checked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The install it runs from is not as installed or pinned.
    #[error(transparent)]
    Install(#[from] StoreError),
    /// It could not be started or reached, or its session ended: why, with
    /// the server's last words where it left any.
    #[error("{reason}")]
    Unavailable {
        /// Why, in one line.
        reason: String,
        /// The error behind it, when its start failed on one (a program
        /// that could not be run, an install whose check failed).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// `tools/list` did not finish within the source's timeout.
    #[error("tools/list did not finish within {} ms", .0.as_millis())]
    ListTimeout(Duration),
    /// What it listed was refused.
    #[error(transparent)]
    Listing(#[from] convert::ListingError),
}

impl SourceError {
    /// [`SourceError::Unavailable`] for `reason`, with no error behind it.
    pub fn unavailable(reason: String) -> SourceError {
        SourceError::Unavailable {
            reason,
            source: None,
        }
    }
}

/// Why no session could be had: the error a call gets, and the error
/// behind a failed start, for a listing's source chain.
struct NoSession {
    error: CallError,
    cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl From<CallError> for Box<NoSession> {
    fn from(error: CallError) -> Box<NoSession> {
        Box::new(NoSession { error, cause: None })
    }
}

/// How a source's session stands, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Not started yet.
    NotStarted,
    /// A session is open.
    Connected,
    /// The server said its tools changed; it is re-listed before the next call.
    Stale,
    /// The session broke (and why); the next call opens a new one.
    Disconnected(String),
    /// The source cannot be used, and why.
    Failed(String),
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            State::NotStarted => f.write_str("not started"),
            State::Connected => f.write_str("connected"),
            State::Stale => f.write_str("stale"),
            State::Disconnected(why) => {
                write!(f, "disconnected ({why}); reconnects on the next call")
            }
            State::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// What the host knows of a source, for `tiny-harness plugins`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Status {
    /// `stdio` or `streamable-http` (empty when the declaration was refused
    /// before its transport was known).
    pub transport: &'static str,
    /// The program and arguments, or the URL, with no secret in it.
    pub target: String,
    /// The protocol version agreed, once connected.
    pub protocol: Option<String>,
    /// Why that version is not the newest the host speaks, when it is not
    /// (the server's answer to `server/discover`).
    pub protocol_because: Option<String>,
    /// The session's state.
    pub state: State,
    /// The tools registered from it (its pins), by name.
    pub tools: Vec<String>,
    /// The tools it listed that were not registered, with reasons.
    pub skipped: Vec<Skipped>,
}

/// The limits one MCP source runs under (from its plugin's).
#[derive(Debug, Clone, Copy)]
pub struct SourceLimits {
    /// The whole of one call, retries included.
    pub call: CallLimits,
    /// Result size and parts.
    pub result_bytes: usize,
    /// Most parts per result.
    pub result_parts: usize,
    /// What one listing may register.
    pub registration: RegistrationLimits,
}

impl SourceLimits {
    /// The longest message the session takes from the server: room for
    /// the largest result or listing these limits allow (a session that
    /// receives a longer one ends).
    pub(crate) fn message_bytes(&self) -> usize {
        self.result_bytes
            .max(self.registration.total_bytes)
            .saturating_mul(2)
    }
}

/// An MCP server reached for a plugin: a [`ToolSource`](tiny_harness_core::source::ToolSource).
pub struct McpSource {
    plugin: String,
    server: String,
    launch: Option<Launch>,
    limits: SourceLimits,
    shared: Arc<Shared>,
    connection: tokio::sync::Mutex<Option<Connection>>,
    generations: std::sync::atomic::AtomicU64,
    status: Mutex<Status>,
    watch: RwLock<Watch>,
    /// The host's iteration counter (see `Host::begin_iteration`).
    iterations: Arc<AtomicU64>,
    /// The iteration whose first call re-listed; `u64::MAX` for never.
    checked: AtomicU64,
    relisting: tokio::sync::Mutex<()>,
    /// The server's last refusal of the host's credentials, when that is
    /// why it could not be started: the host's own words, and whether a
    /// login would help.
    refused: Mutex<Option<(String, bool)>>,
    /// The last start was refused by the host before anything ran (a
    /// changed install): a call is not tried again for it.
    settled: AtomicBool,
    /// The last call's deadline, kept so that the next one's wakes nothing.
    kept: Kept,
}

impl std::fmt::Debug for McpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSource")
            .field("plugin", &self.plugin)
            .field("server", &self.server)
            .field("launch", &self.launch)
            .finish_non_exhaustive()
    }
}

impl McpSource {
    /// A source for server `server` of `plugin`, to be reached as `launch`
    /// says, or failed for the reason given (a declaration its grants
    /// refuse is shown with the others, never silently dropped).
    ///
    /// `iterations` is the host's loop-iteration counter: before the first
    /// call of each iteration the source re-lists its tools once and
    /// refuses those that differ from their pins.
    pub fn new(
        plugin: &str,
        server: &str,
        launch: Result<Launch, LaunchRefused>,
        limits: SourceLimits,
        iterations: Arc<AtomicU64>,
    ) -> McpSource {
        let (launch, state, transport, target) = match launch {
            Ok(launch) => {
                let (transport, target) = (launch.transport(), launch.describe());
                (Some(launch), State::NotStarted, transport, target)
            }
            Err(why) => (None, State::Failed(why.to_string()), "", String::new()),
        };
        McpSource {
            plugin: plugin.to_owned(),
            server: server.to_owned(),
            launch,
            limits,
            shared: Arc::new(Shared::default()),
            kept: Kept::default(),
            connection: tokio::sync::Mutex::new(None),
            generations: std::sync::atomic::AtomicU64::new(0),
            status: Mutex::new(Status {
                transport,
                target,
                protocol: None,
                protocol_because: None,
                state,
                tools: Vec::new(),
                skipped: Vec::new(),
            }),
            watch: RwLock::new(Watch::default()),
            iterations,
            checked: AtomicU64::new(u64::MAX),
            relisting: tokio::sync::Mutex::new(()),
            refused: Mutex::new(None),
            settled: AtomicBool::new(false),
        }
    }

    /// Pins exactly `tools` (what is registered for this source): calls
    /// are checked against these from now on.
    pub fn pin(&self, tools: Vec<ToolDefinition>) {
        if let Ok(mut watch) = self.watch.write() {
            watch.pin(tools);
        }
    }

    /// The pinned definitions.
    pub fn pinned(&self) -> Vec<ToolDefinition> {
        self.watch.read().map(|w| w.pinned()).unwrap_or_default()
    }

    /// What the server listed last, if it has been listed.
    pub fn listed(&self) -> Option<Vec<ToolDefinition>> {
        self.watch
            .read()
            .ok()
            .and_then(|w| w.listed().map(<[_]>::to_vec))
    }

    /// How the last listing differs from the pins.
    pub fn drift(&self) -> Drift {
        self.watch.read().map(|w| w.drift()).unwrap_or_default()
    }

    /// What the host starts or reaches for it, when its declaration was
    /// granted.
    pub fn launch(&self) -> Option<&Launch> {
        self.launch.as_ref()
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Checks the install this server runs from as its next start would
    /// (the cheap check, or every byte under `--locked`), without starting
    /// it: a server not started yet whose install was changed is marked
    /// failed with why. `Ok` for a server that runs from no install, and
    /// for one that started (its start checked it).
    pub fn check_install(&self) -> Result<(), StoreError> {
        let Some(check) = self.launch.as_ref().and_then(|l| l.store_check.as_ref()) else {
            return Ok(());
        };
        // A server that started has been checked by its start.
        if self.status().state != State::NotStarted {
            return Ok(());
        }
        check
            .run()
            .inspect_err(|why| self.set_status(|s| s.state = State::Failed(why.to_string())))
    }

    /// Whether its last start was refused before anything ran.
    pub(crate) fn settled(&self) -> bool {
        self.settled.load(Ordering::SeqCst)
    }

    /// The plugin it is reached for.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// What its calls and listings may take.
    pub fn limits(&self) -> &SourceLimits {
        &self.limits
    }

    /// How the source stands.
    pub fn status(&self) -> Status {
        let mut status = self
            .status
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|e| e.into_inner().clone());
        status.tools = self.pinned().into_iter().map(|t| t.name).collect();
        if status.state == State::Connected
            && let Ok(connection) = self.connection.try_lock()
            && connection.as_ref().is_none_or(|c| c.service.is_closed())
        {
            status.state = State::Disconnected("the server closed the session".to_owned());
        }
        if status.state == State::Connected && self.shared.stale.load(Ordering::SeqCst) {
            status.state = State::Stale;
        }
        status
    }

    /// The last progress notifications the server sent (at most 64 are
    /// kept), oldest first, as JSON, for a gateway to pass on.
    pub fn progress(&self) -> Vec<Value> {
        self.shared
            .progress()
            .into_iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect()
    }

    /// How many log messages the server has sent (the first 1,000 go to
    /// `tracing`, the rest are only counted).
    pub fn log_messages(&self) -> usize {
        self.shared.log_messages()
    }

    /// Marks the source failed for `why` (its tools were refused).
    pub fn fail(&self, why: String) {
        self.pin(Vec::new());
        self.set_status(|s| s.state = State::Failed(why));
    }

    /// Closes the session: the server's stdin is closed, it is given a
    /// grace period to exit, then its process group is killed.
    pub async fn shutdown(&self) {
        self.kept.clear();
        let connection = self.connection.lock().await.take();
        if let Some(connection) = connection {
            close(connection).await;
        }
        self.set_status(|s| {
            if s.state == State::Connected {
                s.state = State::NotStarted;
            }
        });
    }

    fn timeout(&self) -> Duration {
        self.launch
            .as_ref()
            .map_or(self.limits.call.timeout, |l| l.timeout)
    }

    fn set_status(&self, change: impl FnOnce(&mut Status)) {
        if let Ok(mut status) = self.status.lock() {
            change(&mut status);
        }
    }

    /// The session's peer, connecting first when there is no open session.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), CallError> {
        self.session().await.map_err(|no| no.error)
    }

    /// [`McpSource::peer`], with the error behind a failed start.
    async fn session(&self) -> Result<(Peer<RoleClient>, u64), Box<NoSession>> {
        let connection = self.connection.lock().await;
        if let Some(open) = connection.as_ref()
            && !open.service.is_closed()
        {
            return Ok((open.service.peer().clone(), open.generation));
        }
        // Opening a session is rare and its future is large (the start,
        // the handshake, a login): boxed, so that a call's own future,
        // allocated for every call, stays small.
        Box::pin(self.open(connection)).await
    }

    /// Opens a session in place of `connection`'s closed one, if any.
    async fn open(
        &self,
        mut connection: tokio::sync::MutexGuard<'_, Option<Connection>>,
    ) -> Result<(Peer<RoleClient>, u64), Box<NoSession>> {
        if let Some(broken) = connection.take() {
            close(broken).await;
            self.set_status(|s| s.state = State::Disconnected("the session had closed".to_owned()));
        }
        let launch = self
            .launch
            .as_ref()
            .ok_or_else(|| CallError::Unavailable(self.status().state.to_string()))?;
        let opened = tokio::time::timeout(
            launch.start_timeout,
            connect::connect(
                launch,
                self.handler(launch),
                self.limits.message_bytes(),
                &self.server,
                &self.generations,
            ),
        )
        .await
        .unwrap_or_else(|_| {
            Err(connect::Failure::from(format!(
                "it did not finish starting within {} ms (its start_timeout_ms)",
                launch.start_timeout.as_millis()
            )))
        });
        match opened {
            Ok(open) => {
                self.settled.store(false, Ordering::SeqCst);
                let peer = open.service.peer().clone();
                let generation = open.generation;
                if generation > 1 {
                    // A new session may be a new server: list it again.
                    self.shared.stale.store(true, Ordering::SeqCst);
                }
                let protocol = peer.peer_info().map(|i| i.protocol_version.to_string());
                let because = open.agreed_because.clone();
                self.set_status(|s| {
                    s.state = State::Connected;
                    s.protocol = protocol;
                    s.protocol_because = because;
                });
                let modern = peer
                    .peer_info()
                    .is_some_and(|i| !i.protocol_version.has_initialize());
                let mut open = open;
                if modern {
                    open.listener = Some(tokio::spawn(listen(peer.clone(), self.shared.clone())));
                }
                *connection = Some(open);
                Ok((peer, generation))
            }
            Err(mut failure) => {
                if let Some(said) = &failure.said {
                    tracing::warn!(target: "tiny_harness::mcp", server = %self.server, "its last words: {said}");
                }
                self.settled.store(failure.settled, Ordering::SeqCst);
                // A confined program that did not start may have been
                // denied what it needs: say so, and how to find out.
                if let super::launch::Target::Process(program) = &launch.target
                    && program.policy.is_some()
                    && !failure.settled
                {
                    failure.reason.push_str(&format!(
                        " (it ran confined: tiny-harness mcp doctor {} names what it was denied)",
                        self.server
                    ));
                }
                self.set_status(|s| s.state = State::Failed(failure.detailed()));
                if let Ok(mut refused) = self.refused.lock() {
                    *refused = failure.login.map(|helps| (failure.reason.clone(), helps));
                }
                let cause = failure.cause.take();
                let error = match failure.login {
                    Some(true) => CallError::LoginRequired(failure.reason),
                    Some(false) => CallError::Denied(failure.reason),
                    None => CallError::Unavailable(failure.for_model()),
                };
                Err(Box::new(NoSession { error, cause }))
            }
        }
    }

    fn handler(&self, launch: &Launch) -> Handler {
        Handler {
            server: format!("{}/{}", self.plugin, self.server).into(),
            shared: self.shared.clone(),
            protocol: ProtocolVersion::LATEST_WITH_INITIALIZE,
            roots: launch.roots.clone().into(),
        }
    }
}
