//! Words from text: how tool names, prose and queries become the terms
//! that the index holds and the rankers compare.
//!
//! Invariants:
//! - One set of rules for every side: a definition and a query go through
//!   the same functions, so a word always meets itself.
//! - Deterministic and independent of the locale: Unicode's
//!   `to_lowercase` and `is_alphanumeric`, ASCII suffix rules.
//! - Bounded: a word is at most [`MAX_TOKEN_BYTES`] bytes (the rest of a
//!   longer run of letters is dropped), no word is ever empty, and the
//!   caller stops a walk early by breaking out of its callback.
//!
//! The rules, in order:
//! 1. Text splits on every character that is not alphanumeric (so on `/`,
//!    `.`, `_`, `-` and whitespace), and inside a run of letters at a case
//!    change: `readFile` gives `read`, `file`; `HTTPServer` gives `http`,
//!    `server`; `v2Items` gives `v2`, `items`. Digits stay with the letters
//!    before them (`base64`, `s3`, `sha256`); a run of digits is a word.
//!    A run split at case changes also gives itself whole, after its
//!    parts: `readFile` gives `read`, `file`, `readfile`, and `GitHub`
//!    gives `git`, `hub`, `github`, so that a product written in one case
//!    meets the same product written in another (`MongoDB` and a server
//!    named `mongodb`, `BibTeX` and `bibtex`).
//! 2. Words are lowercased.
//! 3. English stop words ([`is_stop_word`]) are dropped, and so are the
//!    pieces an apostrophe leaves (`what's` gives no `s`, `don't` neither
//!    `don` nor `t`).
//! 4. A light stemmer ([`stem`]) folds plurals, `-ing` and `-ed`.

use std::ops::ControlFlow;

/// The longest word kept, in bytes: a longer run of letters keeps only its
/// first 64 bytes (whole characters), so one hostile "word" costs no more
/// than a short one.
pub const MAX_TOKEN_BYTES: usize = 64;

/// Each word of `text`, lowercased and split as the module says, in
/// order, without stop words and before stemming: `each` gets the word
/// and may change it (the buffer is reused). A run of alphanumerics split
/// at case changes gives its parts, then itself whole (when it fits in
/// [`MAX_TOKEN_BYTES`]). Stops when `each` breaks.
fn words(text: &str, mut each: impl FnMut(&mut String) -> ControlFlow<()>) -> ControlFlow<()> {
    let mut word = String::with_capacity(MAX_TOKEN_BYTES);
    // The current run whole, lowercased; how many parts it has given; and
    // whether it outgrew MAX_TOKEN_BYTES.
    let mut run = String::with_capacity(MAX_TOKEN_BYTES);
    let mut parts = 0usize;
    let mut long = false;
    let mut flush = |word: &mut String| {
        if word.is_empty() || is_stop_word(word) {
            word.clear();
            return ControlFlow::Continue(());
        }
        let flow = each(word);
        word.clear();
        flow
    };
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    loop {
        let next = chars.next();
        let Some(c) = next.filter(|c| c.is_alphanumeric()) else {
            // The end of a run: its last part, then itself whole.
            if !word.is_empty() {
                parts += 1;
            }
            flush(&mut word)?;
            if parts >= 2 && !long {
                std::mem::swap(&mut word, &mut run);
                flush(&mut word)?;
                std::mem::swap(&mut word, &mut run);
            }
            run.clear();
            (parts, long, prev) = (0, false, None);
            if next.is_none() {
                return ControlFlow::Continue(());
            }
            continue;
        };
        if let Some(p) = prev {
            let upper = c.is_uppercase();
            let boundary = upper
                && (p.is_lowercase()
                    || p.is_numeric()
                    || (p.is_uppercase() && chars.peek().is_some_and(|n| n.is_lowercase())));
            if boundary && !word.is_empty() {
                parts += 1;
                flush(&mut word)?;
            }
        }
        if c.is_ascii() {
            let lower = c.to_ascii_lowercase();
            if word.len() < MAX_TOKEN_BYTES {
                word.push(lower);
            }
            if run.len() < MAX_TOKEN_BYTES {
                run.push(lower);
            } else {
                long = true;
            }
        } else {
            for lower in c.to_lowercase() {
                if word.len() + lower.len_utf8() <= MAX_TOKEN_BYTES {
                    word.push(lower);
                }
                if run.len() + lower.len_utf8() <= MAX_TOKEN_BYTES {
                    run.push(lower);
                } else {
                    long = true;
                }
            }
        }
        prev = Some(c);
    }
}

/// Each term of `text` as `each(plain, stemmed)`: the word as split and
/// lowercased, and the same word stemmed. Stop words are left out. Stops
/// when `each` breaks, and says so.
pub(super) fn terms(
    text: &str,
    mut each: impl FnMut(&str, &str) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut stemmed = String::with_capacity(MAX_TOKEN_BYTES);
    words(text, |word| {
        stemmed.clear();
        stemmed.push_str(word);
        stem(&mut stemmed);
        each(word, &stemmed)
    })
}

/// Whether `word` (lowercased) is one of the English words too common to
/// tell tools apart: articles, pronouns, auxiliaries, prepositions and the
/// words of a question ("how do I", "please"), and the pieces an
/// apostrophe leaves of contractions and possessives (`s`, `t`, `re`,
/// `ve`, `ll`, `d`, `m`, `don`, `isn`, ...). Verbs that name what tools
/// do (`get`, `set`, `list`, `find`, `make`) are not stop words.
pub fn is_stop_word(word: &str) -> bool {
    is_contraction_piece(word)
        || matches!(
            word,
            "a" | "an"
                | "and"
                | "are"
                | "as"
                | "at"
                | "be"
                | "been"
                | "but"
                | "by"
                | "can"
                | "could"
                | "do"
                | "does"
                | "for"
                | "from"
                | "has"
                | "have"
                | "how"
                | "i"
                | "if"
                | "in"
                | "into"
                | "is"
                | "it"
                | "its"
                | "me"
                | "my"
                | "of"
                | "on"
                | "or"
                | "our"
                | "please"
                | "should"
                | "so"
                | "some"
                | "that"
                | "the"
                | "their"
                | "them"
                | "then"
                | "there"
                | "these"
                | "they"
                | "this"
                | "those"
                | "to"
                | "was"
                | "we"
                | "were"
                | "what"
                | "when"
                | "where"
                | "which"
                | "who"
                | "why"
                | "will"
                | "with"
                | "would"
                | "you"
                | "your"
        )
}

/// What is left of a contraction or a possessive once the apostrophe
/// splits it: `what's`, `don't`, `you're`, `I've`, `we'll`, `I'd`, `I'm`.
fn is_contraction_piece(word: &str) -> bool {
    matches!(
        word,
        "s" | "t"
            | "d"
            | "m"
            | "ll"
            | "re"
            | "ve"
            | "aren"
            | "couldn"
            | "didn"
            | "doesn"
            | "don"
            | "hadn"
            | "hasn"
            | "haven"
            | "isn"
            | "shouldn"
            | "wasn"
            | "weren"
            | "won"
            | "wouldn"
    )
}

/// Folds a lowercased word to its stem, in place. Light and
/// deterministic: three steps of suffix rules on ASCII endings, applied
/// to words of more than 3 bytes without digits.
///
/// 1. Plurals and third persons: `-ies` → `-y` (`queries` → `query`);
///    `-sses`, `-xes`, `-zes`, `-ches`, `-shes` lose `-es` (`boxes` →
///    `box`, `matches` → `match`); otherwise a final `s` goes unless the
///    word ends in `ss`, `us` or `is` (`files` → `file`, but `status`,
///    `class`, `analysis` stay).
/// 2. `-ied` → `-y` (`copied` → `copy`); `-ing` and `-ed` go when at least
///    3 bytes with a vowel (`aeiouy`) remain (`string` stays), and then a
///    doubled final consonant other than `l`, `s`, `z` is undoubled when
///    3 bytes still remain after it (`running` → `run`, `calling` →
///    `call`, `added` → `add`).
/// 3. A final `e` goes when more than 3 bytes remain, so that `create`,
///    `creates`, `created` and `creating` all give `creat`.
///
/// Stems are not words (`file` → `fil`); they only have to meet each
/// other. Known misses are accepted: `embed` and `embedded` differ, as do
/// `use` and `using`.
pub fn stem(word: &mut String) {
    if word.len() <= 3 || word.bytes().any(|b| b.is_ascii_digit()) {
        return;
    }
    // 1. Plurals and third persons.
    if word.len() > 4 && word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if ["sses", "xes", "zes", "ches", "shes"]
        .iter()
        .any(|s| word.ends_with(s))
    {
        word.truncate(word.len() - 2);
    } else if word.ends_with('s') && !["ss", "us", "is"].iter().any(|s| word.ends_with(s)) {
        word.pop();
    }
    // 2. -ied, -ing, -ed.
    if word.len() > 4 && word.ends_with("ied") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if let Some(cut) = ["ing", "ed"].iter().find_map(|s| {
        let base = word.strip_suffix(s)?;
        let vowel = base.bytes().any(|b| b"aeiouy".contains(&b));
        (base.len() >= 3 && vowel).then_some(base.len())
    }) {
        word.truncate(cut);
        let b = word.as_bytes();
        let n = b.len();
        let doubled = n >= 4
            && b[n - 1] == b[n - 2]
            && b[n - 1].is_ascii_lowercase()
            && !b"aeiouylsz".contains(&b[n - 1]);
        if doubled {
            word.pop();
        }
    }
    // 3. A final e.
    if word.len() > 3 && word.ends_with('e') {
        word.pop();
    }
}
