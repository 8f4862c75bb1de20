//! A provider request's tool work: encoding the offered tools and decoding
//! the calls of a response, as the number of tools grows.
//!
//! The tools are real registry entries: the `hostile` plugin registering
//! `n` copies of its `echo` tool (`many-tools`), so each has a real schema.
//!
//! - `encode/<provider>/<n>`: `Provider::encode_registry` for `n` tools
//!   (1,000, 3,000 and 10,000): the codec and the provider's payload.
//! - `decode/<provider>/100_calls`: decoding a response that makes 100
//!   parallel calls, against the codec of the 10,000-tool request.
//!
//! Run: `cargo bench -p tiny-harness-host --bench provider`.

use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::{HostBuilder, PluginSpec, Provider, Registry};

/// A registry holding `n` tools of the hostile plugin (plus its own).
fn registry(runtime: &tokio::runtime::Runtime, n: usize) -> std::sync::Arc<Registry> {
    let mut spec = PluginSpec::new(
        "hostile",
        PathBuf::from(env!("TINY_HARNESS_PLUGIN_DIR")).join("hostile.wasm"),
    );
    spec.config = json!({"mode": "many-tools", "count": n});
    spec.limits.registration.tools = n + 100;
    spec.limits.memory_bytes = 256 << 20;
    let host = runtime.block_on(async {
        let mut builder = HostBuilder::new().expect("engine");
        builder.load_plugin(spec).await.expect("load");
        builder.build()
    });
    host.registry()
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
    group.sample_size(20);
    let mut largest = None;
    for n in [1_000, 3_000, 10_000] {
        let registry = registry(&runtime, n);
        for provider in [Provider::OpenAiChat, Provider::Gemini] {
            group.bench_with_input(
                BenchmarkId::new(format!("encode/{provider}"), n),
                &registry,
                |b, registry| b.iter(|| provider.encode_registry(registry)),
            );
        }
        largest = Some(registry);
    }
    let registry = largest.expect("a registry");
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
