//! The default ranker: BM25F over a tool's name, title, description and
//! parameters, weighted, with a bonus for a query that names the tool
//! (the formula is in the parent module's documentation).
//!
//! Invariant: a search touches only the postings of the query's terms,
//! plus one score per tool in a buffer it allocates; the parts of a score
//! are worked out for the hits alone.

use super::index::{Field, Posting, STEMMED, SearchIndex};
use super::{FieldScores, Hit, Query, Ranker, best};

/// One number per field of a tool: a weight, or how much length counts.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct FieldWeights {
    /// The full name (`plugin`, `server` and tool parts).
    pub name: f32,
    /// The title.
    pub title: f32,
    /// The description.
    pub description: f32,
    /// The parameters' names.
    pub parameter_names: f32,
    /// The parameters' descriptions.
    pub parameter_descriptions: f32,
}

impl FieldWeights {
    /// The five numbers, in the order of [`STEMMED`].
    fn array(&self) -> [f32; 5] {
        [
            self.name,
            self.title,
            self.description,
            self.parameter_names,
            self.parameter_descriptions,
        ]
    }
}

/// The default ranker (see the parent module for its formula). Its fields
/// are public for experiments; start from [`Lexical::default`], whose
/// values are the documented ones.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Lexical {
    /// Each field's weight `w_f`: by default name 3.0, title 2.0,
    /// description 1.0, parameter names 1.5, parameter descriptions 0.5.
    pub weights: FieldWeights,
    /// Each field's length normalisation `b_f` (0 ignores length, 1 divides
    /// by it wholly): by default name 0.3, title 0.5, description 0.75,
    /// parameter names 0.5, parameter descriptions 0.75.
    pub normalisation: FieldWeights,
    /// Term-frequency saturation: 1.2.
    pub k1: f32,
    /// The bonus per pair of consecutive, different query terms that are
    /// consecutive in the tool's full name, times the pair's mean idf: 0.5.
    pub phrase_bonus: f32,
    /// The bonus when the query's terms are exactly those of the tool's
    /// own name or full name, times the sum of their idf: 1.0.
    pub exact_bonus: f32,
}

impl Default for Lexical {
    fn default() -> Self {
        Lexical {
            weights: FieldWeights {
                name: 3.0,
                title: 2.0,
                description: 1.0,
                parameter_names: 1.5,
                parameter_descriptions: 0.5,
            },
            normalisation: FieldWeights {
                name: 0.3,
                title: 0.5,
                description: 0.75,
                parameter_names: 0.5,
                parameter_descriptions: 0.75,
            },
            k1: 1.2,
            phrase_bonus: 0.5,
            exact_bonus: 1.0,
        }
    }
}

/// The ranker's numbers for one index, worked out once per search.
struct Scorer<'a> {
    index: &'a SearchIndex,
    weights: [f32; 5],
    b: [f32; 5],
    inv_avg: [f32; 5],
    k1: f32,
}

impl Scorer<'_> {
    /// `(k1 + 1) · tf~ / (k1 + tf~)` for one posting: the term's score
    /// over its idf. The same sum as [`Scorer::parts`], without keeping the
    /// fields apart (the hot loop of a search).
    fn total(&self, posting: &Posting) -> f32 {
        let lens = &self.index.lens[posting.tool as usize];
        let mut sum = 0.0;
        // The stemmed fields come first (`STEMMED[i] as usize == i`).
        let fields = posting.tf.iter().zip(lens).take(STEMMED.len());
        for (i, (&tf, &len)) in fields.enumerate() {
            if tf != 0 {
                let norm = 1.0 - self.b[i] + self.b[i] * f32::from(len) * self.inv_avg[i];
                sum += self.weights[i] * f32::from(tf) / norm;
            }
        }
        if sum <= 0.0 {
            return 0.0;
        }
        (self.k1 + 1.0) * sum / (self.k1 + sum)
    }

    /// `idf(t) · (k1 + 1) / (k1 + tf~)` and each stemmed field's
    /// `w_f · tf_f / norm_f`, for one posting: the product of the two is
    /// the field's part of the term's score.
    fn parts(&self, posting: &Posting) -> (f32, [f32; 5]) {
        let lens = &self.index.lens[posting.tool as usize];
        let mut x = [0.0f32; 5];
        let mut sum = 0.0;
        for (i, field) in STEMMED.iter().enumerate() {
            let tf = posting.tf[*field as usize];
            if tf == 0 {
                continue;
            }
            let len = f32::from(lens[*field as usize]);
            let norm = 1.0 - self.b[i] + self.b[i] * len * self.inv_avg[i];
            x[i] = self.weights[i] * f32::from(tf) / norm;
            sum += x[i];
        }
        if sum <= 0.0 {
            return (0.0, x);
        }
        ((self.k1 + 1.0) / (self.k1 + sum), x)
    }
}

impl Lexical {
    fn scorer<'a>(&self, index: &'a SearchIndex) -> Scorer<'a> {
        let mut inv_avg = [1.0f32; 5];
        for (i, field) in STEMMED.iter().enumerate() {
            inv_avg[i] = 1.0 / index.avg_len[*field as usize];
        }
        Scorer {
            index,
            weights: self.weights.array(),
            b: self.normalisation.array(),
            inv_avg,
            k1: self.k1,
        }
    }

    /// The name bonuses of tool `tool` for the query's terms `seq` (in
    /// order, `None` for a term no tool holds).
    fn bonus(&self, index: &SearchIndex, tool: usize, seq: &[Option<u32>]) -> f32 {
        let idf = |t: u32| index.idf[t as usize];
        let name = index.name_terms(tool);
        let mut bonus = 0.0;
        for pair in seq.windows(2) {
            if let [Some(a), Some(b)] = *pair
                && a != b
                && name.windows(2).any(|w| w == [a, b])
            {
                bonus += self.phrase_bonus * (idf(a) + idf(b)) / 2.0;
            }
        }
        let is = |terms: &[u32]| {
            terms.len() == seq.len() && terms.iter().zip(seq).all(|(t, q)| Some(*t) == *q)
        };
        if is(index.tool_terms(tool)) || is(name) {
            bonus += self.exact_bonus * seq.iter().flatten().map(|&t| idf(t)).sum::<f32>();
        }
        bonus
    }
}

impl Ranker for Lexical {
    fn rank(&self, index: &SearchIndex, query: &Query, limit: usize) -> Vec<Hit> {
        if limit == 0 || index.is_empty() {
            return Vec::new();
        }
        let seq: Vec<Option<u32>> = query.terms.iter().map(|t| index.term(t)).collect();
        let mut ids: Vec<u32> = seq.iter().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let scorer = self.scorer(index);
        let mut scores = vec![0.0f32; index.len()];
        // How many of the query's distinct terms each tool's name holds.
        let mut in_name = vec![0u8; index.len()];
        let mut touched = Vec::new();
        for &term in &ids {
            let idf = index.idf[term as usize];
            for posting in index.postings(term) {
                let score = idf * scorer.total(posting);
                if score > 0.0 {
                    let tool = posting.tool as usize;
                    if scores[tool] == 0.0 {
                        touched.push(posting.tool);
                    }
                    scores[tool] += score;
                    if posting.tf[Field::Name as usize] > 0 {
                        in_name[tool] = in_name[tool].saturating_add(1);
                    }
                }
            }
        }
        // A bonus needs two different terms in the name (a pair, or the
        // whole name), or the one term of a one-term query.
        let needed = ids.len().min(2) as u8;
        for &tool in &touched {
            if in_name[tool as usize] >= needed {
                scores[tool as usize] += self.bonus(index, tool as usize, &seq);
            }
        }
        best(&scores, touched, limit)
            .into_iter()
            .map(|tool| {
                let mut parts = [0.0f32; 5];
                for &term in &ids {
                    if let Some(posting) = index.posting(term, tool) {
                        let idf = index.idf[term as usize];
                        let (factor, x) = scorer.parts(posting);
                        for (part, x) in parts.iter_mut().zip(x) {
                            *part += idf * factor * x;
                        }
                    }
                }
                let entry = &index.tools[tool as usize];
                let parts = FieldScores {
                    name: parts[Field::Name as usize] + self.bonus(index, tool as usize, &seq),
                    title: parts[Field::Title as usize],
                    description: parts[Field::Description as usize],
                    parameters: parts[Field::ParamName as usize] + parts[Field::ParamText as usize],
                };
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
