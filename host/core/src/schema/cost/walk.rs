//! Indexing a schema document into cost nodes, and resolving references
//! the way jsonschema does (through the `referencing` crate it uses).

use std::sync::Arc;

use referencing::{Draft, Uri};
use serde_json::{Map, Value};

use super::{CostError, Edge, Graph, Node, NodeId, RawRef, Slot, regex_weight};

/// Assertion keywords that cost one unit per value (or per byte of it).
const ASSERTIONS: &[&str] = &[
    "type",
    "const",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
    "contentEncoding",
    "contentMediaType",
    "format",
];

/// Where a subschema found in the document hangs: the node whose keyword
/// holds it, how it applies and under which label; `None` for `$defs` and
/// other positions that are not applied.
type Parent = Option<(NodeId, Slot, String)>;

/// One subschema still to index.
struct Pending<'a> {
    value: &'a Value,
    base: Arc<Uri<String>>,
    draft: Draft,
    pointer: String,
    parent: Parent,
    /// Whether its `$id` changes its base (not for a reference target,
    /// whose base the resolver already computed).
    enter: bool,
}

impl<'a> Graph<'a> {
    /// Indexes `value` and every subschema under it, with an explicit stack
    /// (no recursion), attaching `value` under `parent`; returns its node.
    pub(super) fn walk(
        &mut self,
        value: &'a Value,
        base: Arc<Uri<String>>,
        draft: Draft,
        pointer: String,
        parent: Parent,
    ) -> NodeId {
        let enter = parent.is_none() && self.nodes.is_empty();
        let mut stack = vec![Pending {
            value,
            base,
            draft,
            pointer,
            parent,
            enter,
        }];
        let mut first = None;
        while let Some(pending) = stack.pop() {
            let id = match self.by_address.get(&std::ptr::from_ref(pending.value)) {
                Some(&id) => id,
                None => self.index(pending.value, &pending, &mut stack),
            };
            if let Some((parent, slot, label)) = pending.parent {
                self.nodes[parent].edges.push(Edge {
                    slot,
                    label,
                    target: id,
                });
            }
            first.get_or_insert(id);
        }
        // The stack starts with the root subschema, which is indexed first.
        first.unwrap_or_default()
    }

    /// Creates the node for `value` and queues its subschemas.
    fn index(
        &mut self,
        value: &'a Value,
        at: &Pending<'a>,
        stack: &mut Vec<Pending<'a>>,
    ) -> NodeId {
        let draft = at.draft.detect(value);
        let draft = if draft == Draft::Unknown {
            at.draft
        } else {
            draft
        };
        let base = if at.enter {
            self.registry
                .resolver((*at.base).clone())
                .in_subresource(draft.create_resource_ref(value))
                .map_or_else(|_| Arc::clone(&at.base), |resolver| resolver.base_uri())
        } else {
            Arc::clone(&at.base)
        };
        let id = self.nodes.len();
        self.by_address.insert(std::ptr::from_ref(value), id);
        let mut node = Node {
            pointer: at.pointer.clone(),
            base: Arc::clone(&base),
            local: 1,
            conditions: 0,
            unevaluated: false,
            edges: Vec::new(),
            refs: Vec::new(),
        };
        let mut queue = |value: &'a Value, segment: String, applies: Option<Slot>| {
            stack.push(Pending {
                value,
                base: Arc::clone(&base),
                draft,
                pointer: format!("{}/{segment}", at.pointer),
                parent: applies.map(|slot| (id, slot, segment)),
                enter: true,
            });
        };
        if let Value::Object(schema) = value {
            for (keyword, value) in schema {
                let key = keyword.as_str();
                let mut each = |slot: Option<Slot>| match value {
                    Value::Array(items) => {
                        for (i, item) in items.iter().enumerate() {
                            queue(item, format!("{key}/{i}"), slot);
                        }
                    }
                    Value::Object(members) => {
                        for (name, member) in members {
                            queue(member, format!("{key}/{}", escape(name)), slot);
                        }
                    }
                    _ => {}
                };
                match key {
                    "allOf" | "anyOf" | "oneOf" => each(Some(Slot::InPlace)),
                    "if" => {
                        node.conditions += 1;
                        queue(value, key.to_owned(), Some(Slot::InPlace));
                    }
                    "not" | "then" | "else" => queue(value, key.to_owned(), Some(Slot::InPlace)),
                    "dependentSchemas" | "dependencies" => {
                        for (name, member) in value.as_object().into_iter().flatten() {
                            let segment = format!("{key}/{}", escape(name));
                            match member {
                                Value::Array(names) => node.local += names.len() as u64,
                                _ => {
                                    node.conditions += 1;
                                    node.local += 1;
                                    queue(member, segment, Some(Slot::InPlace));
                                }
                            }
                        }
                    }
                    "$ref" | "$dynamicRef" | "$recursiveRef" => {
                        if let Value::String(reference) = value {
                            node.refs.push(RawRef {
                                keyword: static_keyword(key),
                                reference: reference.clone(),
                            });
                        }
                    }
                    "properties" => each(Some(Slot::Property)),
                    "patternProperties" => each(Some(Slot::PropertySum)),
                    "additionalProperties" | "unevaluatedProperties" => {
                        node.unevaluated |= key == "unevaluatedProperties";
                        node.local += self.pattern_weights(schema);
                        queue(value, key.to_owned(), Some(Slot::PropertySum));
                    }
                    "propertyNames" => queue(value, key.to_owned(), Some(Slot::Key)),
                    "items" | "prefixItems" | "additionalItems" => match value {
                        Value::Array(_) => each(Some(Slot::Item)),
                        _ => queue(value, key.to_owned(), Some(Slot::Item)),
                    },
                    "contains" | "unevaluatedItems" => {
                        node.unevaluated |= key == "unevaluatedItems";
                        queue(value, key.to_owned(), Some(Slot::ItemSum));
                    }
                    "$defs" | "definitions" => each(None),
                    "contentSchema" => queue(value, key.to_owned(), None),
                    "$dynamicAnchor" => {
                        if let Value::String(name) = value {
                            self.dynamic_anchors
                                .entry(name.as_str())
                                .or_default()
                                .push(id);
                        }
                    }
                    "$recursiveAnchor" if value == &Value::Bool(true) => {
                        self.recursive_anchors.push(id);
                    }
                    _ => {}
                }
                node.local = node
                    .local
                    .saturating_add(self.keyword_weight(key, value, schema));
            }
        }
        self.nodes.push(node);
        id
    }

    /// The per-value weight of one keyword, beyond the subschemas it applies.
    fn keyword_weight(
        &mut self,
        key: &str,
        value: &'a Value,
        schema: &'a Map<String, Value>,
    ) -> u64 {
        let len = |value: &Value| match value {
            Value::Array(items) => items.len() as u64,
            Value::Object(members) => members.len() as u64,
            _ => 0,
        };
        match key {
            "enum" => len(value).max(1),
            "required" | "properties" => len(value),
            "dependentRequired" => value
                .as_object()
                .map_or(0, |members| members.values().map(len).sum()),
            "pattern" => value.as_str().map_or(1, |pattern| self.regex(pattern)),
            "patternProperties" => self.pattern_weights(schema),
            "uniqueItems" => 2,
            "allOf"
            | "anyOf"
            | "oneOf"
            | "not"
            | "if"
            | "then"
            | "else"
            | "$ref"
            | "$dynamicRef"
            | "$recursiveRef"
            | "additionalProperties"
            | "propertyNames"
            | "items"
            | "prefixItems"
            | "additionalItems"
            | "contains"
            | "unevaluatedProperties"
            | "unevaluatedItems" => 1,
            _ if ASSERTIONS.contains(&key) => 1,
            _ => 0,
        }
    }

    /// The summed regex weights of `schema`'s `patternProperties`: every key
    /// of a value is matched against each of them.
    fn pattern_weights(&mut self, schema: &'a Map<String, Value>) -> u64 {
        let Some(Value::Object(patterns)) = schema.get("patternProperties") else {
            return 0;
        };
        patterns.keys().map(|pattern| self.regex(pattern)).sum()
    }

    fn regex(&mut self, pattern: &'a str) -> u64 {
        *self
            .regex_weights
            .entry(pattern)
            .or_insert_with(|| regex_weight(pattern))
    }

    /// Resolves `node`'s references into in-place edges.
    pub(super) fn resolve(&mut self, node: NodeId) -> Result<(), CostError> {
        let refs = std::mem::take(&mut self.nodes[node].refs);
        for RawRef { keyword, reference } in refs {
            let at = format!("{}/{keyword}", self.nodes[node].pointer);
            let unresolvable = |reason: String| CostError::Unresolvable {
                at: at.clone(),
                reference: reference.clone(),
                reason,
            };
            // A dynamic reference may land on any subschema that declares
            // its anchor: count them all, and the static target.
            let mut candidates: Vec<NodeId> = match keyword {
                "$dynamicRef" => reference
                    .rsplit_once('#')
                    .and_then(|(_, name)| self.dynamic_anchors.get(name))
                    .cloned()
                    .unwrap_or_default(),
                "$recursiveRef" => self.recursive_anchors.clone(),
                _ => Vec::new(),
            };
            let lookup = if keyword == "$recursiveRef" {
                "#"
            } else {
                reference.as_str()
            };
            let resolver = self.registry.resolver((*self.nodes[node].base).clone());
            match resolver.lookup(lookup) {
                Ok(resolved) => {
                    let (contents, resolver, draft) = resolved.into_inner();
                    let address = std::ptr::from_ref(contents);
                    if !self.document.contains(&address) {
                        return Err(unresolvable("it resolves outside this schema".into()));
                    }
                    let target = match self.by_address.get(&address) {
                        Some(&target) => target,
                        None => {
                            let pointer = lookup.rsplit_once('#').map_or(lookup, |(_, f)| f);
                            self.walk(contents, resolver.base_uri(), draft, pointer.into(), None)
                        }
                    };
                    candidates.push(target);
                }
                Err(error) if candidates.is_empty() => return Err(unresolvable(error.to_string())),
                Err(_) => {}
            }
            // Exactly one candidate applies per evaluation; their sum is a
            // bound, counting each distinct one once.
            candidates.sort_unstable();
            candidates.dedup();
            for target in candidates {
                self.nodes[node].edges.push(Edge {
                    slot: Slot::InPlace,
                    label: keyword.to_owned(),
                    target,
                });
            }
        }
        Ok(())
    }
}

fn static_keyword(key: &str) -> &'static str {
    match key {
        "$dynamicRef" => "$dynamicRef",
        "$recursiveRef" => "$recursiveRef",
        _ => "$ref",
    }
}

/// `name` as a JSON pointer segment.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
