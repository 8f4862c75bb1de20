//! Retrieval quality of tool search on real MCP servers' tool lists: the
//! default ranker (`Lexical`) side by side with the plain BM25 baseline
//! (`Bm25`), over the set in `tests/retrieval` (its README says what it
//! holds and how it was collected).
//!
//! Every tool of every server file is indexed under `<server>/<tool>`
//! (the file's name without `.json`, then the tool's own name), in one
//! `SearchIndex`; each query of the queries file is searched with each
//! ranker for the most hits a search returns (20). A query's rank is
//! the rank at which all its gold tools are found, the rank of the
//! worst-ranked one (none when one is not among the hits). Printed per
//! ranker:
//!
//! - recall@k: the share of queries whose rank is at most k;
//! - MRR: the mean of 1/rank, 0 for a query without one;
//! - any@5: the share of queries with at least one gold tool in the top 5;
//! - the median and p99 time of one search (query checks included), each
//!   query timed alone, in several rounds.
//!
//! ```sh
//! cargo run --release -p tiny-harness-core --example retrieval -- [--misses] [SERVERS_DIR [QUERIES_FILE]]
//! ```
//!
//! `--misses` also prints the queries whose gold tools the default ranker
//! does not all place in its top 5, with what it placed there and the
//! rank the baseline gave them.

// An example that cannot set up has nothing to show: it stops at once,
// saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use tiny_harness_core::schema::SchemaHash;
use tiny_harness_core::search::{Bm25, Lexical, MAX_RESULTS, Ranker, SearchIndex};
use tiny_harness_core::tool::ToolDefinition;

/// How many times each query is timed per ranker.
const ROUNDS: usize = 10;

/// Where the set lies in this repository.
const SET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/retrieval");

/// One query and the tools that answer it.
struct Query {
    text: String,
    gold: Vec<String>,
}

/// The tools of every `*.json` file of `dir`, as (registry name,
/// definition), by name.
fn tools(dir: &Path) -> Vec<(String, ToolDefinition)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no server file in {}", dir.display());
    let mut tools = Vec::new();
    for path in files {
        let server = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let file: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
        let listed = file["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no \"tools\" array", path.display()));
        for tool in listed {
            let definition = definition(tool)
                .unwrap_or_else(|| panic!("{}: a tool without a name", path.display()));
            tools.push((format!("{server}/{}", definition.name), definition));
        }
    }
    tools.sort_by(|a, b| a.0.cmp(&b.0));
    tools
}

/// A `tools/list` entry as a definition: its name, title (or its
/// annotations' title), description and input schema.
fn definition(tool: &Value) -> Option<ToolDefinition> {
    let name = tool["name"].as_str()?;
    let description = tool["description"].as_str().unwrap_or_default();
    let schema = match &tool["inputSchema"] {
        Value::Null => serde_json::json!({"type": "object"}),
        schema => schema.clone(),
    };
    let mut definition = ToolDefinition::new(name, description, schema);
    definition.title = tool["title"]
        .as_str()
        .or_else(|| tool["annotations"]["title"].as_str())
        .map(str::to_owned);
    Some(definition)
}

/// The queries of a JSON Lines file, each checked to name only known tools.
fn queries(path: &Path, known: &HashSet<&str>) -> Vec<Query> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut queries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}:{}: not JSON: {e}", path.display(), i + 1));
        let text = value["query"].as_str().expect("a query").to_owned();
        let gold: Vec<String> = value["gold"]
            .as_array()
            .expect("a gold array")
            .iter()
            .map(|g| g.as_str().expect("a gold name").to_owned())
            .collect();
        assert!(
            !gold.is_empty(),
            "{}:{}: no gold tool",
            path.display(),
            i + 1
        );
        for name in &gold {
            assert!(
                known.contains(name.as_str()),
                "{}:{}: no tool {name}",
                path.display(),
                i + 1
            );
        }
        queries.push(Query { text, gold });
    }
    queries
}

/// What one ranker scored over all queries.
struct Scores {
    label: &'static str,
    /// Each query's rank (1-based), when all its gold tools were found.
    ranks: Vec<Option<usize>>,
    /// Whether each query had a gold tool in the top 5.
    any5: Vec<bool>,
    /// Each query's top 5.
    top: Vec<Vec<String>>,
    /// Every single search's time.
    times: Vec<Duration>,
}

impl Scores {
    fn recall(&self, k: usize) -> f64 {
        let hits = self.ranks.iter().filter(|r| r.is_some_and(|r| r <= k));
        hits.count() as f64 / self.ranks.len() as f64
    }

    fn mrr(&self) -> f64 {
        let sum: f64 = self.ranks.iter().flatten().map(|&r| 1.0 / r as f64).sum();
        sum / self.ranks.len() as f64
    }

    fn any5(&self) -> f64 {
        self.any5.iter().filter(|&&a| a).count() as f64 / self.any5.len() as f64
    }

    /// The time at quantile `q` (0 to 1) of the searches.
    fn time(&self, q: f64) -> Duration {
        let mut times = self.times.clone();
        times.sort_unstable();
        times[((times.len() - 1) as f64 * q).round() as usize]
    }
}

fn score(
    label: &'static str,
    ranker: &dyn Ranker,
    index: &SearchIndex,
    queries: &[Query],
) -> Scores {
    let mut scores = Scores {
        label,
        ranks: Vec::new(),
        any5: Vec::new(),
        top: Vec::new(),
        times: Vec::new(),
    };
    for query in queries {
        let hits = index
            .search_with(ranker, &query.text, MAX_RESULTS)
            .unwrap_or_else(|e| panic!("query {:?}: {e}", query.text));
        let rank_of = |gold: &String| hits.iter().position(|h| &h.name == gold).map(|p| p + 1);
        let ranks: Option<Vec<usize>> = query.gold.iter().map(rank_of).collect();
        scores.ranks.push(ranks.and_then(|r| r.into_iter().max()));
        scores.any5.push(
            query
                .gold
                .iter()
                .any(|g| rank_of(g).is_some_and(|r| r <= 5)),
        );
        scores
            .top
            .push(hits.iter().take(5).map(|h| h.name.clone()).collect());
    }
    for _ in 0..ROUNDS {
        for query in queries {
            let start = Instant::now();
            let hits = index.search_with(ranker, &query.text, MAX_RESULTS);
            scores.times.push(start.elapsed());
            std::hint::black_box(hits).unwrap();
        }
    }
    scores
}

/// One index over every tool of the set, each under its registry name.
fn index_of(tools: &[(String, ToolDefinition)]) -> SearchIndex {
    let hashes: Vec<SchemaHash> = tools
        .iter()
        .map(|(_, d)| SchemaHash::of(&serde_json::to_value(d).unwrap()))
        .collect();
    let index = SearchIndex::from_definitions(
        tools
            .iter()
            .zip(&hashes)
            .map(|((name, d), hash)| (name.as_str(), d, hash)),
    );
    assert_eq!(index.len(), tools.len(), "two tools share a registry name");
    index
}

fn main() {
    let mut misses = false;
    let mut paths = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--misses" => misses = true,
            "-h" | "--help" => {
                println!("usage: retrieval [--misses] [SERVERS_DIR [QUERIES_FILE]]");
                return;
            }
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    let servers = paths
        .first()
        .cloned()
        .unwrap_or_else(|| Path::new(SET).join("servers"));
    let queries_file = paths
        .get(1)
        .cloned()
        .unwrap_or_else(|| Path::new(SET).join("queries.jsonl"));

    let tools = tools(&servers);
    let start = Instant::now();
    let index = index_of(&tools);
    let built = start.elapsed();
    let known: HashSet<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    let queries = queries(&queries_file, &known);
    let server_count = tools
        .iter()
        .map(|(n, _)| n.split('/').next().unwrap())
        .collect::<HashSet<_>>()
        .len();
    let multi = queries.iter().filter(|q| q.gold.len() > 1).count();

    println!(
        "{} tools from {server_count} servers ({} terms, index built in {built:.2?}); {} queries ({multi} with more than one gold tool)",
        index.len(),
        index.stats().terms,
        queries.len()
    );
    let results = [
        score("Lexical (default)", &Lexical::default(), &index, &queries),
        score("Bm25 (baseline)", &Bm25::default(), &index, &queries),
    ];
    println!();
    println!("| ranker | recall@1 | recall@5 | recall@10 | MRR | any@5 | median | p99 |");
    println!("|---|---|---|---|---|---|---|---|");
    for s in &results {
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1?} | {:.1?} |",
            s.label,
            s.recall(1),
            s.recall(5),
            s.recall(10),
            s.mrr(),
            s.any5(),
            s.time(0.5),
            s.time(0.99),
        );
    }

    if misses {
        let [default, baseline] = &results;
        let rank = |r: Option<usize>| r.map_or("-".to_owned(), |r| r.to_string());
        println!();
        println!("Queries whose gold the default ranker does not all place in its top 5:");
        for (i, query) in queries.iter().enumerate() {
            if default.ranks[i].is_some_and(|r| r <= 5) {
                continue;
            }
            println!();
            println!(
                "{:?} (all gold at rank {}; the baseline's: {})",
                query.text,
                rank(default.ranks[i]),
                rank(baseline.ranks[i])
            );
            println!("  gold: {}", query.gold.join(", "));
            println!("  top 5: {}", default.top[i].join(", "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `docs/performance.md` reports of the set holds: the default
    /// ranker places all gold tools in the top 5 more often than plain
    /// BM25 does, and earlier on average (MRR).
    #[test]
    fn the_default_ranker_beats_plain_bm25_on_the_real_servers_tools() {
        let set = Path::new(SET);
        let tools = tools(&set.join("servers"));
        let index = index_of(&tools);
        let known: HashSet<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
        let queries = queries(&set.join("queries.jsonl"), &known);
        assert!(tools.len() >= 600 && queries.len() >= 250);
        let default = score("Lexical", &Lexical::default(), &index, &queries);
        let baseline = score("Bm25", &Bm25::default(), &index, &queries);
        let (r5, b5) = (default.recall(5), baseline.recall(5));
        assert!(r5 > b5 && r5 >= 0.74, "recall@5: {r5:.3} against {b5:.3}");
        let (m, bm) = (default.mrr(), baseline.mrr());
        assert!(m > bm, "MRR: {m:.3} against {bm:.3}");
    }
}
