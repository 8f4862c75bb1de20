//! How much one call of a plugin may use: memory, time, result size,
//! concurrency, and what one registration may declare.

use std::time::Duration;

use tiny_harness_core::registry::RegistrationLimits;

/// How much one call may use. Non-exhaustive: start from
/// [`Limits::default`] and set what differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The most bytes the plugin's linear memories may hold together during
    /// one call (a component may have several). A plugin is someone else's
    /// code: without a cap, one call could take the host's memory.
    pub memory_bytes: usize,
    /// The longest one call (or `register`) may run before it is stopped.
    /// Without it, a loop in a plugin would hold a model's turn forever.
    pub timeout: Duration,
    /// The most bytes one call may return: the text and JSON of all its
    /// parts together, or the message of its error. A larger result
    /// reaches the model as a `too_large` error, so a tool cannot flood the
    /// model's context. Each part also costs 128 bytes for the tags that
    /// frame it in the rendered block.
    pub result_bytes: usize,
    /// The most content parts one result may have. Parts are counted before
    /// any is read; a result of a million empty parts costs the host
    /// seconds and a gigabyte to render, a real tool a handful.
    pub result_parts: usize,
    /// The most host handles (open files and directories, streams) one call
    /// may hold at once. Past it, opening a file fails inside the guest with
    /// an ordinary I/O error (the handle cap of `handles`); without it one call
    /// could hold every descriptor the host process may open.
    pub open_files: usize,
    /// The largest arguments (compact JSON) a call may pass. They come from
    /// a model, and validating and copying them costs the host in
    /// proportion.
    pub arguments_bytes: usize,
    /// The most calls of the plugin that run at once. More wait for a turn
    /// within their own deadline (at most [`Limits::MAX_WAITING`] times this
    /// many wait), then fail `unavailable`: one busy or hostile plugin
    /// cannot take every instance and thread of the host.
    pub concurrent_calls: usize,
    /// What the plugin may register.
    pub registration: RegistrationLimits,
    /// What one call may spend on outbound HTTP (`wasi:http`, under the
    /// plugin's net grants).
    pub http: crate::http::HttpLimits,
}

impl Limits {
    /// 64 MiB.
    pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;
    /// 30 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// 1 MiB.
    pub const DEFAULT_RESULT_BYTES: usize = 1 << 20;
    /// 1024 parts.
    pub const DEFAULT_RESULT_PARTS: usize = 1024;
    /// 256 handles.
    pub const DEFAULT_OPEN_FILES: usize = 256;
    /// 1 MiB.
    pub const DEFAULT_ARGUMENTS_BYTES: usize = 1 << 20;
    /// 16 calls.
    pub const DEFAULT_CONCURRENT_CALLS: usize = 16;
    /// How many times `concurrent_calls` may wait for a turn.
    pub const MAX_WAITING: usize = 16;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
            result_bytes: Self::DEFAULT_RESULT_BYTES,
            result_parts: Self::DEFAULT_RESULT_PARTS,
            open_files: Self::DEFAULT_OPEN_FILES,
            arguments_bytes: Self::DEFAULT_ARGUMENTS_BYTES,
            concurrent_calls: Self::DEFAULT_CONCURRENT_CALLS,
            registration: RegistrationLimits::default(),
            http: crate::http::HttpLimits::default(),
        }
    }
}
