//! Every released shape of the world, so that a published plugin keeps
//! loading across host releases: today's (`wit/plugin.wit`, 0.3.0), 0.3.0
//! as it first shipped, before the `enterprise` grant
//! (`wit/released/0.3.0-first`), and 0.2.0, before `mcp-http.oauth`
//! (`wit/released/0.2.0`).
//!
//! Invariants:
//! - A component is bound to the shape its exports have, tried newest
//!   first among those of the version it names (`tiny-harness:plugin/
//!   types@V`); what it registers and returns is lifted into today's
//!   types field by field, a field an older shape lacks taking the value
//!   that means "not set" (no `oauth`, no identity provider).
//! - The `exec` import is the same in every shape and is linked once per
//!   version name, to the same host function: an older plugin runs
//!   programs under exactly the same checks.
//! - A component that names a version this host never released is refused
//!   saying which it loads.

mod lift;

use wasmtime::component::{Component, ComponentExportIndex, Func, InstancePre, Linker, TypedFunc};
use wasmtime::{AsContextMut, Engine, Store};

use crate::bindings::tiny_harness::plugin::exec::{self, Command};
use crate::bindings::{CallError, CallResult, Registration};
use crate::sandbox::CallState;

/// The world 0.2.0, from `wit/released/0.2.0`.
#[allow(missing_docs, clippy::all)]
pub(crate) mod v0_2_0 {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../../wit/released/0.2.0",
        imports: { default: async },
        exports: { default: async },
        with: { "tiny-harness:plugin/exec": crate::bindings::tiny_harness::plugin::exec },
    });
}

/// The world 0.3.0 as it first shipped, from `wit/released/0.3.0-first`.
#[allow(missing_docs, clippy::all)]
pub(crate) mod v0_3_0_first {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../../wit/released/0.3.0-first",
        imports: { default: async },
        exports: { default: async },
        with: { "tiny-harness:plugin/exec": crate::bindings::tiny_harness::plugin::exec },
    });
}

/// The `tiny-harness:plugin` versions this host loads, newest first.
pub const RELEASED: &[&str] = &["0.3.0", "0.2.0"];

/// The `tiny-harness:plugin` version the component's imports (or
/// exports) name, if any does.
pub(crate) fn version_of(component: &Component, engine: &Engine) -> Option<String> {
    let kind = component.component_type();
    let imports: Vec<String> = kind.imports(engine).map(|(n, _)| n.to_owned()).collect();
    let exports: Vec<String> = kind.exports(engine).map(|(n, _)| n.to_owned()).collect();
    package_version(imports.iter().chain(&exports).map(String::as_str))
}

/// The version in the first of `names` that is a `tiny-harness:plugin`
/// interface (`tiny-harness:plugin/types@0.3.0`).
pub(crate) fn package_version<'a>(mut names: impl Iterator<Item = &'a str>) -> Option<String> {
    names.find_map(|name| {
        let rest = name.strip_prefix("tiny-harness:plugin/")?;
        Some(rest.split_once('@')?.1.to_owned())
    })
}

/// Why a component that names `version` does not load, when this host
/// never released it.
pub(crate) fn unreleased(version: &str) -> Option<String> {
    (!RELEASED.contains(&version)).then(|| {
        format!(
            "it was built for tiny-harness:plugin@{version}, which this host never released \
             (it loads {}): rebuild it against the wit/ of this host",
            RELEASED.join(" and ")
        )
    })
}

/// The older version names whose `exec` import is linked beside today's.
const OLDER_EXEC: &[&str] = &["tiny-harness:plugin/exec@0.2.0"];

/// Links `exec` under each older version's name (today's is linked by its
/// bindings), to the same host function.
pub(crate) fn link_older_exec(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    for name in OLDER_EXEC {
        let mut instance = linker.instance(name)?;
        instance.func_wrap_async(
            "run",
            |mut store: wasmtime::StoreContextMut<'_, CallState>, (command,): (Command,)| {
                Box::new(async move {
                    let ran = exec::Host::run(store.data_mut(), command).await;
                    Ok((ran,))
                })
            },
        )?;
    }
    Ok(())
}

/// A component bound to the shape of the world it was built for.
pub(crate) enum Pre {
    /// Today's, with where its `call` export is.
    Current(crate::bindings::PluginPre<CallState>, ComponentExportIndex),
    /// 0.3.0 before the `enterprise` grant.
    V030First(v0_3_0_first::PluginPre<CallState>),
    /// 0.2.0.
    V020(v0_2_0::PluginPre<CallState>),
}

impl Pre {
    /// Binds `pre` to the shape of `version` (the one its `types` import
    /// names; none: today's) that its exports match. The error says what
    /// did not match, or that the version was never released.
    pub(crate) fn bind(pre: InstancePre<CallState>, version: Option<&str>) -> Result<Pre, String> {
        let chain = crate::failure::error_chain;
        match version.unwrap_or(RELEASED[0]) {
            "0.3.0" => match crate::bindings::PluginPre::new(pre.clone()) {
                Ok(bound) => {
                    let call = bound
                        .instance_pre()
                        .component()
                        .get_export_index(None, "call")
                        .ok_or("it does not export the function `call`")?;
                    Ok(Pre::Current(bound, call))
                }
                Err(current) => v0_3_0_first::PluginPre::new(pre)
                    .map(Pre::V030First)
                    // Today's mismatch is the one worth reading.
                    .map_err(|_| chain(&current)),
            },
            "0.2.0" => v0_2_0::PluginPre::new(pre)
                .map(Pre::V020)
                .map_err(|e| chain(&e)),
            other => Err(unreleased(other).unwrap_or_default()),
        }
    }

    /// A fresh instance in `store`, for `register` or (`registering` false)
    /// for `call`.
    pub(crate) async fn instantiate(
        &self,
        store: &mut Store<CallState>,
        registering: bool,
    ) -> wasmtime::Result<Instance> {
        Ok(match self {
            // The bindings look up and type-check every export at every
            // instance; a call needs only `call`, whose type was checked
            // once, when the component was bound.
            Pre::Current(pre, call) if !registering => {
                let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
                let call = instance
                    .get_func(&mut *store, call)
                    .ok_or_else(|| wasmtime::format_err!("the instance has no function `call`"))?;
                Instance::CurrentCall(call)
            }
            Pre::Current(pre, _) => Instance::Current(pre.instantiate_async(store).await?),
            Pre::V030First(pre) => Instance::V030First(pre.instantiate_async(store).await?),
            Pre::V020(pre) => Instance::V020(pre.instantiate_async(store).await?),
        })
    }
}

/// An instance of a component, of whichever shape.
pub(crate) enum Instance {
    Current(crate::bindings::Plugin),
    /// Today's, instantiated for a call: its `call` export alone.
    CurrentCall(Func),
    V030First(v0_3_0_first::Plugin),
    V020(v0_2_0::Plugin),
}

impl Instance {
    /// `register`, its answer in today's types.
    pub(crate) async fn register(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        config: &str,
    ) -> wasmtime::Result<Result<Registration, String>> {
        Ok(match self {
            Instance::Current(p) => p.call_register(&mut store, config).await?,
            Instance::CurrentCall(_) => {
                return Err(wasmtime::format_err!(
                    "the instance was made for a call, not for register"
                ));
            }
            Instance::V030First(p) => p
                .call_register(&mut store, config)
                .await?
                .map(lift::registration_030_first),
            Instance::V020(p) => p
                .call_register(&mut store, config)
                .await?
                .map(lift::registration_020),
        })
    }

    /// `call`, its answer in today's types.
    pub(crate) async fn call(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        config: &str,
        server: &str,
        tool: &str,
        arguments: &str,
    ) -> wasmtime::Result<Result<CallResult, CallError>> {
        Ok(match self {
            Instance::Current(p) => {
                p.call_call(&mut store, config, server, tool, arguments)
                    .await?
            }
            Instance::CurrentCall(call) => {
                // SAFETY: `call` is the `call` export of an instance of a
                // `Pre::Current`, whose `PluginPre::new` checked that
                // export's type against this signature (the bindings'
                // `PluginIndices::new`); every instance of one component
                // has the same type.
                let call = unsafe {
                    TypedFunc::<(&str, &str, &str, &str), (Result<CallResult, CallError>,)>::new_unchecked(*call)
                };
                call.call_async(&mut store, (config, server, tool, arguments))
                    .await?
                    .0
            }
            Instance::V030First(p) => lift::answer_030_first(
                p.call_call(&mut store, config, server, tool, arguments)
                    .await?,
            ),
            Instance::V020(p) => lift::answer_020(
                p.call_call(&mut store, config, server, tool, arguments)
                    .await?,
            ),
        })
    }
}
