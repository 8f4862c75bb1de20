//! Properties over random and adversarial names, and a million names
//! through the codec.

use proptest::prelude::*;

use super::assert_bijection;
use crate::wire::*;

fn rule() -> impl Strategy<Value = WireRule> {
    prop::sample::select(vec![WireRule::Strict, WireRule::Gemini, WireRule::Mcp])
}

/// A valid registry name: `<plugin>/<server>.<tool>`.
fn registry_name() -> impl Strategy<Value = String> {
    (
        "[a-z0-9_-]{1,64}",
        "[a-z0-9_-]{1,64}",
        "[A-Za-z0-9_.-]{1,128}",
    )
        .prop_map(|(plugin, server, tool)| format!("{plugin}/{server}.{tool}"))
}

/// Characters that stress the scheme: every separator, characters that map
/// to `_`, letters of both cases, digits, controls and bidi overrides.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(vec!['a', 'Z', '0', '7', '_', '_', '-', '.', '/', ':']),
        1 => prop::sample::select(vec![' ', 'é', 'É', '\0', '\n', '\u{202e}', '🦀', '\u{ff3f}']),
        1 => any::<char>(),
    ]
}

/// Any name at all, up to 300 characters: valid registry names, strings of
/// tricky characters, arbitrary unicode.
fn any_name() -> impl Strategy<Value = String> {
    prop_oneof![
        registry_name(),
        prop::collection::vec(tricky_char(), 0..300).prop_map(String::from_iter),
        prop::collection::vec(any::<char>(), 0..300).prop_map(String::from_iter),
        "[a-z_]{1,20}",
    ]
}

/// Names built to be confused with `name`: one character replaced by one
/// that maps to `_` (or by a separator), the case flipped, cut or padded
/// to exactly 63, 64 and 65 characters, separator runs inserted, and its
/// own wire names (which look like encoded names) offered as names.
fn variants(name: &str, at: usize) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let at = if chars.is_empty() {
        0
    } else {
        at % chars.len()
    };
    let mut out = vec![name.to_owned(), name.to_uppercase(), name.to_lowercase()];
    for c in ['_', ' ', 'é', '.', '/', '-', ':'] {
        let mut changed = chars.clone();
        if changed.is_empty() {
            changed.push(c);
        } else {
            changed[at] = c;
        }
        out.push(changed.into_iter().collect());
    }
    for len in [63, 64, 65] {
        out.push(chars.iter().copied().cycle().take(len).collect());
        out.push(format!("fs/ws.{}", "t".repeat(len.saturating_sub(6))));
        out.push(format!("fs/ws.{}", "t".repeat(len.saturating_sub(8))));
    }
    for run in ["__", "___", "_/", "/_", "./", "..", "//"] {
        let (head, tail) = chars.split_at(at);
        out.push(format!(
            "{}{run}{}",
            String::from_iter(head),
            String::from_iter(tail)
        ));
    }
    for rule in [WireRule::Strict, WireRule::Gemini, WireRule::Mcp] {
        let wire = rule.wire_name(name);
        out.push(wire.replacen(SEPARATOR, "/", 1));
        out.push(format!("{wire}{HASH_MARK}0"));
        out.push(wire);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every name of a request gets a valid wire name, decoding gives the
    /// name back, and no two names share a wire name.
    #[test]
    fn every_request_is_a_bijection_of_valid_names(
        rule in rule(),
        names in prop::collection::vec(any_name(), 0..40),
    ) {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let codec = WireCodec::new(rule, names.iter().copied());
        assert_bijection(&codec, &names);
    }

    /// A name's wire name is its own (`WireRule::wire_name`) whatever else
    /// is offered and in whatever order.
    #[test]
    fn wire_names_do_not_depend_on_the_other_names_or_their_order(
        rule in rule(),
        names in prop::collection::vec(any_name(), 1..40),
        keep in prop::collection::vec(any::<bool>(), 40),
        shuffle in any::<prop::sample::Index>(),
    ) {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let full = WireCodec::new(rule, names.iter().copied());
        let mut shuffled = names.clone();
        let turn = shuffle.index(shuffled.len());
        shuffled.rotate_left(turn);
        shuffled.reverse();
        let subset: Vec<&str> =
            names.iter().zip(&keep).filter(|(_, k)| **k).map(|(n, _)| *n).collect();
        let shuffled = WireCodec::new(rule, shuffled);
        let subset = WireCodec::new(rule, subset.iter().copied());
        for name in &names {
            let own = rule.wire_name(name);
            prop_assert_eq!(full.encode(name), Some(own.as_str()));
            prop_assert_eq!(shuffled.encode(name), Some(own.as_str()));
            if let Some(wire) = subset.encode(name) {
                prop_assert_eq!(wire, own.as_str());
            }
        }
    }

    /// A codec built from names whose own wire names are already known,
    /// in any order and with repeats, is the codec built from the names.
    #[test]
    fn a_codec_from_known_wire_names_is_the_codec_of_the_names(
        rule in rule(),
        names in prop::collection::vec(any_name(), 0..40),
        repeat in any::<prop::sample::Index>(),
    ) {
        let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
        if !names.is_empty() {
            names.push(names[repeat.index(names.len())]);
        }
        let pairs = names
            .iter()
            .map(|name| (Arc::from(*name), Arc::from(rule.wire_name(name))))
            .collect();
        let known = WireCodec::from_own_names(rule, pairs);
        let computed = WireCodec::new(rule, names.iter().copied());
        prop_assert!(known.iter().eq(computed.iter()));
        prop_assert_eq!(known.all_own(), computed.all_own());
        assert_bijection(&known, &names);
    }

    /// Names built to be confused with one another stay apart, valid and
    /// stable.
    #[test]
    fn adversarial_names_stay_apart(rule in rule(), name in any_name(), at in any::<usize>()) {
        let owned = variants(&name, at);
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        let codec = WireCodec::new(rule, names.iter().copied());
        assert_bijection(&codec, &names);
        for name in &names {
            let own = rule.wire_name(name);
            prop_assert_eq!(codec.encode(name), Some(own.as_str()));
        }
    }

    /// A name holding `/` (every registry name) always encodes to a name
    /// holding the separator, so it can never pass for a bare name such as
    /// an intrinsic's; a bare name valid for the rule and free of `__` is
    /// its own wire name.
    #[test]
    fn only_bare_names_keep_their_names(rule in rule(), name in any_name()) {
        let wire = rule.wire_name(&name);
        if name.contains('/') || name.contains(SEPARATOR) {
            prop_assert!(wire.contains(SEPARATOR), "{:?} -> {:?}", name, wire);
        } else if rule.check(&name) {
            prop_assert_eq!(wire, name);
        }
    }

    /// A wire name that was not offered is an error, never a guess.
    #[test]
    fn unoffered_wire_names_are_refused(
        rule in rule(),
        names in prop::collection::vec(registry_name(), 1..20),
        probe in any_name(),
    ) {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let codec = WireCodec::new(rule, names.iter().copied());
        let offered = codec.iter().any(|(_, wire)| wire == probe);
        prop_assert_eq!(codec.decode(&probe).is_ok(), offered);
        let flipped = rule.wire_name(&probe).to_uppercase();
        if !codec.iter().any(|(_, wire)| wire == flipped) {
            prop_assert!(codec.decode(&flipped).is_err());
        }
    }
}

/// A small, fast, deterministic generator (xorshift64*), so that a million
/// names cost little more than the codec itself.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn string(&mut self, alphabet: &[char], len: usize) -> String {
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len())])
            .collect()
    }
    /// A length up to 300, most often short (as names are, and so that the
    /// sha256 of a debug build does not dominate the test's time).
    fn len(&mut self) -> usize {
        if self.below(8) == 0 {
            self.below(301)
        } else {
            self.below(48)
        }
    }
    /// A registry name (half of them), a string of tricky characters, or
    /// arbitrary unicode, up to 300 characters.
    fn name(&mut self) -> String {
        const SEGMENT: &[char] = &['a', 'b', 'k', 'z', '0', '9', '_', '-'];
        const TOOL: &[char] = &['a', 'R', 'e', 'z', '0', '_', '.', '-'];
        const TRICKY: &[char] = &['a', 'Z', '0', '_', '-', '.', '/', ':', ' ', 'é', '🦀'];
        match self.below(4) {
            0 | 1 => {
                let (p, s, t) = (1 + self.below(12), 1 + self.below(16), 1 + self.below(40));
                format!(
                    "{}/{}.{}",
                    self.string(SEGMENT, p),
                    self.string(SEGMENT, s),
                    self.string(TOOL, t)
                )
            }
            2 => {
                let len = self.len();
                self.string(TRICKY, len)
            }
            _ => {
                let len = self.len();
                (0..len)
                    .map(|_| char::from_u32(self.below(0x11_0000) as u32).unwrap_or('\u{fffd}'))
                    .collect()
            }
        }
    }
}

/// A million random names, in a thousand requests of a thousand names
/// under each rule in turn: every property above, at scale.
#[test]
fn a_million_names_through_the_codec() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let rules = [WireRule::Strict, WireRule::Gemini, WireRule::Mcp];
    for request in 0..1000 {
        let rule = rules[request % rules.len()];
        let names: Vec<String> = (0..1000).map(|_| rng.name()).collect();
        let codec = WireCodec::new(rule, names.iter().map(String::as_str));
        let mut wires = std::collections::HashSet::with_capacity(names.len());
        for name in &names {
            let wire = codec.encode(name).unwrap();
            assert!(rule.check(wire), "{rule:?}: {wire:?}");
            assert_eq!(codec.decode(wire), Ok(name.as_str()));
            assert_eq!(wire, rule.wire_name(name), "{rule:?}: {name:?}");
            wires.insert(wire);
        }
        assert_eq!(wires.len(), codec.len());
    }
}
