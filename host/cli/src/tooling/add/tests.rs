//! `mcp add` on configs as people have them: empty, commented, with other
//! plugins and grants; every result loads through the real config parser.

use std::path::Path;

use super::*;
use tiny_harness_mcp::launcher;

fn request(name: &str) -> Request {
    Request {
        name: name.to_owned(),
        env: Vec::new(),
        writable: Vec::new(),
        wasm: "builtin:mcp".to_owned(),
    }
}

/// A plan for `/bin/sh script` with `dirs` among its arguments.
fn plan_of(dir: &Path, args: &[&str]) -> Plan {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    launcher::plan("/bin/sh", &args, None, dir)
}

/// The config the host makes of `text`, which must load.
fn loads(dir: &Path, text: &str) -> tiny_harness_host::Config {
    tiny_harness_host::Config::parse(&dir.join("tiny-harness.toml"), text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_server_added_to_no_config_makes_one_that_loads_with_its_grants() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let plan = plan_of(dir.path(), &["-c", "exec server", data.to_str().unwrap()]);
    let mut request = request("files");
    request.env = vec!["TOKEN".to_owned(), "LEVEL=debug".to_owned()];
    let added = add("", &request, &plan).unwrap();
    let config = loads(dir.path(), &added.text);
    let spec = &config.plugins[0];
    assert_eq!(spec.name, "mcp");
    assert_eq!(spec.wasm, Path::new("builtin:mcp"));
    let data = data.canonicalize().unwrap();
    assert_eq!(spec.grants.dirs().len(), 1);
    assert_eq!(spec.grants.dirs()[0].host(), data);
    assert_eq!(
        spec.grants.dirs()[0].mode(),
        tiny_harness_sandbox::grant::DirMode::ReadOnly
    );
    assert_eq!(spec.grants.env(), ["TOKEN"]);
    let exec = &spec.grants.exec()[0];
    assert_eq!(exec.program(), Path::new("/bin/sh"));
    assert!(exec.env().allows("TOKEN") && exec.env().allows("LEVEL") && !exec.env().allows("HOME"));
    let server = &spec.config["mcpServers"]["files"];
    assert_eq!(server["command"], "/bin/sh");
    assert_eq!(server["env"]["TOKEN"], "${TOKEN}");
    assert_eq!(server["env"]["LEVEL"], "debug");
    let review = added.review.join("\n");
    assert!(
        review.contains("read-only") && review.contains("network: none"),
        "{review}"
    );
}

#[test]
fn an_existing_config_keeps_its_comments_and_grants_are_widened_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    std::fs::create_dir(&one).unwrap();
    std::fs::create_dir(&two).unwrap();
    let text = "# my agent's tools\n[plugins.fs]\npath = \"builtin:fs\" # the files\n\n\
                [plugins.fs.grants]\ndirs = [{ host = \".\", guest = \"/w\" }]\n";
    let first = add(
        text,
        &request("a"),
        &plan_of(dir.path(), &["-c", "a", one.to_str().unwrap()]),
    )
    .unwrap();
    let mut write = request("b");
    write.writable = vec![two.clone()];
    let second = add(
        &first.text,
        &write,
        &plan_of(
            dir.path(),
            &["-c", "b", two.to_str().unwrap(), one.to_str().unwrap()],
        ),
    )
    .unwrap();
    assert!(
        second.text.starts_with("# my agent's tools\n"),
        "{}",
        second.text
    );
    assert!(
        second.text.contains("path = \"builtin:fs\" # the files"),
        "{}",
        second.text
    );
    let config = loads(dir.path(), &second.text);
    let mcp = config.plugins.iter().find(|p| p.name == "mcp").unwrap();
    assert_eq!(mcp.grants.exec().len(), 1, "one grant for one program");
    let modes: Vec<_> = mcp
        .grants
        .dirs()
        .iter()
        .map(|d| (d.host().to_owned(), d.mode()))
        .collect();
    assert_eq!(
        modes,
        [
            (
                one.canonicalize().unwrap(),
                tiny_harness_sandbox::grant::DirMode::ReadOnly
            ),
            (
                two.canonicalize().unwrap(),
                tiny_harness_sandbox::grant::DirMode::ReadWrite
            ),
        ]
    );
    assert!(config.plugins.iter().any(|p| p.name == "fs"));
}

#[test]
fn bad_requests_are_refused_in_one_line_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_of(dir.path(), &["-c", "x"]);
    let first = add("", &request("x"), &plan).unwrap();
    let mut cases: Vec<(Request, &str, &str)> = vec![
        (request("x"), first.text.as_str(), "in the config already"),
        (request("Bad Name"), "", "a server name is"),
        (request("y"), "[plugins\n", "not TOML"),
        (request("y"), "plugins = 3\n", "not a table"),
    ];
    let mut env = request("y");
    env.env = vec!["LD_PRELOAD=/x.so".to_owned()];
    cases.push((env, "", "dynamic loader"));
    let mut env = request("y");
    env.env = vec!["1X=2".to_owned()];
    cases.push((env, "", "not a variable name"));
    let mut write = request("y");
    write.writable = vec![dir.path().to_owned()];
    cases.push((write, "", "no argument of the server names"));
    for (request, text, want) in cases {
        let error = add(text, &request, &plan).unwrap_err().to_string();
        assert!(error.contains(want), "{want}: {error}");
        assert!(!error.contains('\n'), "{error}");
    }
}
