//! The index the rankers read: built once from the tools a search may
//! find, then only read.
//!
//! Invariants:
//! - It holds the tools it was built from and nothing else: a search
//!   never reads the registry, so a tool that was not given is never
//!   found. A name given twice is kept once (the first given).
//! - Tools are kept in ascending order of full name, so that a tool's
//!   position is its place in the tie-break, and every term's postings
//!   are in that order.
//! - What one definition costs to index is bounded, whatever its size:
//!   the bytes read of each text ([`MAX_DESCRIPTION_BYTES`],
//!   [`MAX_TEXT_BYTES`]), the terms kept per field ([`MAX_FIELD_TOKENS`])
//!   and per tool ([`MAX_TOOL_TOKENS`]), and the parameters read from the
//!   input schema ([`MAX_PARAMETERS`], [`MAX_PARAMETER_DEPTH`],
//!   [`MAX_SCHEMA_NODES`]). Building is linear in what is read, so in the
//!   number of tools.

use std::collections::HashMap;
use std::ops::ControlFlow;

use super::parameters::parameters;
pub use super::parameters::{MAX_PARAMETER_DEPTH, MAX_PARAMETERS, MAX_SCHEMA_NODES};
use super::tokens::terms;
use crate::schema::SchemaHash;
use crate::tool::ToolDefinition;

/// The most bytes of a tool's description that are indexed (whole
/// characters). Real descriptions are a few hundred bytes to a few KiB;
/// what lies beyond this rarely says what the tool is for, and a hostile
/// definition (the registry admits 32 KiB by default, an embedder more)
/// costs no more than this.
pub const MAX_DESCRIPTION_BYTES: usize = 8 << 10;

/// The most bytes indexed of any other text: a name, the title, a
/// parameter's name or description.
pub const MAX_TEXT_BYTES: usize = 1 << 10;

/// The most terms one field of one tool holds (name, title, description,
/// parameter names, parameter descriptions); the rest of the field is not
/// read.
pub const MAX_FIELD_TOKENS: usize = 1024;

/// The most terms one tool holds over all its fields, read in the order
/// name, title, description, parameters.
pub const MAX_TOOL_TOKENS: usize = 2048;

/// The fields of a tool that the index keeps apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// The full name's terms, stemmed.
    Name = 0,
    /// The title's, stemmed.
    Title,
    /// The description's, stemmed.
    Description,
    /// The parameters' names, stemmed.
    ParamName,
    /// The parameters' descriptions, stemmed.
    ParamText,
    /// The full name's terms, not stemmed (for the baseline).
    PlainName,
    /// The description's, not stemmed (for the baseline).
    PlainDescription,
}

/// How many fields there are.
pub(super) const FIELDS: usize = 7;

/// The stemmed fields, which the default ranker reads.
pub(super) const STEMMED: [Field; 5] = [
    Field::Name,
    Field::Title,
    Field::Description,
    Field::ParamName,
    Field::ParamText,
];

// The stemmed fields come first, in this order: a ranker indexes a
// posting's counts by a stemmed field's position.
const _: () = {
    let mut i = 0;
    while i < STEMMED.len() {
        assert!(STEMMED[i] as usize == i);
        i += 1;
    }
};

/// One tool holding one term: how often in each field (saturating at
/// 255, far past where BM25's saturation makes more count).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Posting {
    /// The tool's position.
    pub(super) tool: u32,
    /// The term's frequency in each field, by `Field as usize`.
    pub(super) tf: [u8; FIELDS],
}

/// One indexed tool.
#[derive(Debug)]
pub(super) struct Entry {
    /// Its full name.
    pub(super) name: Box<str>,
    /// Its definition hash.
    pub(super) hash: SchemaHash,
    /// Where its name's terms start in [`SearchIndex::names`]: the full
    /// name's `name_len` terms, then the tool part's `tool_len`.
    name_at: u32,
    name_len: u16,
    tool_len: u16,
}

/// What an index holds, for people and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexStats {
    /// Tools indexed.
    pub tools: usize,
    /// Distinct terms (stemmed and plain).
    pub terms: usize,
    /// Postings (a term held by a tool).
    pub postings: usize,
}

/// The inverted index of the tools a search may find: built once (with
/// each registry snapshot, from its deferred tools), then read by any
/// number of searches at once.
pub struct SearchIndex {
    /// Every tool, by name ascending.
    pub(super) tools: Vec<Entry>,
    /// Each tool's terms per field.
    pub(super) lens: Vec<[u16; FIELDS]>,
    /// The mean of each field's length over the tools where it is not
    /// empty (1 where it is empty everywhere).
    pub(super) avg_len: [f32; FIELDS],
    /// The mean of the plain name's and description's lengths together
    /// over all tools (the baseline's one field).
    pub(super) plain_avg_len: f32,
    /// Term to term id.
    vocabulary: HashMap<Box<str>, u32>,
    /// Term id to its postings' range in `postings`.
    offsets: Vec<u32>,
    postings: Vec<Posting>,
    /// Inverse document frequency of each term over the stemmed fields.
    pub(super) idf: Vec<f32>,
    /// ... and over the plain fields.
    pub(super) plain_idf: Vec<f32>,
    /// The name terms of every tool (see [`Entry`]).
    names: Vec<u32>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl SearchIndex {
    /// Indexes tools given as (full name, definition, definition hash),
    /// and only them: the caller passes the tools a search may find (a
    /// registry builds its index over its deferred tools with
    /// `registry::search_index`).
    pub fn from_definitions<'a>(
        tools: impl IntoIterator<Item = (&'a str, &'a ToolDefinition, &'a SchemaHash)>,
    ) -> SearchIndex {
        let mut tools: Vec<_> = tools.into_iter().collect();
        tools.sort_by(|a, b| a.0.cmp(b.0));
        tools.dedup_by(|later, first| later.0 == first.0);
        let mut builder = Builder::default();
        let entries = tools
            .into_iter()
            .enumerate()
            .map(|(i, (name, definition, hash))| {
                builder.add(i as u32, name, definition, hash.clone())
            })
            .collect();
        builder.finish(entries)
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when it holds no tool (every search finds nothing).
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every tool it holds, as (full name, definition hash), by name
    /// ascending: the order ties are broken in. A ranker of another kind
    /// (one over embeddings cached by definition hash, say) scores these.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = (&str, &SchemaHash)> {
        self.tools.iter().map(|e| (&*e.name, &e.hash))
    }

    /// The definition hash of the tool of this full name, if the index
    /// holds it: whether a search may find it (and so whether a model may
    /// load it as found).
    pub fn definition_hash(&self, name: &str) -> Option<&SchemaHash> {
        self.position(name).map(|i| &self.tools[i].hash)
    }

    /// What it holds, counted.
    pub fn stats(&self) -> IndexStats {
        IndexStats {
            tools: self.tools.len(),
            terms: self.vocabulary.len(),
            postings: self.postings.len(),
        }
    }

    /// The position of the tool of this full name.
    pub(super) fn position(&self, name: &str) -> Option<usize> {
        self.tools.binary_search_by(|e| (*e.name).cmp(name)).ok()
    }

    /// The id of `term`, if any tool holds it.
    pub(super) fn term(&self, term: &str) -> Option<u32> {
        self.vocabulary.get(term).copied()
    }

    /// The postings of a term, in tool order.
    pub(super) fn postings(&self, term: u32) -> &[Posting] {
        let (from, to) = (self.offsets[term as usize], self.offsets[term as usize + 1]);
        &self.postings[from as usize..to as usize]
    }

    /// The posting of `term` for tool `tool`, if it holds the term.
    pub(super) fn posting(&self, term: u32, tool: u32) -> Option<&Posting> {
        let postings = self.postings(term);
        postings
            .binary_search_by_key(&tool, |p| p.tool)
            .ok()
            .map(|i| &postings[i])
    }

    /// The stemmed terms of a tool's full name, in order.
    pub(super) fn name_terms(&self, tool: usize) -> &[u32] {
        let e = &self.tools[tool];
        let at = e.name_at as usize;
        &self.names[at..at + e.name_len as usize]
    }

    /// The stemmed terms of a tool's own name (its definition's), in order.
    pub(super) fn tool_terms(&self, tool: usize) -> &[u32] {
        let e = &self.tools[tool];
        let at = e.name_at as usize + e.name_len as usize;
        &self.names[at..at + e.tool_len as usize]
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// The index as it is built, one tool at a time.
#[derive(Default)]
struct Builder {
    vocabulary: HashMap<Box<str>, u32>,
    /// Every posting so far with its term, in tool order.
    all: Vec<(u32, Posting)>,
    names: Vec<u32>,
    lens: Vec<[u16; FIELDS]>,
    /// One tool's (term, field) pairs, reused.
    scratch: Vec<(u32, u8)>,
}

/// One tool's indexing: its term counts and what is left of its budget.
struct Tool<'b> {
    vocabulary: &'b mut HashMap<Box<str>, u32>,
    scratch: &'b mut Vec<(u32, u8)>,
    lens: [u16; FIELDS],
    total: usize,
}

impl Tool<'_> {
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.vocabulary.get(term) {
            return id;
        }
        let id = self.vocabulary.len() as u32;
        self.vocabulary.insert(term.into(), id);
        id
    }

    /// Adds the terms of `text` to `field` (and their plain forms to
    /// `plain`) while the budget lasts; each stemmed term's id also goes
    /// to `seq`. Breaks when the budget is spent.
    fn add(
        &mut self,
        text: &str,
        field: Field,
        plain: Option<Field>,
        mut seq: Option<&mut Vec<u32>>,
    ) -> ControlFlow<()> {
        terms(text, |word, stemmed| {
            if self.lens[field as usize] as usize >= MAX_FIELD_TOKENS
                || self.total >= MAX_TOOL_TOKENS
            {
                return ControlFlow::Break(());
            }
            self.total += 1;
            self.lens[field as usize] += 1;
            let id = self.intern(stemmed);
            self.scratch.push((id, field as u8));
            if let Some(seq) = seq.as_deref_mut() {
                seq.push(id);
            }
            if let Some(plain) = plain {
                self.lens[plain as usize] += 1;
                let id = if word == stemmed {
                    id
                } else {
                    self.intern(word)
                };
                self.scratch.push((id, plain as u8));
            }
            ControlFlow::Continue(())
        })
    }
}

impl Builder {
    /// Indexes one tool at position `tool`.
    fn add(
        &mut self,
        tool: u32,
        name: &str,
        definition: &ToolDefinition,
        hash: SchemaHash,
    ) -> Entry {
        let name_at = self.names.len();
        let mut t = Tool {
            vocabulary: &mut self.vocabulary,
            scratch: &mut self.scratch,
            lens: [0; FIELDS],
            total: 0,
        };
        // Each step stops at the budget; the next ones then find it spent.
        let _ = t.add(
            cut(name, MAX_TEXT_BYTES),
            Field::Name,
            Some(Field::PlainName),
            Some(&mut self.names),
        );
        let name_len = self.names.len() - name_at;
        // The tool part's terms only serve to recognise a query naming
        // it; they count in no field.
        let _ = terms(cut(&definition.name, MAX_TEXT_BYTES), |_, stemmed| {
            if self.names.len() - name_at - name_len >= MAX_FIELD_TOKENS {
                return ControlFlow::Break(());
            }
            let id = t.intern(stemmed);
            self.names.push(id);
            ControlFlow::Continue(())
        });
        let tool_len = self.names.len() - name_at - name_len;
        if let Some(title) = &definition.title {
            let _ = t.add(cut(title, MAX_TEXT_BYTES), Field::Title, None, None);
        }
        let _ = t.add(
            cut(&definition.description, MAX_DESCRIPTION_BYTES),
            Field::Description,
            Some(Field::PlainDescription),
            None,
        );
        parameters(&definition.input_schema, |param, description| {
            t.add(cut(param, MAX_TEXT_BYTES), Field::ParamName, None, None)?;
            match description {
                Some(text) => t.add(cut(text, MAX_TEXT_BYTES), Field::ParamText, None, None),
                None => ControlFlow::Continue(()),
            }
        });
        let lens = t.lens;
        self.lens.push(lens);
        self.postings_of(tool);
        Entry {
            name: name.into(),
            hash,
            name_at: name_at as u32,
            name_len: name_len as u16,
            tool_len: tool_len as u16,
        }
    }

    /// Turns the tool's (term, field) pairs into one posting per term.
    fn postings_of(&mut self, tool: u32) {
        self.scratch.sort_unstable();
        for run in self.scratch.chunk_by(|a, b| a.0 == b.0) {
            let mut tf = [0u8; FIELDS];
            for &(_, field) in run {
                tf[field as usize] = tf[field as usize].saturating_add(1);
            }
            self.all.push((run[0].0, Posting { tool, tf }));
        }
        self.scratch.clear();
    }

    /// Lays the postings out by term (each term's in tool order) and
    /// computes the statistics the rankers read.
    fn finish(self, tools: Vec<Entry>) -> SearchIndex {
        let terms = self.vocabulary.len();
        let mut offsets = vec![0u32; terms + 1];
        for (term, _) in &self.all {
            offsets[*term as usize + 1] += 1;
        }
        for i in 0..terms {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut postings = vec![Posting::default(); self.all.len()];
        let (mut df, mut plain_df) = (vec![0u32; terms], vec![0u32; terms]);
        for (term, posting) in self.all {
            let t = term as usize;
            postings[next[t] as usize] = posting;
            next[t] += 1;
            let held = |fields: &[Field]| fields.iter().any(|f| posting.tf[*f as usize] > 0);
            df[t] += u32::from(held(&STEMMED));
            plain_df[t] += u32::from(held(&[Field::PlainName, Field::PlainDescription]));
        }
        let n = tools.len() as f32;
        let idf = |df: u32| {
            let df = df as f32;
            if df == 0.0 {
                0.0
            } else {
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            }
        };
        let mut avg_len = [1.0f32; FIELDS];
        for (f, avg) in avg_len.iter_mut().enumerate() {
            let (sum, count) = self
                .lens
                .iter()
                .filter(|l| l[f] > 0)
                .fold((0u64, 0u64), |(s, c), l| (s + u64::from(l[f]), c + 1));
            if count > 0 {
                *avg = sum as f32 / count as f32;
            }
        }
        let plain: u64 = self
            .lens
            .iter()
            .map(|l| {
                u64::from(l[Field::PlainName as usize])
                    + u64::from(l[Field::PlainDescription as usize])
            })
            .sum();
        let plain_avg_len = if plain == 0 { 1.0 } else { plain as f32 / n };
        SearchIndex {
            tools,
            lens: self.lens,
            avg_len,
            plain_avg_len,
            vocabulary: self.vocabulary,
            offsets,
            postings,
            idf: df.into_iter().map(idf).collect(),
            plain_idf: plain_df.into_iter().map(idf).collect(),
            names: self.names,
        }
    }
}
