//! The bare-wasmtime baseline the `invoke` and `layers` benches measure
//! against: what any embedder pays at minimum for a fresh instance per
//! call of the `hello` plugin's `greet`.

use std::path::PathBuf;

use tiny_harness_wasm::PluginEngine;
use tiny_harness_wasm::bindings::PluginPre;
use wasmtime::Store;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The `hello` plugin, built in release by the build script.
pub fn hello_wasm() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/wasm-plugins/wasm32-wasip2/release"
    ))
    .join("hello.wasm")
}

/// The least state a WASI component needs.
pub struct Bare {
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

/// `hello` compiled by `engine` and linked against WASI alone.
pub fn bare_pre(engine: &PluginEngine) -> PluginPre<Bare> {
    let component = Component::from_file(engine.engine(), hello_wasm()).expect("component");
    let mut linker = Linker::new(engine.engine());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
    PluginPre::new(linker.instantiate_pre(&component).expect("link")).expect("world")
}

/// One call: a new store with an empty WASI context, an instance, `greet`.
pub async fn bare_call(engine: &PluginEngine, pre: &PluginPre<Bare>) {
    let state = Bare {
        ctx: WasiCtx::builder().build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(engine.engine(), state);
    store.set_epoch_deadline(u64::MAX / 2);
    let plugin = pre.instantiate_async(&mut store).await.expect("instance");
    let result = plugin
        .call_call(&mut store, "{}", "hello", "greet", r#"{"name":"bench"}"#)
        .await
        .expect("no trap")
        .expect("a result");
    assert!(!result.is_error);
}
