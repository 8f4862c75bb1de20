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

/// [`bare_call`] as an embedder who skips the bindings' per-instance work
/// would make it: the instance from the linked component, `call` found by
/// an index looked up once, and no type check (the bindings checked it
/// when `pre` was made). The floor the host's own calls are held to.
pub async fn bare_floor_call(
    engine: &PluginEngine,
    pre: &PluginPre<Bare>,
    call: &wasmtime::component::ComponentExportIndex,
) {
    use tiny_harness_wasm::bindings::{CallError, CallResult};
    let state = Bare {
        ctx: WasiCtx::builder().build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(engine.engine(), state);
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = pre
        .instance_pre()
        .instantiate_async(&mut store)
        .await
        .expect("instance");
    let func = instance.get_func(&mut store, call).expect("call");
    // SAFETY: `PluginPre::new` checked the type of `call` against this
    // signature.
    let func = unsafe {
        wasmtime::component::TypedFunc::<(&str, &str, &str, &str), (Result<CallResult, CallError>,)>::new_unchecked(func)
    };
    let (result,) = func
        .call_async(&mut store, ("{}", "hello", "greet", r#"{"name":"bench"}"#))
        .await
        .expect("no trap");
    assert!(!result.expect("a result").is_error);
}

/// Where `pre`'s `call` export is.
pub fn call_index(pre: &PluginPre<Bare>) -> wasmtime::component::ComponentExportIndex {
    pre.instance_pre()
        .component()
        .get_export_index(None, "call")
        .expect("a call export")
}
