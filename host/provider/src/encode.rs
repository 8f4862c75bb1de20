//! Encoding the tools of one request for one provider: the codec and the
//! payload.
//!
//! Invariants:
//! - **Offered once, in order.** Each distinct tool given appears once,
//!   at its first place, under the wire name the request's codec gives it.
//! - **Byte for byte what the adapter builds.** Each entry is the one the
//!   provider's adapter builds for the tool and that wire name: kept from
//!   an earlier request ([`super::cache`]) when the name is the tool's own,
//!   built afresh when a clash gave it another.
//! - **Linear in the tools offered.** Per tool: a few shared-pointer
//!   copies and one hash-table insertion (the codec's decode table); the
//!   tool's own wire name and entry are made once for its life, on the
//!   first request that offers it. Tools given in registry order (sorted,
//!   distinct) need no set to drop repeats.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::Provider;
use super::cache::{Encoded, ToolCache};
use super::gemini::GeminiSchema;
use super::gemini_schema::SchemaRewrite;
use super::payload::ToolsPayload;
use crate::wire::WireCodec;
use tiny_harness_core::registry::RegisteredTool;

/// One tool as an adapter offers it: the entry and its wire name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offered<'a> {
    pub wire_name: &'a str,
    pub tool: &'a RegisteredTool,
}

/// The tools of one request, encoded for one provider.
#[derive(Debug, Clone)]
pub struct EncodedRequest {
    /// The provider they are encoded for.
    pub provider: Provider,
    /// The request's codec: decode this request's calls with it.
    pub codec: WireCodec,
    /// The provider's tools payload (see each adapter for its shape):
    /// serialise it into the request body. It reads as a [`Value`] too.
    pub tools: ToolsPayload,
    /// For each tool whose schema was rewritten for the provider (Gemini's
    /// subset only), what was rewritten and what that loses, by registry name
    /// (shared with the tool's cache: read them as before, `r.tool`,
    /// `r.rewrites`).
    pub rewrites: Vec<Arc<ToolRewrites>>,
    /// The search over the registry's deferred tools the request offers,
    /// when the registry defers any (see `deferred` in this crate's docs).
    pub search: Option<super::OfferedSearch>,
    /// The deferred tools listed after the search because a search found
    /// them (the providers without deferred loading), by registry name, in
    /// the order they were found.
    pub loaded: Vec<String>,
    /// How Gemini's schemas are sent (the other providers ignore it), so
    /// that the next request sends them the same way.
    pub gemini: GeminiSchema,
}

impl EncodedRequest {
    /// Each offered tool's entry in [`EncodedRequest::tools`], in the
    /// order the tools were offered.
    pub fn entries(&self) -> Vec<&Value> {
        self.tools.entries()
    }
}

/// What the schema adapter changed in one tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRewrites {
    /// The tool's registry name.
    pub tool: String,
    /// Each rewrite, in schema order.
    pub rewrites: Vec<SchemaRewrite>,
}

/// `tools` for `provider`, as [`Provider::encode_tools_with`] describes.
pub(super) fn encode<'a>(
    provider: Provider,
    tools: impl IntoIterator<Item = &'a RegisteredTool>,
    gemini: GeminiSchema,
) -> EncodedRequest {
    let mut tools: Vec<&RegisteredTool> = tools.into_iter().collect();
    if !tools.is_sorted_by(|a, b| a.name.as_str() < b.name.as_str()) {
        let mut seen = HashSet::with_capacity(tools.len());
        tools.retain(|tool| seen.insert(tool.name.as_str()));
    }
    let caches: Vec<&ToolCache> = tools.iter().map(|tool| ToolCache::of(tool)).collect();
    let rule = provider.rule();
    let own = caches
        .iter()
        .map(|cache| (cache.name().clone(), cache.wire(rule).clone()))
        .collect();
    let codec = WireCodec::from_own_names(rule, own);
    assemble(provider, &tools, &caches, codec, gemini)
}

/// The request offering `tools` (distinct, with their `caches`) under
/// `codec`'s names.
pub(super) fn assemble(
    provider: Provider,
    tools: &[&RegisteredTool],
    caches: &[&ToolCache],
    codec: WireCodec,
    gemini: GeminiSchema,
) -> EncodedRequest {
    let entries = Entries::new(provider, &codec, gemini);
    let mut encoded = Vec::with_capacity(tools.len());
    let mut rewrites = Vec::new();
    for (tool, cache) in tools.iter().zip(caches) {
        let entry = entries.of(tool, cache);
        if let Some(changed) = &entry.rewrites {
            rewrites.push(changed.clone());
        }
        encoded.push(entry);
    }
    EncodedRequest {
        provider,
        codec,
        tools: ToolsPayload::new(provider, encoded),
        rewrites,
        search: None,
        loaded: Vec::new(),
        gemini,
    }
}

/// Builds (or takes from each tool's cache) the entries of one request's
/// tools under its codec's names.
pub(super) struct Entries<'c> {
    provider: Provider,
    codec: &'c WireCodec,
    gemini: GeminiSchema,
    /// Whether every name is its own (no clash moved one).
    all_own: bool,
    /// Whether entries built for this request may be kept with the tool.
    keep: bool,
}

impl<'c> Entries<'c> {
    pub(super) fn new(provider: Provider, codec: &'c WireCodec, gemini: GeminiSchema) -> Self {
        Entries {
            provider,
            codec,
            gemini,
            all_own: codec.all_own(),
            keep: provider != Provider::Gemini || gemini == GeminiSchema::JsonSchema,
        }
    }

    /// `tool`'s wire name in this request.
    pub(super) fn wire_name<'t>(&'t self, tool: &RegisteredTool, cache: &'t ToolCache) -> &'t str {
        let own: &str = cache.wire(self.provider.rule());
        #[allow(
            clippy::expect_used,
            reason = "the codec was built from these tools' names"
        )]
        if self.all_own {
            own
        } else {
            self.codec
                .encode(tool.name.as_str())
                .expect("the codec was built from these names")
        }
    }

    /// `tool`'s entry (with its `cache`) in this request.
    pub(super) fn of(&self, tool: &RegisteredTool, cache: &ToolCache) -> Arc<Encoded> {
        let own: &str = cache.wire(self.provider.rule());
        let wire_name = self.wire_name(tool, cache);
        let offered = Offered { wire_name, tool };
        let (provider, gemini) = (self.provider, self.gemini);
        if self.keep && (self.all_own || wire_name == own) {
            cache
                .entry(provider, || Encoded::build(provider, offered, gemini))
                .clone()
        } else {
            Arc::new(Encoded::build(provider, offered, gemini))
        }
    }

    /// `tool`'s entry marked `"defer_loading": true` (Anthropic, OpenAI
    /// Responses), kept with the tool as its entry is.
    pub(super) fn deferred(&self, tool: &RegisteredTool, cache: &ToolCache) -> Arc<Encoded> {
        let own: &str = cache.wire(self.provider.rule());
        let wire_name = self.wire_name(tool, cache);
        let build = || Encoded::deferred(&self.of(tool, cache));
        if self.keep && (self.all_own || wire_name == own) {
            cache.deferred_entry(self.provider, build).clone()
        } else {
            Arc::new(build())
        }
    }
}
