//! An upstream MCP server's own tool changes, passed on to the gateway's
//! clients: when a server the served host reaches says its tools changed
//! (`notifications/tools/list_changed` on its session, or on its
//! `subscriptions/listen` stream at 2026-07-28), the gateway lists them
//! again at once and then tells its clients that the tool list changed.
//!
//! Invariants:
//! - Pins still rule. The re-list only observes the server's listing
//!   against the pins: clients are still shown the pinned definitions,
//!   and a tool that changed or went is refused (`schema_changed`) until
//!   `pins update`. Clients are told after every re-list that a server's
//!   notification caused, whatever it found (a failed re-list included:
//!   the source is then failed and its tools refused), so that they list
//!   again and see what they may call.
//! - Bounded: one task per MCP source of the host served. A source's
//!   notifications coalesce (a watch keeps the last count), its re-lists
//!   run one after the other, and a re-list starts at most once per
//!   `relist_interval_ms`: a server that floods notifications costs at
//!   most one re-list, and one notification to each client, per interval.
//! - No task outlives what it watches: it holds the gateway, the host
//!   served and the source only weakly, and ends when the gateway is
//!   dropped, when a reload swaps another host in ([`Gateway::swap`]
//!   tells the clients, which wakes it), or when its source is gone.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tiny_harness_core::display::one_line;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::gateway::{Gateway, Inner, Served};

/// Spawns, for each MCP source of `served` (what `gateway` serves from
/// now on), the task that passes its tool changes on. Without a tokio
/// runtime nothing is spawned, and a warning says so.
pub(crate) fn forward(gateway: &Gateway, served: &Arc<Served>) {
    let sources: Vec<_> = served
        .host
        .mcp_sources()
        .into_iter()
        // A declaration its grants refused never connects.
        .filter(|(_, source)| source.launch().is_some())
        .collect();
    if sources.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(
            target: "tiny_harness::serve",
            "no tokio runtime: upstream MCP servers' tool changes are not passed on to clients"
        );
        return;
    };
    for (plugin, source) in sources {
        let upstream = Upstream {
            name: format!("{plugin}/{}", source.server()),
            changes: source.tool_changes(),
            source: Arc::downgrade(&source),
            gateway: Arc::downgrade(&gateway.inner),
            served: Arc::downgrade(served),
            swaps: gateway.inner.changes.subscribe(),
            gap: gateway.limits().relist_interval,
        };
        runtime.spawn(upstream.run());
    }
}

/// One upstream source, watched for one host served.
struct Upstream {
    /// `<plugin>/<server>`, for logs.
    name: String,
    /// The source's count of the server's change notifications.
    changes: watch::Receiver<u64>,
    source: Weak<tiny_harness_host::mcp::McpSource>,
    gateway: Weak<Inner>,
    /// What was served when the task began.
    served: Weak<Served>,
    /// The gateway's own changes: a swap is one.
    swaps: watch::Receiver<u64>,
    /// The least time from one re-list's start to the next.
    gap: Duration,
}

impl Upstream {
    async fn run(mut self) {
        loop {
            tokio::select! {
                changed = self.changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = swapped_out(&mut self.swaps, &self.gateway, &self.served) => return,
            }
            let began = Instant::now();
            let Some(source) = self.source.upgrade() else {
                return;
            };
            let relisted = source.relist().await;
            drop(source);
            let Some(gateway) = self.gateway.upgrade().map(|inner| Gateway { inner }) else {
                return;
            };
            if !serves(&self.gateway, &self.served) {
                return;
            }
            match relisted {
                Ok(drift) => tracing::info!(
                    target: "tiny_harness::serve",
                    server = %self.name,
                    added = drift.added.len(),
                    changed = drift.changed.len(),
                    outcome = "upstream_changed",
                    "{} said its tools changed: listed again, clients told",
                    self.name,
                ),
                Err(why) => tracing::warn!(
                    target: "tiny_harness::serve",
                    server = %self.name,
                    outcome = "upstream_relist_failed",
                    "{} said its tools changed, and listing them again failed: {}",
                    self.name,
                    one_line(&why.to_string()),
                ),
            }
            gateway.tools_changed();
            drop(gateway);
            tokio::select! {
                () = tokio::time::sleep_until(began + self.gap) => {}
                () = swapped_out(&mut self.swaps, &self.gateway, &self.served) => return,
            }
        }
    }
}

/// Resolves once the gateway is dropped or serves another host than
/// `served` (each of its changes is looked at: a swap is one).
async fn swapped_out(
    swaps: &mut watch::Receiver<u64>,
    gateway: &Weak<Inner>,
    served: &Weak<Served>,
) {
    while swaps.changed().await.is_ok() {
        if !serves(gateway, served) {
            return;
        }
    }
}

/// Whether the gateway is still there and serves `served`.
fn serves(gateway: &Weak<Inner>, served: &Weak<Served>) -> bool {
    gateway.upgrade().is_some_and(|inner| {
        std::ptr::eq(Arc::as_ptr(&Gateway { inner }.served()), served.as_ptr())
    })
}
