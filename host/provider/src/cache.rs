//! What encoding keeps of each registered tool between requests: its
//! registry name as a shared string, its own wire name under each rule,
//! and its entry in each provider's payload as compact JSON text, made on
//! first use and held in the tool's [`Derived`](tiny_harness_core::registry::Derived)
//! slot.
//!
//! Invariants:
//! - **Nothing but what encoding would make anyway.** A kept entry is the
//!   text of exactly the value the adapter builds for the tool under its
//!   own wire name ([`WireRule::wire_name`], a function of the name and
//!   the rule alone); a request whose codec gives the tool another name (a
//!   hash clash) builds the entry afresh instead of using it. Gemini
//!   entries are kept only for [`GeminiSchema::JsonSchema`].
//! - **Bounded.** At most one wire name per rule and one entry per
//!   provider for each registered tool, dropped with the tool. A registry
//!   entry never changes (a change registers a new one in a new snapshot),
//!   so nothing kept goes stale, and nothing outlives the snapshots that
//!   hold its tool. Text, not a [`Value`]: 10,000 of the `hostile`
//!   plugin's `echo` (330 bytes of JSON each) keep 3.3 MB of text per
//!   provider, where their values took 42 MB (see docs/performance.md).

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::gemini::GeminiSchema;
use super::{Offered, Provider, ToolRewrites};
use crate::wire::WireRule;
use tiny_harness_core::registry::RegisteredTool;

/// One tool's entry in one provider's payload, as the compact JSON text
/// of the [`Value`] the adapter builds: about a tenth of the memory of the
/// value itself, and what a request body is written from.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// The entry's compact JSON (`serde_json::to_string` of it).
    pub text: Box<str>,
    /// What the schema rewrite changed (Gemini only, when it changed
    /// something).
    pub rewrites: Option<Arc<ToolRewrites>>,
}

impl Encoded {
    /// The entry of `offered` for `provider`, built by its adapter.
    pub fn build(provider: Provider, offered: Offered<'_>, gemini: GeminiSchema) -> Self {
        let (entry, rewrites) = match provider {
            Provider::OpenAiChat => (super::openai::chat_entry(offered), Vec::new()),
            Provider::OpenAiResponses => (super::openai::responses_entry(offered), Vec::new()),
            Provider::Anthropic => (super::anthropic::entry(offered), Vec::new()),
            Provider::Gemini => super::gemini::entry(offered, gemini),
            Provider::Bedrock => (super::bedrock::entry(offered), Vec::new()),
            Provider::Mcp => (super::mcp::entry(offered), Vec::new()),
        };
        let rewrites = (!rewrites.is_empty()).then(|| {
            Arc::new(ToolRewrites {
                tool: offered.tool.name.as_str().to_owned(),
                rewrites,
            })
        });
        Encoded {
            text: entry.to_string().into_boxed_str(),
            rewrites,
        }
    }

    /// An entry that is not a registered tool's (the search tool, a
    /// namespace).
    pub fn from_value(entry: &Value) -> Self {
        Encoded {
            text: entry.to_string().into_boxed_str(),
            rewrites: None,
        }
    }

    /// `entry` (an object) with `"defer_loading": true` added.
    pub fn deferred(entry: &Encoded) -> Self {
        let mut value = entry.value();
        if let Some(object) = value.as_object_mut() {
            object.insert("defer_loading".to_owned(), Value::Bool(true));
        }
        Encoded {
            text: value.to_string().into_boxed_str(),
            rewrites: entry.rewrites.clone(),
        }
    }

    /// The entry as a [`Value`] again.
    #[allow(
        clippy::expect_used,
        reason = "the text is a JSON value's, written by serde_json"
    )]
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.text).expect("the text of a JSON value")
    }
}

/// What is kept of one registered tool.
#[derive(Debug)]
pub(super) struct ToolCache {
    name: Arc<str>,
    /// By rule: [`WireRule::Strict`], [`WireRule::Gemini`], [`WireRule::Mcp`].
    wires: [OnceLock<Arc<str>>; 3],
    /// By provider, in [`Provider::ALL`] order.
    entries: [OnceLock<Arc<Encoded>>; 6],
    /// The same, marked deferred (`"defer_loading": true`), made only for
    /// the providers that take the mark.
    deferred: [OnceLock<Arc<Encoded>>; 6],
}

impl ToolCache {
    /// `tool`'s, made empty on first use.
    ///
    /// # Panics
    /// If the tool's slot holds another type: this is its only user.
    #[allow(clippy::expect_used, reason = "this is the slot's only user")]
    pub fn of(tool: &RegisteredTool) -> &ToolCache {
        tool.derived
            .get_or_init(|| ToolCache {
                name: Arc::from(tool.name.as_str()),
                wires: Default::default(),
                entries: Default::default(),
                deferred: Default::default(),
            })
            .expect("a registered tool's derived slot holds its provider cache")
    }

    /// The tool's registry name.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The tool's own wire name under `rule`.
    pub fn wire(&self, rule: WireRule) -> &Arc<str> {
        let slot = match rule {
            WireRule::Strict => 0,
            WireRule::Gemini => 1,
            WireRule::Mcp => 2,
        };
        self.wires[slot].get_or_init(|| rule.wire_name(&self.name).into())
    }

    /// The tool's entry for `provider` under its own wire name, built with
    /// `build` on first use.
    pub fn entry(&self, provider: Provider, build: impl FnOnce() -> Encoded) -> &Arc<Encoded> {
        self.entries[slot(provider)].get_or_init(|| Arc::new(build()))
    }

    /// The tool's entry for `provider` marked deferred, built with `build`
    /// on first use.
    pub fn deferred_entry(
        &self,
        provider: Provider,
        build: impl FnOnce() -> Encoded,
    ) -> &Arc<Encoded> {
        self.deferred[slot(provider)].get_or_init(|| Arc::new(build()))
    }
}

/// `provider`'s place in [`Provider::ALL`].
#[allow(clippy::expect_used, reason = "Provider::ALL lists every provider")]
fn slot(provider: Provider) -> usize {
    Provider::ALL
        .iter()
        .position(|p| *p == provider)
        .expect("every provider is in Provider::ALL")
}
