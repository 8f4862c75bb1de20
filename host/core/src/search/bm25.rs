//! The baseline: Okapi BM25 over a tool's full name and description as
//! one field, unweighted and unstemmed, as the providers' BM25 tool search
//! and other gateways rank. It is here to be measured against (benchmarks,
//! retrieval quality), not to be the default.
//!
//! Invariant: it reads only the index's plain fields, so it sees exactly
//! the terms a plain BM25 would: split and lowercased by the same rules,
//! stop words dropped, nothing stemmed.

use super::index::{FIELDS, Field, SearchIndex};
use super::{FieldScores, Hit, Query, Ranker, best};

/// Okapi BM25 over name and description (see the parent module):
/// `Σ_t idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avglen))`
/// over the query's distinct terms.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Bm25 {
    /// Term-frequency saturation: 1.2.
    pub k1: f32,
    /// Length normalisation: 0.75.
    pub b: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

impl Ranker for Bm25 {
    fn rank(&self, index: &SearchIndex, query: &Query, limit: usize) -> Vec<Hit> {
        if limit == 0 || index.is_empty() {
            return Vec::new();
        }
        let mut ids: Vec<u32> = query.plain.iter().filter_map(|t| index.term(t)).collect();
        ids.sort_unstable();
        ids.dedup();
        let (name, description) = (Field::PlainName as usize, Field::PlainDescription as usize);
        let inv_avg = 1.0 / index.plain_avg_len;
        // A term's score for a tool, and the name's share of its count.
        let score = |term: u32, tool: u32, tf: [u8; FIELDS]| {
            let (in_name, in_description) = (f32::from(tf[name]), f32::from(tf[description]));
            let tf = in_name + in_description;
            if tf == 0.0 {
                return (0.0, 0.0);
            }
            let lens = &index.lens[tool as usize];
            let len = f32::from(lens[name]) + f32::from(lens[description]);
            let norm = self.k1 * (1.0 - self.b + self.b * len * inv_avg);
            let s = index.plain_idf[term as usize] * tf * (self.k1 + 1.0) / (tf + norm);
            (s, in_name / tf)
        };
        let mut scores = vec![0.0f32; index.len()];
        let mut touched = Vec::new();
        for &term in &ids {
            for posting in index.postings(term) {
                let (s, _) = score(term, posting.tool, posting.tf);
                if s > 0.0 {
                    let total = &mut scores[posting.tool as usize];
                    if *total == 0.0 {
                        touched.push(posting.tool);
                    }
                    *total += s;
                }
            }
        }
        best(&scores, touched, limit)
            .into_iter()
            .map(|tool| {
                let mut parts = FieldScores::default();
                for &term in &ids {
                    if let Some(posting) = index.posting(term, tool) {
                        let (s, share) = score(term, tool, posting.tf);
                        parts.name += s * share;
                        parts.description += s * (1.0 - share);
                    }
                }
                let entry = &index.tools[tool as usize];
                Hit::new(
                    &*entry.name,
                    entry.hash.clone(),
                    scores[tool as usize],
                    parts,
                )
            })
            .collect()
    }
}
