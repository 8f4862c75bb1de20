//! One name's wire form under one rule, before the codec settles clashes:
//! bare, mapped or hashed (see the module header of `wire`), and the longer
//! forms a clash moves a name on to.
//!
//! What keeps the forms apart: a bare form holds no `__`; a mapped form
//! holds `__` but no `___`; a hashed form holds `___` followed by nothing
//! but base32 (`[a-z2-7]`, no `_`); a fallback form holds `___0` followed
//! by decimal digits, and `0` is not a base32 character.

use sha2::{Digest, Sha256};

use super::WireRule;

/// What `/` (and, where the rule refuses `.`, `.`) becomes in a wire name.
pub const SEPARATOR: &str = "__";
/// What comes between a hashed wire name's readable prefix and its hash.
pub const HASH_MARK: &str = "___";
/// How many base32 characters of the name's sha256 a hashed wire name
/// ends with: 50 bits (see the module header for the collision bound).
pub const HASH_LEN: usize = 10;
/// The most base32 characters a sha256 gives whole: 51 * 5 = 255 bits.
const FULL_HASH_LEN: usize = 51;
/// Lowercase RFC 4648 base32: letters and `2`..`7`, valid under every rule.
const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// The hash lengths a name moves through when it clashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HashLens {
    /// The length at level 0.
    base: usize,
    /// The longest; after it comes the fallback.
    max: usize,
}

impl HashLens {
    /// [`HASH_LEN`] doubling up to [`FULL_HASH_LEN`]: 10, 20, 40, 51.
    pub(super) const PRODUCTION: HashLens = HashLens {
        base: HASH_LEN,
        max: FULL_HASH_LEN,
    };

    /// Lengths from `base` doubling up to `max`, for tests that force
    /// clashes.
    #[cfg(test)]
    pub(crate) fn new(base: usize, max: usize) -> Self {
        assert!(0 < base && base <= max && max <= FULL_HASH_LEN);
        HashLens { base, max }
    }

    /// The hash length at `level` (below the fallback level).
    fn at(self, level: u8) -> usize {
        self.base
            .checked_shl(u32::from(level))
            .map_or(self.max, |len| len.min(self.max))
    }

    /// The level at which a name gets a fallback form: the first after the
    /// longest hash.
    pub(super) fn fallback_level(self) -> u8 {
        let mut level = 0;
        while self.at(level) < self.max {
            level += 1;
        }
        level + 1
    }
}

/// `name`'s form at `level`: its own wire name at level 0 (bare, mapped or
/// hashed); hashed with a longer hash at each level after; at the fallback
/// level, the fallback form of `rank`.
pub(super) fn form(rule: WireRule, name: &str, level: u8, lens: HashLens, rank: usize) -> String {
    if level == 0
        && let Some(exact) = exact(rule, name)
    {
        return exact;
    }
    if level >= lens.fallback_level() {
        fallback(rule, name, rank)
    } else {
        hashed(rule, name, lens.at(level))
    }
}

/// Whether `c` becomes [`SEPARATOR`] under `rule`.
fn is_separator(rule: WireRule, c: char) -> bool {
    c == '/' || (c == '.' && !rule.allows('.'))
}

/// The bare or mapped form of `name`, if it has one.
fn exact(rule: WireRule, name: &str) -> Option<String> {
    if !name.contains(SEPARATOR) && rule.check(name) {
        return Some(name.to_owned());
    }
    mapped(rule, name)
}

/// `name` with every separator replaced by [`SEPARATOR`], if that result
/// is unambiguous and valid: every character of the name allowed or a
/// separator; at least one `/` (under a rule that maps `.`, exactly one,
/// and no `.` before it); no `__`, and no separator next to `_` or another
/// separator. Then every run of underscores in the result is one `_` of
/// the name or one separator, so the result holds `__` and never `___`.
fn mapped(rule: WireRule, name: &str) -> Option<String> {
    // Each separator adds a character, so a name this long cannot fit.
    if name.len() >= rule.max_len() {
        return None;
    }
    let maps_dot = !rule.allows('.');
    let mut out = String::with_capacity(rule.max_len());
    let (mut slashes, mut dots) = (0usize, 0usize);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        let sep = is_separator(rule, c);
        if let Some(p) = prev {
            let p_sep = is_separator(rule, p);
            if (sep || c == '_') && (p_sep || p == '_') {
                return None;
            }
        }
        match c {
            '/' if maps_dot && (slashes > 0 || dots > 0) => return None,
            '/' => slashes += 1,
            '.' if maps_dot => dots += 1,
            _ => {}
        }
        if sep {
            out.push_str(SEPARATOR);
        } else if rule.allows(c) {
            out.push(c);
        } else {
            return None;
        }
        prev = Some(c);
    }
    (slashes > 0 && rule.check(&out)).then_some(out)
}

/// `<prefix>___<hash>`, the hash `hash_len` characters long.
fn hashed(rule: WireRule, name: &str, hash_len: usize) -> String {
    let mut out = prefix(rule, name, rule.max_len() - HASH_MARK.len() - hash_len);
    out.push_str(HASH_MARK);
    push_hash(&mut out, name, hash_len);
    out
}

/// `<prefix>___0<rank>`: unique for each rank, and never a bare, mapped or
/// hashed form (its tail after the last `___` holds `0`, not base32).
fn fallback(rule: WireRule, name: &str, rank: usize) -> String {
    let tail = format!("{HASH_MARK}0{rank}");
    let mut out = prefix(rule, name, rule.max_len() - tail.len());
    out.push_str(&tail);
    out
}

/// The readable prefix of `name`, at most `room` characters: separators
/// mapped, other refused characters replaced by `_`, underscore runs cut
/// to two, trailing `_` dropped, and a `_` in front of a first character
/// the rule refuses.
fn prefix(rule: WireRule, name: &str, room: usize) -> String {
    let mut out = String::with_capacity(room + 2);
    for c in name.chars() {
        // One more than the room, for a `_` put in front.
        if out.len() > room {
            break;
        }
        if is_separator(rule, c) {
            push_underscore(&mut out);
            push_underscore(&mut out);
        } else if c == '_' || !rule.allows(c) {
            push_underscore(&mut out);
        } else {
            out.push(c);
        }
    }
    if out.chars().next().is_some_and(|c| !rule.allows_first(c)) {
        out.insert(0, '_');
    }
    // Every character pushed is ASCII, so any length is a char boundary.
    out.truncate(room);
    let kept = out.trim_end_matches('_').len();
    out.truncate(kept);
    out
}

/// Pushes `_` unless `out` already ends with two: runs are cut to two.
fn push_underscore(out: &mut String) {
    if !out.ends_with(SEPARATOR) {
        out.push('_');
    }
}

/// Appends the first `len` base32 characters of the sha256 of `name`.
fn push_hash(out: &mut String, name: &str, len: usize) {
    let digest = Sha256::digest(name.as_bytes());
    let (mut acc, mut bits, mut pushed) = (0u16, 0u32, 0usize);
    for &byte in digest.iter() {
        acc = (acc << 8) | u16::from(byte);
        bits += 8;
        while bits >= 5 {
            if pushed == len {
                return;
            }
            bits -= 5;
            out.push(char::from(BASE32[usize::from((acc >> bits) & 31)]));
            acc &= (1 << bits) - 1;
            pushed += 1;
        }
    }
}
