//! Opening a login URL the way command-line tools do: each command of
//! `$BROWSER` in turn (a `:`-separated list; `%s` in a command stands for
//! the URL, else the URL is its last argument), else the desktop's opener
//! (`xdg-open`) when there is a display.
//!
//! Invariants: no shell interprets the URL or the command (each command is
//! split on whitespace and run directly); the browser's output goes
//! nowhere and it is not waited for, so a browser that keeps running does
//! not hold the login; the URL is printed whatever happens here.

use std::process::{Command, Stdio};

/// Why no browser was opened (the URL has been printed, so the person can
/// still open it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// No command of `$BROWSER` could be started.
    #[error("none of $BROWSER ({0}) could be started: open the URL above by hand")]
    NoneStarted(String),
    /// No `$BROWSER`, and no desktop opener.
    #[error("no browser to open it with (set $BROWSER, or open the URL above by hand)")]
    NoBrowser,
}

/// Opens `url` in the person's browser; says why not when nothing could
/// be started.
pub fn open(url: &str) -> Result<(), BrowserError> {
    if let Some(list) = std::env::var_os("BROWSER") {
        let list = list.to_string_lossy().into_owned();
        for command in list.split(':').filter(|c| !c.trim().is_empty()) {
            if start(command, url) {
                return Ok(());
            }
        }
        return Err(BrowserError::NoneStarted(
            tiny_harness_core::display::one_line(&list).into_owned(),
        ));
    }
    let desktop =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if desktop && start("xdg-open", url) {
        return Ok(());
    }
    Err(BrowserError::NoBrowser)
}

/// Starts one command with the URL; whether it started.
fn start(command: &str, url: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let mut args: Vec<String> = words.map(|w| w.replace("%s", url)).collect();
    if !command.contains("%s") {
        args.push(url.to_owned());
    }
    let child = Command::new(program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match child {
        Ok(mut child) => {
            // Reaped when it ends, so that no zombie is left.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            true
        }
        Err(_) => false,
    }
}
