//! An MCP source's listing: the server's tools as they are now, observed
//! against the pins, and re-listed once per iteration (or when the server
//! says its tools changed) before the call that needs it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::super::connect::{self, list_pages};
use super::super::convert::{self, Listing};
use super::super::watch::Drift;
use super::{McpSource, SourceError, State};
use tiny_harness_core::tool::CallError;

impl McpSource {
    /// Connects (if not connected) and lists every tool. On failure the
    /// source is marked failed with the reason, which is also returned.
    pub async fn list(&self) -> Result<Listing, SourceError> {
        let iteration = self.iterations.load(Ordering::SeqCst);
        let result = self.try_list().await;
        match &result {
            Ok(listing) => {
                self.observe(listing);
                self.checked.store(iteration, Ordering::SeqCst);
            }
            Err(why) => self.set_status(|s| s.state = State::Failed(why.to_string())),
        }
        result
    }

    fn observe(&self, listing: &Listing) {
        if let Ok(mut watch) = self.watch.write() {
            watch.observe(listing.tools.clone());
        }
        self.set_status(|s| s.skipped = listing.skipped.clone());
    }

    /// Re-lists now, whatever the iteration, and returns how the listing
    /// differs from the pins.
    pub async fn relist(&self) -> Result<Drift, SourceError> {
        self.list().await?;
        Ok(self.drift())
    }

    /// Changes (its value is a count) each time the server says its tools
    /// changed, on its session or on a `subscriptions/listen` stream; a
    /// burst is seen as one change. Ends (`changed()` errs) once the
    /// source and its session are gone.
    pub fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.tool_changes()
    }

    /// Re-lists once per iteration (and whenever the server said its tools
    /// changed), before the call that needs it.
    pub(super) async fn check(&self) -> Result<(), CallError> {
        let due = |source: &McpSource, now: u64| {
            source.shared.stale.load(Ordering::SeqCst)
                || source.checked.load(Ordering::SeqCst) != now
        };
        let now = self.iterations.load(Ordering::SeqCst);
        if !due(self, now) {
            return Ok(());
        }
        let _one_at_a_time = self.relisting.lock().await;
        if !due(self, now) {
            return Ok(());
        }
        // Boxed: a listing's future is large, and without the box every
        // call's future (allocated per call) would be as large.
        let listing = Box::pin(self.try_list())
            .await
            .map_err(|e| CallError::Unavailable(e.to_string()))?;
        self.observe(&listing);
        self.checked.store(now, Ordering::SeqCst);
        Ok(())
    }

    async fn try_list(&self) -> Result<Listing, SourceError> {
        // A listing's failure goes to people (`plugins`, the CLI's warning):
        // with the server's last words, where it left any.
        let (peer, _) = self.session().await.map_err(|no| {
            let reason = match (no.error, self.status().state) {
                (CallError::Unavailable(_), State::Failed(detailed)) => detailed,
                (CallError::Unavailable(why), _) => why,
                (other, _) => other.to_string(),
            };
            SourceError::Unavailable {
                reason,
                source: no.cause,
            }
        })?;
        self.shared.stale.store(false, Ordering::SeqCst);
        let deadline = Instant::now() + self.timeout();
        let listed = tokio::time::timeout_at(
            deadline.into(),
            list_pages(&peer, self.limits.registration.tools),
        )
        .await
        .map_err(|_| SourceError::ListTimeout(self.timeout()))?;
        let tools = match listed {
            Ok(tools) => tools,
            // Let the session's end (and the program's) be seen.
            Err(why) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut connection = self.connection.lock().await;
                return Err(SourceError::unavailable(match connection.as_mut() {
                    Some(open) => connect::explain(open, why),
                    None => why,
                }));
            }
        };
        Ok(convert::listing(tools, &self.limits.registration)?)
    }
}
