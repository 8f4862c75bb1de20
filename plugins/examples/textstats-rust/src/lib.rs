//! `textstats`, on the guest SDK: counts the words, lines and characters
//! of a text, and lists its most frequent terms. The same plugin is
//! written in Python and JavaScript beside this one, and all three answer
//! one behaviour table (`plugins/examples/textstats.json` holds the
//! definitions they must all register).
//!
//! Whitespace is exactly space, tab, carriage return and newline; a term
//! is a word with its leading and trailing ASCII punctuation removed and
//! its ASCII letters lowered. A text holding NUL is refused.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tiny_harness_plugin::{Config, Json, Plugin, Server, ToolError, tool, tools};

/// The arguments of `stats`.
#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The text to measure.
    text: String,
}

// What `stats` returns (a doc comment would become its schema's description).
#[derive(Serialize, JsonSchema)]
struct Stats {
    /// Runs of characters other than space, tab, carriage return and newline.
    words: usize,
    /// Newlines, plus one when the text does not end with one.
    lines: usize,
    /// Unicode scalar values.
    characters: usize,
}

/// The arguments of `top_terms`.
#[derive(Deserialize, JsonSchema)]
struct TopTermsArgs {
    /// The text to read.
    text: String,
    /// The most terms to return.
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 100))]
    limit: u32,
}

fn ten() -> u32 {
    10
}

// What `top_terms` returns.
#[derive(Serialize, JsonSchema)]
struct TopTerms {
    /// Most frequent first; equal counts in code point order.
    terms: Vec<Term>,
}

#[derive(Serialize, JsonSchema)]
struct Term {
    term: String,
    count: usize,
}

/// Whitespace, as this plugin (and its twins) define it.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Refuses a text holding NUL.
fn check(text: &str) -> Result<(), ToolError> {
    if text.contains('\0') {
        return Err(ToolError::InvalidArguments(
            "the text contains a NUL character (U+0000): remove it".to_owned(),
        ));
    }
    Ok(())
}

/// Counts the words, lines and characters of a text.
#[tool(read_only, idempotent)]
fn stats(args: StatsArgs) -> Result<Json<Stats>, ToolError> {
    let text = args.text;
    check(&text)?;
    let newlines = text.matches('\n').count();
    Ok(Json(Stats {
        words: text.split(is_space).filter(|w| !w.is_empty()).count(),
        lines: newlines + usize::from(!text.is_empty() && !text.ends_with('\n')),
        characters: text.chars().count(),
    }))
}

/// Lists the most frequent terms of a text, most frequent first.
#[tool(read_only, idempotent)]
fn top_terms(args: TopTermsArgs) -> Result<Json<TopTerms>, ToolError> {
    check(&args.text)?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for word in args.text.split(is_space) {
        let term = word
            .trim_matches(|c: char| c.is_ascii_punctuation())
            .to_ascii_lowercase();
        if !term.is_empty() {
            *counts.entry(term).or_default() += 1;
        }
    }
    // BTreeMap order is code point order; a stable sort keeps it for ties.
    let mut terms: Vec<Term> = counts
        .into_iter()
        .map(|(term, count)| Term { term, count })
        .collect();
    terms.sort_by_key(|t| std::cmp::Reverse(t.count));
    terms.truncate(args.limit as usize);
    Ok(Json(TopTerms { terms }))
}

/// The plugin: one server, whatever the config.
struct TextStats;

impl Plugin for TextStats {
    fn servers(_config: &Config) -> Result<Vec<Server>, String> {
        Ok(vec![Server::new("textstats", tools![stats, top_terms])])
    }
}

tiny_harness_plugin::export!(TextStats);
