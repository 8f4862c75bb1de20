//! Host memory one hostile call takes: the peak of the host's own heap
//! (counted by a global allocator) during one call of the `hostile`
//! plugin, for the answers that cost the host most, against a trivial call.
//!
//! Guest memory is not on the host heap (it lives in the instance pool's
//! mappings) and is bounded by `memory_mib`; what this measures is what the
//! host copies, parses and renders on top of it.
//!
//! Run: `cargo bench -p tiny-harness-host --bench memory`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tiny_harness_host::{HostBuilder, PluginSpec, ToolCall};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are only observed.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut spec = PluginSpec::new(
        "hostile",
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/wasm-plugins/wasm32-wasip2/release"
        ))
        .join("hostile.wasm"),
    );
    spec.config = json!({"mode": "normal"});
    spec.limits.memory_bytes = 512 << 20;
    let limits = spec.limits;
    let host =
        runtime.block_on(async { HostBuilder::new().plugin(spec).build().await.expect("load") });
    eprintln!(
        "limits: memory {} MiB, result {} KiB, {} parts",
        limits.memory_bytes >> 20,
        limits.result_bytes >> 10,
        limits.result_parts
    );
    let cases = [
        ("echo (trivial)", "echo", json!({"message": "hi"})),
        (
            "big 1020 KiB text",
            "big",
            json!({"kib": 1020, "fail": false}),
        ),
        (
            "big 16 MiB text",
            "big",
            json!({"kib": 16384, "fail": false}),
        ),
        (
            "1,000,000 empty parts",
            "parts",
            json!({"count": 1_000_000}),
        ),
        ("1024 empty parts", "parts", json!({"count": 1024})),
        (
            "100,000 aliased 1 MiB parts",
            "aliased_parts",
            json!({"count": 100_000, "kib": 1024}),
        ),
    ];
    for (label, tool, arguments) in cases {
        let call = ToolCall {
            id: "m".into(),
            name: format!("hostile/chaos.{tool}"),
            arguments,
        };
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let (code, rendered) = runtime.block_on(async {
            let outcome = host.invoke(&call).await;
            let rendered = outcome.render().len();
            (outcome.result.as_ref().err().map(|e| e.code()), rendered)
        });
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        eprintln!(
            "{label:32} peak host heap {:>8.2} MiB  outcome {:12} rendered {rendered} bytes",
            peak as f64 / f64::from(1 << 20),
            code.unwrap_or("ok"),
        );
    }
}
