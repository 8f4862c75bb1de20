//! `serve --watch`: the host built again when its config, its lock or a
//! plugin's component changes on disk, and swapped in whole.
//!
//! Invariants:
//! - The lock looked at is the config's own (`NAME.lock` beside
//!   `NAME.toml`), and while that does not exist the `tiny-harness.lock`
//!   its directory's configs used to share; a lock that does not exist
//!   is looked at like any file, so its creation is a change. After
//!   `pins update` in another terminal, the host is built with the new
//!   pins and clients are told the tool list changed.
//! - A change is acted on once it has held still for one poll (a
//!   component being written is not loaded half-written).
//! - A reload that fails anywhere (the config unreadable, a plugin that
//!   does not load, a pin refused under `--locked`, a client set that no
//!   longer matches) leaves the old host serving, and says why on one
//!   log line; the next change is tried again.
//! - A reload that succeeds is one swap ([`Gateway::swap`]): calls in
//!   flight finish on the old host, which is dropped (its MCP servers
//!   stopped) when the last of them ends; clients are told the tool list
//!   changed.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tiny_harness_core::display::one_line;
use tiny_harness_host::{Config, Host, HostError};
use tokio_util::sync::CancellationToken;

use crate::config::ServeConfig;
use crate::gateway::Gateway;

/// How often the files are looked at.
pub const POLL: Duration = Duration::from_millis(250);

/// What a file looked like at one poll: its size, modification time and
/// inode, or nothing when it could not be read.
type Seen = Option<(u64, std::time::SystemTime, u64)>;

fn look(path: &Path) -> Seen {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?, meta.ino()))
}

/// The files a config's host is built from: the config, its lock (the
/// shared legacy one too while its own does not exist) and each plugin's
/// component file.
fn files_of(config_path: &Path, config: Option<&Config>) -> Vec<PathBuf> {
    let lock = tiny_harness_core::pin::lock_path(config_path);
    let legacy = tiny_harness_core::pin::legacy_lock_path(config_path).filter(|_| !lock.exists());
    let mut files = vec![config_path.to_owned(), lock];
    files.extend(legacy);
    if let Some(config) = config {
        files.extend(
            config
                .plugins
                .iter()
                .map(|spec| spec.wasm.clone())
                .filter(|path| path.is_file()),
        );
    }
    files
}

impl Gateway {
    /// Watches the config at `config_path`, its lock and its plugins'
    /// components until `shutdown`: on a change, `rebuild` makes a host of
    /// the config as it is now, which replaces the one served. `config` is
    /// the config the gateway serves now.
    pub async fn watch<F, Fut>(
        &self,
        config_path: PathBuf,
        config: Config,
        rebuild: F,
        shutdown: CancellationToken,
    ) where
        F: Fn(Config) -> Fut,
        Fut: Future<Output = Result<Host, HostError>>,
    {
        let mut files = files_of(&config_path, Some(&config));
        let mut served: Vec<Seen> = files.iter().map(|f| look(f)).collect();
        let mut previous = served.clone();
        loop {
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = shutdown.cancelled() => return,
            }
            let now: Vec<Seen> = files.iter().map(|f| look(f)).collect();
            let settled = now == previous;
            previous = now.clone();
            if now == served || !settled {
                continue;
            }
            served = now;
            match self.reload(&config_path, &rebuild).await {
                Ok((config, tools)) => {
                    tracing::info!(
                        target: "tiny_harness::serve",
                        tools,
                        outcome = "reloaded",
                        "reloaded {}",
                        one_line(&config_path.display().to_string()),
                    );
                    files = files_of(&config_path, Some(&config));
                    served = files.iter().map(|f| look(f)).collect();
                    previous = served.clone();
                }
                Err(why) => {
                    self.metrics().reload(false);
                    tracing::warn!(
                        target: "tiny_harness::serve",
                        outcome = "reload_failed",
                        "reload failed, the old version serves on: {}",
                        one_line(&why),
                    );
                }
            }
        }
    }

    /// Builds and swaps in a host of the config at `config_path`; the
    /// config and the tool count, or why not.
    async fn reload<F, Fut>(
        &self,
        config_path: &Path,
        rebuild: &F,
    ) -> Result<(Config, usize), String>
    where
        F: Fn(Config) -> Fut,
        Fut: Future<Output = Result<Host, HostError>>,
    {
        let config = Config::load(config_path).map_err(|e| e.to_string())?;
        let serve = ServeConfig::from_config(&config).map_err(|e| e.to_string())?;
        let host = rebuild(config.clone()).await.map_err(|e| e.to_string())?;
        let tools = host.registry().len();
        self.swap(host, serve).map_err(|e| e.to_string())?;
        Ok((config, tools))
    }
}
