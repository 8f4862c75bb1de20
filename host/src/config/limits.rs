//! `[plugins.<name>.limits]`: the keys, their highest values, and how
//! each sets the plugin's [`Limits`] or the limits of the programs it
//! starts.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{Checker, ConfigError};
use crate::plugin::Limits;

#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of limits such as { timeout_ms = 5000 }"
)]
pub(super) struct RawLimits {
    pub(super) memory_mib: Option<Spanned<u64>>,
    pub(super) timeout_ms: Option<Spanned<u64>>,
    pub(super) result_kib: Option<Spanned<u64>>,
    pub(super) result_parts: Option<Spanned<u64>>,
    pub(super) open_files: Option<Spanned<u64>>,
    pub(super) arguments_kib: Option<Spanned<u64>>,
    pub(super) concurrent_calls: Option<Spanned<u64>>,
    pub(super) tools: Option<Spanned<u64>>,
    pub(super) servers: Option<Spanned<u64>>,
    pub(super) description_kib: Option<Spanned<u64>>,
    pub(super) title_kib: Option<Spanned<u64>>,
    pub(super) schema_kib: Option<Spanned<u64>>,
    pub(super) schema_cost: Option<Spanned<u64>>,
    pub(super) registration_kib: Option<Spanned<u64>>,
    pub(super) program_cpu_seconds: Option<Spanned<u64>>,
    pub(super) program_memory_mib: Option<Spanned<u64>>,
    pub(super) program_processes: Option<Spanned<u64>>,
    pub(super) http_response_kib: Option<Spanned<u64>>,
    pub(super) http_request_kib: Option<Spanned<u64>>,
    pub(super) http_timeout_ms: Option<Spanned<u64>>,
    pub(super) http_requests: Option<Spanned<u64>>,
}

/// The highest value each `[plugins.<name>.limits]` key takes (the lowest
/// is 1). Each bounds what a config can make the host spend on one plugin;
/// see `docs/security.md` for the defaults.
pub mod max {
    /// `memory_mib`: a 32-bit linear memory cannot grow past 4 GiB.
    pub const MEMORY_MIB: u64 = 4096;
    /// `timeout_ms`: one hour.
    pub const TIMEOUT_MS: u64 = 3_600_000;
    /// `result_kib`: 64 MiB.
    pub const RESULT_KIB: u64 = 65_536;
    /// `result_parts`.
    pub const RESULT_PARTS: u64 = 65_536;
    /// `open_files`: well under a process's usual descriptor limit.
    pub const OPEN_FILES: u64 = 16_384;
    /// `arguments_kib`: 64 MiB.
    pub const ARGUMENTS_KIB: u64 = 65_536;
    /// `concurrent_calls`.
    pub const CONCURRENT_CALLS: u64 = 4096;
    /// `tools`.
    pub const TOOLS: u64 = 65_536;
    /// `servers`.
    pub const SERVERS: u64 = 4096;
    /// `description_kib`: 4 MiB.
    pub const DESCRIPTION_KIB: u64 = 4096;
    /// `title_kib`.
    pub const TITLE_KIB: u64 = 64;
    /// `schema_kib`: 64 MiB.
    pub const SCHEMA_KIB: u64 = 65_536;
    /// `schema_cost`.
    pub const SCHEMA_COST: u64 = 1 << 32;
    /// `registration_kib`: 1 GiB.
    pub const REGISTRATION_KIB: u64 = 1 << 20;
    /// `program_cpu_seconds`: one day.
    pub const PROGRAM_CPU_SECONDS: u64 = 86_400;
    /// `program_memory_mib`: 1 TiB of address space.
    pub const PROGRAM_MEMORY_MIB: u64 = 1 << 20;
    /// `program_processes`.
    pub const PROGRAM_PROCESSES: u64 = 65_536;
    /// `http_response_kib`: 1 GiB.
    pub const HTTP_RESPONSE_KIB: u64 = 1 << 20;
    /// `http_request_kib`: 1 GiB.
    pub const HTTP_REQUEST_KIB: u64 = 1 << 20;
    /// `http_timeout_ms`: one hour.
    pub const HTTP_TIMEOUT_MS: u64 = 3_600_000;
    /// `http_requests` per call.
    pub const HTTP_REQUESTS: u64 = 4096;
}

/// One `limits` key: its name, its value in the file, its maximum, and how
/// a value in range sets it.
type LimitKey<'a> = (
    &'static str,
    &'a Option<Spanned<u64>>,
    u64,
    &'a dyn Fn(&mut Limits, u64),
);

impl Checker<'_> {
    /// The `program_*` limits: what each program the host starts for the
    /// plugin may use.
    pub(super) fn program_limits(
        &self,
        raw: &RawLimits,
        key: &dyn Fn(&str) -> String,
    ) -> Result<crate::confine::Rlimits, ConfigError> {
        let mut limits = crate::confine::Rlimits::default();
        // Each key: where it is, its maximum, the field, and the shift
        // from the config's unit to the field's.
        type ProgramKey<'a> = (&'a str, &'a Option<Spanned<u64>>, u64, &'a mut u64, u32);
        let keys: [ProgramKey<'_>; 3] = [
            (
                "program_cpu_seconds",
                &raw.program_cpu_seconds,
                max::PROGRAM_CPU_SECONDS,
                &mut limits.cpu_seconds,
                0,
            ),
            (
                "program_memory_mib",
                &raw.program_memory_mib,
                max::PROGRAM_MEMORY_MIB,
                &mut limits.address_space,
                20,
            ),
            (
                "program_processes",
                &raw.program_processes,
                max::PROGRAM_PROCESSES,
                &mut limits.processes,
                0,
            ),
        ];
        for (name, value, max, field, shift) in keys {
            if let Some(value) = value {
                *field = self.in_range(value, max, &key(&format!("limits.{name}")))? << shift;
            }
        }
        Ok(limits)
    }

    pub(super) fn limits(
        &self,
        raw: &RawLimits,
        key: &dyn Fn(&str) -> String,
    ) -> Result<Limits, ConfigError> {
        let mut limits = Limits::default();
        // Each key: where it is, its maximum, and how a value (already in
        // range) sets the limit.
        let size = |value: u64, shift: u32| usize::try_from(value << shift).unwrap_or(usize::MAX);
        let keys: [LimitKey<'_>; 18] = [
            ("memory_mib", &raw.memory_mib, max::MEMORY_MIB, &|l, v| {
                l.memory_bytes = size(v, 20)
            }),
            ("timeout_ms", &raw.timeout_ms, max::TIMEOUT_MS, &|l, v| {
                l.timeout = Duration::from_millis(v)
            }),
            ("result_kib", &raw.result_kib, max::RESULT_KIB, &|l, v| {
                l.result_bytes = size(v, 10)
            }),
            (
                "result_parts",
                &raw.result_parts,
                max::RESULT_PARTS,
                &|l, v| l.result_parts = size(v, 0),
            ),
            ("open_files", &raw.open_files, max::OPEN_FILES, &|l, v| {
                l.open_files = size(v, 0)
            }),
            (
                "arguments_kib",
                &raw.arguments_kib,
                max::ARGUMENTS_KIB,
                &|l, v| l.arguments_bytes = size(v, 10),
            ),
            (
                "concurrent_calls",
                &raw.concurrent_calls,
                max::CONCURRENT_CALLS,
                &|l, v| l.concurrent_calls = size(v, 0),
            ),
            ("tools", &raw.tools, max::TOOLS, &|l, v| {
                l.registration.tools = size(v, 0)
            }),
            ("servers", &raw.servers, max::SERVERS, &|l, v| {
                l.registration.servers = size(v, 0)
            }),
            (
                "description_kib",
                &raw.description_kib,
                max::DESCRIPTION_KIB,
                &|l, v| l.registration.description_bytes = size(v, 10),
            ),
            ("title_kib", &raw.title_kib, max::TITLE_KIB, &|l, v| {
                l.registration.title_bytes = size(v, 10)
            }),
            ("schema_kib", &raw.schema_kib, max::SCHEMA_KIB, &|l, v| {
                l.registration.schema_bytes = size(v, 10)
            }),
            (
                "schema_cost",
                &raw.schema_cost,
                max::SCHEMA_COST,
                &|l, v| l.registration.schema_cost = v,
            ),
            (
                "registration_kib",
                &raw.registration_kib,
                max::REGISTRATION_KIB,
                &|l, v| l.registration.total_bytes = size(v, 10),
            ),
            (
                "http_response_kib",
                &raw.http_response_kib,
                max::HTTP_RESPONSE_KIB,
                &|l, v| l.http.response_bytes = size(v, 10),
            ),
            (
                "http_request_kib",
                &raw.http_request_kib,
                max::HTTP_REQUEST_KIB,
                &|l, v| l.http.request_bytes = size(v, 10),
            ),
            (
                "http_timeout_ms",
                &raw.http_timeout_ms,
                max::HTTP_TIMEOUT_MS,
                &|l, v| l.http.timeout = Duration::from_millis(v),
            ),
            (
                "http_requests",
                &raw.http_requests,
                max::HTTP_REQUESTS,
                &|l, v| l.http.requests = size(v, 0),
            ),
        ];
        for (name, value, max, set) in keys {
            if let Some(value) = value {
                let value = self.in_range(value, max, &key(&format!("limits.{name}")))?;
                set(&mut limits, value);
            }
        }
        Ok(limits)
    }
}
