//! The fs plugin's tools, end to end over a real granted directory.

use tiny_harness_host::DirMode;

use crate::common::{call, error_code, fs_over, host, json_of, text_of};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("ten.txt"), lines).unwrap();
    std::fs::create_dir_all(dir.path().join("src/nested")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    todo!()\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("src/nested/lib.rs"), "// TODO: more\n").unwrap();
    std::fs::write(dir.path().join("src/notes.md"), "todo list\n").unwrap();
    std::fs::write(dir.path().join("binary.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    dir
}

#[tokio::test]
async fn read_file_pages_through_a_file() {
    let dir = workspace();
    let host = host(vec![fs_over(dir.path(), DirMode::ReadOnly)]).await;

    let all = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "ten.txt"}),
    )
    .await;
    assert_eq!(
        text_of(&all),
        std::fs::read_to_string(dir.path().join("ten.txt")).unwrap()
    );
    let meta = json_of(&all);
    assert_eq!(meta["total_lines"], 10);
    assert_eq!(meta["truncated"], false);

    let page = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "ten.txt", "offset": 4, "limit": 3}),
    )
    .await;
    assert_eq!(text_of(&page), "line 4\nline 5\nline 6\n");
    let meta = json_of(&page);
    assert_eq!(meta["first_line"], 4);
    assert_eq!(meta["last_line"], 6);
    assert_eq!(meta["truncated"], true);

    let missing = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "nope.txt"}),
    )
    .await;
    assert!(missing.result.as_ref().unwrap().is_error);

    let binary = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "binary.bin"}),
    )
    .await;
    assert!(binary.is_error(), "{:?}", binary.result);
}

#[tokio::test]
async fn list_dir_and_stat_describe_the_tree() {
    let dir = workspace();
    let host = host(vec![fs_over(dir.path(), DirMode::ReadOnly)]).await;

    let top = json_of(&call(&host, "fs/workspace.list_dir", serde_json::json!({})).await);
    let names: Vec<&str> = top["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["binary.bin", "src", "ten.txt"]);
    assert_eq!(top["entries"][1]["type"], "dir");
    assert_eq!(top["entries"][2]["size"], 71);

    let deep = json_of(
        &call(
            &host,
            "fs/workspace.list_dir",
            serde_json::json!({"path": "src", "recursive": true}),
        )
        .await,
    );
    let names: Vec<&str> = deep["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main.rs", "nested", "nested/lib.rs", "notes.md"]);

    let capped = json_of(
        &call(
            &host,
            "fs/workspace.list_dir",
            serde_json::json!({"recursive": true, "max_entries": 2}),
        )
        .await,
    );
    assert_eq!(capped["entries"].as_array().unwrap().len(), 2);
    assert_eq!(capped["truncated"], true);

    let stat = json_of(
        &call(
            &host,
            "fs/workspace.stat",
            serde_json::json!({"path": "ten.txt"}),
        )
        .await,
    );
    assert_eq!(stat["type"], "file");
    assert_eq!(stat["size"], 71);
    assert_eq!(stat["readonly"], true, "the grant is read-only");
    assert!(stat["modified"].as_f64().unwrap() > 1.6e9);
}

#[tokio::test]
async fn search_greps_granted_files() {
    let dir = workspace();
    let host = host(vec![fs_over(dir.path(), DirMode::ReadOnly)]).await;

    let found = json_of(
        &call(
            &host,
            "fs/workspace.search",
            serde_json::json!({"pattern": "todo", "case_insensitive": true, "include": "*.rs"}),
        )
        .await,
    );
    assert_eq!(
        found["matches"],
        serde_json::json!([
            {"path": "src/main.rs", "line": 2, "text": "    todo!()"},
            {"path": "src/nested/lib.rs", "line": 1, "text": "// TODO: more"},
        ])
    );

    let exact = json_of(
        &call(
            &host,
            "fs/workspace.search",
            serde_json::json!({"pattern": "^todo", "path": "src"}),
        )
        .await,
    );
    assert_eq!(
        exact["matches"],
        serde_json::json!([{"path": "notes.md", "line": 1, "text": "todo list"}])
    );

    let bad = call(
        &host,
        "fs/workspace.search",
        serde_json::json!({"pattern": "("}),
    )
    .await;
    assert_eq!(error_code(&bad), "invalid_arguments");
}

#[tokio::test]
async fn write_file_creates_and_replaces() {
    let dir = workspace();
    let host = host(vec![fs_over(dir.path(), DirMode::ReadWrite)]).await;

    let outcome = call(
        &host,
        "fs/workspace.write_file",
        serde_json::json!({"path": "ten.txt", "content": "replaced\n"}),
    )
    .await;
    assert!(!outcome.is_error(), "{:?}", outcome.result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ten.txt")).unwrap(),
        "replaced\n"
    );
    assert_eq!(
        json_of(&outcome),
        serde_json::json!({"path": "/workspace/ten.txt", "bytes_written": 9})
    );

    let no_parent = call(
        &host,
        "fs/workspace.write_file",
        serde_json::json!({"path": "a/b/c.txt", "content": "x"}),
    )
    .await;
    assert!(no_parent.is_error());
    assert!(!dir.path().join("a").exists());

    let with_parent = call(
        &host,
        "fs/workspace.write_file",
        serde_json::json!({"path": "a/b/c.txt", "content": "x", "create_dirs": true}),
    )
    .await;
    assert!(!with_parent.is_error(), "{:?}", with_parent.result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "x"
    );

    let read_back = call(
        &host,
        "fs/workspace.read_file",
        serde_json::json!({"path": "a/b/c.txt"}),
    )
    .await;
    assert_eq!(text_of(&read_back), "x");
}

#[tokio::test]
async fn large_listings_and_searches_are_truncated_to_fit_the_result_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 5000 lines that each quote to about 800 bytes of JSON: 4 MB of
    // matches, far over the default 1 MiB result limit.
    let line = format!("{}\n", "\"".repeat(400));
    std::fs::write(dir.path().join("quotes.txt"), line.repeat(5000)).unwrap();
    // 6000 entries with 200-character names: about 1.4 MB of listing.
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for n in 0..6000 {
        std::fs::write(many.join(format!("{n:05}{}", "n".repeat(195))), "").unwrap();
    }
    let host = host(vec![fs_over(dir.path(), DirMode::ReadOnly)]).await;

    let found = call(
        &host,
        "fs/workspace.search",
        serde_json::json!({"pattern": "\"", "path": "quotes.txt", "max_results": 10000}),
    )
    .await;
    assert!(!found.is_error(), "{:?}", found.result.as_ref().err());
    let data = json_of(&found);
    assert_eq!(data["truncated"], true);
    let matches = data["matches"].as_array().unwrap().len();
    assert!((100..5000).contains(&matches), "{matches}");
    assert_eq!(data["matches"][0]["line"], 1);
    assert!(found.render().len() <= 300 * 1024);

    let listed = call(
        &host,
        "fs/workspace.list_dir",
        serde_json::json!({"path": "many", "max_entries": 10000}),
    )
    .await;
    assert!(!listed.is_error(), "{:?}", listed.result.as_ref().err());
    let data = json_of(&listed);
    assert_eq!(data["truncated"], true);
    let entries = data["entries"].as_array().unwrap();
    assert!((100..6000).contains(&entries.len()), "{}", entries.len());
    assert!(entries[0]["path"].as_str().unwrap().starts_with("00000"));
    assert!(listed.render().len() <= 300 * 1024);
}
