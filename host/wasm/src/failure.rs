//! How a call that failed is told to the caller: which [`CallError`] a
//! wasmtime error is, and the error's text on one line.

use wasmtime::{Store, Trap};

use tiny_harness_core::display;
use tiny_harness_core::tool::CallError;

use crate::sandbox::CallState;
use crate::{Plugin, lift, log};

impl Plugin {
    pub(crate) fn classify(
        &self,
        store: &Store<CallState>,
        error: wasmtime::Error,
        instantiating: bool,
    ) -> CallError {
        if store.data().cap.hit {
            return CallError::MemoryLimit {
                limit_bytes: self.limits.memory_bytes,
            };
        }
        if lift::is_out_of_fuel(&error) {
            return CallError::TooLarge {
                limit: self.limits.result_bytes,
            };
        }
        if let Some(exit) = error.downcast_ref::<wasmtime_wasi::I32Exit>() {
            return CallError::Trapped(format!(
                "the plugin called exit with status {} instead of returning",
                exit.0
            ));
        }
        if let Some(trap) = error.downcast_ref::<Trap>() {
            if *trap == Trap::Interrupt {
                return CallError::Timeout {
                    limit: self.limits.timeout,
                };
            }
            let stderr = stderr_line(&store.data().stderr_tail(log::LOG_TAIL_BYTES));
            let mut message = trap.to_string();
            if !stderr.is_empty() {
                message.push_str(": ");
                message.push_str(&stderr);
            }
            return CallError::Trapped(message);
        }
        if instantiating {
            return CallError::Unavailable(format!(
                "cannot start an instance of plugin {}: {}",
                self.name,
                error_chain(&error)
            ));
        }
        CallError::Trapped(error_chain(&error))
    }
}

/// A guest's stderr as one line: lines joined by spaces, without Rust's
/// "run with RUST_BACKTRACE" hint (the guest has no way to act on it), and
/// every control character made visible.
fn stderr_line(stderr: &str) -> String {
    let joined = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
        .collect::<Vec<_>>()
        .join(" ");
    display::one_line(&joined).into_owned()
}

/// `reason` a component could not be linked for, saying why when it
/// imports `wasi:http` from a host built without outbound HTTP.
pub(crate) fn without_http(reason: String) -> String {
    if cfg!(feature = "http") || !reason.contains("wasi:http") {
        return reason;
    }
    format!(
        "{reason} (it imports wasi:http, and this host was built without outbound HTTP: enable \
         the http feature)"
    )
}

/// The error and its causes on one line, without the WebAssembly backtrace
/// wasmtime attaches (many lines of guest frames, of no use to a model).
pub(crate) fn error_chain(error: &wasmtime::Error) -> String {
    // wasmtime attaches the backtrace as context (see its `trap.rs`), so it
    // is a link of the chain whose text starts with this.
    const BACKTRACE: &str = "error while executing at wasm backtrace:";
    let links: Vec<String> = error
        .chain()
        .map(|cause| cause.to_string())
        .filter(|text| !text.starts_with(BACKTRACE))
        .collect();
    display::one_line(&links.join(": ")).into_owned()
}
