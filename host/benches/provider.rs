//! A provider request's tool work: encoding the offered tools and decoding
//! the calls of a response, as the number of tools grows.
//!
//! The tools are real registry entries: the `hostile` plugin registering
//! `n` copies of its `echo` tool (`many-tools`), so each has a real schema.
//!
//! - `encode/<provider>/<n>`: `Provider::encode_registry` for `n` tools
//!   (1,000, 2,000, 5,000 and 10,000), every provider: the codec and the
//!   provider's payload, as every turn after the first pays it (the
//!   request is dropped inside the measurement, as a turn drops it).
//! - `encode_cold/<provider>/10000`: the first encoding of a new registry
//!   snapshot (the same definitions registered afresh), before anything
//!   derived from its entries exists.
//! - `encode_text/<provider>/10000`: encoding and writing the `tools`
//!   payload as compact JSON text (`to_string()`), what a request body
//!   holds.
//! - `encode_serialize/<provider>/10000`: the same bytes through serde
//!   (`serde_json::to_vec`), as a `#[derive(Serialize)]` body writes them.
//! - `decode/openai-chat/100_calls`: decoding a response that makes 100
//!   parallel calls, against the codec of the 10,000-tool request.
//!
//! Run: `cargo bench -p tiny-harness-host --bench provider`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::{HostBuilder, PendingTool, PluginSpec, Provider, Registry};

/// The sizes `encode` is measured at.
const SIZES: [usize; 4] = [1_000, 2_000, 5_000, 10_000];

/// A registry holding `n` tools of the hostile plugin (plus its own).
fn registry(runtime: &tokio::runtime::Runtime, n: usize) -> Arc<Registry> {
    let mut spec = PluginSpec::new(
        "hostile",
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/wasm-plugins/wasm32-wasip2/release"
        ))
        .join("hostile.wasm"),
    );
    spec.config = json!({"mode": "many-tools", "count": n});
    spec.limits.registration.tools = n + 100;
    spec.limits.memory_bytes = 256 << 20;
    let host =
        runtime.block_on(async { HostBuilder::new().plugin(spec).build().await.expect("load") });
    host.registry()
}

/// A new registry of the same definitions as `registry`: new entries, so
/// nothing derived from the old ones carries over.
fn afresh(registry: &Registry) -> Registry {
    let first = registry.tools().next().expect("a tool");
    let pending = registry
        .tools()
        .map(|tool| PendingTool {
            server: tool.name.server().to_owned(),
            definition: tool.definition.clone(),
        })
        .collect();
    let mut limits = tiny_harness_host::RegistrationLimits::default();
    limits.tools = registry.len();
    let mut fresh = Registry::new();
    fresh
        .register(first.name.plugin(), pending, first.source.clone(), &limits)
        .expect("registers again");
    fresh
}

/// An OpenAI Chat response calling the first 100 tools of `registry`.
fn response(provider: Provider, registry: &Registry) -> serde_json::Value {
    let request = provider.encode_registry(registry);
    let calls: Vec<serde_json::Value> = registry
        .tools()
        .take(100)
        .enumerate()
        .map(|(i, tool)| {
            let wire = request.codec.encode(tool.name.as_str()).expect("offered");
            json!({"id": format!("call_{i}"), "type": "function",
                   "function": {"name": wire, "arguments": "{\"message\":\"hi\"}"}})
        })
        .collect();
    json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
        "index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
}

fn provider(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut group = c.benchmark_group("provider");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut largest = None;
    for n in SIZES {
        let registry = registry(&runtime, n);
        group.throughput(Throughput::Elements(n as u64));
        for provider in Provider::ALL {
            group.bench_with_input(
                BenchmarkId::new(format!("encode/{provider}"), n),
                &registry,
                |b, registry| b.iter(|| provider.encode_registry(registry)),
            );
        }
        largest = Some(registry);
    }
    let registry = largest.expect("a registry");
    let n = SIZES[SIZES.len() - 1];
    group.throughput(Throughput::Elements(n as u64));
    for provider in [Provider::OpenAiChat, Provider::Gemini] {
        group.bench_with_input(
            BenchmarkId::new(format!("encode_text/{provider}"), n),
            &registry,
            |b, registry| b.iter(|| provider.encode_registry(registry).tools.to_string()),
        );
        group.bench_with_input(
            BenchmarkId::new(format!("encode_serialize/{provider}"), n),
            &registry,
            |b, registry| {
                b.iter(|| {
                    let request = provider.encode_registry(registry);
                    serde_json::to_vec(&request.tools).expect("writes")
                })
            },
        );
    }
    group.sample_size(10);
    for provider in [Provider::OpenAiChat, Provider::Gemini] {
        group.bench_with_input(
            BenchmarkId::new(format!("encode_cold/{provider}"), n),
            &registry,
            |b, registry| {
                b.iter_batched(
                    || afresh(registry),
                    |fresh| {
                        let request = provider.encode_registry(&fresh);
                        (request, fresh)
                    },
                    BatchSize::PerIteration,
                )
            },
        );
    }
    group.sample_size(20).throughput(Throughput::Elements(100));
    let request = Provider::OpenAiChat.encode_registry(&registry);
    let response = response(Provider::OpenAiChat, &registry);
    let decoded = Provider::OpenAiChat
        .decode_calls(&request.codec, &response)
        .expect("decodes");
    assert_eq!(decoded.len(), 100);
    assert!(decoded.iter().all(|call| call.call.is_ok()));
    group.bench_function("decode/openai-chat/100_calls", |b| {
        b.iter(|| Provider::OpenAiChat.decode_calls(&request.codec, &response))
    });
    group.finish();
}

criterion_group!(benches, provider);
criterion_main!(benches);
