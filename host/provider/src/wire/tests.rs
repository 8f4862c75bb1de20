//! Examples, the exact-decoding rule and forced clashes. The properties
//! over random names are in `tests/props.rs`.

mod props;

use super::*;

const RULES: [WireRule; 3] = [WireRule::Strict, WireRule::Gemini, WireRule::Mcp];

/// Checks that `codec` is a bijection of valid wire names over `names`.
pub(super) fn assert_bijection(codec: &WireCodec, names: &[&str]) {
    let rule = codec.rule();
    let mut wires = std::collections::HashSet::new();
    for name in names {
        let wire = codec.encode(name).expect("every offered name encodes");
        assert!(
            rule.check(wire),
            "{rule:?}: {wire:?} (of {name:?}) is invalid"
        );
        assert_eq!(codec.decode(wire), Ok(*name), "{rule:?}: {wire:?}");
        wires.insert(wire);
    }
    assert_eq!(
        wires.len(),
        codec.len(),
        "{rule:?}: two names share a wire name"
    );
}

#[test]
fn examples_for_each_rule() {
    // (name, Strict, Gemini, MCP)
    let examples = [
        ("create_plan", "create_plan", "create_plan", "create_plan"),
        (
            "fs/workspace.read_file",
            "fs__workspace__read_file",
            "fs__workspace.read_file",
            "fs__workspace.read_file",
        ),
        (
            "fs/ws.v1.get",
            "fs__ws__v1__get",
            "fs__ws.v1.get",
            "fs__ws.v1.get",
        ),
        (
            "fs/ws._get",
            "fs__ws__get___c4rdf6cadk",
            "fs__ws._get",
            "fs__ws._get",
        ),
        (
            "1p/vault.get",
            "1p__vault__get",
            "_1p__vault.get___2pmdcnoume",
            "1p__vault.get",
        ),
        (
            "fs/ws.café",
            "fs__ws__caf___3du2axkplc",
            "fs__ws.caf___3du2axkplc",
            "fs__ws.caf___3du2axkplc",
        ),
        ("", "___4oymiquy7q", "___4oymiquy7q", "___4oymiquy7q"),
        (
            "create__plan",
            "create__plan___3tirtg4pbv",
            "create__plan___3tirtg4pbv",
            "create__plan___3tirtg4pbv",
        ),
        ("a:b", "a_b___", "a:b", "a_b___"),
    ];
    for (name, strict, gemini, mcp) in examples {
        for (rule, want) in RULES.into_iter().zip([strict, gemini, mcp]) {
            let got = rule.wire_name(name);
            if want.ends_with(HASH_MARK) {
                // The hash itself is pinned by the other examples.
                assert!(got.starts_with(want), "{rule:?} {name:?}: {got}");
                assert_eq!(got.len(), want.len() + HASH_LEN, "{rule:?} {name:?}: {got}");
            } else {
                assert_eq!(got, want, "{rule:?} {name:?}");
            }
            let codec = WireCodec::new(rule, [name]);
            assert_eq!(codec.encode(name), Some(got.as_str()));
        }
    }
}

#[test]
fn rules_check_alphabet_length_and_first_character() {
    let strict = WireRule::openai();
    assert_eq!(
        [
            WireRule::anthropic(),
            WireRule::mistral(),
            WireRule::bedrock()
        ],
        [strict; 3]
    );
    assert!(strict.check("a") && strict.check("-_Az09") && strict.check(&"a".repeat(64)));
    for bad in ["", "a.b", "a:b", "a/b", "a b", "é", &"a".repeat(65)] {
        assert!(!strict.check(bad), "{bad:?}");
    }
    let gemini = WireRule::gemini();
    assert!(gemini.check("a.b:c-d_e") && gemini.check("_1") && gemini.check(&"a".repeat(64)));
    for bad in ["", "1a", "-a", ".a", ":a", "a/b", &"a".repeat(65)] {
        assert!(!gemini.check(bad), "{bad:?}");
    }
    let mcp = WireRule::mcp();
    assert!(mcp.check("1.a-b_c") && mcp.check(".") && mcp.check(&"a".repeat(128)));
    for bad in ["", "a:b", "a/b", &"a".repeat(129)] {
        assert!(!mcp.check(bad), "{bad:?}");
    }
}

#[test]
fn no_registry_name_encodes_to_a_bare_name() {
    // Registry names built to come out as `create_plan`, or as any other
    // name that would be its own wire name.
    let names = [
        "create_plan",
        "create/plan",
        "create/_plan",
        "create_/plan",
        "create/plan.x",
        "create__plan",
        "create___plan",
        "create.plan",
        "create/plan___3tirtg4pbv",
        "/create_plan",
        "create_plan/",
    ];
    for rule in RULES {
        let codec = WireCodec::new(rule, names);
        assert_bijection(&codec, &names);
        assert_eq!(codec.encode("create_plan"), Some("create_plan"));
        for (name, wire) in codec.iter() {
            if name.contains('/') || name.contains(SEPARATOR) {
                assert!(wire.contains(SEPARATOR), "{rule:?} {name:?} -> {wire:?}");
            } else if rule.check(name) {
                assert_eq!(wire, name, "{rule:?}");
            }
        }
    }
}

#[test]
fn decoding_is_exact_and_never_a_guess() {
    let codec = WireCodec::new(WireRule::Strict, ["fs/workspace.read_file", "create_plan"]);
    assert_eq!(
        codec.decode("fs__workspace__read_file"),
        Ok("fs/workspace.read_file")
    );
    for probe in [
        "fs/workspace.read_file",
        "FS__workspace__read_file",
        "fs__workspace__read_file ",
        "fs__workspace__read",
        "fs__workspace__read_file___abc",
        "fs__workspace__write_file",
        "Create_plan",
        "",
    ] {
        let err = codec.decode(probe).unwrap_err();
        assert_eq!(err.name(), probe);
        assert!(!err.truncated());
    }
    assert_eq!(codec.encode("fs/workspace.write_file"), None);
    assert_eq!(codec.encode("fs__workspace__read_file"), None);

    let long = format!("\u{202e}evil\nline{}", "é".repeat(300));
    let err = codec.decode(&long).unwrap_err();
    assert!(err.truncated() && err.name().len() <= UnknownWireName::MAX_KEPT);
    assert!(long.starts_with(err.name()));
    // The limit falls inside a character: the cut is before it.
    let odd = format!("a{}", "é".repeat(300));
    let cut = codec.decode(&odd).unwrap_err();
    assert_eq!(cut.name().len(), UnknownWireName::MAX_KEPT - 1);
    assert_eq!(UnknownWireName::kept(&odd), cut.name());
    assert_eq!(UnknownWireName::kept("short"), "short");
    let shown = err.to_string();
    assert!(
        !shown.contains('\n') && !shown.contains('\u{202e}'),
        "{shown}"
    );
}

#[test]
fn names_of_exactly_the_limit() {
    // A mapped name of exactly 64 characters stays mapped; one more and
    // it is hashed, still within 64 and readable.
    let tool = "t".repeat(64 - "fs__ws__".len());
    let name = format!("fs/ws.{tool}");
    assert_eq!(WireRule::Strict.wire_name(&name), format!("fs__ws__{tool}"));
    let longer = format!("{name}x");
    let wire = WireRule::Strict.wire_name(&longer);
    assert_eq!(wire.len(), 64);
    assert!(
        wire.starts_with("fs__ws__ttt") && wire.contains(HASH_MARK),
        "{wire}"
    );
    // Bare names likewise.
    let bare = "b".repeat(64);
    assert_eq!(WireRule::Gemini.wire_name(&bare), bare);
    let wire = WireRule::Gemini.wire_name(&format!("{bare}b"));
    assert_eq!(wire.len(), 64);
    assert!(
        wire.starts_with("bbb") && wire.contains(HASH_MARK),
        "{wire}"
    );
    let bare = "b".repeat(128);
    assert_eq!(WireRule::Mcp.wire_name(&bare), bare);
}

#[test]
fn a_hash_is_of_the_full_name() {
    let stem = format!("fs/ws.{}", "a".repeat(200));
    let names = [format!("{stem}x"), format!("{stem}y"), stem.clone()];
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for rule in RULES {
        let codec = WireCodec::new(rule, names.iter().copied());
        assert_bijection(&codec, &names);
        for name in &names {
            let wire = codec.encode(name).unwrap();
            assert_eq!(wire.len(), rule.max_len());
            assert!(wire.starts_with("fs__ws"), "{wire}");
        }
    }
}

#[test]
fn repeats_and_order_do_not_matter() {
    let names = ["b/s.t", "a/s.t", "café", "b/s.t", "create_plan"];
    let codec = WireCodec::new(WireRule::Strict, names);
    assert_eq!(codec.len(), 4);
    let mut reversed = names;
    reversed.reverse();
    let other = WireCodec::new(WireRule::Strict, reversed);
    assert!(codec.iter().eq(other.iter()));
    let order: Vec<&str> = codec.iter().map(|(name, _)| name).collect();
    assert_eq!(order, ["a/s.t", "b/s.t", "café", "create_plan"]);
    assert!(WireCodec::new(WireRule::Mcp, []).is_empty());
}

/// Names that all share the prefix `fs__ws__x` and so clash whenever their
/// hashes do.
fn same_prefix(count: u32) -> Vec<String> {
    (0..count)
        .map(|i| format!("fs/ws.x{}", char::from_u32(0x100 + i).unwrap()))
        .collect()
}

#[test]
fn forced_clashes_move_on_deterministically() {
    // One and then two base32 characters of hash (32 and 1,024 values) for
    // 300 names of the same prefix: many clash at both lengths, so some
    // reach the fallback form.
    let lens = HashLens::new(1, 2);
    let owned = same_prefix(300);
    let mut names: Vec<&str> = owned.iter().map(String::as_str).collect();
    names.extend(["fs/workspace.read_file", "create_plan"]);
    for rule in RULES {
        let codec = WireCodec::with_lens(rule, names.iter().copied(), lens);
        assert_bijection(&codec, &names);
        assert_eq!(codec.encode("create_plan"), Some("create_plan"));
        let level0 = |name: &str| form::form(rule, name, 0, lens, 0);
        let (mut kept, mut longer, mut fallback) = (0, 0, 0);
        for (name, wire) in codec.iter() {
            let alone = level0(name);
            let clashes_at_0 = names.iter().filter(|n| level0(n) == alone).count() > 1;
            if wire.contains(&format!("{HASH_MARK}0")) {
                fallback += 1;
            } else if wire != alone {
                longer += 1;
            } else {
                kept += 1;
            }
            // A name keeps its own wire name exactly when it does not clash.
            assert_eq!(wire == alone, !clashes_at_0, "{rule:?} {name:?} -> {wire}");
        }
        assert!(
            kept > 0 && longer > 0 && fallback > 0,
            "{kept} {longer} {fallback}"
        );

        // The same set in another order gives the same codec.
        let mut shuffled = names.clone();
        shuffled.reverse();
        shuffled.rotate_left(7);
        let again = WireCodec::with_lens(rule, shuffled, lens);
        assert!(codec.iter().eq(again.iter()), "{rule:?}");
    }
}

#[test]
fn a_clashing_pair_leaves_the_others_alone() {
    // Find two names whose 2-character hashes agree (10 bits: a few dozen
    // tries), then offer them with others, and without each other.
    let lens = HashLens::new(2, 4);
    let rule = WireRule::Strict;
    let owned = same_prefix(2000);
    let mut seen = HashMap::new();
    let (a, b) = owned
        .iter()
        .find_map(|name| {
            let wire = form::form(rule, name, 0, lens, 0);
            seen.insert(wire, name.as_str())
                .map(|other| (other, name.as_str()))
        })
        .expect("a clash among 2,000 names of 10 bits");
    let others = ["fs/workspace.read_file", "create_plan", "fs/ws.bad name"];
    let mut names = vec![a, b];
    names.extend(others);
    let codec = WireCodec::with_lens(rule, names.iter().copied(), lens);
    assert_bijection(&codec, &names);
    for name in others {
        assert_eq!(
            codec.encode(name).unwrap(),
            form::form(rule, name, 0, lens, 0)
        );
    }
    for name in [a, b] {
        let wire = codec.encode(name).unwrap();
        assert_eq!(
            wire,
            form::form(rule, name, 1, lens, 0),
            "4 characters of hash"
        );
        let alone = WireCodec::with_lens(rule, [name, others[0]], lens);
        assert_eq!(
            alone.encode(name).unwrap(),
            form::form(rule, name, 0, lens, 0)
        );
    }
}

#[test]
fn a_codec_says_whether_a_clash_gave_a_name_another_wire_name() {
    let names = same_prefix(40);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for rule in [WireRule::Strict, WireRule::Gemini, WireRule::Mcp] {
        let codec = WireCodec::new(rule, names.iter().copied());
        assert!(codec.all_own(), "{rule:?}");
        // 40 names of one prefix and 32 one-character hashes: some clash.
        let forced = WireCodec::with_lens(rule, names.iter().copied(), HashLens::new(1, 2));
        assert!(!forced.all_own(), "{rule:?}");
        let alone = WireCodec::with_lens(rule, names[..1].iter().copied(), HashLens::new(1, 2));
        assert!(alone.all_own(), "{rule:?}");
    }
}
