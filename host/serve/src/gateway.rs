//! The gateway: a [`Host`]'s registry as an MCP server, one handler per
//! client connection over the same shared state.
//!
//! Invariants:
//! - Every call goes through the host's invoker (validation, pins,
//!   retries, confinement, untrusted rendering); the gateway only maps
//!   names and shapes. The text content is the rendered untrusted block,
//!   `structuredContent` the JSON the tool's output schema admitted.
//! - A refusal of the host (`unknown_tool`, `invalid_arguments`,
//!   `schema_changed`, `denied`, ...) is an `isError` result whose `_meta`
//!   holds its code under [`CODE_META`]; only a request that is not a
//!   well-formed `tools/call` is a JSON-RPC error.
//! - An iteration (upstream MCP servers re-list their tools before the
//!   first call to them) begins with a client's call at most once per
//!   `relist_interval_ms`, so that a busy client does not re-list on
//!   every call and an idle one sees changes on its next call.
//! - What is served (the host and the client sets) is one immutable
//!   [`Served`], swapped whole by a reload ([`Gateway::swap`]): a call
//!   takes the one in place when it starts and finishes on it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use rmcp::model::{CallToolResult, ContentBlock};
use tiny_harness_core::render::render_result;
use tiny_harness_host::{
    CallError, CallOutcome, Caller, ContentPart, Host, Registry, ToolCall, ToolResult,
};

use crate::clients::{ClientSets, View, Views};
use crate::config::{ServeConfig, ServeError, ServeLimits};
use crate::metrics::Metrics;

/// The `_meta` key of a refusal's code in an `isError` result.
pub const CODE_META: &str = "io.tiny-harness/code";

/// The `_meta` key of an embedded text resource's own media type (the
/// gateway sends its text inside an untrusted block, as `text/plain`).
pub const MEDIA_TYPE_META: &str = "io.tiny-harness/mimeType";

/// Which client a request comes from, as the HTTP layer found it (in the
/// request's extensions).
#[derive(Debug, Clone)]
pub(crate) struct ClientName(pub(crate) Arc<str>);

/// A host served to MCP clients. Cheap to clone; clones share
/// everything.
#[derive(Debug, Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

/// What is served now: a host and the client sets checked against it.
#[derive(Debug)]
pub(crate) struct Served {
    pub(crate) host: Host,
    pub(crate) clients: ClientSets,
    pub(crate) config: ServeConfig,
    /// The views of the last registry snapshot seen.
    views: Mutex<Option<(Arc<Registry>, Arc<Views>)>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    served: RwLock<Arc<Served>>,
    /// The limits given at start (the HTTP layer is built with them).
    limits: ServeLimits,
    /// When the last iteration began.
    iteration: Mutex<Instant>,
    /// Bumped on every change of what clients may list.
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    /// Calls served.
    calls: AtomicU64,
    /// What `/metrics` shows.
    metrics: Arc<Metrics>,
}

impl Served {
    fn new(host: Host, config: ServeConfig) -> Result<Served, ServeError> {
        let clients = ClientSets::new(config.clients.clone(), &host.registry())?;
        Ok(Served {
            host,
            clients,
            config,
            views: Mutex::new(None),
        })
    }

    /// `client`'s view of the registry as it is now.
    pub(crate) fn view(&self, client: &str) -> Arc<View> {
        self.views().of(client)
    }

    /// Makes the views of the registry as it is now (with each search
    /// client's index), if they are not made yet: done when the registry
    /// is known to have changed, so that no request waits for it.
    pub(crate) fn prime(&self) {
        drop(self.views());
    }

    /// Every client's view of the registry as it is now.
    fn views(&self) -> Arc<Views> {
        let registry = self.host.registry();
        let mut cached = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        let views = match &*cached {
            Some((seen, views)) if Arc::ptr_eq(seen, &registry) => views.clone(),
            _ => {
                let views = Arc::new(self.clients.views(&registry));
                *cached = Some((registry, views.clone()));
                views
            }
        };
        drop(cached);
        views
    }
}

impl Gateway {
    /// A gateway over `host` with what `config` says of clients and
    /// limits, checked against the host's registry: a client set that
    /// matches no tool, or a rename that names a tool outside its set or
    /// collides with another name, is refused.
    pub fn new(host: Host, config: ServeConfig) -> Result<Gateway, ServeError> {
        let limits = config.limits;
        let served = Served::new(host, config)?;
        let iteration = Instant::now()
            .checked_sub(limits.relist_interval)
            .unwrap_or_else(Instant::now);
        let gateway = Gateway {
            inner: Arc::new(Inner {
                served: RwLock::new(Arc::new(served)),
                limits,
                iteration: Mutex::new(iteration),
                changes: tokio::sync::watch::Sender::new(0),
                calls: AtomicU64::new(0),
                metrics: Arc::new(Metrics::default()),
            }),
        };
        crate::upstream::forward(&gateway, &gateway.served());
        gateway.served().prime();
        Ok(gateway)
    }

    /// What is served now.
    pub(crate) fn served(&self) -> Arc<Served> {
        self.inner
            .served
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Serves `host` with `config`'s client sets from now on, if they fit
    /// its registry; calls in flight finish on the host they started on.
    /// Clients are told that the tool list changed. The limits and
    /// allowlists stay those given at start. On an error nothing changes.
    pub fn swap(&self, host: Host, config: ServeConfig) -> Result<(), ServeError> {
        let served = Arc::new(Served::new(host, config)?);
        *self
            .inner
            .served
            .write()
            .unwrap_or_else(PoisonError::into_inner) = served.clone();
        crate::upstream::forward(self, &served);
        self.inner.metrics.reload(true);
        self.tools_changed();
        Ok(())
    }

    /// Tells every listening client that the tool list changed (once the
    /// views of the registry as it is now are made).
    pub fn tools_changed(&self) {
        self.served().prime();
        self.inner
            .changes
            .send_modify(|generation| *generation += 1);
    }

    /// The host served now.
    pub fn host(&self) -> Host {
        self.served().host.clone()
    }

    /// The limits in force (those given at start).
    pub fn limits(&self) -> &ServeLimits {
        &self.inner.limits
    }

    /// Whether the config has an entry for `client`.
    pub fn has_client(&self, client: &str) -> bool {
        self.served().clients.has(client)
    }

    /// The clients the config names.
    pub fn client_names(&self) -> Vec<String> {
        self.served().clients.names().map(str::to_owned).collect()
    }

    /// The gateway's metrics.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The gateway's metrics in the Prometheus text format (`/metrics`).
    pub fn metrics_text(&self) -> String {
        self.inner.metrics.render()
    }

    /// How many calls the gateway has served.
    pub fn calls(&self) -> u64 {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// The handler of one connection of `client` (stdio), or of requests
    /// that say who they are from (HTTP, `None`).
    pub(crate) fn handler(&self, client: Option<&str>) -> crate::handler::Handler {
        crate::handler::Handler::new(self.clone(), client)
    }

    /// [`Gateway::handler`], its subscriptions ending when `closed` is
    /// cancelled (made per request: no token is made to be replaced).
    pub(crate) fn handler_closed_by(
        &self,
        client: Option<&str>,
        closed: tokio_util::sync::CancellationToken,
    ) -> crate::handler::Handler {
        crate::handler::Handler::with_closed(self.clone(), client, closed)
    }

    /// Begins an iteration of `host` if the last began at least
    /// `relist_interval_ms` ago.
    fn maybe_begin_iteration(&self, host: &Host) {
        let now = Instant::now();
        let mut last = self
            .inner
            .iteration
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if now.duration_since(*last) >= self.inner.limits.relist_interval {
            *last = now;
            drop(last);
            host.begin_iteration();
        }
    }

    /// Runs `client`'s call of the tool it names `wire`, as an outcome,
    /// with the registry name it resolved to (`None`: not one of its
    /// tools).
    pub(crate) async fn call(
        &self,
        client: &str,
        id: String,
        wire: &str,
        arguments: serde_json::Value,
    ) -> (CallOutcome, Option<String>) {
        self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let served = self.served();
        let view = served.view(client);
        let Some(name) = view.names.get(wire) else {
            let unknown = CallError::UnknownTool {
                name: wire.to_owned(),
            };
            return (CallOutcome::new(id, wire, Err(unknown)), None);
        };
        self.maybe_begin_iteration(&served.host);
        let call = ToolCall {
            id,
            name: name.clone(),
            arguments,
        };
        let outcome = served
            .host
            .invoke_from(&call, Caller::new(Some(wire), Some(client)))
            .await;
        (outcome, Some(call.name))
    }
}

/// The MCP result of an outcome: the untrusted block as text, then each
/// image or audio part the tool returned as that kind of content (the
/// block describes them; a client that shows media gets the media).
pub(crate) fn result_of(outcome: &CallOutcome) -> CallToolResult {
    let mut content = vec![ContentBlock::text(outcome.render())];
    if let Ok(result) = &outcome.result {
        content.extend(
            result
                .content
                .iter()
                .filter_map(|part| data_block(outcome, result.is_error, part)),
        );
    }
    let mut result = if outcome.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = outcome.structured().cloned();
    if let Err(error) = &outcome.result {
        let mut meta = rmcp::model::MetaObject::default();
        meta.0.insert(CODE_META.to_owned(), error.code().into());
        result.meta = Some(meta);
    }
    result
}

/// The block that passes `part` on as data after the untrusted block, if
/// it is one: an image or audio clip as it came, an embedded resource's
/// data as it came, an embedded resource's text inside an untrusted block
/// of its own (as `text/plain`, the source's media type in `_meta` under
/// [`MEDIA_TYPE_META`]): a client that hands a resource to a model hands
/// it delimited. Text, JSON and resource links are in the untrusted block
/// only.
fn data_block(outcome: &CallOutcome, is_error: bool, part: &ContentPart) -> Option<ContentBlock> {
    use rmcp::model::ResourceContents;
    match part {
        ContentPart::Media { media_type, data } if media_type.starts_with("image/") => {
            Some(ContentBlock::image(data.clone(), media_type.clone()))
        }
        ContentPart::Media { media_type, data } if media_type.starts_with("audio/") => {
            Some(ContentBlock::audio(data.clone(), media_type.clone()))
        }
        ContentPart::Resource {
            uri,
            media_type,
            blob: Some(blob),
            text: None,
        } => Some(ContentBlock::resource(
            ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                blob: blob.clone(),
                meta: None,
            },
        )),
        ContentPart::Resource {
            uri,
            media_type,
            text: Some(text),
            ..
        } => {
            let alone = ToolResult {
                content: vec![ContentPart::text(text.clone())],
                is_error,
            };
            let meta = media_type.as_ref().map(|media_type| {
                let mut meta = rmcp::model::MetaObject::default();
                meta.0
                    .insert(MEDIA_TYPE_META.to_owned(), media_type.clone().into());
                meta
            });
            Some(ContentBlock::resource(
                ResourceContents::TextResourceContents {
                    uri: uri.clone(),
                    mime_type: Some("text/plain".to_owned()),
                    text: render_result(&outcome.tool, &outcome.call_id, &alone),
                    meta,
                },
            ))
        }
        _ => None,
    }
}

/// The outcome code of a call, for logs and metrics.
pub(crate) fn outcome_code(outcome: &CallOutcome) -> &'static str {
    match &outcome.result {
        Ok(result) if result.is_error => "tool_error",
        Ok(_) => "ok",
        Err(error) => error.code(),
    }
}
