//! Untrusted text on a terminal: what the command line prints of strings a
//! plugin chose (error messages from `register` or `call`, tool
//! descriptions, a trapped plugin's quoted standard error, a rendered
//! result block).
//!
//! A terminal obeys what it is sent: an ANSI escape can recolour, move the
//! cursor or clear the screen, a carriage return or newline can overwrite a
//! line or forge a new one ("tiny-harness: error: ..."), and bidi overrides
//! and zero-width characters can make text read differently from what it
//! is. Guarantees:
//!
//! - [`one_line`] returns text with no control character (C0, DEL, C1) and
//!   none of the characters that reorder or hide text (U+061C,
//!   U+200B..U+200F, U+2028, U+2029, U+202A..U+202E, U+2060..U+2069,
//!   U+FEFF): each is replaced by a visible escape (`\n`, `\r`, `\t`,
//!   `\x1b`, `\u{9b}`, `\u{202e}`), so the text stays on one line and reads
//!   as what it is;
//! - [`block`] does the same but keeps `\n` and `\t`, for multi-line
//!   output;
//! - everything else (letters of any script, emoji, the backslash) is kept
//!   as it is, and text with nothing to escape is returned borrowed, without
//!   allocating.
//!
//! The escapes are for people reading a terminal and are not meant to be
//! reversible: a literal backslash is not doubled. Machines get the exact
//! text from `--json`.
//!
//! Escaping keeps a rendered block's boundary unforgeable: every escape
//! starts with a backslash, which no closing tag contains, so any closing
//! tag in the output was already in the input.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control, bidi and invisible formatting character
/// escaped, newlines and tabs included: safe to print as (part of) one line.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// The first `max_chars` characters of `text` through [`one_line`], with
/// ` …` after them when there were more: outside text (a server's error
/// body, a reference as typed) quoted on one line of bounded length. The
/// cut comes before the escapes, so it never splits one, and the result
/// holds at most `max_chars` escaped characters.
pub fn one_line_cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{} …", one_line(&text[..at])),
        None => one_line(text).into_owned(),
    }
}

/// `url` without userinfo, query or fragment, which may hold secrets. Text
/// that does not parse is shown only by its scheme.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            one_line(parsed.as_str()).into_owned()
        }
        Err(_) => {
            let scheme: String = url
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                .take(16)
                .collect();
            format!("{scheme}:… (not a URL)")
        }
    }
}

/// `text` with every control, bidi and invisible formatting character
/// escaped except `\n` and `\t`: safe to print as lines of their own.
pub fn block(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// Whether `c` reorders or hides text: the Arabic letter mark, zero-width
/// spaces and joiners, the left-to-right and right-to-left marks, the line
/// and paragraph separators (which some terminals and viewers break lines
/// at), the bidi embeddings, overrides and isolates, the word joiner and
/// invisible operators, and the byte order mark (a zero-width no-break
/// space).
fn reorders_or_hides(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// Whether `c` is escaped; `keep_layout` keeps `\n` and `\t`.
fn escaped(c: char, keep_layout: bool) -> bool {
    if keep_layout && matches!(c, '\n' | '\t') {
        return false;
    }
    // `is_control` is exactly the Cc category: C0, DEL and C1.
    c.is_control() || reorders_or_hides(c)
}

fn escape(text: &str, keep_layout: bool) -> Cow<'_, str> {
    let Some(first) = text.find(|c| escaped(c, keep_layout)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !escaped(c, keep_layout) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// `value` as pretty JSON that is safe on a terminal: besides the C0
/// controls serde_json escapes, every C1 control (U+0080..U+009F, a CSI
/// on some terminals) and every character that reorders or hides text is
/// written as a `\uXXXX` escape. The JSON means exactly the same.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(
        &mut out,
        Safe(serde_json::ser::PrettyFormatter::new()),
    );
    value.serialize(&mut serializer)?;
    // serde_json writes only UTF-8, and the escapes are ASCII.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// A formatter that escapes what [`json_pretty`] promises, delegating the
/// layout to `F`.
struct Safe<F>(F);

macro_rules! forward {
    ($($name:ident $(($arg:ident: $ty:ty))?),* $(,)?) => {
        $(
            fn $name<W: ?Sized + std::io::Write>(&mut self, writer: &mut W $(, $arg: $ty)?) -> std::io::Result<()> {
                self.0.$name(writer $(, $arg)?)
            }
        )*
    };
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for Safe<F> {
    forward!(
        begin_array,
        end_array,
        begin_array_value(first: bool),
        end_array_value,
        begin_object,
        end_object,
        begin_object_key(first: bool),
        end_object_key,
        begin_object_value,
        end_object_value,
    );

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| escaped(c, false)) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{:04x}", unit)?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (the algorithm
/// of Howard Hinnant's `civil_from_days`).
///
/// Written here because `std` has no calendar (`SystemTime` counts
/// seconds only) and none of the core's dependencies offers one; a date
/// crate would be a dependency of every crate above for these few lines.
/// The journal's timestamps and [`utc_minute`] share it.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Seconds since the epoch as a UTC date and minute,
/// `2026-12-02 03:04 UTC`, for people.
pub fn utc_minute(secs: u64) -> String {
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_minutes() {
        assert_eq!(super::utc_minute(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::utc_minute(1_796_180_640), "2026-12-02 03:04 UTC");
        assert_eq!(super::utc_minute(951_782_400), "2000-02-29 00:00 UTC");
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn json_escapes_c1_and_bidi_and_means_the_same() {
        let value = serde_json::json!({"d": "a\u{9b}31m\u{202e}b\u{2066}\u{feff}\u{1b}é日"});
        let text = json_pretty(&value).unwrap();
        assert!(
            text.contains(r"a\u009b31m\u202eb\u2066\ufeff\u001bé日"),
            "{text}"
        );
        assert!(!text.chars().any(|c| escaped(c, true)), "{text:?}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        assert_eq!(
            json_pretty(&serde_json::json!([1, {"a": []}])).unwrap(),
            serde_json::to_string_pretty(&serde_json::json!([1, {"a": []}])).unwrap()
        );
    }

    #[test]
    fn a_cut_line_is_bounded_and_escaped() {
        assert_eq!(one_line_cut("a\nb", 10), "a\\nb");
        assert_eq!(one_line_cut("abcdef", 3), "abc …");
        assert_eq!(one_line_cut("abc", 3), "abc");
        assert_eq!(one_line_cut("ééé\u{202e}x", 3), "ééé …");
        assert_eq!(one_line_cut("é\u{202e}x", 2), "é\\u{202e} …");
        let long = "\u{202e}".repeat(500);
        let line = one_line_cut(&long, 200);
        assert!(!line.contains('\u{202e}'));
        assert_eq!(line.matches("\\u{202e}").count(), 200);
        assert!(line.ends_with(" …"));
    }

    #[test]
    fn controls_become_visible_escapes() {
        assert_eq!(
            one_line("a\nb\rc\td\u{1b}[2J\u{0}\u{7f}"),
            "a\\nb\\rc\\td\\x1b[2J\\x00\\x7f"
        );
        assert_eq!(
            one_line("csi \u{9b}31m nel \u{85}"),
            "csi \\u{9b}31m nel \\u{85}"
        );
        assert_eq!(
            one_line("\u{202e}desrever\u{2066}\u{200b}\u{feff}\u{61c}\u{2028}"),
            "\\u{202e}desrever\\u{2066}\\u{200b}\\u{feff}\\u{61c}\\u{2028}"
        );
    }

    #[test]
    fn everything_else_is_kept() {
        let text = "Grüße, 世界 — naïve \\n C:\\path 🦀 \u{a0}\u{200a}";
        assert!(matches!(one_line(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(block(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn block_keeps_newlines_and_tabs_only() {
        assert_eq!(
            block("line 1\n\tline 2\r\nfake\u{1b}[1A\u{202e}"),
            "line 1\n\tline 2\\r\nfake\\x1b[1A\\u{202e}"
        );
        let plain = "a\nb\tc\n";
        assert!(matches!(block(plain), Cow::Borrowed(t) if t == plain));
        assert_eq!(one_line(plain), "a\\nb\\tc\\n");
    }

    /// Characters worth generating: anything, and (more often than chance)
    /// the controls and formatting characters that must be escaped and
    /// their neighbours that must not.
    fn interesting_char() -> impl Strategy<Value = char> {
        prop_oneof![
            any::<char>(),
            proptest::char::range('\0', '\u{a0}'),
            proptest::char::range('\u{2000}', '\u{2070}'),
            Just('\u{61c}'),
            Just('\u{feff}'),
            Just('\\'),
        ]
    }

    fn interesting_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(interesting_char(), 0..48).prop_map(String::from_iter)
    }

    proptest! {
        #[test]
        fn one_line_output_has_no_control_or_bidi_character(text in interesting_text()) {
            let out = one_line(&text);
            prop_assert!(
                !out.chars().any(|c| c.is_control() || reorders_or_hides(c)),
                "{out:?}"
            );
            // Text with nothing to escape comes back as it was, borrowed.
            if !text.chars().any(|c| escaped(c, false)) {
                prop_assert!(matches!(out, Cow::Borrowed(t) if t == text));
            }
        }

        #[test]
        fn block_output_has_only_newlines_and_tabs(text in interesting_text()) {
            let out = block(&text);
            prop_assert!(
                !out.chars().any(|c| escaped(c, true)),
                "{out:?}"
            );
            prop_assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        }

        #[test]
        fn printable_ascii_is_borrowed_unchanged(text in "[ -~]{0,64}") {
            let out = one_line(&text);
            prop_assert!(
                matches!(out, Cow::Borrowed(t) if std::ptr::eq(t, text.as_str())),
                "{out:?}"
            );
            prop_assert!(matches!(block(&text), Cow::Borrowed(_)));
        }
    }
}
