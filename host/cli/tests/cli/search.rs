//! `tools --search`: what a model's search of the registry finds among
//! the deferred tools, as a table, as JSON, or one JSON line per query
//! read from standard input; bad queries and configs refused in one line.

use serde_json::Value;

use super::{run_in, stderr, stdout};

const CONFIG: &str = r#"
[plugins.fs]
path = "builtin:fs"

[plugins.shell]
path = "builtin:shell"
defer = true

[plugins.net]
path = "builtin:net"

[search]
defer = ["fs/*"]
always = ["fs/workspace.read_file"]
"#;

#[test]
fn a_search_ranks_the_deferred_tools_with_the_parts_of_each_score() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny-harness.toml"), CONFIG).unwrap();
    let out = run_in(dir.path(), &["tools", "--search", "run a program"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].split_whitespace().eq([
            "SCORE",
            "NAME",
            "NAME",
            "TITLE",
            "DESCRIPTION",
            "PARAMETERS"
        ]),
        "{table}"
    );
    assert!(lines[1].contains("shell/exec.run"), "{table}");

    let out = run_in(
        dir.path(),
        &[
            "tools",
            "--search",
            "write text to a file",
            "--limit",
            "2",
            "--json",
        ],
        None,
    );
    let found: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{found}");
    assert_eq!(hits[0]["name"], "fs/workspace.write_file");
    let parts = &hits[0]["parts"];
    let sum: f64 = ["name", "title", "description", "parameters"]
        .iter()
        .map(|p| parts[p].as_f64().unwrap())
        .sum();
    assert!(
        (sum - hits[0]["score"].as_f64().unwrap()).abs() < 1e-3,
        "{found}"
    );
    assert_eq!(hits[0]["definition_hash"].as_str().unwrap().len(), 64);

    // One JSON line per query; a refused one says why and the rest are
    // answered; never a tool that is not deferred.
    let out = run_in(
        dir.path(),
        &["tools", "--search", "-"],
        Some("read a file\n\nfetch a url\nbinary\u{1}query\n"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let answers: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 4, "{}", stdout(&out));
    assert_eq!(answers[0]["query"], "read a file");
    for answer in [&answers[0], &answers[2]] {
        for hit in answer["hits"].as_array().unwrap() {
            let name = hit["name"].as_str().unwrap();
            assert!(
                name != "fs/workspace.read_file" && !name.starts_with("net/"),
                "{answer}"
            );
        }
    }
    assert!(
        answers[1]["error"]
            .as_str()
            .unwrap()
            .contains("the query is empty")
    );
    assert!(
        answers[3]["error"]
            .as_str()
            .unwrap()
            .contains("control character")
    );
}

#[test]
fn searches_that_cannot_be_answered_say_why_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        "[plugins.fs]\npath = \"builtin:fs\"\n",
    )
    .unwrap();
    let out = run_in(dir.path(), &["tools", "--search", "read"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing is deferred") && stderr(&out).contains("[search] defer"),
        "{}",
        stderr(&out)
    );
    std::fs::write(dir.path().join("tiny-harness.toml"), CONFIG).unwrap();
    for (args, says) in [
        (
            vec!["--search", "x", "--limit", "21"],
            "a search returns 1 to 20 results, not 21",
        ),
        (vec!["--search", "the of and"], "no word to search for"),
    ] {
        let mut all = vec!["tools"];
        all.extend(args);
        let out = run_in(dir.path(), &all, None);
        assert_eq!(out.status.code(), Some(1), "{all:?}");
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    for (config, says) in [
        (
            "[search]\ndefer = [\"\"]\n",
            "tiny-harness.toml:2:10: search.defer: an empty pattern",
        ),
        ("[search]\nnever = [\"x\"]\n", "unknown field `never`"),
        (
            "[search]\nform = \"server\"\n",
            "tiny-harness.toml:2:8: search.form: \"server\" is not a form; use \"host\", \"provider\" or \"provider-regex\"",
        ),
        (
            "[plugins.fs]\npath = \"builtin:fs\"\ndefer = \"yes\"\n",
            "defer",
        ),
    ] {
        std::fs::write(dir.path().join("tiny-harness.toml"), config).unwrap();
        let out = run_in(dir.path(), &["tools"], None);
        super::one_error_line(&out, &[says]);
    }
}

/// A deferred tool is pinned like any other: it is in the lock, and one
/// the lock does not hold is neither found nor offered, and refused
/// under `--locked`.
#[test]
fn a_search_finds_only_pinned_tools_and_locked_refuses_an_unpinned_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny-harness.toml"), CONFIG).unwrap();
    let out = run_in(dir.path(), &["tools", "--search", "run a program"], None);
    assert!(stdout(&out).contains("shell/exec.run"), "{}", stderr(&out));
    let path = dir.path().join("tiny-harness.lock");
    let mut lock: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let tools = &mut lock["plugins"]["shell"]["servers"]["exec"]["tools"];
    assert!(tools["run"]["definition"].is_object(), "{lock}");
    tools.as_object_mut().unwrap().remove("run");
    std::fs::write(&path, lock.to_string()).unwrap();

    let out = run_in(dir.path(), &["tools", "--search", "run a program"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("shell/exec.run"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("new since the lock"),
        "{}",
        stderr(&out)
    );
    let out = run_in(
        dir.path(),
        &["tools", "--provider", "anthropic", "--json"],
        None,
    );
    assert!(
        !stdout(&out).contains("shell__exec__run"),
        "{}",
        stdout(&out)
    );
    let out = run_in(
        dir.path(),
        &["--locked", "tools", "--search", "run a program"],
        None,
    );
    super::one_error_line(&out, &["shell/exec.run is not in the lock"]);
}
