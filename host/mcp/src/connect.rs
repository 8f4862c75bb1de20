//! Opening one session with an MCP server, over its program's pipes or
//! streamable HTTP, and the protocol chores of an open session: listing
//! every page of tools, the 2026-07-28 change subscription, closing.
//!
//! Invariants:
//! - Every message the server sends is bounded: a stdio line, an HTTP body
//!   or SSE event at most twice the larger of the result and registration
//!   limits (at least rmcp's 16 MiB); a longer stdio line ends the session
//!   at once ([`super::bounded`]).
//! - HTTP redirects are never followed (a redirect could lead outside the
//!   grants); header values are marked sensitive.
//! - A listing stops as soon as it holds more tools than the limit, and
//!   after [`MAX_PAGES`] pages.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    ClientRequest, ListToolsRequest, PaginatedRequestParams, ProtocolVersion, ServerNotification,
    ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

use super::bounded::{BoundedLines, Cause, MAX_DEPTH, Tripped};
use super::child::Child;
use super::client::{Handler, Shared};
use super::launch::{Endpoint, Launch, Program, Target};
use super::owed::Counted;

mod failure;
pub use failure::Failure;

/// Pages of `tools/list` followed before a listing is refused.
pub const MAX_PAGES: usize = 1000;

/// One open session, and what it holds.
pub(super) struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    pub child: Option<Child>,
    /// The `subscriptions/listen` stream of a 2026-07-28 session.
    pub listener: Option<tokio::task::JoinHandle<()>>,
    /// Set when the server sent a message over the size limit or nested
    /// too deep (stdio only).
    pub tripped: Arc<Tripped>,
    /// Which connection of the source this is (1, 2, ...).
    pub generation: u64,
    /// The longest message it may send, in bytes.
    pub message_limit: usize,
    /// Why the protocol generation agreed is not the newest, when it
    /// is not.
    pub agreed_because: Option<String>,
    /// The login whose token an HTTP session's requests carry.
    pub login: Option<Arc<super::oauth::Attached>>,
}

/// Starts or reaches `launch`'s server and opens a session with it, as
/// connection number `generations + 1` of source `server`, taking messages
/// of at most `largest` bytes from it.
///
/// The host asks for 2026-07-28 with `server/discover` and falls back to
/// `initialize` at 2025-11-25 when the server answers with an error (rmcp
/// does this) or with something that is no discover result: an empty
/// result, another result, versions the host does not speak (real servers
/// do all three). That fallback needs a fresh transport, so a program is
/// started again and an HTTP server reached again.
pub(super) async fn connect(
    launch: &Launch,
    handler: Handler,
    largest: usize,
    server: &str,
    generations: &AtomicU64,
) -> Result<Connection, Failure> {
    // A server run from its install starts only from the install as it was
    // put in place: checked before anything is started, once per session.
    if let Some(check) = launch.store_check.clone() {
        let checked = match tokio::task::spawn_blocking(move || check.run()).await {
            Ok(checked) => checked.map_err(|e| Failure::caused(e.to_string(), e)),
            Err(e) => Err(Failure::caused(
                format!("the check of its install failed: {e}"),
                e,
            )),
        };
        if let Err(failure) = checked {
            return Err(Failure {
                settled: true,
                ..failure
            });
        }
    }
    let auto = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    let (mut open, why) = match open(launch, handler.clone(), auto, largest, server).await {
        Ok(open) => {
            let why = open
                .service
                .peer()
                .peer_info()
                .filter(|i| i.protocol_version.has_initialize())
                .map(|_| {
                    "the server answered server/discover with an error or not at all, so initialize"
                        .to_owned()
                });
            (open, why)
        }
        Err(Refused {
            fallback: Some(answered),
            failure,
        }) => {
            tracing::debug!(target: "tiny_harness::mcp", server, "falling back to initialize: {}", failure.reason);
            let open = open(launch, handler, ClientLifecycleMode::Initialize, largest, server)
                .await
                .map_err(|refused| Failure {
                    reason: format!(
                        "the server answered server/discover with {answered}, and initialize then failed: {}",
                        refused.failure.reason
                    ),
                    ..refused.failure
                })?;
            let why = format!("the server answered server/discover with {answered}, so initialize");
            (open, Some(why))
        }
        Err(refused) => return Err(refused.failure),
    };
    open.generation = generations.fetch_add(1, Ordering::SeqCst) + 1;
    open.agreed_because = why;
    Ok(open)
}

/// A session that did not open: why, and, when the server answered
/// `server/discover` with something that is no discover result, what it
/// answered (the fallback to `initialize` is then worth a try).
struct Refused {
    failure: Failure,
    fallback: Option<String>,
}

impl From<Failure> for Refused {
    fn from(failure: Failure) -> Refused {
        Refused {
            failure,
            fallback: None,
        }
    }
}

impl From<String> for Refused {
    fn from(reason: String) -> Refused {
        Refused::from(Failure::from(reason))
    }
}

/// What a failed handshake says about the server's `server/discover`
/// answer, when it was an answer but no discover result.
fn discover_answer(error: &ClientInitializeError) -> Option<String> {
    use rmcp::model::ServerResult;
    match error {
        ClientInitializeError::ExpectedInitResult(Some(ServerResult::EmptyResult(_))) => {
            Some("an empty result".to_owned())
        }
        ClientInitializeError::ExpectedInitResult(_) => {
            Some("a result that is not a discover result".to_owned())
        }
        ClientInitializeError::ExpectedInitResponse(_) => {
            Some("a message that is not a response to it".to_owned())
        }
        ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            Some("a response to another request".to_owned())
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => {
            let listed: Vec<String> = server_supported
                .iter()
                .take(8)
                .map(|v| {
                    tiny_harness_core::display::one_line(
                        &v.to_string().chars().take(32).collect::<String>(),
                    )
                    .into_owned()
                })
                .collect();
            Some(format!(
                "only versions the host does not speak ({})",
                listed.join(", ")
            ))
        }
        _ => None,
    }
}

/// Opens one session with `launch`'s server under `lifecycle`.
async fn open(
    launch: &Launch,
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    largest: usize,
    server: &str,
) -> Result<Connection, Refused> {
    // Room for the largest message, and never less than rmcp's own
    // default.
    let message_limit = largest.max(rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH);
    match &launch.target {
        Target::Process(process) => {
            open_process(process, handler, lifecycle, message_limit, server).await
        }
        Target::Http(endpoint) => {
            open_http(launch, endpoint, handler, lifecycle, message_limit).await
        }
    }
}

/// Starts the server's program and opens a session over its stdio.
async fn open_process(
    process: &Program,
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    message_limit: usize,
    server: &str,
) -> Result<Connection, Refused> {
    let (mut child, stdout, stdin) = Child::spawn(process, server).map_err(|e| {
        Failure::caused(
            format!("cannot start {}: {e}", process.program.display()),
            e,
        )
    })?;
    let tripped = Arc::new(Tripped::default());
    let stdout = BoundedLines::new(stdout, message_limit, server, tripped.clone());
    let transport = AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(message_limit);
    let transport = Counted::new(transport, handler.shared.owed.clone());
    match handler.serve_with_lifecycle(transport, lifecycle).await {
        Ok(service) => {
            offered(&service)?;
            Ok(Connection {
                service,
                child: Some(child),
                listener: None,
                tripped,
                generation: 0,
                message_limit,
                agreed_because: None,
                login: None,
            })
        }
        Err(e) => {
            let fallback = discover_answer(&e);
            if fallback.is_some() {
                child.shutdown().await;
                return Err(Refused {
                    failure: Failure::from(plain(&e)),
                    fallback,
                });
            }
            // Let the exit and its last words arrive.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let exited = child
                .exit_status()
                .map(|s| format!(" (the program exited: {s})"))
                .unwrap_or_default();
            Err(Refused::from(Failure {
                reason: format!("it did not start an MCP session: {}{exited}", plain(&e)),
                said: child.stderr_tail(),
                login: None,
                challenge: None,
                settled: false,
                cause: Some(Box::new(e)),
            }))
        }
    }
}

/// Opens a session with the server at `endpoint`, with the token its login
/// (or the host, for a machine grant) holds; a rejected token is renewed
/// once.
async fn open_http(
    launch: &Launch,
    endpoint: &Endpoint,
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    message_limit: usize,
) -> Result<Connection, Refused> {
    let mut login = super::oauth::attach(endpoint.auth())
        .await
        .map_err(|e| Failure::caused(e.to_string(), e))?;
    let logged_in = login.is_some();
    let mut served = serve_http(
        endpoint,
        handler.clone(),
        lifecycle.clone(),
        login.clone(),
        message_limit,
    )
    .await?;
    // A token the server rejected: the handshake once more, with
    // the token a refresh replaced it by, or (for a token the host
    // obtains itself) a new one.
    if let Err(e) = &served
        && e.auth_challenge().is_some()
    {
        let replaced = login.as_ref().is_some_and(|l| l.take_replaced());
        let again = replaced || {
            let renewed = super::oauth::attach_anew(endpoint.auth())
                .await
                .map_err(|e| Failure::caused(e.to_string(), e))?;
            let obtained = renewed.is_some();
            if obtained {
                login = renewed;
            }
            obtained
        };
        if again {
            served = serve_http(endpoint, handler, lifecycle, login.clone(), message_limit).await?;
        }
    }
    let service = served.map_err(|e| {
        if let Some(challenge) = e.auth_challenge() {
            let refusal =
                super::oauth::refusal(&launch.server, endpoint.auth(), challenge, logged_in);
            return Refused::from(Failure {
                reason: refusal.reason,
                said: None,
                login: Some(refusal.login_would_help),
                challenge: Some(challenge.to_owned()),
                settled: false,
                cause: None,
            });
        }
        Refused {
            fallback: discover_answer(&e),
            failure: Failure::from(format!("it did not start an MCP session: {}", plain(&e))),
        }
    })?;
    offered(&service)?;
    Ok(Connection {
        service,
        child: None,
        listener: None,
        tripped: Arc::default(),
        generation: 0,
        message_limit,
        agreed_because: None,
        login,
    })
}

/// A session with the HTTP server at `endpoint`, its requests carrying
/// the token of `login` (refreshed by it) when there is one.
async fn serve_http(
    endpoint: &Endpoint,
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    login: Option<Arc<super::oauth::Attached>>,
    message_limit: usize,
) -> Result<Result<RunningService<RoleClient, Handler>, ClientInitializeError>, Refused> {
    let mut headers = HashMap::new();
    for (name, value) in &endpoint.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not an HTTP header name"))?;
        let mut value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not valid"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    // Redirects are not followed: a redirect could lead to a host the
    // grants do not allow.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Failure::caused(format!("cannot build an HTTP client: {e}"), e))?;
    let config = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str())
        .custom_headers(headers)
        .max_json_response_size(message_limit)
        .max_sse_event_size(message_limit);
    let client = super::oauth::session_client(client, login);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let transport = Counted::new(transport, handler.shared.owed.clone());
    Ok(handler.serve_with_lifecycle(transport, lifecycle).await)
}

/// Why a request on `open` failed, for people: `why` (often only
/// "Transport closed") with the cause the host knows, the limit the server
/// passed or how its program ended, and its last words.
pub(super) fn explain(open: &mut Connection, why: String) -> String {
    let cause = match open.tripped.cause() {
        Some(Cause::TooLong) => Some(format!(
            "the server sent a message over the host's limit of {} bytes (raise limits.registration_kib for listings, limits.result_kib for results)",
            open.message_limit
        )),
        Some(Cause::TooDeep) => Some(format!(
            "the server sent a message nested more than {MAX_DEPTH} levels deep"
        )),
        None => None,
    };
    let mut text = match cause {
        Some(cause) => format!("{why}: {cause}"),
        None => why,
    };
    if let Some(child) = open.child.as_mut() {
        if let Some(status) = child.exit_status() {
            text.push_str(&format!(" (the program exited: {status})"));
        }
        if let Some(said) = child.stderr_tail() {
            text.push_str(&format!("; its last words: {said}"));
        }
    }
    text
}

/// An rmcp error as one plain line: without the Rust type names rmcp puts
/// in transport errors (`Transport [rmcp::transport::worker::WorkerTransport<…>]
/// error: …`), which tell a user nothing.
pub(super) fn plain(error: &dyn std::fmt::Display) -> String {
    static TYPE_NAME: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r" ?\[[A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_:<>, ]*\]").ok()
    });
    let text = error.to_string();
    let text = match &*TYPE_NAME {
        Some(type_name) => type_name.replace_all(&text, ""),
        None => text.as_str().into(),
    };
    tiny_harness_core::display::one_line(&text).into_owned()
}

/// Refuses a session whose protocol version is none the host offered (a
/// server may answer anything, control characters included).
fn offered(service: &RunningService<RoleClient, Handler>) -> Result<(), Failure> {
    let Some(info) = service.peer().peer_info() else {
        return Ok(());
    };
    let version = &info.protocol_version;
    if ProtocolVersion::KNOWN_VERSIONS.contains(version) {
        return Ok(());
    }
    let known: Vec<String> = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .map(ToString::to_string)
        .collect();
    let answered: String = version.to_string().chars().take(64).collect();
    Err(Failure::from(format!(
        "it answered protocol version \"{}\", which the host did not offer (it speaks {})",
        tiny_harness_core::display::one_line(&answered),
        known.join(", ")
    )))
}

/// On a 2026-07-28 session, change notifications come only on a
/// `subscriptions/listen` stream: open one for `tools/list_changed` and
/// mark the source stale at each. Ends with the session (or at once, for a
/// server that does not offer it).
pub(super) async fn listen(peer: Peer<RoleClient>, shared: Arc<Shared>) {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let Ok(mut subscription) = peer.listen(filter).await else {
        return;
    };
    while let Ok(Some(notification)) = subscription.next().await {
        if matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ) {
            shared.tools_changed();
        }
    }
}

/// Every page of `tools/list`, as JSON, fresh from the server (never from
/// a cache), at most [`MAX_PAGES`] of them.
pub(super) async fn list_pages(
    peer: &Peer<RoleClient>,
    max_tools: usize,
) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let request = ListToolsRequest {
            method: Default::default(),
            params: Some(PaginatedRequestParams::default().with_cursor(cursor)),
            extensions: Default::default(),
        };
        let result = peer
            .send_request(ClientRequest::ListToolsRequest(request))
            .await
            .map_err(|e| format!("tools/list failed: {}", plain(&e)))?;
        let page = match result {
            ServerResult::ListToolsResult(page) => {
                serde_json::to_value(page).map_err(|e| e.to_string())?
            }
            ServerResult::CustomResult(custom) => custom.0,
            _ => return Err("tools/list returned something else than a list of tools".to_owned()),
        };
        let Value::Object(mut page) = page else {
            return Err("tools/list returned something else than an object".to_owned());
        };
        match page.remove("tools") {
            Some(Value::Array(listed)) => tools.extend(listed),
            _ => return Err("tools/list returned no list of tools".to_owned()),
        }
        if tools.len() > max_tools {
            // No need to read further pages: the listing is refused.
            return Err(format!(
                "it lists more than the {max_tools} tools allowed (raise limits.tools)"
            ));
        }
        cursor = match page.remove("nextCursor") {
            Some(Value::String(next)) => Some(next),
            _ => return Ok(tools),
        };
    }
    Err(format!(
        "tools/list went on for more than {MAX_PAGES} pages"
    ))
}

/// Ends a session: the transport is dropped (which closes a program's
/// stdin), then the program is given its grace period and its group killed.
pub(super) async fn close(connection: Connection) {
    let Connection {
        service,
        child,
        listener,
        ..
    } = connection;
    if let Some(listener) = listener {
        listener.abort();
    }
    // Cancelling the service drops the transport, which closes stdin.
    let _ = tokio::time::timeout(super::child::SHUTDOWN_GRACE, service.cancel()).await;
    if let Some(child) = child {
        child.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn transport_errors_lose_their_rust_type_names() {
        let raw = "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>] error: Client error: HTTP status client error (404 Not Found), when send initialize request";
        assert_eq!(
            super::plain(&raw),
            "Transport error: Client error: HTTP status client error (404 Not Found), when send initialize request"
        );
        assert_eq!(super::plain(&"a [b] c\nd"), "a [b] c\\nd");
    }
}
