//! A static upper bound on the work that validating one value against a
//! schema can take, so that a hostile schema is refused when its tool is
//! registered instead of burning host CPU on every call.
//!
//! Invariant: for every instance `v` nested at most [`MAX_INSTANCE_DEPTH`]
//! containers deep, validating `v` against a schema whose
//! [`evaluation_cost`] is `W` applies at most `W * instance_units(v)`
//! "units" of keyword work, where a unit is one keyword of one subschema
//! applied to one value, or one byte of a string or key scanned by it.
//!
//! The bound, per subschema `S` (sums and products saturate):
//! - `local(S)`: 1, plus 1 per assertion keyword, the number of values of
//!   `enum` and names of `required`, one per `properties` entry (looked up
//!   per value), and a regex weight per `pattern` / `patternProperties`
//!   pattern (the regex engine's per-byte cost grows with its automaton:
//!   [`regex_weight`]). Annotations weigh nothing.
//! - `m(S) = local(S) + Σ m(T)` over the in-place subschemas `T`
//!   (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//!   `dependentSchemas`, schema-valued `dependencies`, and the targets of
//!   `$ref`, `$dynamicRef` and `$recursiveRef`; a dynamic reference counts
//!   every subschema that could be its target), each with its multiplicity.
//!   An in-place cycle would never terminate, so it is refused.
//! - For one child slot (the value of one property, one key, one item),
//!   summing over the in-place closure of `S` (with multiplicity):
//!   `slot(S)` = for a property value, the largest over names `n` of the
//!   `properties[n]` targets (tracked per name, up to 32 names, beyond
//!   which each node's largest is summed), plus every `patternProperties`,
//!   `additionalProperties` and `unevaluatedProperties` target; for a key,
//!   every `propertyNames` target; for an item, the largest `prefixItems` /
//!   tuple `items` / `items` / `additionalItems` target plus every
//!   `contains` and `unevaluatedItems` target.
//! - `unevaluatedProperties` / `unevaluatedItems` re-run their in-place
//!   branches on the same value to learn what they evaluated (jsonschema's
//!   `mark_evaluated_*` calls `is_valid` on each `allOf` / `anyOf` /
//!   `oneOf` branch and each `if`, and its "contributions" shortcut checks up
//!   to 64 conditions per part): such a schema adds
//!   `(3 + min(64, c)) * (local(S) + Σ W(T))` over its in-place closure,
//!   `c` the number of `if` and `dependentSchemas` entries in it.
//! - `W(S) = max(m(S), slot(S)) + extra(S)`. Since
//!   `units(v) = 1 + Σ units(child)`, induction on `v` gives the invariant.
//!
//! Recursion through child slots (a tree whose `items` is `{"$ref": "#"}`)
//! is legitimate: `W` is the least fixpoint, computed by rounds (round `r`
//! bounds values `r` levels deep), stopping once stable or after
//! `MAX_INSTANCE_DEPTH + 1` rounds. Per-instance-size work (`uniqueItems`
//! hashes every item, `contains` applies to every item, `pattern` scans
//! every byte) is linear in the instance's units, so it is covered.
//!
//! The walk is linear in the schema: nodes are memoised by identity, the
//! document is walked with an explicit stack, the reference graph with
//! iterative depth-first search, and nothing is expanded per path.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use referencing::{Draft, Registry, Retrieve, Uri};
use serde_json::Value;

/// The most nested containers an instance may have for the bound to hold:
/// serde_json refuses to parse deeper documents (its recursion limit).
pub const MAX_INSTANCE_DEPTH: usize = 128;

/// `size_limit` given to the regex engine: the compiled program of one
/// pattern. The engine is linear in the text but its per-byte cost grows
/// with the automaton (a `[ab]{2000}` counter matches at ~7 µs a byte), so
/// this caps the per-byte cost; 256 KiB admits every realistic pattern.
pub const REGEX_SIZE_LIMIT: usize = 256 << 10;

/// `dfa_size_limit` given to the regex engine: the lazy DFA's cache, per
/// pattern and per thread, so it bounds memory (patterns x threads x this).
pub const REGEX_DFA_SIZE_LIMIT: usize = 256 << 10;

/// Automaton states per unit of weight: measured in release, a byte
/// through a 3000-state automaton (`[ab]{1500}`, the engine's slowest
/// path) takes ~5 µs, ~50 ns a unit at this ratio, the same as a unit of
/// the costliest keyword work (error collection under `anyOf`).
const STATES_PER_UNIT: u64 = 16;

/// Why a schema has no acceptable evaluation cost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The bound exceeds the budget; `at` is where it fans out.
    #[error(
        "validating one value may take {bound} units, over the budget of {budget}: it fans out at {at}"
    )]
    OverBudget {
        /// The bound computed so far (a lower bound on the whole schema's).
        bound: u64,
        /// The budget it exceeds.
        budget: u64,
        /// JSON pointer of the keyword where the work multiplies.
        at: String,
    },
    /// A reference leads back to itself without descending into the value.
    #[error("the reference at {at} leads back to itself without descending into the value")]
    InPlaceCycle {
        /// JSON pointer of the `$ref` (or `$dynamicRef`, `$recursiveRef`).
        at: String,
    },
    /// Validation would nest deeper than [`MAX_EVALUATION_DEPTH`]
    /// subschemas (a long `$ref` chain, say): deep enough to overflow the
    /// stack of the thread that validates.
    #[error(
        "validating may nest {depth} subschemas deep, more than {max}: shorten the chain of references or combinators at {at}"
    )]
    TooDeep {
        /// The depth reached when it was refused.
        depth: u64,
        /// The most allowed.
        max: u64,
        /// JSON pointer of the subschema where it was reached.
        at: String,
    },
    /// A reference does not resolve within the schema.
    #[error("cannot resolve {reference:?} at {at}: {reason}")]
    Unresolvable {
        /// JSON pointer of the reference keyword.
        at: String,
        /// The reference as written.
        reference: String,
        /// Why it does not resolve.
        reason: String,
    },
}

/// A sound upper bound on the units that validating one instance value
/// against `schema` costs, per unit of [`instance_units`]; refuses the
/// schema once the bound exceeds `budget`.
///
/// # Errors
///
/// [`CostError`]: over budget, an in-place reference cycle, or a reference
/// that does not resolve within the schema.
pub fn evaluation_cost(schema: &Value, budget: u64) -> Result<u64, CostError> {
    evaluation_bounds(schema, budget).map(|bounds| bounds.work)
}

/// The most subschemas validation may nest: each is a few stack frames in
/// the validator, which recurses, and validation runs on whatever thread
/// the caller's task is on (tokio's default stack is 2 MiB). A `$ref` chain
/// 5,000 deep overflowed a 2 MiB stack in a debug build; 2,000 did not. A
/// schema that nests deeper than this for a value without children is
/// refused; for deeper values, the invoker refuses arguments that would
/// nest deeper (see [`Bounds::depth_for`]).
pub const MAX_EVALUATION_DEPTH: u64 = 512;

/// What the analysis bounds: the work per unit of a value, and how deep
/// the validator's recursion can go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// The bound [`evaluation_cost`] returns.
    pub work: u64,
    /// The deepest nesting of subschemas for a value nested `k` levels
    /// deep, by `k` (the last entry holds for every deeper `k`).
    depth_by_level: Vec<u64>,
}

impl Bounds {
    /// Whether a value nested any number of levels deep stays within
    /// [`MAX_EVALUATION_DEPTH`] (no instance then needs its depth measured).
    pub fn any_depth_within(&self) -> bool {
        self.depth_by_level
            .iter()
            .all(|&depth| depth <= MAX_EVALUATION_DEPTH)
    }

    /// The deepest nesting of subschemas validating a value nested
    /// `levels` deep can reach (capped just past [`MAX_EVALUATION_DEPTH`]).
    pub fn depth_for(&self, levels: usize) -> u64 {
        let last = self.depth_by_level.len().saturating_sub(1);
        self.depth_by_level
            .get(levels.min(last))
            .copied()
            .unwrap_or(0)
    }
}

/// As [`evaluation_cost`], also bounding (and limiting) the depth of the
/// validator's recursion.
///
/// # Errors
///
/// As [`evaluation_cost`], and [`CostError::TooDeep`].
pub fn evaluation_bounds(schema: &Value, budget: u64) -> Result<Bounds, CostError> {
    let unresolvable = |reason: String| CostError::Unresolvable {
        at: String::new(),
        reference: String::new(),
        reason,
    };
    let draft = match Draft::default().detect(schema) {
        Draft::Unknown => Draft::Draft202012,
        known => known,
    };
    let resource = draft.create_resource_ref(schema);
    let base = match resource.id() {
        Some(id) => referencing::uri::from_str(id).map_err(|e| unresolvable(e.to_string()))?,
        None => referencing::uri::from_str("json-schema:///")
            .map_err(|e| unresolvable(e.to_string()))?,
    };
    let registry = Registry::new()
        .retriever(NoRetrieval)
        .draft(draft)
        .add(base.as_str(), resource)
        .and_then(|builder| builder.prepare())
        .map_err(|e| unresolvable(e.to_string()))?;
    let mut graph = Graph::new(&registry, schema);
    graph.walk(schema, Arc::new(base), draft, String::new(), None);
    let order = graph.link()?;
    let depth_by_level = graph.depth(&order, MAX_EVALUATION_DEPTH)?;
    let work = graph.fixpoint(&order, budget)?;
    Ok(Bounds {
        work,
        depth_by_level,
    })
}

/// How many levels of arrays and objects `value` nests (0 for a scalar),
/// counted up to `stop_after` levels. Iterative: no recursion.
pub fn instance_depth(value: &Value, stop_after: usize) -> usize {
    enum Frame<'v> {
        Items(std::slice::Iter<'v, Value>),
        Members(serde_json::map::Values<'v>),
    }
    // The open non-empty containers: every ancestor of the value at hand.
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut deepest = 0;
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Array(items) if !items.is_empty() => stack.push(Frame::Items(items.iter())),
                Value::Object(members) if !members.is_empty() => {
                    stack.push(Frame::Members(members.values()));
                }
                _ => {}
            }
            deepest = deepest.max(stack.len());
            if deepest > stop_after {
                return deepest;
            }
        }
        next = match stack.last_mut() {
            None => return deepest,
            Some(Frame::Items(items)) => items.next(),
            Some(Frame::Members(members)) => members.next(),
        };
        if next.is_none() {
            stack.pop();
        }
    }
}

/// The size of `value` in the units [`evaluation_cost`] is per: one per
/// JSON value, plus one per member, plus the bytes of every string and key.
/// Stops counting once past `stop_after`; a value nested deeper than
/// [`MAX_INSTANCE_DEPTH`] containers counts as `u64::MAX` (the bound does
/// not cover it). Iterative: no recursion, no allocation per value.
pub fn instance_units(value: &Value, stop_after: u64) -> u64 {
    enum Frame<'v> {
        Items(std::slice::Iter<'v, Value>),
        Members(serde_json::map::Iter<'v>),
    }
    let mut units: u64 = 0;
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            units = units.saturating_add(1);
            match value {
                Value::String(s) => units = units.saturating_add(s.len() as u64),
                Value::Array(items) => stack.push(Frame::Items(items.iter())),
                Value::Object(members) => stack.push(Frame::Members(members.iter())),
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
            if stack.len() > MAX_INSTANCE_DEPTH {
                return u64::MAX;
            }
            if units > stop_after {
                return units;
            }
        }
        match stack.last_mut() {
            None => return units,
            Some(Frame::Items(items)) => next = items.next(),
            Some(Frame::Members(members)) => {
                next = members.next().map(|(key, value)| {
                    units = units.saturating_add(1 + key.len() as u64);
                    value
                });
            }
        }
        if next.is_none() {
            stack.pop();
        }
    }
}

/// The weight of one regex, in units per byte matched: the engine's slowest
/// path walks the whole automaton per byte, so this is its state count per
/// `STATES_PER_UNIT`, for the form jsonschema compiles (its ECMA-262
/// translation, or the cheaper search form it substitutes; `^X{m,n}$` over
/// one class it counts instead). A pattern the engine refuses weighs what
/// the largest accepted one does (compiling the schema refuses it anyway).
pub fn regex_weight(pattern: &str) -> u64 {
    use jsonschema_regex::Search;
    use regex_automata::nfa::thompson::{Config, NFA};
    let largest = 1 + (REGEX_SIZE_LIMIT as u64 / 16) / STATES_PER_UNIT;
    let Ok(translated) = jsonschema_regex::to_rust_regex(pattern) else {
        return largest;
    };
    let compiled = match jsonschema_regex::search_form(pattern, &translated) {
        Some(Search::RepeatedClass(_)) => return 1,
        Some(Search::Collapsed(collapsed)) => collapsed,
        None => translated.into_owned(),
    };
    NFA::compiler()
        .configure(Config::new().nfa_size_limit(Some(REGEX_SIZE_LIMIT)))
        .build(&compiled)
        .map_or(largest, |nfa| {
            1 + nfa.states().len() as u64 / STATES_PER_UNIT
        })
}

/// Refuses every retrieval: the cost of an external document is unknown
/// (and compiling the schema refuses external references anyway).
struct NoRetrieval;

impl Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external reference {uri} is not allowed").into())
    }
}

type NodeId = usize;

/// How an edge's target applies relative to the value its source sees.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// To the same value.
    InPlace,
    /// To one property's value, at most one of these per property.
    Property,
    /// To property values, every one that matches adds up.
    PropertySum,
    /// To each key.
    Key,
    /// To one item, at most one of these per item.
    Item,
    /// To items, every one adds up.
    ItemSum,
}

struct Edge {
    slot: Slot,
    /// The keyword (with its index or name) under the source, for messages.
    label: String,
    target: NodeId,
}

/// A reference not yet resolved: the keyword and what it says.
struct RawRef {
    keyword: &'static str,
    reference: String,
}

struct Node {
    pointer: String,
    base: Arc<Uri<String>>,
    local: u64,
    conditions: u64,
    unevaluated: bool,
    edges: Vec<Edge>,
    refs: Vec<RawRef>,
}

struct Graph<'a> {
    registry: &'a Registry<'a>,
    nodes: Vec<Node>,
    by_address: HashMap<*const Value, NodeId>,
    /// Every value in the document: a reference target outside it (a
    /// bundled meta-schema) is not this schema's.
    document: HashSet<*const Value>,
    dynamic_anchors: HashMap<&'a str, Vec<NodeId>>,
    recursive_anchors: Vec<NodeId>,
    regex_weights: HashMap<&'a str, u64>,
}

mod walk;

impl<'a> Graph<'a> {
    fn new(registry: &'a Registry<'a>, schema: &'a Value) -> Self {
        let mut document = HashSet::new();
        let mut stack = vec![schema];
        while let Some(value) = stack.pop() {
            document.insert(std::ptr::from_ref(value));
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(members) => stack.extend(members.values()),
                _ => {}
            }
        }
        Graph {
            registry,
            nodes: Vec::new(),
            by_address: HashMap::new(),
            document,
            dynamic_anchors: HashMap::new(),
            recursive_anchors: Vec::new(),
            regex_weights: HashMap::new(),
        }
    }

    /// Resolves the references of every node the root reaches (indexing
    /// targets outside the schema positions), returning the reached nodes
    /// in in-place order (in-place targets first).
    fn link(&mut self) -> Result<Vec<NodeId>, CostError> {
        let mut reached = vec![false; self.nodes.len()];
        let mut queue = vec![0];
        reached[0] = true;
        let mut order = Vec::new();
        while let Some(node) = queue.pop() {
            self.resolve(node)?;
            order.push(node);
            reached.resize(self.nodes.len(), false);
            for edge in &self.nodes[node].edges {
                if !reached[edge.target] {
                    reached[edge.target] = true;
                    queue.push(edge.target);
                }
            }
        }
        self.in_place_order(&order)
    }
}

mod bound;

#[cfg(test)]
mod tests;
