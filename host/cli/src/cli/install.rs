//! `tiny-harness mcp install`: each server printed as its install starts
//! and as it ends (what, how long), with a live line on a terminal and
//! plain lines otherwise; a server that could not be installed is named
//! with why, and the others are installed all the same.
//!
//! Exit code 0 when at least one server was installed (or nothing needed
//! installing), 1 when none could be, or under `--locked` when any was
//! skipped.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::tooling::install::{Options, Progress, Report};
use tiny_harness_core::display::one_line;

use super::emit;

pub(super) async fn install(
    config: &Path,
    server: Option<&str>,
    options: Options,
) -> anyhow::Result<ExitCode> {
    let config = tiny_harness_host::Config::load(config)?;
    let live = std::io::stdout().is_terminal().then(Live::start);
    let mut printer = |progress: Progress<'_>| match progress {
        Progress::Started { server, what } => {
            let line = format!("{}: installing {}", one_line(server), one_line(&what));
            match &live {
                Some(live) => live.show(line),
                None => {
                    let _ = emit(&format!("{line} ..."));
                }
            }
        }
        Progress::Finished(report) => {
            if let Some(live) = &live {
                live.clear();
            }
            let _ = emit(&finished(report));
        }
    };
    let result = crate::tooling::install::install(&config, server, options, &mut printer).await;
    if let Some(live) = &live {
        live.stop();
    }
    let reports = result.map_err(|e| anyhow::anyhow!("{e}"))?;
    if reports.is_empty() {
        emit(&format!(
            "nothing to install: no server of {} is started by npx, npm exec, bunx, uvx, uv tool \
             run or pipx run",
            config.path.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let store = tiny_harness_mcp::store::Store::beside(&config.path);
    emit(&format!(
        "store: {}; lock: {}",
        store.root().display(),
        tiny_harness_core::pin::lock_path(&config.path).display()
    ))?;
    let skipped: Vec<&Report> = reports.iter().filter(|r| r.skipped).collect();
    if skipped.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let names: Vec<String> = skipped
        .iter()
        .map(|r| format!("{} ({})", one_line(&r.server), one_line(&r.done)))
        .collect();
    let summary = format!(
        "{} of {} server{} not installed: {}",
        skipped.len(),
        reports.len(),
        if reports.len() == 1 { "" } else { "s" },
        names.join("; ")
    );
    if skipped.len() == reports.len() || options.locked {
        eprintln!("tiny-harness: error: {summary}");
        Ok(ExitCode::FAILURE)
    } else {
        eprintln!("tiny-harness: warning: {summary}");
        Ok(ExitCode::SUCCESS)
    }
}

/// The line for a server whose install ended.
fn finished(report: &Report) -> String {
    let took = if report.took >= Duration::from_millis(100) {
        format!(" ({:.1} s)", report.took.as_secs_f64())
    } else {
        String::new()
    };
    let done = one_line(&report.done);
    if report.skipped {
        format!("{}: not installed: {done}{took}", one_line(&report.server))
    } else {
        format!("{}: {done}{took}", one_line(&report.server))
    }
}

/// A line redrawn in place on a terminal while an install runs: what it
/// is installing and for how long so far.
struct Live {
    shown: Arc<Mutex<Option<(String, Instant)>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Live {
    const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

    fn start() -> Live {
        let shown: Arc<Mutex<Option<(String, Instant)>>> = Arc::new(Mutex::new(None));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ticker = {
            let (shown, stop) = (shown.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut frame = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Some((line, since)) = &*shown.lock().unwrap_or_else(|e| e.into_inner()) {
                        let mut out = std::io::stdout().lock();
                        let _ = write!(
                            out,
                            "\r\x1b[2K{} {line} ({} s)",
                            Self::FRAMES[frame % Self::FRAMES.len()],
                            since.elapsed().as_secs()
                        );
                        let _ = out.flush();
                        frame += 1;
                    }
                    std::thread::sleep(Duration::from_millis(120));
                }
            })
        };
        Live {
            shown,
            stop,
            ticker: Mutex::new(Some(ticker)),
        }
    }

    fn show(&self, line: String) {
        *self.shown.lock().unwrap_or_else(|e| e.into_inner()) = Some((line, Instant::now()));
    }

    /// Takes the live line off the terminal.
    fn clear(&self) {
        let mut shown = self.shown.lock().unwrap_or_else(|e| e.into_inner());
        if shown.take().is_some() {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
        }
    }

    fn stop(&self) {
        self.clear();
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(ticker) = self.ticker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = ticker.join();
        }
    }
}
