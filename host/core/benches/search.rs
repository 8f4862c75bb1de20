//! Tool search over large registries: building the index once, and
//! answering a query with the default ranker and with the BM25 baseline.
//!
//! The registries are synthetic and deterministic: `n` tools (1,000, 5,000
//! and 20,000) named `plugin{i % 20}/server{i % 50}.<verb>_<noun>`, each
//! with a description of 10 to 40 words and 1 to 6 parameters with
//! descriptions, drawn from fixed word lists by a seeded generator: every
//! fifth word is the tool's verb or noun, the others come from a
//! vocabulary of about 3,100 words (common ones and made-up ones) with a
//! skew like that of real text, and
//! registered through `Registry::register` as a host registers tools (so
//! every entry is a real `RegisteredTool` with a compiled schema and a
//! definition hash).
//!
//! - `search/index/<n>`: `registry::index_tools` over the whole registry, the
//!   one-time cost paid with each registry snapshot.
//! - `search/query/lexical/<n>`: `SearchIndex::search` (the default
//!   ranker, query checks included) for 5 results, cycling through 20
//!   realistic queries, one query per iteration.
//! - `search/query/bm25/<n>`: the same with the `Bm25` baseline.
//!
//! Before the query groups, each size prints the index's size and the
//! p50 and p99 of single queries timed one by one (2,000 per ranker).
//!
//! Run: `cargo bench -p tiny-harness-core --bench search`.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tiny_harness_core::registry::{RegistrationLimits, Registry};
use tiny_harness_core::search::{Bm25, DEFAULT_RESULTS, Lexical, Ranker, SearchIndex};
use tiny_harness_core::source::{CallFuture, ListFuture, PendingTool, ToolSource, boxed};
use tiny_harness_core::tool::{CallError, ToolDefinition};

const SIZES: [usize; 3] = [1_000, 5_000, 20_000];

/// What tools do: the first part of a tool's own name.
const VERBS: &str = "\
    get list create update delete search read write send fetch run query \
    upload download sync archive merge parse validate convert schedule \
    cancel find export import";

/// What tools act on: the second part.
const NOUNS: &str = "\
    file issue message user repository branch commit channel record table \
    invoice ticket event calendar image document page order payment \
    customer report directory comment label project task meeting email \
    contact spreadsheet database deployment container log metric alert \
    secret bucket webhook workflow";

/// The rest of a description's vocabulary.
const WORDS: &str = "\
    the a of to for with in from by and returns given specified all each \
    new existing current optional required list name id identifier path \
    content contents text json data value values field fields status state \
    open closed recent latest page pages limit offset cursor token account \
    team organization owner author title body description date time range \
    start end filter query keyword match matching results result items \
    entries details metadata size format csv pdf markdown html url link \
    remote local workspace folder server service api request response \
    error errors permission permissions access public private shared \
    version history changes diff summary count total number amount \
    currency price address phone location region zone cluster node job \
    queue retry timeout default";

const QUERIES: [&str; 20] = [
    "read a file from the workspace",
    "create an issue in the repository",
    "send a message to a channel",
    "list open tickets",
    "delete a user account",
    "search documents by keyword",
    "upload an image",
    "update a calendar event",
    "query a database table",
    "download a report as csv",
    "merge a branch",
    "fetch a web page by url",
    "convert a document to pdf",
    "schedule a meeting with a contact",
    "validate the json of a workflow",
    "find a customer by email address",
    "cancel an order and its payment",
    "archive old tickets",
    "export metrics of a cluster",
    "get the deployment logs of a container",
];

/// SplitMix64: small, seeded, the same numbers on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    fn between(&mut self, low: usize, high: usize) -> usize {
        low + (self.next() % (high - low + 1) as u64) as usize
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() as usize % words.len()]
    }
}

/// How many made-up words the vocabulary holds besides [`WORDS`]: the
/// names of things each server knows about.
const MADE_UP: usize = 3_000;

/// The word lists, split, and the generator drawing from them.
struct Synth {
    rng: Rng,
    verbs: Vec<&'static str>,
    nouns: Vec<&'static str>,
    /// [`WORDS`], then [`MADE_UP`] made-up words, the most common first.
    words: Vec<String>,
}

impl Synth {
    fn new(seed: u64) -> Self {
        // The made-up words are the same for every registry.
        let mut rng = Rng(0x0a1f_a6e7);
        let (onsets, vowels) = (b"bdfgklmnprstvz", b"aeiou");
        let made_up = (0..MADE_UP).map(|_| {
            let mut word = String::new();
            for _ in 0..rng.between(2, 4) {
                word.push(onsets[rng.between(0, onsets.len() - 1)] as char);
                word.push(vowels[rng.between(0, vowels.len() - 1)] as char);
            }
            word
        });
        Synth {
            rng: Rng(seed),
            verbs: VERBS.split_whitespace().collect(),
            nouns: NOUNS.split_whitespace().collect(),
            words: WORDS
                .split_whitespace()
                .map(str::to_owned)
                .chain(made_up)
                .collect(),
        }
    }

    /// A word of the vocabulary, skewed as text is: the `k`-th most
    /// common is drawn with a probability falling as `k^(-2/3)`.
    fn word(&mut self) -> &str {
        let u = (self.rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let k = (self.words.len() as f64 * u * u * u) as usize;
        &self.words[k.min(self.words.len() - 1)]
    }

    /// `low` to `high` words, every fifth one of `topic`, and a noun,
    /// ended like a sentence.
    fn sentence(&mut self, low: usize, high: usize, topic: &[&str]) -> String {
        let n = self.rng.between(low, high);
        let mut text = String::new();
        for i in 0..n {
            let word = match i % 5 {
                0 => self.rng.pick(topic),
                _ => self.word(),
            };
            text.push_str(word);
            text.push(' ');
        }
        text.push_str(self.rng.pick(&self.nouns));
        text.push('.');
        text
    }

    /// Tool `i` of a registry: its plugin, server and definition.
    fn tool(&mut self, i: usize) -> (usize, String, ToolDefinition) {
        let (plugin, server) = (i % 20, i % 50);
        // Each (plugin, server) pair holds every 100th tool; a permutation
        // of the 1,000 verb-noun pairs keeps their names distinct.
        let pairs = self.verbs.len() * self.nouns.len();
        let k = (i / 100 * 7919) % pairs;
        let verb = self.verbs[k % self.verbs.len()];
        let noun = self.nouns[k / self.verbs.len()];
        let topic = [verb, noun];
        let description = self.sentence(10, 40, &topic);
        let mut properties = Map::new();
        for _ in 0..self.rng.between(1, 6) {
            let noun = self.rng.pick(&self.nouns);
            let kind = self.rng.pick(&["id", "name", "path", "limit"]);
            let text = self.sentence(4, 12, &topic);
            properties.insert(
                format!("{noun}_{kind}"),
                json!({"type": "string", "description": text}),
            );
        }
        let schema = json!({"type": "object", "properties": Value::Object(properties)});
        let definition = ToolDefinition::new(format!("{verb}_{noun}"), description, schema);
        (plugin, format!("server{server}"), definition)
    }
}

#[derive(Debug)]
struct Unused;

impl ToolSource for Unused {
    fn list_tools(&self) -> ListFuture<'_> {
        boxed(async { Ok(Vec::new()) })
    }
    fn call<'a>(&'a self, _: &'a str, _: &'a str, _: &'a Value, _: Instant) -> CallFuture<'a> {
        boxed(async { Err(CallError::Failed("not run in this benchmark".into())) })
    }
}

/// A registry of `n` synthetic tools, registered as a host registers them.
fn registry(n: usize) -> Registry {
    let mut synth = Synth::new(0x5eed_0000 + n as u64);
    let mut plugins: Vec<Vec<PendingTool>> = vec![Vec::new(); 20];
    for i in 0..n {
        let (plugin, server, definition) = synth.tool(i);
        plugins[plugin].push(PendingTool::new(server, definition));
    }
    let mut registry = Registry::new();
    for (p, tools) in plugins.into_iter().enumerate() {
        registry
            .register(
                &format!("plugin{p}"),
                tools,
                Arc::new(Unused),
                &RegistrationLimits::default(),
            )
            .unwrap();
    }
    assert_eq!(registry.len(), n);
    registry
}

/// Prints the p50 and p99 of single queries, each timed alone.
fn percentiles(label: &str, index: &SearchIndex, ranker: &dyn Ranker) {
    let mut times: Vec<Duration> = (0..2_000)
        .map(|i| {
            let query = QUERIES[i % QUERIES.len()];
            let start = Instant::now();
            black_box(index.search_with(ranker, query, DEFAULT_RESULTS).unwrap());
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    let at = |q: usize| times[(times.len() * q / 100).min(times.len() - 1)];
    eprintln!(
        "search/query/{label}/{}: p50 {:?}, p99 {:?}",
        index.len(),
        at(50),
        at(99)
    );
}

fn search(c: &mut Criterion) {
    let registries: Vec<Registry> = SIZES.iter().map(|&n| registry(n)).collect();

    let mut group = c.benchmark_group("search/index");
    group.sample_size(10);
    for registry in &registries {
        group.bench_with_input(
            BenchmarkId::from_parameter(registry.len()),
            registry,
            |b, registry| b.iter(|| tiny_harness_core::registry::index_tools(registry.tools())),
        );
    }
    group.finish();

    let indexes: Vec<SearchIndex> = registries
        .iter()
        .map(|r| tiny_harness_core::registry::index_tools(r.tools()))
        .collect();
    let rankers: [(&str, &dyn Ranker); 2] =
        [("lexical", &Lexical::default()), ("bm25", &Bm25::default())];
    for index in &indexes {
        eprintln!("search/index/{}: {:?}", index.len(), index.stats());
        for (label, ranker) in rankers {
            percentiles(label, index, ranker);
        }
    }
    let mut group = c.benchmark_group("search/query");
    for (label, ranker) in rankers {
        for index in &indexes {
            group.bench_with_input(BenchmarkId::new(label, index.len()), index, |b, index| {
                let mut next = 0;
                b.iter(|| {
                    next = (next + 1) % QUERIES.len();
                    index.search_with(ranker, QUERIES[next], DEFAULT_RESULTS)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
