//! The in-place order of the reached nodes (refusing in-place cycles) and
//! the least fixpoint of the bound over it.

use super::{CostError, Graph, MAX_INSTANCE_DEPTH, NodeId, Slot};

/// How many in-place conditions jsonschema's `unevaluatedProperties`
/// shortcut checks per part at most (its `MAX_PARTS`).
const MAX_PARTS: u64 = 64;

/// The most property names tracked one by one per node; beyond them the
/// names collapse into one sum of their largest (still an upper bound),
/// which keeps the walk linear in the schema.
const MAX_NAMES: usize = 32;

/// The work per property value, by property name: a value named `n` meets
/// every in-place `properties[n]` target, but none of another name's, so a
/// recursive union whose branches descend under different names (`all`,
/// `any`, `not`) does not compound. Bound: `coarse + max(named)`.
#[derive(Clone, Default, PartialEq, Eq)]
struct Named<'g> {
    /// Sorted by name.
    named: Vec<(&'g str, u64)>,
    coarse: u64,
}

impl<'g> Named<'g> {
    fn bound(&self) -> u64 {
        let top = self.named.iter().map(|&(_, w)| w).max().unwrap_or(0);
        self.coarse.saturating_add(top)
    }

    /// Adds `other` (a summand of the same in-place closure).
    fn add(&mut self, other: &Named<'g>) {
        self.coarse = self.coarse.saturating_add(other.coarse);
        let mine = std::mem::take(&mut self.named);
        let (mut a, mut b) = (
            mine.into_iter().peekable(),
            other.named.iter().copied().peekable(),
        );
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    let (name, w) = (x.0, x.1.saturating_add(y.1));
                    a.next();
                    b.next();
                    Some((name, w))
                }
                (Some(x), Some(y)) if x.0 < y.0 => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => None,
            };
            let Some(next) = next else { break };
            self.named.push(next);
        }
        if self.named.len() > MAX_NAMES {
            self.coarse = self.bound();
            self.named.clear();
        }
    }
}

/// Per-node aggregates over the in-place closure, for one round.
#[derive(Clone, Default, PartialEq, Eq)]
struct Sums<'g> {
    /// `m`: the same value's work.
    in_place: u64,
    /// `if` and `dependentSchemas` entries.
    conditions: u64,
    /// Work per property value: by name, and for any name.
    named: Named<'g>,
    property: u64,
    key: u64,
    item: u64,
    /// Σ W over the strict in-place closure (what `unevaluated*` re-runs).
    rerun: u64,
    /// The `unevaluated*` surcharge.
    extra: u64,
}

impl<'a> Graph<'a> {
    /// `reached` ordered so that every in-place target comes before its
    /// source: an iterative depth-first search over in-place edges only, in
    /// which a back edge is an in-place cycle.
    pub(super) fn in_place_order(&self, reached: &[NodeId]) -> Result<Vec<NodeId>, CostError> {
        let mut state = vec![0u8; self.nodes.len()]; // 0 new, 1 open, 2 done
        let mut order = Vec::with_capacity(reached.len());
        for &root in reached {
            if state[root] != 0 {
                continue;
            }
            state[root] = 1;
            let mut stack: Vec<(NodeId, usize)> = vec![(root, 0)];
            while let Some((node, next)) = stack.last_mut() {
                let node = *node;
                let edges = &self.nodes[node].edges;
                let Some(offset) = edges[*next..].iter().position(|e| e.slot == Slot::InPlace)
                else {
                    state[node] = 2;
                    order.push(node);
                    stack.pop();
                    continue;
                };
                *next += offset + 1;
                let target = edges[*next - 1].target;
                match state[target] {
                    0 => {
                        state[target] = 1;
                        stack.push((target, 0));
                    }
                    1 => return Err(self.cycle(&stack, target)),
                    _ => {}
                }
            }
        }
        Ok(order)
    }

    /// The error for the in-place cycle the stack closes at `target`,
    /// naming a reference on it (a cycle needs one: the document is a tree).
    fn cycle(&self, stack: &[(NodeId, usize)], target: NodeId) -> CostError {
        let start = stack
            .iter()
            .position(|&(node, _)| node == target)
            .unwrap_or(0);
        let mut at = None;
        for &(node, next) in &stack[start..] {
            let edge = &self.nodes[node].edges[next - 1];
            let here = format!("{}/{}", self.nodes[node].pointer, edge.label);
            if edge.label.starts_with('$') {
                at = Some(here);
                break;
            }
            at.get_or_insert(here);
        }
        CostError::InPlaceCycle {
            at: at.unwrap_or_default(),
        }
    }

    /// How deep the nesting of subschemas can go in one evaluation, for a
    /// value nested `k` levels deep, for every `k` up to
    /// [`MAX_INSTANCE_DEPTH`] (index `k`; past the end, the last entry).
    /// By the same rounds as [`Graph::fixpoint`]: a node is one level deeper
    /// than the deepest of its in-place targets (this round) and of its
    /// child targets (last round, one value level up). Refuses a schema
    /// that nests deeper than `max` even for a value with no children.
    pub(super) fn depth(&self, order: &[NodeId], max: u64) -> Result<Vec<u64>, CostError> {
        let n = self.nodes.len();
        let mut previous = vec![0u64; n];
        let mut current = vec![0u64; n];
        let mut by_level = Vec::new();
        for level in 0..=MAX_INSTANCE_DEPTH {
            for &id in order {
                let deepest = self.nodes[id]
                    .edges
                    .iter()
                    .map(|edge| match edge.slot {
                        Slot::InPlace => current[edge.target],
                        _ => previous[edge.target],
                    })
                    .max()
                    .unwrap_or(0);
                // Saturating just past `max`: deeper is refused either way.
                let depth = (deepest + 1).min(max + 1);
                if level == 0 && depth > max {
                    return Err(CostError::TooDeep {
                        depth,
                        max,
                        at: self.nodes[id].pointer.clone(),
                    });
                }
                current[id] = depth;
            }
            let stable = current == previous;
            std::mem::swap(&mut current, &mut previous);
            by_level.push(previous.first().copied().unwrap_or(0));
            if stable {
                break;
            }
        }
        Ok(by_level)
    }

    /// The least fixpoint of the bound over `order`, by rounds: round `r`
    /// bounds values nested `r` levels deep, so `MAX_INSTANCE_DEPTH + 1`
    /// rounds cover every instance serde_json parses; stops once stable.
    pub(super) fn fixpoint(&self, order: &[NodeId], budget: u64) -> Result<u64, CostError> {
        let n = self.nodes.len();
        let mut previous = vec![0u64; n];
        let mut current = vec![0u64; n];
        let mut sums = vec![Sums::default(); n];
        for _ in 0..=MAX_INSTANCE_DEPTH {
            for &id in order {
                let (sum, bound) = self.bound(id, &sums, &current, &previous);
                if bound > budget {
                    return Err(CostError::OverBudget {
                        bound,
                        budget,
                        at: self.blame(id, &current, &previous),
                    });
                }
                sums[id] = sum;
                current[id] = bound;
            }
            let stable = current == previous;
            std::mem::swap(&mut current, &mut previous);
            if stable {
                break;
            }
        }
        Ok(previous[0])
    }

    /// One node's aggregates and bound, from its in-place targets' values
    /// this round and its child targets' values last round.
    fn bound<'g>(
        &'g self,
        id: NodeId,
        sums: &[Sums<'g>],
        current: &[u64],
        previous: &[u64],
    ) -> (Sums<'g>, u64) {
        let node = &self.nodes[id];
        let mut sum = Sums {
            in_place: node.local,
            conditions: node.conditions,
            ..Sums::default()
        };
        let mut item = 0u64;
        let mut own = Named::default();
        for edge in &node.edges {
            let (t, w) = (edge.target, previous[edge.target]);
            match edge.slot {
                Slot::InPlace => {
                    let other = &sums[t];
                    sum.in_place = sum.in_place.saturating_add(other.in_place);
                    sum.conditions = sum.conditions.saturating_add(other.conditions);
                    sum.named.add(&other.named);
                    sum.property = sum.property.saturating_add(other.property);
                    sum.key = sum.key.saturating_add(other.key);
                    sum.item = sum.item.saturating_add(other.item);
                    sum.rerun = sum
                        .rerun
                        .saturating_add(current[t].saturating_add(other.rerun));
                    sum.extra = sum.extra.saturating_add(other.extra);
                }
                Slot::Property => own.named.push((edge.label.as_str(), w)),
                Slot::PropertySum => sum.property = sum.property.saturating_add(w),
                Slot::Key => sum.key = sum.key.saturating_add(w),
                Slot::Item => item = item.max(w),
                Slot::ItemSum => sum.item = sum.item.saturating_add(w),
            }
        }
        own.named.sort_unstable();
        sum.named.add(&own);
        sum.item = sum.item.saturating_add(item);
        if node.unevaluated {
            let factor = 3 + sum.conditions.min(MAX_PARTS);
            let rerun = node.local.saturating_add(sum.rerun);
            sum.extra = sum.extra.saturating_add(rerun.saturating_mul(factor));
        }
        let property = sum.property.saturating_add(sum.named.bound());
        let bound = sum.in_place.max(property).max(sum.key).max(sum.item);
        let bound = bound.saturating_add(sum.extra);
        (sum, bound)
    }

    /// The keyword of `id` that contributes most to its bound.
    fn blame(&self, id: NodeId, current: &[u64], previous: &[u64]) -> String {
        let node = &self.nodes[id];
        let mut totals: Vec<(&str, u64)> = Vec::new();
        for edge in &node.edges {
            let keyword = edge.label.split('/').next().unwrap_or_default();
            let w = match edge.slot {
                Slot::InPlace => current[edge.target],
                _ => previous[edge.target],
            };
            match totals.iter_mut().find(|(k, _)| *k == keyword) {
                Some((_, total)) => *total = total.saturating_add(w),
                None => totals.push((keyword, w)),
            }
        }
        match totals.into_iter().max_by_key(|&(_, total)| total) {
            Some((keyword, total)) if total >= node.local => format!("{}/{keyword}", node.pointer),
            _ => node.pointer.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Named;

    fn named<'g>(pairs: &[(&'g str, u64)]) -> Named<'g> {
        Named {
            named: pairs.to_vec(),
            coarse: 0,
        }
    }

    #[test]
    fn adding_keeps_the_names_sorted_so_that_each_name_sums_once() {
        // "b" then "a": the sum must come out sorted, or a later summand
        // of "a" would not meet the "a" already there and the bound would
        // take the larger of two parts instead of their sum.
        let mut sum = named(&[("b", 1)]);
        sum.add(&named(&[("a", 2)]));
        assert_eq!(sum.named, [("a", 2), ("b", 1)]);
        sum.add(&named(&[("a", 3)]));
        assert_eq!(sum.named, [("a", 5), ("b", 1)]);
        assert_eq!(sum.bound(), 5);
    }
}
