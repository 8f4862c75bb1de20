//! The whole path of a trivial tool call against bare wasmtime, side by side.
//!
//! - `bare_wasmtime`: what any embedder pays at minimum for a fresh instance
//!   per call: a new store with an empty WASI context, instantiate from a
//!   pre-linked component, call `echo`. Same engine, same pooling allocator.
//! - `host_invoke_render`: `Host::invoke` (lookup, schema validation, the
//!   sandbox built from grants, limiter and deadline, fresh instance, call,
//!   result conversion) followed by rendering the untrusted block.
//! - `validate_and_render`: the host's own work alone, on a call that
//!   fails validation (lookup, validation, render; no instance).
//!
//! Run: `cargo bench -p tiny-harness-host --bench invoke`.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tiny_harness_host::plugin::PluginEngine;
use tiny_harness_host::plugin::bindings::PluginPre;
use tiny_harness_host::{Host, HostBuilder, PluginSpec, ToolCall};
use wasmtime::Store;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

fn hostile_wasm() -> PathBuf {
    PathBuf::from(env!("TINY_HARNESS_PLUGIN_DIR")).join("hostile.wasm")
}

/// The least state a WASI component needs.
struct Bare {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Bare {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

fn bare_pre(engine: &PluginEngine) -> PluginPre<Bare> {
    let component = Component::from_file(engine.engine(), hostile_wasm()).expect("component");
    let mut linker = Linker::new(engine.engine());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
    PluginPre::new(linker.instantiate_pre(&component).expect("link")).expect("world")
}

async fn bare_call(engine: &PluginEngine, pre: &PluginPre<Bare>) {
    let state = Bare {
        ctx: WasiCtx::builder().build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(engine.engine(), state);
    store.set_epoch_deadline(u64::MAX / 2);
    let plugin = pre.instantiate_async(&mut store).await.expect("instance");
    let result = plugin
        .call_call(&mut store, "{}", "chaos", "echo", r#"{"message":"hi"}"#)
        .await
        .expect("no trap")
        .expect("a result");
    assert!(!result.is_error);
}

async fn host() -> Host {
    let mut builder = HostBuilder::new().expect("engine");
    builder
        .load_plugin(PluginSpec {
            name: "hostile".into(),
            wasm: hostile_wasm(),
            sha256: None,
            grants: Default::default(),
            limits: Default::default(),
            config: json!({}),
        })
        .await
        .expect("load");
    builder.build()
}

fn invoke(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let host = runtime.block_on(host());
    let engine = PluginEngine::new().expect("engine");
    let pre = bare_pre(&engine);
    let good = ToolCall {
        id: "call_1".into(),
        name: "hostile/chaos.echo".into(),
        arguments: json!({"message": "hi"}),
    };
    let bad = ToolCall {
        arguments: json!({"message": 1}),
        ..good.clone()
    };

    let mut group = c.benchmark_group("trivial_call");
    group.bench_function("bare_wasmtime", |b| {
        b.to_async(&runtime).iter(|| bare_call(&engine, &pre));
    });
    group.bench_function("host_invoke_render", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = host.invoke(&good).await;
            assert!(!outcome.is_error());
            outcome.render()
        });
    });
    group.bench_function("validate_and_render", |b| {
        b.to_async(&runtime).iter(|| async {
            let outcome = host.invoke(&bad).await;
            assert!(outcome.is_error());
            outcome.render()
        });
    });
    group.finish();
}

criterion_group!(benches, invoke);
criterion_main!(benches);
