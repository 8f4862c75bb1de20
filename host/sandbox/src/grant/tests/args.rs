//! Exec grants' argument patterns: each argument matched in full, the
//! patterns bounded.

use std::path::Path;

use super::super::*;

fn with_args(patterns: &[&str]) -> ExecGrant {
    let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
    ExecGrant::resolve("/bin/sh", Path::new("/"), None)
        .unwrap()
        .with_args(ArgPatterns::new(&patterns).unwrap())
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn without_patterns_any_arguments_are_allowed() {
    let grant = ExecGrant::resolve("/bin/sh", Path::new("/"), None).unwrap();
    assert!(grant.args().is_none());
    grant
        .check_args(&args(&["-c", "anything; at all"]))
        .unwrap();
}

#[test]
fn every_argument_must_match_a_pattern_in_full() {
    let grant = with_args(&["status", "log", "--oneline", "-n[0-9]{1,3}"]);
    grant
        .check_args(&args(&["log", "--oneline", "-n20"]))
        .unwrap();
    grant.check_args(&[]).unwrap();
    // Anchored: a pattern never matches part of an argument.
    let err = grant
        .check_args(&args(&["log", "-n20; rm -rf /"]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "argument 2 \"-n20; rm -rf /\" of program \"/bin/sh\" matches none of its grant's args patterns [\"status\", \"log\", \"--oneline\", \"-n[0-9]{1,3}\"]: call it with allowed arguments, or add a pattern to exec = [{ program = \"/bin/sh\", args = [...] }]"
    );
    assert!(grant.check_args(&args(&["statusx"])).is_err());
    assert!(grant.check_args(&args(&["xstatus"])).is_err());
    // An alternation in a pattern stays inside its anchors.
    let grant = with_args(&["a|b"]);
    grant.check_args(&args(&["a", "b"])).unwrap();
    assert!(grant.check_args(&args(&["ab"])).is_err());
    assert!(grant.check_args(&args(&["a\nb"])).is_err());
    // A pattern cannot close the group it is put in.
    let err = ArgPatterns::new(&["a)|(b".to_owned()])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("argument pattern \"a)|(b\" does not compile"),
        "{err}"
    );
}

#[test]
fn a_pattern_that_does_not_compile_is_one_readable_line() {
    // What is wrong and where, not regex's drawing of the pattern with its
    // newlines escaped.
    let err = ArgPatterns::new(&["-n(unclosed".to_owned()])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "argument pattern \"-n(unclosed\" does not compile: unclosed group at character 3"
    );
    let err = ArgPatterns::new(&["[z-a]".to_owned()])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "argument pattern \"[z-a]\" does not compile: invalid character class range, the start must be <= the end at character 2"
    );
    for err in [
        err,
        ArgPatterns::new(&["\\p{Nope}".to_owned()])
            .unwrap_err()
            .to_string(),
    ] {
        assert!(!err.contains('\n') && !err.contains("\\n"), "{err}");
        assert!(err.contains(" at character "), "{err}");
    }
    // Typed: an embedder tells a bad pattern from too many without
    // reading the line.
    assert!(matches!(
        ArgPatterns::new(&["(".to_owned()]),
        Err(crate::grant::GrantError::Pattern { pattern, .. }) if pattern == "("
    ));
    let many = vec!["a".to_owned(); ArgPatterns::MAX_PATTERNS + 1];
    assert!(matches!(
        ArgPatterns::new(&many),
        Err(crate::grant::GrantError::TooManyPatterns { count, max: ArgPatterns::MAX_PATTERNS })
            if count == ArgPatterns::MAX_PATTERNS + 1
    ));
}

#[test]
fn an_empty_pattern_list_allows_no_arguments() {
    let grant = with_args(&[]);
    grant.check_args(&[]).unwrap();
    assert!(grant.check_args(&args(&[""])).is_err());
}

#[test]
fn patterns_are_bounded_in_number_and_size() {
    let many: Vec<String> = (0..=ArgPatterns::MAX_PATTERNS)
        .map(|i| i.to_string())
        .collect();
    assert!(
        ArgPatterns::new(&many)
            .unwrap_err()
            .to_string()
            .contains("at most 256")
    );
    let huge = ArgPatterns::new(&["\\w{1000}{1000}".to_owned()])
        .unwrap_err()
        .to_string();
    assert!(
        huge.starts_with("argument pattern \"\\\\w{1000}{1000}\" does not compile: "),
        "{huge}"
    );
    assert!(!huge.contains('\n'), "{huge}");
}
