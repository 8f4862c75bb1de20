//! # tiny-harness-plugin
//!
//! The guest SDK for tiny-harness plugins: write each tool as a plain
//! function over typed arguments, and the SDK derives its schemas, builds
//! the `register` answer and dispatches `call`.
//!
//! ```ignore
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use tiny_harness_plugin::{Config, Plugin, Server, ToolError, tool, tools};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! /// Greets someone by name.
//! #[tool(read_only, idempotent)]
//! fn greet(args: Greet) -> Result<String, ToolError> {
//!     Ok(format!("Hello, {}!", args.name))
//! }
//!
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     fn servers(_config: &Config) -> Result<Vec<Server>, String> {
//!         Ok(vec![Server::new("hello", tools![greet])])
//!     }
//! }
//!
//! tiny_harness_plugin::export!(Hello);
//! ```
//!
//! What the SDK guarantees a plugin:
//! - A tool's input schema is its argument type's JSON Schema (schemars,
//!   draft 2020-12, subschemas inlined so that every provider can read it),
//!   with `additionalProperties: false` on every object that does not say
//!   otherwise; its output schema is that of the `T` of a `Json<T>` it
//!   returns. An argument type whose JSON is plainly not an object (a
//!   string, number, sequence, tuple or `Option`) does not compile, nor
//!   does one that has no schema at all; any other whose schema is not an
//!   object is refused by the host, that tool alone.
//! - Arguments that do not deserialise into the type are the call error
//!   `invalid-arguments` with serde's message; an error the function
//!   returns becomes the call error (or error result) its [`ToolError`]
//!   says. Nothing panics on what the host sends.
//! - `register` and `call` see the same list of tools: both come from
//!   [`Plugin::servers`] with the same config.
//! - A schema written by hand (`#[tool(input_schema = path)]`, and
//!   `output_schema = path`: functions returning a `serde_json::Value`) is
//!   sent exactly as written; the argument type then needs only
//!   `Deserialize`.
//!
//! The host's `exec` import is wrapped in [`exec`]; outbound HTTP (feature
//! `http`) in `http`. What a plugin expects to be granted is declared with
//! [`expects!`] (see [`expects`]). Test a plugin with the `tiny-harness-testing` crate,
//! which runs it in the real host with scripted programs and responses.

/// The bindings of the `tiny-harness:plugin` world (`wit/plugin.wit`), for
/// what the SDK does not wrap. Clippy is silenced here only: the generated
/// export glue has a function with more arguments than it likes.
#[allow(clippy::too_many_arguments, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "plugin",
        path: "../../wit",
        pub_export_macro: true,
        default_bindings_module: "tiny_harness_plugin::bindings",
    });
}

pub mod exec;
pub mod expects;
#[cfg(feature = "http")]
pub mod http;
mod keys;
mod output;
mod schema;
mod tool;

pub use bindings::tiny_harness::plugin::types::{
    Annotations, McpHttp, McpOauth, McpSource, McpStdio, McpTransport, OauthGrant,
    OauthIdentityProvider,
};
pub use output::{Json, Output, Returns, ToolError};
pub use tiny_harness_plugin_macros::tool;
pub use tool::{Config, Context, Plugin, Server, Tool, ToolFn};

/// The tools of a server, from functions marked `#[tool]`, in order:
/// `tools![greet, count]`.
#[macro_export]
macro_rules! tools {
    ($($tool:path),* $(,)?) => {
        ::std::vec![$(<$tool as $crate::ToolFn>::tool()),*]
    };
}

/// Exports `$plugin` (a type implementing [`Plugin`]) as the component's
/// `register` and `call`. Use it once, in the crate's root.
#[macro_export]
macro_rules! export {
    ($plugin:ty) => {
        #[doc(hidden)]
        struct __TinyHarnessExports;

        impl $crate::bindings::Guest for __TinyHarnessExports {
            fn register(
                config: ::std::string::String,
            ) -> ::std::result::Result<$crate::bindings::Registration, ::std::string::String>
            {
                $crate::__private::register::<$plugin>(&config)
            }

            fn call(
                config: ::std::string::String,
                server: ::std::string::String,
                tool: ::std::string::String,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<$crate::bindings::CallResult, $crate::bindings::CallError>
            {
                $crate::__private::call::<$plugin>(&config, &server, &tool, &arguments)
            }
        }

        $crate::__export_plugin_impl!(__TinyHarnessExports with_types_in $crate::bindings);
    };
}

/// What the macros expand to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::expects::bytes as expects_bytes;
    pub use crate::output::run;
    pub use crate::schema::input as input_schema;
    pub use crate::schema::input_checked as input_schema_checked;
    pub use crate::tool::{call, register};
    pub use serde_json::Value;
}
