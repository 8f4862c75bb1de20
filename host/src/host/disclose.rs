//! The host's side of deferred tools in a turn: answering a model's
//! search of the host's ([`SEARCH_TOOL`]), checking what the provider's
//! own search found, and offering the found tools from the next request
//! on.
//!
//! Invariants:
//! - A search finds only deferred tools of the registry the request was
//!   made from: registered, and pinned as every registered tool is.
//! - Every search is journaled (the query's hash, the tools found and
//!   their definition hashes), and so is every tool loaded into an offer.
//! - A tool the provider's own search names that this request did not
//!   defer (unknown, or not deferred) fails the turn with one line, before
//!   any call of it runs.

use serde_json::{Value, json};

use crate::invoke::{CallOutcome, Caller, Disclosed, Disclosure, ToolCall};
use crate::provider::{DecodedCall, EncodedRequest, SEARCH_TOOL};
use crate::registry::Registry;
use crate::tool::{CallError, ToolResult, Violation};

use super::Host;
use super::turn::TurnError;

/// What a search of the host's answered.
pub(super) struct Answer {
    /// The call's outcome (the found tools as text, or why not).
    pub outcome: CallOutcome,
    /// The provider's form of the found tools, for the reply.
    pub entries: Option<Vec<Value>>,
    /// The found tools' registry names, best first.
    pub found: Vec<String>,
}

impl Host {
    /// Whether `call` is a search of the host's that `request` offered.
    pub(super) fn is_search(request: &EncodedRequest, call: &ToolCall) -> bool {
        call.name == SEARCH_TOOL && request.search.as_ref().is_some_and(|s| s.by_host())
    }

    /// Runs the search `call` asks for over `registry`'s deferred tools.
    pub(super) fn answer_search(
        &self,
        request: &EncodedRequest,
        decoded: &DecodedCall,
        call: &ToolCall,
        registry: &Registry,
    ) -> Answer {
        let refused = |error: CallError| Answer {
            outcome: CallOutcome::new(call.id.clone(), SEARCH_TOOL, Err(error)),
            entries: None,
            found: Vec::new(),
        };
        let (query, limit) = match search_arguments(&call.arguments) {
            Ok(parsed) => parsed,
            Err(error) => return refused(error),
        };
        let hits = match registry.search(query, limit) {
            Ok(hits) => hits,
            Err(e) => {
                let result = ToolResult::error(format!("the search was refused: {e}"));
                return Answer {
                    outcome: CallOutcome::new(call.id.clone(), SEARCH_TOOL, Ok(result)),
                    entries: None,
                    found: Vec::new(),
                };
            }
        };
        let disclosed: Vec<Disclosed<'_>> = hits
            .iter()
            .map(|hit| Disclosed::new(&hit.name, &hit.definition_hash))
            .collect();
        self.invoker.record_disclosure(
            &Disclosure::Search {
                id: &call.id,
                query,
                found: &disclosed,
            },
            Caller::new(Some(&decoded.wire_name), None),
        );
        let tools: Vec<_> = hits
            .iter()
            .filter_map(|hit| registry.get(&hit.name))
            .collect();
        let listed: Vec<Value> = tools
            .iter()
            .filter_map(|tool| {
                let wire = request.codec.encode(tool.name.as_str())?;
                Some(json!({ "name": wire, "description": tool.definition.description }))
            })
            .collect();
        let text = if listed.is_empty() {
            json!({ "found": [], "hint": "no tool that is not listed yet matches; try other words" })
        } else {
            json!({ "found": listed, "hint": "these tools can be called by name from now on" })
        };
        let tools: Vec<_> = tools.iter().map(|tool| &***tool).collect();
        Answer {
            outcome: CallOutcome::new(
                call.id.clone(),
                SEARCH_TOOL,
                Ok(ToolResult::text(text.to_string())),
            ),
            entries: request.found_entries(&tools),
            found: hits.into_iter().map(|hit| hit.name).collect(),
        }
    }

    /// The tools the provider's own search found in `response`, checked:
    /// each must be a deferred tool of `registry`. They are journaled as
    /// loaded.
    pub(super) fn provider_found(
        &self,
        request: &EncodedRequest,
        response: &Value,
        registry: &Registry,
    ) -> Result<Vec<String>, TurnError> {
        let mut found = Vec::new();
        for name in request
            .provider
            .decode_disclosed(&request.codec, response)?
        {
            let name = name.map_err(|wire| TurnError::NotDeferred { name: wire })?;
            if registry.get(&name).is_none() || !registry.is_deferred(&name) {
                return Err(TurnError::NotDeferred { name });
            }
            if !found.contains(&name) {
                found.push(name);
            }
        }
        self.record_loaded(&found, registry);
        Ok(found)
    }

    /// Journals `names` (deferred tools of `registry`) as loaded.
    fn record_loaded(&self, names: &[String], registry: &Registry) {
        let tools: Vec<_> = names.iter().filter_map(|n| registry.get(n)).collect();
        if tools.is_empty() {
            return;
        }
        let loaded: Vec<Disclosed<'_>> = tools
            .iter()
            .map(|tool| Disclosed::new(tool.name.as_str(), &tool.definition_hash))
            .collect();
        self.invoker
            .record_disclosure(&Disclosure::Load { tools: &loaded }, Caller::default());
    }

    /// The request after `request`, once `turn` ran: the same provider's
    /// tools as the registry is now, with the deferred tools that searches
    /// found so far (the earlier requests' and this turn's) listed after
    /// the search for the providers without deferred loading of their own,
    /// in the order they were found, so that every byte before them stays
    /// as it was (a provider's prompt cache keeps it). The tools newly
    /// listed are journaled as loaded.
    pub fn offer_next(&self, request: &EncodedRequest, turn: &super::Turn) -> EncodedRequest {
        let registry = self.registry();
        let mut loaded = request.loaded.clone();
        for name in &turn.found {
            if !loaded.contains(name) {
                loaded.push(name.clone());
            }
        }
        let next = request
            .provider
            .encode_registry_with(&registry, &loaded, request.gemini);
        let new: Vec<String> = next
            .loaded
            .iter()
            .filter(|name| !request.loaded.contains(name))
            .cloned()
            .collect();
        self.record_loaded(&new, &registry);
        next
    }
}

/// The query and limit of a search's arguments: `query` a string, `limit`
/// an integer if given, nothing else.
fn search_arguments(arguments: &Value) -> Result<(&str, Option<usize>), CallError> {
    let violation = |at: &str, message: &str| CallError::InvalidArguments {
        violations: vec![Violation {
            instance_path: at.to_owned(),
            schema_path: String::new(),
            message: message.to_owned(),
        }],
    };
    let Some(object) = arguments.as_object() else {
        return Err(violation("", "send one JSON object: {\"query\": \"...\"}"));
    };
    if let Some(key) = object.keys().find(|k| *k != "query" && *k != "limit") {
        return Err(violation(
            &format!("/{key}"),
            "unknown argument: a search takes query and limit",
        ));
    }
    let query = match object.get("query") {
        Some(Value::String(query)) => query.as_str(),
        Some(_) => return Err(violation("/query", "the query must be a string")),
        None => return Err(violation("", "query is required: what the tool should do")),
    };
    let limit = match object.get("limit") {
        None | Some(Value::Null) => None,
        Some(limit) => match limit.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(n) => Some(n),
            None => {
                return Err(violation(
                    "/limit",
                    "the limit must be an integer from 1 to 20",
                ));
            }
        },
    };
    Ok((query, limit))
}
