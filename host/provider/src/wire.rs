//! The wire-name codec: the names a model provider sees for our tools.
//!
//! A registry name such as `fs/workspace.read_file` cannot cross to a
//! provider as it is: each provider family accepts its own alphabet and
//! length ([`WireRule`]). This module maps registry names to wire names and
//! back, as plain data with no I/O.
//!
//! Invariants (each has a test in `wire/tests.rs` or `wire/props.rs`):
//! - **A bijection per request.** A [`WireCodec`] is built from the names
//!   offered in one request; within it no two names share a wire name, and
//!   [`WireCodec::decode`] inverts [`WireCodec::encode`].
//! - **Never a guess.** Decoding is an exact lookup among the names offered
//!   in this request; anything else is [`UnknownWireName`], never a fuzzy,
//!   case-folded or "closest" match.
//! - **Stable per name.** A name's wire name is [`WireRule::wire_name`]: a
//!   function of the name and the rule alone, never of which other tools
//!   are offered or in what order, so prompt caches and the tool calls of
//!   earlier turns stay valid. The one exception is a clash between two
//!   hashed names (a 50-bit hash collision, or a pair built to collide):
//!   then only the clashing names get longer hashes, decided by the set of
//!   names alone (never by the offer order).
//! - **Readable.** A wire name is the registry name wherever the rule
//!   allows; otherwise `/` (and, where the rule forbids it, `.`) becomes
//!   `__`; otherwise a readable prefix of the name is kept, followed by
//!   `___` and a hash of the *full* name.
//! - **Nothing poses as an intrinsic.** A bare name that is already valid
//!   for the rule and holds no `__` (`create_plan`) is its own wire name;
//!   every other wire name holds `__`, so no registry name (they all hold a
//!   `/`) can encode to a bare name.
//!
//! # The scheme
//! Every wire name is of exactly one of three forms, and the forms cannot
//! be confused, which is what makes the encoding injective:
//! 1. **Bare**: the name itself, when it is valid for the rule and holds no
//!    `__`. `create_plan` -> `create_plan` under every rule.
//! 2. **Mapped**: the name with each separator replaced by `__`, when that
//!    is unambiguous. Under [`WireRule::Strict`] the separators are `/` and
//!    `.`; the name must hold exactly one `/`, no `.` before it, no `__`,
//!    and no separator next to `_` or another separator. Then every run of
//!    underscores in the result has length one (a `_` of the name) or two
//!    (a separator; the first is the `/`). Under [`WireRule::Gemini`] and
//!    [`WireRule::Mcp`], which allow `.`, only `/` is a separator (at least
//!    one, none next to `_` or `/`) and `.` stays. A mapped name always
//!    holds `__` and never `___`; it must also fit the rule's length and
//!    first character.
//! 3. **Hashed**: everything else (a character outside the alphabet, an
//!    ambiguous separator, a bare name holding `__`, a name too long):
//!    `<prefix>___<hash>`, where `<hash>` is the first [`HASH_LEN`]
//!    characters of the lowercase RFC 4648 base32 of the sha256 of the full
//!    name, and `<prefix>` is the name with separators mapped as above,
//!    every other character outside the alphabet replaced by `_`, runs of
//!    underscores cut to two, cut to the room left, trailing `_` dropped,
//!    and (Gemini) `_` put in front of a first character the rule refuses.
//!
//! | registry name            | Strict (OpenAI, ...)       | Gemini                    | MCP                       |
//! |--------------------------|----------------------------|---------------------------|---------------------------|
//! | `create_plan`            | `create_plan`              | `create_plan`             | `create_plan`             |
//! | `fs/workspace.read_file` | `fs__workspace__read_file` | `fs__workspace.read_file` | `fs__workspace.read_file` |
//! | `fs/ws.v1.get`           | `fs__ws__v1__get`          | `fs__ws.v1.get`           | `fs__ws.v1.get`           |
//! | `fs/ws._get`             | `fs__ws__get___<hash>`     | `fs__ws._get`             | `fs__ws._get`             |
//! | `1p/vault.get`           | `1p__vault__get`           | `_1p__vault.get___<hash>` | `1p__vault.get`           |
//! | `fs/ws.café`             | `fs__ws__caf___<hash>`     | `fs__ws.caf___<hash>`     | `fs__ws.caf___<hash>`     |
//!
//! # The hash
//! 10 base32 characters carry 50 bits. Two hashed names clash only if
//! their prefixes and hashes both agree, so for `n` hashed names in one
//! request the chance of any clash is at most `n(n-1)/2 / 2^50`: about
//! `4.4e-6` for 100,000 names, `4.4e-10` for 1,000. A clash is not an
//! error: both names then get 20, 40 and finally 51 hash characters (255
//! bits), and should even those agree (a sha256 collision), each clashing
//! name, ranked by registry name, ends in `___0<rank>` instead. A targeted
//! clash with a given name costs about `2^50` sha256 evaluations and buys
//! nothing but longer names for the two tools in requests offering both.

mod form;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::{Arc, OnceLock};

pub(crate) use form::HashLens;
pub use form::{HASH_LEN, HASH_MARK, SEPARATOR};

/// The tool-name rule of one provider family: which characters a tool name
/// may hold, how long it may be, and what it may start with. All the
/// alphabets are ASCII, so lengths in bytes and in characters agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireRule {
    /// `^[A-Za-z0-9_-]{1,64}$`: OpenAI (Chat Completions and Responses),
    /// Anthropic, Mistral, Bedrock Converse.
    Strict,
    /// Gemini: ASCII letters, digits, `_`, `.`, `:` and `-`, 1 to 64, the
    /// first an ASCII letter or `_`.
    Gemini,
    /// MCP (a gateway's tools): `[A-Za-z0-9_.-]`, 1 to 128.
    Mcp,
}

impl WireRule {
    /// OpenAI's rule (Chat Completions and Responses): [`WireRule::Strict`].
    pub const fn openai() -> Self {
        WireRule::Strict
    }
    /// Anthropic's rule: [`WireRule::Strict`].
    pub const fn anthropic() -> Self {
        WireRule::Strict
    }
    /// Mistral's rule: [`WireRule::Strict`].
    pub const fn mistral() -> Self {
        WireRule::Strict
    }
    /// Bedrock Converse's rule: [`WireRule::Strict`].
    pub const fn bedrock() -> Self {
        WireRule::Strict
    }
    /// Gemini's rule: [`WireRule::Gemini`].
    pub const fn gemini() -> Self {
        WireRule::Gemini
    }
    /// The rule for tools a gateway offers over MCP: [`WireRule::Mcp`].
    pub const fn mcp() -> Self {
        WireRule::Mcp
    }

    /// The longest wire name the rule accepts, in characters.
    pub const fn max_len(self) -> usize {
        match self {
            WireRule::Strict | WireRule::Gemini => 64,
            WireRule::Mcp => 128,
        }
    }

    /// Whether `c` may appear in a wire name.
    pub const fn allows(self, c: char) -> bool {
        match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' => true,
            '.' => matches!(self, WireRule::Gemini | WireRule::Mcp),
            ':' => matches!(self, WireRule::Gemini),
            _ => false,
        }
    }

    /// Whether a wire name may start with `c`.
    pub const fn allows_first(self, c: char) -> bool {
        match self {
            WireRule::Gemini => c.is_ascii_alphabetic() || c == '_',
            WireRule::Strict | WireRule::Mcp => self.allows(c),
        }
    }

    /// Whether `wire` is a name this rule accepts: 1 to
    /// [`WireRule::max_len`] characters, each [allowed](WireRule::allows),
    /// the first [allowed first](WireRule::allows_first).
    pub fn check(self, wire: &str) -> bool {
        let mut chars = wire.chars();
        (1..=self.max_len()).contains(&wire.len())
            && chars.next().is_some_and(|c| self.allows_first(c))
            && chars.all(|c| self.allows(c))
    }

    /// The wire name of `name` under this rule, as the module header
    /// describes: a function of the name and the rule alone. A
    /// [`WireCodec`] gives every name this wire name unless two hashed
    /// names clash in its request.
    pub fn wire_name(self, name: &str) -> String {
        form::form(self, name, 0, HashLens::PRODUCTION, 0)
    }
}

/// The wire names of the tools offered in one request, both ways: a
/// bijection between the offered registry names and their wire names.
///
/// Build one per request from exactly the names offered, encode every name
/// for the provider with it, and decode every tool call's name with the
/// same codec. Cheap to clone (one shared table). Building one costs a
/// hash-table insertion per name (the decode table) on top of the names'
/// wire names; the table [`WireCodec::encode`] reads is built on its first
/// call.
///
/// ```
/// # mod tiny_harness_host {
/// #     pub use tiny_harness_provider::wire::{WireCodec, WireRule};
/// # }
/// use tiny_harness_host::{WireCodec, WireRule};
/// let offered = ["fs/workspace.read_file", "create_plan"];
/// let codec = WireCodec::new(WireRule::openai(), offered);
/// assert_eq!(codec.encode("fs/workspace.read_file"), Some("fs__workspace__read_file"));
/// assert_eq!(codec.decode("create_plan"), Ok("create_plan"));
/// assert!(codec.decode("fs__workspace__write_file").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct WireCodec {
    table: Arc<Table>,
}

/// A codec's names, shared by its clones.
#[derive(Debug)]
struct Table {
    rule: WireRule,
    /// `(registry name, wire name)`, ordered by registry name.
    entries: Vec<(Arc<str>, Arc<str>)>,
    by_wire: HashMap<Arc<str>, u32>,
    /// Built on the first [`WireCodec::encode`]: a provider adapter takes
    /// the wire names in order and never needs it.
    by_name: OnceLock<HashMap<Arc<str>, u32>>,
    /// Whether a clash gave some name another wire name than its own.
    moved: bool,
}

impl WireCodec {
    /// The codec for a request offering `names` under `rule`. Repeated
    /// names count once; the order of `names` makes no difference.
    ///
    /// # Panics
    /// If more than `u32::MAX` distinct names are offered.
    pub fn new<'a>(rule: WireRule, names: impl IntoIterator<Item = &'a str>) -> Self {
        Self::with_lens(rule, names, HashLens::PRODUCTION)
    }

    /// [`WireCodec::new`] with other hash lengths, so tests can force
    /// clashes.
    pub(crate) fn with_lens<'a>(
        rule: WireRule,
        names: impl IntoIterator<Item = &'a str>,
        lens: HashLens,
    ) -> Self {
        let mut names: Vec<&str> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        let (names, wires) = names
            .into_iter()
            .map(|name| (Arc::from(name), form::form(rule, name, 0, lens, 0).into()))
            .unzip();
        Self::settle(rule, names, wires, lens)
    }

    /// [`WireCodec::new`] for names whose own wire names under `rule`
    /// ([`WireRule::wire_name`]) are already known, as `(name, own wire
    /// name)`: what a caller that keeps each name's wire name pays instead
    /// of computing them again. Repeated names count once.
    pub(crate) fn from_own_names(rule: WireRule, mut pairs: Vec<(Arc<str>, Arc<str>)>) -> Self {
        if !pairs.is_sorted_by(|a, b| a.0 < b.0) {
            pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            pairs.dedup_by(|a, b| a.0 == b.0);
        }
        debug_assert!(
            pairs
                .iter()
                .all(|(name, wire)| **wire == rule.wire_name(name)),
            "from_own_names given another wire name than the name's own"
        );
        let (names, wires) = pairs.into_iter().unzip();
        Self::settle(rule, names, wires, HashLens::PRODUCTION)
    }

    /// The codec of `names` (sorted, distinct) whose own wire names are
    /// `wires`: the clashing names (if any) moved on until none clash.
    fn settle(
        rule: WireRule,
        names: Vec<Arc<str>>,
        mut wires: Vec<Arc<str>>,
        lens: HashLens,
    ) -> Self {
        assert!(
            u32::try_from(names.len()).is_ok(),
            "a request offers more than u32::MAX tools"
        );
        let mut levels = vec![0u8; names.len()];
        let mut by_wire = HashMap::with_capacity(names.len());
        let mut moved = false;
        loop {
            let clashes = clashes(&wires, &mut by_wire);
            if clashes.is_empty() {
                break;
            }
            moved = true;
            // Only the clashing names move on, and the clashes depend on
            // the set of names alone: a name's level does not depend on
            // the offer order, nor, unless it clashes, on the other names.
            let mut progress = false;
            for i in clashes {
                if levels[i] < lens.fallback_level() {
                    levels[i] += 1;
                    progress = true;
                    if levels[i] < lens.fallback_level() {
                        wires[i] = form::form(rule, &names[i], levels[i], lens, 0).into();
                    }
                }
            }
            // Fallback forms cannot clash with each other or with any other
            // form (see `form::fallback`), so every clash holds a name that
            // can still move on.
            assert!(progress, "wire codec: a clash among fallback names");
            let fallback = (0..names.len()).filter(|&i| levels[i] == lens.fallback_level());
            for (rank, i) in fallback.enumerate() {
                wires[i] = form::form(rule, &names[i], levels[i], lens, rank).into();
            }
        }
        WireCodec {
            table: Arc::new(Table {
                rule,
                entries: names.into_iter().zip(wires).collect(),
                by_wire,
                by_name: OnceLock::new(),
                moved,
            }),
        }
    }

    /// The rule the wire names follow.
    pub fn rule(&self) -> WireRule {
        self.table.rule
    }

    /// The wire name of registry name `name`, or `None` if `name` was not
    /// offered in this request.
    pub fn encode(&self, name: &str) -> Option<&str> {
        let table = &*self.table;
        let by_name = table.by_name.get_or_init(|| {
            table
                .entries
                .iter()
                .zip(0u32..)
                .map(|((name, _), i)| (name.clone(), i))
                .collect()
        });
        let &i = by_name.get(name)?;
        Some(&table.entries[i as usize].1)
    }

    /// The registry name whose wire name is exactly `wire`. A name not
    /// offered in this request is an error, never a guess: no case folding,
    /// no prefix or fuzzy match, and a registry name is not its own wire
    /// name unless it encodes to itself.
    pub fn decode(&self, wire: &str) -> Result<&str, UnknownWireName> {
        match self.table.by_wire.get(wire) {
            Some(&i) => Ok(&self.table.entries[i as usize].0),
            None => Err(UnknownWireName::new(wire)),
        }
    }

    /// Every offered `(registry name, wire name)`, ordered by registry
    /// name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.table
            .entries
            .iter()
            .map(|(name, wire)| (&**name, &**wire))
    }

    /// How many distinct names were offered.
    pub fn len(&self) -> usize {
        self.table.entries.len()
    }

    /// True when no name was offered.
    pub fn is_empty(&self) -> bool {
        self.table.entries.is_empty()
    }

    /// Whether every offered name has its own wire name
    /// ([`WireRule::wire_name`]): false only when hashed names clashed.
    pub(crate) fn all_own(&self) -> bool {
        !self.table.moved
    }
}

/// Fills `by_wire` with every wire name and returns the indices of the
/// names whose wire name is shared, in ascending order.
fn clashes(wires: &[Arc<str>], by_wire: &mut HashMap<Arc<str>, u32>) -> Vec<usize> {
    by_wire.clear();
    let mut clashes = Vec::new();
    for (wire, i) in wires.iter().zip(0u32..) {
        match by_wire.entry(wire.clone()) {
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
            Entry::Occupied(slot) => {
                clashes.push(*slot.get() as usize);
                clashes.push(i as usize);
            }
        }
    }
    clashes.sort_unstable();
    clashes.dedup();
    clashes
}

/// A tool call named a tool that was not offered in this request. The
/// adapter answers it with an `unknown_tool` result; nothing runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownWireName {
    name: String,
    truncated: bool,
}

impl UnknownWireName {
    /// The most of the name an error keeps: a model may send anything.
    pub const MAX_KEPT: usize = 256;

    fn new(wire: &str) -> Self {
        let kept = Self::kept(wire);
        UnknownWireName {
            name: kept.to_owned(),
            truncated: kept.len() < wire.len(),
        }
    }

    /// The longest prefix of `wire` of at most [`UnknownWireName::MAX_KEPT`]
    /// bytes that ends on a character boundary: what an error keeps of it.
    pub(crate) fn kept(wire: &str) -> &str {
        &wire[..wire.floor_char_boundary(Self::MAX_KEPT)]
    }

    /// The name the call gave, cut to [`UnknownWireName::MAX_KEPT`] bytes.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether [`UnknownWireName::name`] was cut.
    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Display for UnknownWireName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = if self.truncated { "..." } else { "" };
        write!(
            f,
            "unknown tool \"{}{more}\": no tool of this name was offered in this request",
            tiny_harness_core::display::one_line(&self.name)
        )
    }
}
