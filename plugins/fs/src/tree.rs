//! The directory tools, `list_dir` and `search`, and the walk they share.
//!
//! A walk visits a directory's entries depth-first, each directory's
//! entries sorted by name, so the paths it yields are sorted component by
//! component (a directory's contents follow it directly) and a walk cut
//! short at a limit always yields the same prefix. It never follows a
//! symlink, and skips subdirectories it cannot read.

use std::fs::{self, DirEntry, FileType};
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::Path;

use regex_lite::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tiny_harness_plugin::{Context, Json, ToolError, tool};

use crate::files::{kind, looks_binary, read_prefix};
use crate::{check_range, defs, io_failure, resolve};

/// Files larger than this are not searched.
const MAX_SEARCH_FILE: u64 = 4 * 1024 * 1024;

/// The most characters of a matching line `search` returns.
const MAX_MATCH_TEXT: usize = 500;

/// The most bytes of paths and text (as quoted JSON strings) one
/// `list_dir` or `search` returns, so that a large tree or a common pattern ends in
/// `truncated` rather than in a result too large for the host to pass on.
const MAX_LISTING_BYTES: usize = 256 * 1024;

/// What one entry or match costs against [`MAX_LISTING_BYTES`] besides its
/// strings: the JSON keys, numbers and punctuation around them, roughly.
const PER_ITEM_BYTES: usize = 48;

/// The length of `text` as a quoted JSON string: escapes can make it up to
/// six times longer than the text.
fn json_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.len() * 6 + 2, |quoted| quoted.len())
}

/// Arguments of `list_dir`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDir {
    #[serde(default = "dot")]
    path: String,
    #[serde(default)]
    recursive: bool,
    #[serde(default = "default_max_entries")]
    max_entries: u64,
}

/// Arguments of `search`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pattern: String,
    #[serde(default = "dot")]
    path: String,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default = "default_max_results")]
    max_results: u64,
    include: Option<String>,
}

/// The default `path`: the root itself.
fn dot() -> String {
    ".".into()
}

/// The default `max_entries`.
fn default_max_entries() -> u64 {
    1_000
}

/// The default `max_results`.
fn default_max_results() -> u64 {
    200
}

/// One entry a walk visits.
struct Entry {
    /// Its path relative to the walked directory, `/`-separated.
    rel: String,
    /// The directory entry.
    entry: DirEntry,
    /// Its type, not following a symlink.
    file_type: FileType,
}

/// The readable entries of `dir`, sorted by name, with `prefix` (the
/// directory's own relative path, or empty) before each name.
fn sorted_entries(dir: &Path, prefix: &str) -> io::Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file_type = entry.file_type().ok()?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            Some(Entry {
                rel,
                entry,
                file_type,
            })
        })
        .collect();
    entries.sort_by_key(|e| e.entry.file_name());
    Ok(entries)
}

/// Walks `dir` (into subdirectories only when `recursive`), calling `visit`
/// on each entry until it breaks. Fails only when `dir` itself cannot be
/// read.
fn walk(
    dir: &Path,
    recursive: bool,
    mut visit: impl FnMut(&Entry) -> ControlFlow<()>,
) -> io::Result<()> {
    let mut stack = vec![sorted_entries(dir, "")?.into_iter()];
    while let Some(level) = stack.last_mut() {
        let Some(entry) = level.next() else {
            stack.pop();
            continue;
        };
        if visit(&entry).is_break() {
            break;
        }
        if recursive
            && entry.file_type.is_dir()
            && let Ok(children) = sorted_entries(&entry.entry.path(), &entry.rel)
        {
            stack.push(children.into_iter());
        }
    }
    Ok(())
}

/// Lists a directory. Returns JSON {path, entries: [{path, type, size}],
/// truncated}: entry paths are relative to the listed directory and
/// sorted; type is file, dir, symlink or other. Recursive listing does not
/// follow symlinks. truncated means more entries follow: the listing stops
/// at max_entries or at about 256 KiB.
#[tool(
    read_only,
    idempotent,
    input_schema = defs::list_dir_input,
    output_schema = defs::list_dir_output
)]
pub fn list_dir(cx: &Context, args: ListDir) -> Result<Json<Value>, ToolError> {
    check_range("max_entries", args.max_entries, 1, 10_000)?;
    let path = resolve(cx, &args.path)?;
    let max = args.max_entries as usize;
    let mut entries = Vec::new();
    let mut truncated = false;
    let mut bytes = 0;
    let walked = walk(&path, args.recursive, |entry| {
        bytes += json_len(&entry.rel) + PER_ITEM_BYTES;
        if entries.len() == max || bytes > MAX_LISTING_BYTES {
            truncated = true;
            return ControlFlow::Break(());
        }
        let size = entry.entry.metadata().ok().map(|m| m.len());
        entries.push(json!({
            "path": entry.rel,
            "type": kind(entry.file_type),
            "size": size,
        }));
        ControlFlow::Continue(())
    });
    walked.map_err(|err| io_failure("list", &path, err))?;
    Ok(Json(json!({
        "path": path.display().to_string(),
        "entries": entries,
        "truncated": truncated,
    })))
}

/// Whether `text` matches `pattern`, in which `*` matches any run of
/// characters (including none) and every other character only itself.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // The last `*` seen, and where in `text` its match currently ends.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            // Let the last `*` swallow one more character and retry.
            star = Some((star_p, star_t + 1));
            p = star_p + 1;
            t = star_t + 1;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Whether the `include` filter admits the file at relative path `rel`:
/// a pattern with a `/` is matched against `rel`, any other against the
/// file's name.
fn included(include: Option<&str>, rel: &str) -> bool {
    match include {
        None => true,
        Some(pattern) if pattern.contains('/') => wildcard_match(pattern, rel),
        Some(pattern) => wildcard_match(pattern, rel.rsplit('/').next().unwrap_or(rel)),
    }
}

/// The state of one `search`.
struct Searcher {
    regex: Regex,
    max_results: usize,
    matches: Vec<Value>,
    /// What the matches so far cost against [`MAX_LISTING_BYTES`].
    bytes: usize,
    files_searched: u64,
    truncated: bool,
}

impl Searcher {
    /// Searches one file, unless it is too large, unreadable or binary.
    /// Breaks once a match beyond `max_results` shows there are more.
    fn search_file(&mut self, path: &Path, rel: &str, size: u64) -> ControlFlow<()> {
        if size > MAX_SEARCH_FILE {
            return ControlFlow::Continue(());
        }
        let Ok(mut file) = fs::File::open(path) else {
            return ControlFlow::Continue(());
        };
        let Ok(mut bytes) = read_prefix(&mut file) else {
            return ControlFlow::Continue(());
        };
        if looks_binary(&bytes)
            || file
                .take(MAX_SEARCH_FILE + 1)
                .read_to_end(&mut bytes)
                .is_err()
            || bytes.len() as u64 > MAX_SEARCH_FILE
        {
            return ControlFlow::Continue(());
        }
        self.files_searched += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.lines().enumerate() {
            if !self.regex.is_match(line) {
                continue;
            }
            let text: String = line.chars().take(MAX_MATCH_TEXT).collect();
            self.bytes += json_len(rel) + json_len(&text) + PER_ITEM_BYTES;
            if self.matches.len() == self.max_results || self.bytes > MAX_LISTING_BYTES {
                self.truncated = true;
                return ControlFlow::Break(());
            }
            self.matches.push(json!({
                "path": rel,
                "line": index + 1,
                "text": text,
            }));
        }
        ControlFlow::Continue(())
    }
}

/// Searches text files for lines matching a regular expression. Returns
/// JSON {matches: [{path, line, text}], files_searched, truncated}; paths
/// are relative to the searched directory; text is cut to 500 characters.
/// Symlinks are not followed; binary files and files over 4 MiB are
/// skipped. truncated means more matches follow: the search stops at
/// max_results or at about 256 KiB of matches.
#[tool(
    read_only,
    idempotent,
    input_schema = defs::search_input,
    output_schema = defs::search_output
)]
pub fn search(cx: &Context, args: Search) -> Result<Json<Value>, ToolError> {
    check_range("max_results", args.max_results, 1, 10_000)?;
    let regex = RegexBuilder::new(&args.pattern)
        .case_insensitive(args.case_insensitive)
        .build()
        .map_err(|err| {
            ToolError::InvalidArguments(format!("invalid regex {:?}: {err}", args.pattern))
        })?;
    let path = resolve(cx, &args.path)?;
    let include = args.include.as_deref();
    let mut searcher = Searcher {
        regex,
        max_results: args.max_results as usize,
        matches: Vec::new(),
        bytes: 0,
        files_searched: 0,
        truncated: false,
    };
    // The path the caller named is followed even if it is a symlink;
    // symlinks found by the walk are not.
    let metadata = fs::metadata(&path).map_err(|err| io_failure("search", &path, err))?;
    if metadata.is_dir() {
        let walked = walk(&path, true, |entry| {
            if !entry.file_type.is_file() || !included(include, &entry.rel) {
                return ControlFlow::Continue(());
            }
            let size = entry.entry.metadata().map_or(0, |m| m.len());
            searcher.search_file(&entry.entry.path(), &entry.rel, size)
        });
        walked.map_err(|err| io_failure("search", &path, err))?;
    } else {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        if included(include, &name) {
            let _ = searcher.search_file(&path, &name, metadata.len());
        }
    }
    Ok(Json(json!({
        "matches": searcher.matches,
        "files_searched": searcher.files_searched,
        "truncated": searcher.truncated,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*.rs", "main.rs"));
        assert!(wildcard_match("*.rs", ".rs"));
        assert!(!wildcard_match("*.rs", "main.rsx"));
        assert!(wildcard_match("a*b*c", "aXbYbZc"));
        assert!(!wildcard_match("a*b*c", "aXbYbZ"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("exact", "exact"));
        assert!(!wildcard_match("exact", "exac"));
        assert!(wildcard_match("**x", "yyx"));
    }

    #[test]
    fn include_matches_names_or_paths() {
        assert!(included(None, "a/b.txt"));
        assert!(included(Some("*.txt"), "a/b.txt"));
        assert!(!included(Some("a*.txt"), "a/b.txt"));
        assert!(included(Some("a/*.txt"), "a/b.txt"));
        assert!(included(Some("src/*"), "src/x/y.rs"));
    }
}
