//! The reference docs say what the code does: every command and flag of
//! the binary's `--help` is in `docs/cli.md`, every key the config parser
//! (and the gateway's, for `[serve]`) accepts is in `docs/config.md`, and
//! every relative link of the README and `docs/` leads to a file (and
//! heading) that exists.
//!
//! The lists are taken from the code itself, never written down here: the
//! commands and flags from the built binary's help, the config's keys from
//! the parser's own refusal of an unknown key (which names every key it
//! expected there).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tiny_harness_host::Config;
use tiny_harness_serve::ServeConfig;

use crate::{run_in, stderr, stdout, workspace_root};

/// One subcommand of the binary: its path of names (`["mcp", "add"]`)
/// and the long flags its help lists (globals included).
struct Subcommand {
    path: Vec<String>,
    flags: BTreeSet<String>,
}

/// The sections of a clap help text: each `Name:` heading with the lines
/// under it.
fn sections(help: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            current = Some(line.trim_end_matches(':').to_owned());
        } else if let Some(section) = &current {
            out.entry(section.clone())
                .or_default()
                .push(line.to_owned());
        }
    }
    out
}

/// The long flags (`--name`) a help text lists under `Options:`.
fn long_flags(help: &str) -> BTreeSet<String> {
    let sections = sections(help);
    let mut flags = BTreeSet::new();
    for line in sections.get("Options").into_iter().flatten() {
        // `  -v, --verbose  Show ...` or `      --config <PATH>  The ...`:
        // the flag's own part ends at the gap before its description.
        let entry = line.trim_start();
        if !entry.starts_with('-') {
            continue;
        }
        let own = entry.split("  ").next().unwrap_or_default();
        for word in own.split([' ', ',']) {
            if let Some(name) = word.strip_prefix("--")
                && !name.is_empty()
            {
                flags.insert(format!("--{name}"));
            }
        }
    }
    flags
}

/// The subcommands a help text lists under `Commands:` (`help` aside).
fn subcommand_names(help: &str) -> Vec<String> {
    let sections = sections(help);
    sections
        .get("Commands")
        .into_iter()
        .flatten()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The help (`-h`) of the subcommand at `path`.
fn help_of(path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("-h");
    let output = run_in(&workspace_root(), &args, None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// Every subcommand of the binary, the root (`[]`) first, found by walking
/// its help.
fn subcommands() -> Vec<Subcommand> {
    let mut out = Vec::new();
    let mut todo = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let help = help_of(&path);
        for name in subcommand_names(&help) {
            let mut child = path.clone();
            child.push(name);
            todo.push(child);
        }
        out.push(Subcommand {
            flags: long_flags(&help),
            path,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(workspace_root().join(relative))
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Whether `text` has `flag` as a whole flag (`--journal` is not found
/// in `--journal-full`).
fn has_flag(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(at, _)| {
        let next = text[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// The synopsis lines of docs/cli.md that run `path` (`tiny-harness ...
/// mcp add ...`).
fn synopsis_lines<'a>(doc: &'a str, path: &[String]) -> Vec<&'a str> {
    let words = format!(" {} ", path.join(" "));
    doc.lines()
        .filter(|line| line.starts_with("tiny-harness "))
        .filter(|line| format!("{line} ").contains(&words))
        .collect()
}

#[test]
fn every_command_and_flag_of_the_help_is_in_the_cli_reference() {
    let doc = read("docs/cli.md");
    let commands = subcommands();
    assert!(
        commands.len() > 15,
        "the walk found too few subcommands to be the real tree: {:?}",
        commands
            .iter()
            .map(|c| c.path.join(" "))
            .collect::<Vec<_>>()
    );
    let globals = commands[0].flags.clone();
    assert!(globals.contains("--config"), "{globals:?}");
    let mut missing = Vec::new();
    for flag in &globals {
        if !has_flag(&doc, flag) {
            missing.push(format!("the global flag {flag}"));
        }
    }
    for command in &commands[1..] {
        let name = command.path.join(" ");
        // Named in the text (a bullet or a heading) and in the synopsis.
        if !has_flag(&doc, &format!("`{name}")) {
            missing.push(format!("`{name}` named in the text"));
        }
        let synopsis = synopsis_lines(&doc, &command.path);
        if synopsis.is_empty() {
            missing.push(format!("a synopsis line for {name}"));
        }
        // Its own flags on its synopsis line(s).
        for flag in command.flags.difference(&globals) {
            if !synopsis.iter().any(|line| has_flag(line, flag)) {
                missing.push(format!("{flag} on the synopsis of {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md lacks: {missing:#?}");
}

/// Where a table sits in the config: a key, a key whose value is an array
/// of tables, or a key whose value is a table of named tables
/// (`[plugins.NAME]`).
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Array(String),
    Named(String),
}

/// The TOML that puts `inner` (an inline table) at `steps`.
fn nest(steps: &[Step], inner: &str) -> String {
    let Some((last, outer)) = steps.split_last() else {
        return inner.to_owned();
    };
    let value = match last {
        Step::Key(key) => format!("{key} = {inner}"),
        Step::Array(key) => format!("{key} = [{inner}]"),
        Step::Named(key) => format!("{key} = {{ probe_name = {inner} }}"),
    };
    nest(outer, &format!("{{ {value} }}"))
}

/// The keys the parser expects in the table at `steps`, if it reads a
/// table there with fixed keys: what it names when refusing a key it does
/// not know. The facade keeps `[serve]` as it is written, for the gateway
/// to check (`ServeConfig::from_table`), so a config the facade accepts is
/// asked of the gateway too.
fn expected_keys(steps: &[Step]) -> Option<Vec<String>> {
    let inline = nest(steps, "{ zz_unknown_probe = 1 }");
    // The outermost inline table's body is the document itself.
    let document = &inline[1..inline.len() - 1];
    let message = match Config::parse(Path::new("/nonexistent/probe.toml"), document) {
        Err(error) => error.to_string(),
        Ok(config) => ServeConfig::from_table(config.serve.as_ref())
            .err()?
            .to_string(),
    };
    let (_, expected) = message.split_once("unknown field `zz_unknown_probe`")?;
    Some(
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect(),
    )
}

/// A dotted path of `steps` (`plugins.NAME.grants.exec[]`).
fn dotted(steps: &[Step]) -> String {
    let parts: Vec<String> = steps
        .iter()
        .map(|step| match step {
            Step::Key(key) => key.clone(),
            Step::Array(key) => format!("{key}[]"),
            Step::Named(key) => format!("{key}.NAME"),
        })
        .collect();
    parts.join(".")
}

/// Every key the config parser accepts, as dotted paths
/// (`plugins.NAME.grants.exec[].sockets`), found by asking it: in every
/// table it reads with fixed keys, the keys it expects, and for each
/// whether it is such a table itself (`limits`), an array of them
/// (`dirs`), or a table of named ones (`plugins`).
fn config_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut todo: Vec<Vec<Step>> = vec![Vec::new()];
    while let Some(steps) = todo.pop() {
        let Some(expected) = expected_keys(&steps) else {
            continue;
        };
        for key in expected {
            let shapes = [
                Step::Key(key.clone()),
                Step::Array(key.clone()),
                Step::Named(key.clone()),
            ];
            let table = shapes.into_iter().find_map(|step| {
                let mut deeper = steps.clone();
                deeper.push(step);
                expected_keys(&deeper).map(|_| deeper)
            });
            match table {
                Some(deeper) => {
                    keys.insert(dotted(&deeper));
                    todo.push(deeper);
                }
                None => {
                    let mut leaf = steps.clone();
                    leaf.push(Step::Key(key));
                    keys.insert(dotted(&leaf));
                }
            }
        }
    }
    keys
}

/// Whether `doc` documents the config key `key`: as `` `key` ``, as
/// `key = ...`, or as a part of a table header (`[plugins.fs.limits]`).
fn documents_key(doc: &str, key: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let assigned = doc
        .match_indices(&format!("{key} ="))
        .any(|(at, _)| !doc[..at].chars().next_back().is_some_and(ident));
    let header = doc.lines().any(|line| {
        line.starts_with('[')
            && line[1..]
                .split(']')
                .next()
                .is_some_and(|h| h.split('.').any(|part| part == key))
    });
    doc.contains(&format!("`{key}`")) || assigned || header
}

#[test]
fn every_config_key_the_parser_accepts_is_in_the_config_reference() {
    let keys = config_keys();
    // The walk reached every kind of table, so it is the parser's whole
    // surface and not a probe gone wrong.
    for known in [
        "plugins.NAME",
        "plugins.NAME.path",
        "plugins.NAME.limits.memory_mib",
        "plugins.NAME.grants.dirs[].mode",
        "plugins.NAME.grants.exec[].sockets",
        "plugins.NAME.config",
        "skills.root",
        "serve.clients.NAME.tools",
        "serve.limits.request_kib",
    ] {
        assert!(keys.contains(known), "{known} not among {keys:#?}");
    }
    let doc = read("docs/config.md");
    let missing: Vec<&String> = keys
        .iter()
        .filter(|path| {
            let key = path
                .split('.')
                .rfind(|part| *part != "NAME")
                .unwrap_or_default()
                .trim_end_matches("[]");
            !documents_key(&doc, key)
        })
        .collect();
    assert!(missing.is_empty(), "docs/config.md lacks: {missing:#?}");
}

/// The Markdown files whose links are checked: the README and every file
/// under `docs/`.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            let fence =
                line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
            if fence {
                fenced = !fenced;
            }
            !fence && !fenced
        })
        .collect()
}

/// `line` without its inline code spans.
fn without_code(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("")
}

/// The link targets of `text` (`[text](target)` and `[label]: target`),
/// outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let line = without_code(line);
        if let Some(rest) = line.trim_start().strip_prefix('[')
            && let Some((_, target)) = rest.split_once("]: ")
        {
            out.push(
                target
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            if let Some(end) = rest.find(')') {
                let target = rest[..end].split_whitespace().next().unwrap_or_default();
                out.push(target.to_owned());
            }
        }
    }
    out
}

/// GitHub's anchor for a heading's text: lowercased, everything but
/// letters, digits, spaces, `-` and `_` dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    // A link in a heading counts by its text.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find("](") {
        text.push_str(&rest[..open]);
        rest = rest[open..].split_once(')').map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file: its headings' slugs (a repeated one
/// numbered `-1`, `-2`, ... as GitHub does) and any HTML `id` or `name`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for line in prose(text) {
        let trimmed = line.trim_start_matches('#');
        if line.starts_with('#') && trimmed.starts_with(' ') {
            let base = slug(trimmed.trim_end_matches('#'));
            let count = seen.entry(base.clone()).or_default();
            out.insert(if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            });
            *count += 1;
        }
        for attribute in ["id=\"", "name=\""] {
            for (at, _) in line.match_indices(attribute) {
                let rest = &line[at + attribute.len()..];
                out.insert(rest.split('"').next().unwrap_or_default().to_owned());
            }
        }
    }
    out
}

/// What is wrong with `target`, a link in `file`, if anything.
fn broken(file: &Path, target: &str) -> Option<String> {
    if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let dir = file.parent().unwrap();
    let resolved = if path.is_empty() {
        file.to_owned()
    } else {
        dir.join(path.replace("%20", " "))
    };
    if !resolved.exists() {
        return Some(format!("{target}: no such file"));
    }
    let anchor = anchor?;
    if resolved.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&resolved).unwrap();
    (!anchors(&text).contains(anchor)).then(|| format!("{target}: no heading #{anchor}"))
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = workspace_root();
    let mut checked = 0;
    let mut bad = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken(&file, &target) {
                let name = file
                    .strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                bad.push(format!("{name}: {why}"));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: the scan is broken"
    );
    assert!(bad.is_empty(), "broken links: {bad:#?}");
}

#[test]
fn the_checks_tell_a_missing_flag_key_or_heading() {
    assert!(!has_flag("--journal-full", "--journal"));
    assert!(has_flag("[--journal FILE]", "--journal"));
    assert!(!documents_key("program_env = 1\n", "env"));
    assert!(documents_key("[plugins.fs.limits]\n", "limits"));
    assert_eq!(
        slug(" Servers that ask for a `login`"),
        "servers-that-ask-for-a-login"
    );
    assert_eq!(
        slug(" The mcp plugin: MCP servers"),
        "the-mcp-plugin-mcp-servers"
    );
    let twice = anchors("# A\n\n```\n# not a heading\n```\n\n## A\n");
    assert_eq!(twice, BTreeSet::from(["a".to_owned(), "a-1".to_owned()]));
}
