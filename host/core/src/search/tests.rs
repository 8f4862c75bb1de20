use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::{Value, json};

use super::index::{
    Field, MAX_DESCRIPTION_BYTES, MAX_FIELD_TOKENS, MAX_PARAMETER_DEPTH, MAX_PARAMETERS,
    MAX_SCHEMA_NODES, MAX_TOOL_TOKENS, STEMMED,
};
use super::*;
use crate::registry::{RegisteredTool, RegistrationLimits, Registry};
use crate::source::{PendingTool, ToolSource};
use crate::tool::ToolDefinition;

/// A tool's definition hash, as the registry computes it.
fn hash(definition: &ToolDefinition) -> SchemaHash {
    SchemaHash::from_digest(crate::pin::definition_hash(definition))
}

/// Definitions under full names, with their hashes.
fn definitions(tools: &[(&str, ToolDefinition)]) -> Vec<(String, ToolDefinition, SchemaHash)> {
    tools
        .iter()
        .map(|(name, d)| (name.to_string(), d.clone(), hash(d)))
        .collect()
}

fn index_of(tools: &[(String, ToolDefinition, SchemaHash)]) -> SearchIndex {
    SearchIndex::from_definitions(tools.iter().map(|(n, d, h)| (n.as_str(), d, h)))
}

/// A tool `name` (`plugin/server.tool`) doing what `description` says,
/// with no parameters.
fn tool(name: &str, description: &str) -> (&'static str, ToolDefinition) {
    let own = name.rsplit('.').next().unwrap_or(name).to_owned();
    let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
    (
        name,
        ToolDefinition::new(own, description, json!({"type": "object"})),
    )
}

fn index(tools: &[(&str, ToolDefinition)]) -> SearchIndex {
    index_of(&definitions(tools))
}

fn names(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

/// The plain terms of `text` (split, lowercased, without stop words).
mod terms;

#[test]
fn a_name_outweighs_a_description() {
    let index = index(&[
        tool("net/api.lookup", "Looks up anything at all: weather, news."),
        tool("net/api.weather", "Returns the forecast for a city."),
        tool("net/api.fetch", "Fetches a URL."),
    ]);
    let hits = index.search("weather", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["net/api.weather", "net/api.lookup"]);
    assert!(hits[0].parts.name > 0.0 && hits[0].parts.description == 0.0);
    assert!(hits[1].parts.name == 0.0 && hits[1].parts.description > 0.0);
    // Even when the description says it twice.
    let index = super::tests::index(&[
        tool("net/api.lookup", "Weather: looks up the weather."),
        tool("net/api.weather", "Returns the forecast for a city."),
    ]);
    let hits = index.search("weather", DEFAULT_RESULTS).unwrap();
    assert_eq!(hits[0].name, "net/api.weather");
    // Unweighted, the description's two mentions win: the weights decide.
    let plain = index.search_with(&Bm25::default(), "weather", 5).unwrap();
    assert_eq!(plain[0].name, "net/api.lookup");
}

#[test]
fn parameters_names_and_descriptions_are_found() {
    let mut clone = ToolDefinition::new(
        "clone",
        "Copies a project to the workspace.",
        json!({"type": "object", "properties": {
            "repositoryUrl": {"type": "string", "description": "Where it is hosted"},
            "options": {"type": "object", "properties": {
                "depth": {"type": "integer", "description": "How many commits of history"}
            }}
        }}),
    );
    clone.title = Some("Clone".into());
    let index = index(&[
        ("git/local.clone", clone),
        tool("git/local.status", "Shows what changed."),
    ]);
    let hits = index.search("repository", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["git/local.clone"]);
    let parts = hits[0].parts;
    assert!(parts.parameters > 0.0);
    assert_eq!(
        (parts.name, parts.title, parts.description),
        (0.0, 0.0, 0.0)
    );
    // A nested parameter and a parameter's description count too.
    let hits = index.search("history depth", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["git/local.clone"]);
    let hits = index.search("hosted", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["git/local.clone"]);
    // The parts add up to the score.
    let hits = index.search("clone repository", DEFAULT_RESULTS).unwrap();
    let p = hits[0].parts;
    let sum = p.name + p.title + p.description + p.parameters;
    assert!(
        (sum - hits[0].score).abs() < 1e-4 * hits[0].score,
        "{hits:?}"
    );
    assert!(p.title > 0.0 && p.name > 0.0);
}

#[test]
fn ties_are_broken_by_name_and_results_repeat() {
    let same = |name: &str| tool(name, "Sends a message to a channel.");
    let tools = [
        same("chat/b.send"),
        same("chat/c.send"),
        same("chat/a.send"),
    ];
    let mut reversed = tools.clone();
    reversed.reverse();
    let (one, two) = (index(&tools), index(&reversed));
    let hits = one.search("message channel", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["chat/a.send", "chat/b.send", "chat/c.send"]);
    assert!(hits.windows(2).all(|w| w[0].score == w[1].score));
    for _ in 0..3 {
        assert_eq!(
            one.search("message channel", DEFAULT_RESULTS).unwrap(),
            hits
        );
        assert_eq!(
            two.search("message channel", DEFAULT_RESULTS).unwrap(),
            hits
        );
        let bm25 = |i: &SearchIndex| i.search_with(&Bm25::default(), "message", 5).unwrap();
        assert_eq!(names(&bm25(&one)), names(&hits));
        assert_eq!(bm25(&one), bm25(&two));
    }
}

#[test]
fn the_limit_defaults_to_5_and_is_at_most_20() {
    let tools: Vec<_> = (0..30)
        .map(|i| tool(&format!("kv/s{i:02}.get"), "Reads a value by key."))
        .collect();
    let index = index(&tools);
    assert_eq!(index.search("key", DEFAULT_RESULTS).unwrap().len(), 5);
    assert_eq!(index.search("key", MAX_RESULTS).unwrap().len(), 20);
    assert_eq!(index.search("key", 1).unwrap().len(), 1);
    for limit in [0, MAX_RESULTS + 1, usize::MAX] {
        let err = index.search("key", limit).unwrap_err();
        assert_eq!(
            err,
            SearchError::Limit {
                limit,
                max: MAX_RESULTS
            }
        );
        assert_eq!(
            err.to_string(),
            format!("a search returns 1 to 20 results, not {limit}")
        );
    }
}

#[test]
fn bad_queries_are_refused_each_with_its_reason() {
    let index = index(&[tool("fs/ws.read", "Reads a file.")]);
    let refused = |q: &str| index.search(q, DEFAULT_RESULTS).unwrap_err();
    assert_eq!(refused(""), SearchError::Empty);
    assert_eq!(refused(" \t\r\n "), SearchError::Empty);
    assert_eq!(refused("the of and to"), SearchError::NoTerms);
    assert_eq!(refused("?! -- ..."), SearchError::NoTerms);
    let long = "read ".repeat(103);
    assert_eq!(
        refused(&long),
        SearchError::TooLong {
            bytes: 515,
            max: MAX_QUERY_BYTES
        }
    );
    assert!(index.search(&long[..MAX_QUERY_BYTES], 5).is_ok());
    assert_eq!(
        refused("read\0file"),
        SearchError::ControlCharacter { code: 0, at: 4 }
    );
    assert_eq!(
        refused("\u{1b}[31mread"),
        SearchError::ControlCharacter { code: 0x1b, at: 0 }
    );
    assert!(matches!(
        refused("read \u{85}"),
        SearchError::ControlCharacter { code: 0x85, .. }
    ));
    for err in [
        refused(""),
        refused("the"),
        refused(&long),
        refused("a\0"),
        refused("a\u{7f}"),
    ] {
        let line = err.to_string();
        assert!(!line.contains('\n') && !line.is_empty(), "{line}");
    }
    assert_eq!(
        refused("\u{7}").to_string(),
        "the query holds control character U+0007 at byte 0: send plain text"
    );
    // Tabs and line breaks are only spaces; a query of words no tool
    // holds finds nothing, which is not an error.
    assert_eq!(index.search("read\tthe\nfile", 5).unwrap().len(), 1);
    assert!(index.search("zebra", 5).unwrap().is_empty());
}

#[test]
fn a_hostile_definition_is_indexed_within_the_caps() {
    // 1 MiB descriptions, 10,000 parameters, nesting 100 deep, a
    // combinator of 10,000 members and a `$ref` cycle.
    let short_words = "alpha beta gamma delta ".repeat((1 << 20) / 23);
    let long_words = format!("{}needle", "abcdefghijklmnopqrst ".repeat((1 << 20) / 21));
    let properties = |n: usize, description: &str| {
        let properties: serde_json::Map<String, Value> = (0..n)
            .map(|i| (format!("param{i:05}"), json!({"description": description})))
            .collect();
        json!({"type": "object", "properties": properties})
    };
    let mut deep = json!({"type": "string"});
    for level in (0..100).rev() {
        deep = json!({"type": "object", "properties": {format!("level{level}"): deep}});
    }
    let members: Vec<Value> = (0..10_000)
        .map(|i| json!({"properties": {format!("member{i}"): {}}}))
        .collect();
    let tools = definitions(&[
        (
            "x/y.wide",
            ToolDefinition::new("wide", "Many.", properties(10_000, "wide")),
        ),
        (
            "x/y.full",
            ToolDefinition::new("full", short_words, properties(100, &"word ".repeat(40))),
        ),
        (
            "x/y.long",
            ToolDefinition::new("long", long_words, json!({})),
        ),
        ("x/y.deep", ToolDefinition::new("deep", "Nested.", deep)),
        (
            "x/y.combined",
            ToolDefinition::new(
                "combined",
                "Either.",
                json!({"$defs": {"loop": {"$ref": "#/$defs/loop"}},
                       "$ref": "#/$defs/loop", "anyOf": members}),
            ),
        ),
    ]);
    let index = index_of(&tools);
    let lens = |name: &str| index.lens[index.position(name).unwrap()];
    let found = |q: &str| names(&index.search(q, MAX_RESULTS).unwrap()).len();
    for (name, _, _) in &tools {
        let lens = lens(name);
        let total: usize = STEMMED.iter().map(|f| lens[*f as usize] as usize).sum();
        assert!(total <= MAX_TOOL_TOKENS, "{name}: {lens:?}");
        assert!(
            lens.iter().all(|&n| n as usize <= MAX_FIELD_TOKENS),
            "{name}: {lens:?}"
        );
    }

    // The parameters read stop at MAX_PARAMETERS.
    let wide = lens("x/y.wide");
    assert_eq!(wide[Field::ParamName as usize] as usize, MAX_PARAMETERS);
    assert_eq!(wide[Field::ParamText as usize] as usize, MAX_PARAMETERS);
    assert_eq!(found("param00010"), 2, "wide and full");
    assert_eq!(found("param00063"), 1, "wide: full is past MAX_TOOL_TOKENS");
    assert_eq!(found("param00064"), 0, "wide is past MAX_PARAMETERS");

    // A field stops at MAX_FIELD_TOKENS, a tool at MAX_TOOL_TOKENS.
    let full = lens("x/y.full");
    assert_eq!(full[Field::Description as usize] as usize, MAX_FIELD_TOKENS);
    let total: usize = STEMMED.iter().map(|f| full[*f as usize] as usize).sum();
    assert_eq!(total, MAX_TOOL_TOKENS);
    assert!((full[Field::ParamName as usize] as usize) < 100);

    // A description is read to MAX_DESCRIPTION_BYTES.
    let long = lens("x/y.long");
    assert_eq!(
        long[Field::Description as usize] as usize,
        MAX_DESCRIPTION_BYTES / 21 + 1,
        "the words within the first MAX_DESCRIPTION_BYTES, the last one cut"
    );
    assert_eq!(found("needle"), 0);

    // Nested properties are read to MAX_PARAMETER_DEPTH.
    let deep = lens("x/y.deep");
    assert_eq!(
        deep[Field::ParamName as usize] as usize,
        MAX_PARAMETER_DEPTH
    );
    assert_eq!(found(&format!("level{}", MAX_PARAMETER_DEPTH - 1)), 1);
    assert_eq!(found(&format!("level{MAX_PARAMETER_DEPTH}")), 0);

    // A wide combinator and a `$ref` cycle stop at MAX_SCHEMA_NODES.
    let combined = lens("x/y.combined");
    let members = combined[Field::ParamName as usize] as usize;
    assert!(members > 0 && members < MAX_SCHEMA_NODES, "{combined:?}");
    assert_eq!(found("member0"), 1);
    assert_eq!(found("member9999"), 0);
}

#[derive(Debug)]
struct Nothing;
impl ToolSource for Nothing {
    fn list_tools(&self) -> crate::source::ListFuture<'_> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn call<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a Value,
        _: std::time::Instant,
    ) -> crate::source::CallFuture<'a> {
        Box::pin(async { Err(crate::tool::CallError::Failed("nothing".into())) })
    }
}

/// A registry of a few real-looking tools.
fn registry() -> Registry {
    let pending = |server: &str, (name, definition): (&str, ToolDefinition)| {
        let mut definition = definition;
        definition.name = name.rsplit('.').next().unwrap_or(name).to_owned();
        PendingTool::new(server, definition)
    };
    let mut registry = Registry::new();
    let fs = [
        tool("fs/ws.read_file", "Read the complete contents of a file."),
        tool("fs/ws.read_multiple_files", "Read several files at once."),
        tool("fs/ws.write_file", "Create or overwrite a file."),
        tool("fs/ws.list_directory", "List the entries of a directory."),
    ];
    registry
        .register(
            "fs",
            fs.into_iter().map(|t| pending("ws", t)).collect(),
            Arc::new(Nothing),
            &RegistrationLimits::default(),
        )
        .unwrap();
    let gh = [
        tool(
            "gh/repo.get_file_contents",
            "Get the contents of a file in a repository.",
        ),
        tool("gh/repo.create_issue", "Open an issue."),
    ];
    registry
        .register(
            "gh",
            gh.into_iter().map(|t| pending("repo", t)).collect(),
            Arc::new(Nothing),
            &RegistrationLimits::default(),
        )
        .unwrap();
    registry
}

#[test]
fn both_rankers_find_an_exact_name_first() {
    let registry = registry();
    let index = crate::registry::index_tools(registry.tools());
    for query in ["read_file", "fs/ws.read_file", "readFile", "read file"] {
        for ranker in [&Lexical::default() as &dyn Ranker, &Bm25::default()] {
            let hits = index.search_with(ranker, query, DEFAULT_RESULTS).unwrap();
            assert_eq!(
                hits[0].name, "fs/ws.read_file",
                "{query} by {ranker:?}: {hits:?}"
            );
        }
    }
    let hits = index.search("create issue", DEFAULT_RESULTS).unwrap();
    assert_eq!(hits[0].name, "gh/repo.create_issue");
    let hits = index.search("write_file", 1).unwrap();
    assert_eq!(names(&hits), ["fs/ws.write_file"]);
}

#[test]
fn only_the_tools_given_are_found_with_their_pinned_hashes() {
    let registry = registry();
    let given: Vec<&Arc<RegisteredTool>> = registry
        .tools()
        .filter(|t| t.name.plugin() == "fs")
        .collect();
    let index = crate::registry::index_tools(given.iter().copied());
    assert_eq!(index.len(), 4);
    for query in [
        "create_issue",
        "gh/repo.create_issue",
        "issue",
        "repository",
    ] {
        let lexical = index.search(query, MAX_RESULTS).unwrap();
        let bm25 = index
            .search_with(&Bm25::default(), query, MAX_RESULTS)
            .unwrap();
        for hit in lexical.iter().chain(&bm25) {
            assert!(hit.name.starts_with("fs/"), "{query}: {hit:?}");
        }
    }
    assert!(index.search("issue", MAX_RESULTS).unwrap().is_empty());
    // `create` is in `write_file`'s description: found, but nothing else.
    let hits = index.search("create_issue", MAX_RESULTS).unwrap();
    assert_eq!(names(&hits), ["fs/ws.write_file"]);
    assert!(index.definition_hash("gh/repo.create_issue").is_none());
    let hits = index.search("file contents", MAX_RESULTS).unwrap();
    assert!(!hits.is_empty());
    for hit in &hits {
        let tool = registry.get(&hit.name).unwrap();
        assert_eq!(tool.name.plugin(), "fs");
        assert_eq!(hit.definition_hash, tool.definition_hash);
    }

    // A ranker that makes names up, or lies about a hash, is corrected.
    #[derive(Debug)]
    struct Liar;
    impl Ranker for Liar {
        fn rank(&self, _: &SearchIndex, _: &Query, _: usize) -> Vec<Hit> {
            let fake = SchemaHash::of(&json!("fake"));
            let hit =
                |name: &str, score| Hit::new(name, fake.clone(), score, FieldScores::default());
            vec![
                hit("gh/repo.create_issue", 9.0),
                hit("fs/ws.write_file", 0.0),
                hit("fs/ws.read_file", 1.0),
                hit("fs/ws.read_file", 2.0),
                hit("fs/ws.list_directory", f32::NAN),
            ]
        }
    }
    let hits = index.search_with(&Liar, "anything", 5).unwrap();
    assert_eq!(names(&hits), ["fs/ws.read_file"]);
    assert_eq!(hits[0].score, 2.0);
    assert_eq!(
        hits[0].definition_hash,
        registry.get("fs/ws.read_file").unwrap().definition_hash
    );
}

#[test]
fn an_empty_index_finds_nothing_and_a_name_given_twice_is_kept_once() {
    fn shared<T: Send + Sync>() {}
    shared::<SearchIndex>();
    let empty = SearchIndex::from_definitions([]);
    assert!(empty.is_empty());
    assert!(empty.search("read", 5).unwrap().is_empty());
    let twice = index(&[
        tool("a/b.first", "One thing."),
        tool("a/b.first", "Another thing."),
    ]);
    assert_eq!(twice.len(), 1);
    assert!(twice.search("another", 5).unwrap().is_empty());
    assert_eq!(twice.search("thing", 5).unwrap().len(), 1);
}
