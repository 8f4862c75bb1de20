//! How text becomes terms: splitting, compound words, stop words and
//! contraction pieces, stemming.

use super::*;

fn plain(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let _ = tokens::terms(text, |word, _| {
        out.push(word.to_owned());
        ControlFlow::Continue(())
    });
    out
}

fn stemmed(word: &str) -> String {
    let mut word = word.to_owned();
    tokens::stem(&mut word);
    word
}

#[test]
fn names_split_on_separators_and_case_changes() {
    assert_eq!(
        plain("fs/workspace.read_file"),
        ["fs", "workspace", "read", "file"]
    );
    // A run split at case changes gives its parts, then itself whole.
    assert_eq!(plain("readFile"), ["read", "file", "readfile"]);
    assert_eq!(plain("HTTPServer"), ["http", "server", "httpserver"]);
    assert_eq!(
        plain("getHTTPResponseCode"),
        ["get", "http", "response", "code", "gethttpresponsecode"]
    );
    assert_eq!(plain("list-open_PRs"), ["list", "open", "p", "rs", "prs"]);
    assert_eq!(
        plain("base64Encode v2Items"),
        ["base64", "encode", "base64encode", "v2", "items", "v2items"]
    );
    assert_eq!(plain("port 8080, s3"), ["port", "8080", "s3"]);
    assert_eq!(
        plain("ÄrgerÜBER naïve"),
        ["ärger", "über", "ärgerüber", "naïve"]
    );
    assert_eq!(plain("how do I read the file"), ["read", "file"]);
    let long = "x".repeat(1000);
    assert_eq!(plain(&long), ["x".repeat(tokens::MAX_TOKEN_BYTES)]);
    // A run longer than a word may be gives its parts only.
    let camel = format!("{}Tail", "x".repeat(tokens::MAX_TOKEN_BYTES - 2));
    assert_eq!(
        plain(&camel),
        ["x".repeat(tokens::MAX_TOKEN_BYTES - 2), "tail".to_owned()]
    );
    // The pieces an apostrophe leaves are stop words.
    assert_eq!(
        plain("what's the tool's name? I don't know, you'll see, I'd say we're done"),
        ["tool", "name", "know", "see", "say", "done"]
    );

    // And a search meets a camelCase name with plain words.
    let index = index(&[
        tool("fs/ws.readFile", "Returns bytes."),
        tool("fs/ws.move", "Moves something."),
    ]);
    let hits = index.search("read file", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["fs/ws.readFile"]);
    let hits = index.search("HTTP", DEFAULT_RESULTS).unwrap();
    assert!(hits.is_empty());
}

#[test]
fn a_product_name_meets_itself_written_in_another_case() {
    let index = index(&[
        tool("mcp/mongodb.find", "Runs a find query on a collection."),
        tool("mcp/postgres.query", "Runs a read-only SQL query."),
        tool("mcp/refs.export", "Exports citations as BibTeX entries."),
        tool("mcp/refs.listBooks", "Lists the books of the library."),
    ]);
    for ranker in [&Lexical::default() as &dyn Ranker, &Bm25::default()] {
        let first = |query: &str| {
            let hits = index.search_with(ranker, query, DEFAULT_RESULTS).unwrap();
            hits.first().map(|hit| hit.name.clone())
        };
        // `MongoDB` is `mongo`, `db` and `mongodb`; the server's name is
        // `mongodb`.
        assert_eq!(first("query MongoDB").as_deref(), Some("mcp/mongodb.find"));
        // And the other way round: `BibTeX` in prose, `bibtex` asked.
        assert_eq!(first("bibtex").as_deref(), Some("mcp/refs.export"));
        assert_eq!(first("listbooks").as_deref(), Some("mcp/refs.listBooks"));
    }
    // A query naming the tool the way it is written still finds it first
    // by its exact name.
    let hits = index.search("listBooks", DEFAULT_RESULTS).unwrap();
    assert_eq!(hits[0].name, "mcp/refs.listBooks");
}

#[test]
fn a_query_of_contraction_pieces_has_no_term() {
    let index = index(&[tool("fs/ws.read", "Reads the file's contents.")]);
    assert_eq!(
        index.search("what's that? isn't it?", DEFAULT_RESULTS),
        Err(SearchError::NoTerms)
    );
    assert_eq!(
        Query::parse("what's the file's size")
            .unwrap()
            .plain_terms()
            .collect::<Vec<_>>(),
        ["file", "size"]
    );
}

#[test]
fn stemming_folds_both_sides() {
    for (a, b) in [
        ("files", "file"),
        ("queries", "query"),
        ("matches", "match"),
        ("listing", "list"),
        ("listed", "lists"),
        ("creating", "create"),
        ("created", "creates"),
        ("running", "run"),
        ("copied", "copy"),
        ("settings", "set"),
        ("processes", "process"),
        ("statuses", "status"),
    ] {
        assert_eq!(stemmed(a), stemmed(b), "{a} and {b}");
    }
    for word in ["status", "class", "analysis", "string", "add", "use", "s3"] {
        assert_eq!(stemmed(word), word, "{word} is left as it is");
    }
    assert_ne!(stemmed("files"), stemmed("filter"));

    let index = index(&[
        tool("fs/ws.list_directory", "Lists the files in a directory."),
        tool("db/sql.execute", "Runs statements."),
    ]);
    let hits = index.search("listing file", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["fs/ws.list_directory"]);
    let hits = index.search("directories", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["fs/ws.list_directory"]);
    let hits = index.search("statement running", DEFAULT_RESULTS).unwrap();
    assert_eq!(names(&hits), ["db/sql.execute"]);
}
