//! The host's layers as its source names them: which file uses which,
//! read from `crate::`, `super::` and `self::` paths outside comments,
//! strings and test modules. No file may reach, through others, back to
//! itself (a file and the modules it sits inside are one unit: a parent
//! re-exporting its child and the child naming its parent is no cycle),
//! and no module with all it holds may reach back to itself either, at
//! any depth. This is what
//! lets the modules become crates that the compiler keeps apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["mcp", "session"]`), the crate root being empty.
type Module = Vec<String>;

/// Every module file under `src` with its module path; test files left
/// out.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("below src");
            let mut module: Module = relative
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if module.iter().any(|m| m == "tests" || m.ends_with("_tests")) {
                continue;
            }
            let last = module.last().cloned().unwrap_or_default();
            if last == "mod" || (module.len() == 1 && (last == "lib" || last == "main")) {
                module.pop();
            }
            if module.first().is_some_and(|m| m == "bin") {
                continue;
            }
            // A crate with a library and a binary: the binary's `main.rs`
            // only calls the library.
            if relative == Path::new("main.rs") && src.join("lib.rs").is_file() {
                continue;
            }
            out.insert(module, path);
        }
    }
    out
}

/// `text` with comments, string and character literals blanked, and cut
/// at its test module (`#[cfg(test)]` followed by a `mod`).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            i += end;
            out.push(' ');
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let open = 2 + hashes;
            let end = rest[open..]
                .find(&close)
                .map_or(rest.len(), |e| open + e + close.len());
            i += end;
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
        } else if bytes[i] == b'\'' && is_char_literal(rest) {
            let end = rest[1..].find('\'').map_or(rest.len(), |e| e + 2);
            i += end;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Whether the `'` that `rest` starts with opens a character literal
/// (not a lifetime).
fn is_char_literal(rest: &str) -> bool {
    let mut chars = rest.chars().skip(1);
    matches!(
        (chars.next(), chars.next()),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Every path `code` names from `crate`, `super` or `self`, made
/// absolute from module `at`; `use` trees are expanded.
fn paths(code: &str, at: &Module) -> Vec<Module> {
    let mut out = Vec::new();
    let tokens = tokens(code);
    let mut i = 0;
    while i < tokens.len() {
        let starts = matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && (i == 0 || tokens[i - 1] != "::");
        if starts {
            let mut prefix = Vec::new();
            i = tree(&tokens, i, &mut prefix, &mut out);
        } else {
            i += 1;
        }
    }
    out.into_iter()
        .filter_map(|relative| absolute(&relative, at))
        .collect()
}

/// Reads one path or `use` tree from `tokens[i]`, with `prefix` before it,
/// pushing every whole path; the index after it.
fn tree(
    tokens: &[String],
    mut i: usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let depth = prefix.len();
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                loop {
                    match tokens.get(i).map(String::as_str) {
                        Some("}") => {
                            i += 1;
                            break;
                        }
                        Some(",") => i += 1,
                        None => break,
                        _ => i = tree(tokens, i, prefix, out),
                    }
                }
                break;
            }
            Some(word) if is_word(word) => {
                prefix.push(word.to_owned());
                i += 1;
                if tokens.get(i).is_some_and(|t| t == "::") {
                    i += 1;
                    continue;
                }
                out.push(prefix.clone());
                break;
            }
            Some("*") => {
                out.push(prefix.clone());
                i += 1;
                break;
            }
            _ => {
                out.push(prefix.clone());
                break;
            }
        }
    }
    // `as NAME` after a use path.
    if tokens.get(i).is_some_and(|t| t == "as") {
        i += 2;
    }
    prefix.truncate(depth);
    i
}

fn is_word(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Words, `::` and single punctuation.
fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = at + c.len_utf8();
            while let Some(&(next, d)) = chars.peek() {
                if d.is_alphanumeric() || d == '_' {
                    end = next + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(code[at..end].to_owned());
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            out.push("::".to_owned());
        } else if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    out
}

/// `path` (starting with `crate`, `super` or `self`) from module `at`.
fn absolute(path: &[String], at: &Module) -> Option<Module> {
    let mut base: Module = at.clone();
    let mut rest = path;
    match rest.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        _ => {}
    }
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module file `path` lands in: its longest prefix that is a module.
fn owner<'a>(path: &Module, known: &'a BTreeMap<Module, PathBuf>) -> Option<&'a Module> {
    (0..=path.len())
        .rev()
        .find_map(|n| known.get_key_value(&path[..n]).map(|(k, _)| k))
}

/// Whether `a` sits inside `b` or `b` inside `a` (or they are one).
fn nested(a: &Module, b: &Module) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Which module uses which, by file, with the first path that says so.
fn named(src: &Path) -> BTreeMap<Module, BTreeMap<Module, Module>> {
    let known = modules(src);
    let mut edges: BTreeMap<Module, BTreeMap<Module, Module>> = BTreeMap::new();
    for (module, file) in &known {
        let text = std::fs::read_to_string(file).expect("a source file");
        let targets = edges.entry(module.clone()).or_default();
        for path in paths(&code_of(&text), module) {
            if let Some(target) = owner(&path, &known)
                && !nested(module, target)
            {
                targets.entry(target.clone()).or_insert(path);
            }
        }
    }
    edges
}

/// Which module uses which, by file.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    named(src)
        .into_iter()
        .map(|(from, to)| (from, to.into_keys().collect()))
        .collect()
}

/// The cycles of `edges` (its strongly connected parts of more than one
/// node), each sorted, found with Tarjan's algorithm.
fn cycles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(node: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        let n = s.index.len();
        s.index.insert(node.clone(), n);
        s.low.insert(node.clone(), n);
        s.stack.push(node.clone());
        s.on_stack.insert(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if !s.index.contains_key(next) {
                visit(next, edges, s);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node.clone(), low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node.clone(), low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut part = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(&top);
                let done = &top == node;
                part.push(top);
                if done {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.found.push(part);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(node, edges, &mut state);
        }
    }
    state.found.sort();
    state.found
}

/// The source directory of each of the host's crates.
fn crates() -> [PathBuf; 8] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    [
        root.join("host/core/src"),
        root.join("host/sandbox/src"),
        root.join("host/intrinsic/src"),
        root.join("host/mcp/src"),
        root.join("host/provider/src"),
        root.join("host/wasm/src"),
        root.join("host/src"),
        root.join("host/cli/src"),
    ]
}

fn name(module: &Module) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

/// Each cycle, and within it each use that makes it, with its path.
fn describe(found: &[Vec<Module>], named: &BTreeMap<Module, BTreeMap<Module, Module>>) -> String {
    let mut out = Vec::new();
    for part in found {
        out.push(part.iter().map(name).collect::<Vec<_>>().join(" <-> "));
        // The node of the cycle that holds `m`.
        let holder = |m: &Module| part.iter().find(|p| m.starts_with(p));
        for (from, targets) in named {
            for (to, path) in targets {
                if let (Some(a), Some(b)) = (holder(from), holder(to))
                    && a != b
                {
                    out.push(format!("  {} uses {}", name(from), name(path)));
                }
            }
        }
    }
    out.join("\n")
}

#[test]
fn no_file_of_the_host_reaches_back_to_itself() {
    for src in crates() {
        let edges = graph(&src);
        assert!(
            edges.len() > 2,
            "the sources of {} were not found",
            src.display()
        );
        let found = cycles(&edges);
        assert!(
            found.is_empty(),
            "import cycles between files of {}:\n{}",
            src.display(),
            describe(&found, &named(&src))
        );
    }
}

#[test]
fn no_module_of_the_host_reaches_back_to_itself_at_any_depth() {
    for src in crates() {
        module_cycles(&src);
    }
}

/// Fails on a cycle between the modules of the crate at `src`, at any
/// depth.
fn module_cycles(src: &Path) {
    let files = graph(src);
    let deepest = files.keys().map(Vec::len).max().unwrap_or(0);
    let mut found = Vec::new();
    // Depth 1: the top-level modules, each with all it holds; depth 2:
    // `mcp::oauth` with its files; and so on.
    for depth in 1..deepest {
        let cut = |m: &Module| m[..m.len().min(depth)].to_vec();
        let mut collapsed: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (from, targets) in &files {
            let entry = collapsed.entry(cut(from)).or_default();
            for target in targets {
                if !nested(&cut(from), &cut(target)) {
                    entry.insert(cut(target));
                }
            }
        }
        found.extend(cycles(&collapsed));
    }
    assert!(
        found.is_empty(),
        "import cycles between modules of {}:\n{}",
        src.display(),
        describe(&found, &named(src))
    );
}

#[test]
fn the_reader_finds_a_cycle_through_super_a_use_tree_and_an_inline_path() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(src.join("a.rs"), "mod x;\nmod y;\npub use x::X;\n").unwrap();
    std::fs::write(
        src.join("a/x.rs"),
        "// use super::y::Y; (a comment)\nuse super::{y::{self, Y as Why}};\npub struct X;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/y.rs"),
        "pub struct Y;\nfn f() { let _ = \"crate::b::B\"; let _ = crate::a::x::X; }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::x::X; }\n",
    )
    .unwrap();
    let edges = graph(src);
    let module = |s: &str| s.split("::").map(str::to_owned).collect::<Module>();
    assert_eq!(
        edges[&module("a::x")],
        BTreeSet::from([module("a::y")]),
        "{edges:?}"
    );
    assert_eq!(edges[&module("b")], BTreeSet::new(), "tests are left out");
    assert_eq!(cycles(&edges), vec![vec![module("a::x"), module("a::y")]]);
    // A parent and its child are one unit.
    assert!(edges[&module("a")].is_empty(), "{edges:?}");
}
