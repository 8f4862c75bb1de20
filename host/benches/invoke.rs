//! The whole path of a trivial tool call against bare wasmtime, side by side.
//!
//! - `bare_wasmtime`: what any embedder pays at minimum for a fresh instance
//!   per call: a new store with an empty WASI context, instantiate from a
//!   pre-linked component, call `greet` of the
//!   `hello` plugin (the smallest plugin in `plugins/`). The same engine (and so the same instance pool) as the host's.
//! - `bare_floor`: the same without the bindings' per-instance lookup and
//!   type check of every export: the instance from the linked component,
//!   `call` found by an index looked up once, its type checked once. The
//!   host's calls do the same.
//! - `plugin_call`: `Plugin::call` alone: the sandbox (the WASI context
//!   kept from the call before, since `hello` has no grants), limiter,
//!   deadline, fresh instance, call, result conversion.
//! - `host_invoke_render`: `Host::invoke` (lookup, schema validation, the
//!   sandbox, limiter and deadline, fresh instance, call, result
//!   conversion) followed by rendering the untrusted block.
//! - `validate_and_render`: the host's own work alone, on a call that
//!   fails validation (lookup, validation, render; no instance).
//! - `in_process_invoke_render`: the host's own work alone on a call that
//!   succeeds: `Host::invoke` of an in-process tool of the same schema that
//!   answers at once as `greet` does (lookup, validation, pin guard, call,
//!   result), and the untrusted block.
//!
//! - `paired_host_over_bare`: both calls back to back in every iteration,
//!   so that they see the same machine; prints the medians and the ratio.
//!
//! Run: `cargo bench -p tiny-harness-host --bench invoke`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::ToolCall;
use tiny_harness_wasm::PluginEngine;

#[path = "common/bare.rs"]
mod bare;
#[path = "common/hosts.rs"]
mod hosts;
#[path = "common/pairs.rs"]
mod pairs;

use bare::{bare_call, bare_floor_call, bare_pre, call_index};
use hosts::hello_host;
use pairs::{paired, report_pairs};

fn invoke(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = PluginEngine::new().expect("engine");
    let host = runtime.block_on(hello_host(engine.clone()));
    let pre = bare_pre(&engine);
    let good = ToolCall {
        id: "call_1".into(),
        name: "hello/hello.greet".into(),
        arguments: json!({"name": "bench"}),
    };
    let bad = ToolCall {
        arguments: json!({"name": 1}),
        ..good.clone()
    };

    let mut group = c.benchmark_group("trivial_call");
    group.bench_function("bare_wasmtime", |b| {
        b.to_async(&runtime).iter(|| bare_call(&engine, &pre));
    });
    let index = call_index(&pre);
    group.bench_function("bare_floor", |b| {
        b.to_async(&runtime)
            .iter(|| bare_floor_call(&engine, &pre, &index));
    });
    let (_, plugin) = host
        .plugins()
        .into_iter()
        .find(|(name, _)| name == "hello")
        .expect("the hello plugin");
    group.bench_function("plugin_call", |b| {
        b.to_async(&runtime).iter(|| async {
            let result = plugin.call("hello", "greet", &good.arguments).await;
            assert!(result.is_ok());
            result
        });
    });
    group.bench_function("host_invoke_render", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = host.invoke(&good).await;
            assert!(!outcome.is_error());
            outcome.render().len()
        });
    });
    let in_process = ToolCall {
        name: "mem/hello.greet".into(),
        ..good.clone()
    };
    group.bench_function("in_process_invoke_render", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = host.invoke(&in_process).await;
            assert!(!outcome.is_error());
            outcome.render().len()
        });
    });
    group.bench_function("validate_and_render", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = host.invoke(&bad).await;
            // The refusal this row measures, not some other error.
            let code = outcome.result.as_ref().err().map(|e| e.code());
            assert_eq!(code, Some("invalid_arguments"), "{}", outcome.render());
            outcome.render().len()
        });
    });
    // The ratio, measured fairly on a noisy machine: each iteration runs a
    // bare call and a host call back to back, so both see the same
    // conditions. Criterion reports the host half; the medians of both
    // halves per sample, and their ratio, are printed at the end.
    let samples = paired(
        &mut group,
        &runtime,
        "paired_host_over_bare",
        async || bare_call(&engine, &pre).await,
        async || {
            let outcome = host.invoke(&good).await;
            std::hint::black_box(outcome.render());
            assert!(!outcome.is_error(), "{}", outcome.render());
        },
    );
    group.finish();
    report_pairs("bare_wasmtime", "host_invoke_render", &samples);
}

criterion_group!(benches, invoke);
criterion_main!(benches);
