//! Which tools are deferred: left out of what a model is offered until a
//! search finds them, and the search index over them, built with each
//! registry snapshot.
//!
//! Invariants:
//! - Nothing is deferred by default: a registry with an empty
//!   [`Deferral`] has no index and no search.
//! - A tool is deferred when its plugin is named deferred or a `defer`
//!   pattern matches its full name, unless an `always` pattern does.
//! - The index is built once per snapshot, from that snapshot's deferred
//!   tools alone, when [`LiveRegistry`](super::LiveRegistry) swaps the
//!   snapshot in (never while a call waits); a clone of a registry (the
//!   start of the next snapshot) starts without one.
//! - Patterns come from a config: at most [`MAX_PATTERNS`] of each kind,
//!   each at most [`MAX_PATTERN_BYTES`] of plain text; `*` matches any run
//!   of characters (`/` and `.` included), `?` any one, the rest itself,
//!   in time linear in the name for each star.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use super::{RegisteredTool, Registry};
use crate::search::{DEFAULT_RESULTS, Hit, SearchError, SearchIndex};

/// The most `defer` (and the most `always`) patterns.
pub const MAX_PATTERNS: usize = 256;

/// The longest pattern.
pub const MAX_PATTERN_BYTES: usize = 256;

/// A pattern over full tool names: `mcp/*`, `*.delete_*`, `fs/workspace.read_file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(Box<str>);

/// Why a pattern was refused. One line, saying what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// Empty.
    #[error("an empty pattern: write a tool's full name, or one with * (such as \"mcp/*\")")]
    Empty,
    /// Over [`MAX_PATTERN_BYTES`].
    #[error("a pattern of {0} bytes: at most {MAX_PATTERN_BYTES}")]
    TooLong(usize),
    /// A control character.
    #[error("a pattern with a control character: write plain text")]
    Control,
    /// More than [`MAX_PATTERNS`].
    #[error("{0} patterns: at most {MAX_PATTERNS}; use * to cover more with one")]
    TooMany(usize),
}

impl Pattern {
    /// Checks `text` as a pattern.
    pub fn new(text: &str) -> Result<Pattern, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if text.len() > MAX_PATTERN_BYTES {
            return Err(PatternError::TooLong(text.len()));
        }
        if text.chars().any(char::is_control) {
            return Err(PatternError::Control);
        }
        Ok(Pattern(text.into()))
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it matches `name` whole (see [`glob_matches`]).
    pub fn matches(&self, name: &str) -> bool {
        glob_matches(&self.0, name)
    }
}

/// Whether the glob `pattern` matches `name` whole: `*` any run of
/// characters, `?` any one, anything else itself. The greedy match with
/// the last star remembered: each mismatch resumes from it, so the time is
/// at most the product of the lengths.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Which tools are deferred.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deferral {
    /// Plugins all of whose tools are deferred.
    pub plugins: BTreeSet<String>,
    /// Tools deferred by name.
    pub defer: Vec<Pattern>,
    /// Tools never deferred, whatever else says.
    pub always: Vec<Pattern>,
    /// How a model is offered the search that finds them.
    pub form: SearchForm,
}

/// How a request offers the search over the deferred tools (`[search]
/// form` in the config). Providers without a search of their own always
/// get the host's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SearchForm {
    /// `host` (the default): the host's own search, as a client tool of
    /// the request (`search_tools`), answered with the provider's form of
    /// found tools; each search is journaled.
    #[default]
    Host,
    /// `provider`: the provider's own search where it has one (Anthropic's
    /// BM25 tool search, OpenAI Responses' hosted `tool_search`), over the
    /// deferred tools the request sends with `defer_loading`.
    Provider,
    /// `provider-regex`: as `provider`, with Anthropic's regex variant.
    ProviderRegex,
}

impl SearchForm {
    /// Every form, in config order.
    pub const ALL: [SearchForm; 3] = [
        SearchForm::Host,
        SearchForm::Provider,
        SearchForm::ProviderRegex,
    ];

    /// The config's name: `host`, `provider` or `provider-regex`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SearchForm::Host => "host",
            SearchForm::Provider => "provider",
            SearchForm::ProviderRegex => "provider-regex",
        }
    }

    /// The form named `name`, if any.
    pub fn from_name(name: &str) -> Option<SearchForm> {
        SearchForm::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

impl Deferral {
    /// Whether it defers nothing.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.defer.is_empty()
    }

    /// Whether the tool of full name `name` is deferred.
    pub fn defers(&self, name: &str) -> bool {
        let plugin = name.split_once('/').map(|(p, _)| p);
        let named = plugin.is_some_and(|p| self.plugins.contains(p))
            || self.defer.iter().any(|p| p.matches(name));
        named && !self.always.iter().any(|p| p.matches(name))
    }

    /// Checks the counts of patterns.
    pub fn check(&self) -> Result<(), PatternError> {
        for list in [&self.defer, &self.always] {
            if list.len() > MAX_PATTERNS {
                return Err(PatternError::TooMany(list.len()));
            }
        }
        Ok(())
    }
}

/// A search index over `tools`, and only them (with their pinned
/// definition hashes): what a registry builds over its deferred tools.
pub fn index_tools<'a>(tools: impl IntoIterator<Item = &'a Arc<RegisteredTool>>) -> SearchIndex {
    SearchIndex::from_definitions(
        tools
            .into_iter()
            .map(|t| (t.name.as_str(), &t.definition, &t.definition_hash)),
    )
}

/// A snapshot's index, made once; a clone starts empty (a clone is where
/// the next snapshot starts, and its tools may differ).
#[derive(Debug, Default)]
pub(super) struct IndexSlot(OnceLock<Option<Arc<SearchIndex>>>);

impl Clone for IndexSlot {
    fn clone(&self) -> Self {
        IndexSlot::default()
    }
}

impl Registry {
    /// Which tools this registry defers (see [`Deferral`]).
    pub fn deferral(&self) -> &Deferral {
        &self.deferral
    }

    /// Defers the tools `deferral` says; the index is built anew.
    pub fn set_deferral(&mut self, deferral: Deferral) {
        self.deferral = Arc::new(deferral);
        self.index = IndexSlot::default();
    }

    /// Whether the tool of full name `name` is deferred here.
    pub fn is_deferred(&self, name: &str) -> bool {
        !self.deferral.is_empty() && self.deferral.defers(name)
    }

    /// The index over this snapshot's deferred tools, built on first use
    /// ([`LiveRegistry`](super::LiveRegistry) uses it when it swaps the
    /// snapshot in); `None` when nothing is deferred.
    pub fn search_index(&self) -> Option<&Arc<SearchIndex>> {
        self.index
            .0
            .get_or_init(|| {
                (!self.deferral.is_empty()).then(|| {
                    Arc::new(index_tools(
                        self.tools()
                            .filter(|t| self.deferral.defers(t.name.as_str())),
                    ))
                })
            })
            .as_ref()
    }

    /// The deferred tools that best fit `query`, at most `limit` (default
    /// [`DEFAULT_RESULTS`]); none when nothing is deferred.
    pub fn search(&self, query: &str, limit: Option<usize>) -> Result<Vec<Hit>, SearchError> {
        let limit = limit.unwrap_or(DEFAULT_RESULTS);
        match self.search_index() {
            Some(index) => index.search(query, limit),
            // The query and limit are still checked: a bad one is the
            // same refusal whatever is deferred.
            None => SearchIndex::from_definitions(std::iter::empty()).search(query, limit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &str) -> Pattern {
        Pattern::new(p).unwrap()
    }

    #[test]
    fn patterns_match_whole_names_with_stars_and_marks() {
        assert!(pattern("mcp/*").matches("mcp/github.create_issue"));
        assert!(!pattern("mcp/*").matches("fs/workspace.read_file"));
        assert!(pattern("*.delete_*").matches("mcp/db.delete_row"));
        assert!(pattern("fs/workspace.read_fil?").matches("fs/workspace.read_file"));
        assert!(!pattern("fs/workspace.read").matches("fs/workspace.read_file"));
        assert!(pattern("*").matches(""));
        assert!(pattern("a*b*c").matches("aXbYbZc"));
        assert!(!pattern("a*b*c").matches("aXbYbZ"));
        // A star first, even where the name holds a star itself.
        assert!(pattern("*a").matches("*ba"));
        // Many stars against a long name that fails: no blow-up.
        let name = "a".repeat(10_000);
        assert!(!pattern(&"*a".repeat(100)).matches(&format!("{name}b")));
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert_eq!(Pattern::new(""), Err(PatternError::Empty));
        assert_eq!(
            Pattern::new(&"x".repeat(MAX_PATTERN_BYTES + 1)),
            Err(PatternError::TooLong(MAX_PATTERN_BYTES + 1))
        );
        assert_eq!(Pattern::new("a\u{0}b"), Err(PatternError::Control));
        let too_many = Deferral {
            defer: vec![pattern("x"); MAX_PATTERNS + 1],
            ..Deferral::default()
        };
        assert_eq!(
            too_many.check(),
            Err(PatternError::TooMany(MAX_PATTERNS + 1))
        );
    }

    #[test]
    fn always_wins_and_a_plugin_may_be_deferred_whole() {
        let deferral = Deferral {
            plugins: ["mcp".to_owned()].into(),
            defer: vec![pattern("fs/*")],
            always: vec![pattern("fs/workspace.read_file"), pattern("mcp/*.search")],
            ..Deferral::default()
        };
        assert!(deferral.defers("mcp/github.create_issue"));
        assert!(!deferral.defers("mcp/github.search"));
        assert!(deferral.defers("fs/workspace.write_file"));
        assert!(!deferral.defers("fs/workspace.read_file"));
        assert!(!deferral.defers("shell/exec.run"));
        assert!(Deferral::default().is_empty());
        assert!(!Deferral::default().defers("fs/workspace.read_file"));
    }
}
