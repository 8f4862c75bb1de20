//! Tool search: which of the tools a model has not been shown fit what it
//! asks for.
//!
//! A [`SearchIndex`] is built once from the tools a search may find (a
//! registry snapshot's deferred tools; the caller chooses them), never on
//! the call path, and then answers [`SearchIndex::search`] for any number
//! of callers at once. A [`Ranker`] scores it for a [`Query`]: [`Lexical`]
//! by default, [`Bm25`] as the baseline it is measured against, or one of
//! an embedder's own through [`SearchIndex::search_with`].
//!
//! Invariants:
//! - A search finds only tools the index was built from: a ranker's hit
//!   that names any other tool is dropped, and every hit carries the
//!   definition hash the index holds for it.
//! - Deterministic: hits are ordered by score, highest first, ties broken
//!   by full name ascending; the same index and query give the same list.
//!   A tool that scores 0 is never a hit.
//! - Bounded: a query is at most [`MAX_QUERY_BYTES`] and plain text (no
//!   control character but tab, line feed and carriage return), a search
//!   returns at most [`MAX_RESULTS`] hits, and what one definition costs to
//!   index is capped (see [`index`] for the caps). Each refusal is a
//!   [`SearchError`] of one line saying what to change.
//!
//! # Terms
//! Names, titles, descriptions, parameter names and descriptions, and
//! queries all become terms by the same rules ([`tokens`]): split on
//! anything not alphanumeric and at case changes (`readFile`, `HTTPServer`),
//! a word split at a case change also kept whole (`MongoDB` is `mongo`,
//! `db` and `mongodb`), lowercased, English stop words and the pieces of
//! contractions (`s`, `t`, `don`) dropped, lightly stemmed (plurals,
//! `-ing`, `-ed`).
//!
//! # The default ranking ([`Lexical`])
//! BM25F over five fields of each tool `d`: its full name (`plugin`,
//! `server` and tool parts), title, description, parameter names and
//! parameter descriptions, with weights `w_f` (3.0, 2.0, 1.0, 1.5, 0.5)
//! and length normalisation `b_f` (0.3, 0.5, 0.75, 0.5, 0.75). For each
//! distinct query term `t`:
//!
//! ```text
//! tf~(t, d) = Σ_f w_f · tf_f(t, d) / (1 − b_f + b_f · len_f(d) / avglen_f)
//! score(t, d) = idf(t) · (k1 + 1) · tf~ / (k1 + tf~)           k1 = 1.2
//! idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! where `N` is the number of tools, `df(t)` how many hold `t` in any
//! field, and `avglen_f` the mean length of field `f` over the tools where
//! it is not empty. A field's part of `score(t, d)` is its share of
//! `tf~`. To the sum over the query's terms the name adds two bonuses:
//! for each pair of consecutive, different query terms that are
//! consecutive in the tool's full name, `0.5 · (idf(a) + idf(b)) / 2`; and when the query's
//! terms are exactly the tool's own name's or its full name's, `1.0 ·
//! Σ idf(t)` over them.
//!
//! # The baseline ([`Bm25`])
//! Okapi BM25 (k1 = 1.2, b = 0.75) over one field, the full name and the
//! description together, split and lowercased by the same rules and
//! without stop words, but not stemmed; no weights, no bonus.

use serde::Serialize;

use crate::schema::SchemaHash;

mod bm25;
pub mod index;
mod lexical;
mod parameters;
pub mod tokens;

pub use bm25::Bm25;
pub use index::{IndexStats, SearchIndex};
pub use lexical::{FieldWeights, Lexical};

/// How many hits a search returns when its caller asks for no number.
pub const DEFAULT_RESULTS: usize = 5;

/// The most hits a search returns: a larger limit is refused.
pub const MAX_RESULTS: usize = 20;

/// The longest query, in bytes: a few sentences. A longer one is refused
/// rather than cut, so that what was searched is what was asked.
pub const MAX_QUERY_BYTES: usize = 512;

/// Why a search was refused. Each says, on one line, what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is empty or only whitespace.
    #[error("the query is empty: give a few words that say what the tool should do")]
    Empty,
    /// The query holds no word to search for: only stop words or
    /// punctuation.
    #[error(
        "the query has no word to search for (only common words or punctuation): name what the \
         tool should do, e.g. \"read file\""
    )]
    NoTerms,
    /// The query is longer than [`MAX_QUERY_BYTES`].
    #[error("the query is {bytes} bytes, more than {max}: shorten it to a few words")]
    TooLong {
        /// Its length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The query holds a control character (binary data, a NUL): only
    /// tab, line feed and carriage return are taken, as spaces.
    #[error("the query holds control character U+{code:04X} at byte {at}: send plain text")]
    ControlCharacter {
        /// The character's code point.
        code: u32,
        /// Its byte offset in the query.
        at: usize,
    },
    /// The limit is 0 or more than [`MAX_RESULTS`].
    #[error("a search returns 1 to {max} results, not {limit}")]
    Limit {
        /// The limit asked for.
        limit: usize,
        /// The most there can be.
        max: usize,
    },
}

/// A checked query: plain text within [`MAX_QUERY_BYTES`] with at least one
/// term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    text: Box<str>,
    /// The stemmed terms, in order, repeats kept.
    terms: Vec<Box<str>>,
    /// The same terms not stemmed.
    plain: Vec<Box<str>>,
}

impl Query {
    /// Checks `text` and splits it into terms.
    pub fn parse(text: &str) -> Result<Query, SearchError> {
        if text.len() > MAX_QUERY_BYTES {
            return Err(SearchError::TooLong {
                bytes: text.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let control = text
            .char_indices()
            .find(|&(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r'));
        if let Some((at, c)) = control {
            return Err(SearchError::ControlCharacter {
                code: u32::from(c),
                at,
            });
        }
        if text.trim().is_empty() {
            return Err(SearchError::Empty);
        }
        let (mut terms, mut plain) = (Vec::new(), Vec::new());
        let _ = tokens::terms(text, |word, stemmed| {
            plain.push(word.into());
            terms.push(stemmed.into());
            std::ops::ControlFlow::Continue(())
        });
        if terms.is_empty() {
            return Err(SearchError::NoTerms);
        }
        Ok(Query {
            text: text.into(),
            terms,
            plain,
        })
    }

    /// The query as it was given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its stemmed terms, in order, repeats kept.
    pub fn terms(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| &**t)
    }

    /// Its terms before stemming, in order, repeats kept.
    pub fn plain_terms(&self) -> impl Iterator<Item = &str> {
        self.plain.iter().map(|t| &**t)
    }
}

/// A hit's score, field by field: the parts add up to the score (up to
/// rounding). A ranker that does not tell fields apart puts its whole
/// score where it fits best.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FieldScores {
    /// From the tool's full name, with the name bonuses.
    pub name: f32,
    /// From its title.
    pub title: f32,
    /// From its description.
    pub description: f32,
    /// From its parameters' names and descriptions.
    pub parameters: f32,
}

/// One tool a search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Hit {
    /// The tool's full name.
    pub name: String,
    /// Its definition hash, as pinned.
    pub definition_hash: SchemaHash,
    /// Its score: higher is better; always above 0.
    pub score: f32,
    /// The score's parts.
    pub parts: FieldScores,
}

impl Hit {
    /// A hit of tool `name` (whose definition hash is `definition_hash`)
    /// with `score` made of `parts`: what a ranker returns.
    pub fn new(
        name: impl Into<String>,
        definition_hash: SchemaHash,
        score: f32,
        parts: FieldScores,
    ) -> Hit {
        Hit {
            name: name.into(),
            definition_hash,
            score,
            parts,
        }
    }
}

/// Scores a [`SearchIndex`] for a [`Query`].
///
/// A ranker returns at most `limit` hits, best first, ties broken by name
/// ascending, none with a score of 0 or less, each naming a tool of the
/// index; [`SearchIndex::search_with`] enforces all of this again on what
/// it returns. Rankers compose: one over embeddings, say, can ask
/// [`Lexical`] for its best few dozen and blend the two scores.
pub trait Ranker: Send + Sync + std::fmt::Debug {
    /// The best at most `limit` tools of `index` for `query`.
    fn rank(&self, index: &SearchIndex, query: &Query, limit: usize) -> Vec<Hit>;
}

impl SearchIndex {
    /// The best at most `limit` tools for `query` by the default ranking
    /// ([`Lexical`]). Callers with no limit of their own pass
    /// [`DEFAULT_RESULTS`].
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, SearchError> {
        self.search_with(&Lexical::default(), query, limit)
    }

    /// The best at most `limit` tools for `query` by `ranker`: the query
    /// and limit checked, then the ranker's hits kept to this index's
    /// tools (with its definition hashes), above 0, ordered and cut to
    /// `limit` as the module says.
    pub fn search_with(
        &self,
        ranker: &dyn Ranker,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        if limit == 0 || limit > MAX_RESULTS {
            return Err(SearchError::Limit {
                limit,
                max: MAX_RESULTS,
            });
        }
        let query = Query::parse(query)?;
        let mut hits = ranker.rank(self, &query, limit);
        hits.retain_mut(|hit| {
            let known = self.definition_hash(&hit.name);
            if let Some(hash) = known {
                hit.definition_hash = hash.clone();
            }
            known.is_some() && hit.score.is_finite() && hit.score > 0.0
        });
        // A tool once, with its best score; then the order of the module.
        hits.sort_by(|a, b| a.name.cmp(&b.name).then(b.score.total_cmp(&a.score)));
        hits.dedup_by(|later, first| later.name == first.name);
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.name.cmp(&b.name))
        });
        hits.truncate(limit);
        Ok(hits)
    }
}

/// The positions of the best at most `limit` of the tools `touched`
/// (each once) by `scores`, highest first, ties by position (which is
/// name order); tools scoring 0 or less are left out.
fn best(scores: &[f32], mut touched: Vec<u32>, limit: usize) -> Vec<u32> {
    touched.retain(|&i| scores[i as usize] > 0.0);
    let order = |a: &u32, b: &u32| {
        scores[*b as usize]
            .total_cmp(&scores[*a as usize])
            .then(a.cmp(b))
    };
    if touched.len() > limit && limit > 0 {
        touched.select_nth_unstable_by(limit - 1, order);
    }
    touched.truncate(limit);
    touched.sort_unstable_by(order);
    touched
}

#[cfg(test)]
mod tests;
