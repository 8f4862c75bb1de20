//! The files of a skill: how a resource path is read (as the model or a
//! link writes it), whether a file is text, and its media type.
//!
//! Invariants: a path is normalized by string rules only to strip what a
//! link adds (`./`, `#fragment`) and to refuse what could never name a
//! resource (`..`, an absolute path, a hidden name, `SKILL.md`);
//! containment itself is cap-std's, by construction. A file is text when
//! it is UTF-8 without NUL bytes; nothing else is ever returned as text.

use std::io::{self, Read as _};

use cap_std::fs::{Dir, File, OpenOptions};

/// How many bytes of a file the listing reads to tell text from binary.
pub(super) const SNIFF: usize = 8 * 1024;

/// Why a resource path can name no resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BadPath {
    /// Empty once `./` and the fragment are gone.
    Empty,
    /// It climbs (`..`) or starts at `/`: it leads out of the skill.
    Escapes,
    /// It names the skill's own `SKILL.md`.
    SkillFile,
    /// A part of it is hidden (starts with a dot), or holds a NUL.
    Hidden,
}

/// The resource path a model or a link gives, as the host reads it: `#`
/// and what follows dropped, `./` and empty parts dropped.
pub(super) fn normalize(path: &str) -> Result<String, BadPath> {
    let path = path.split('#').next().unwrap_or_default();
    if path.starts_with('/') || path.split('/').any(|part| part == "..") {
        return Err(BadPath::Escapes);
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            _ if part.starts_with('.') || part.contains('\0') => return Err(BadPath::Hidden),
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(BadPath::Empty);
    }
    if parts == ["SKILL.md"] {
        return Err(BadPath::SkillFile);
    }
    Ok(parts.join("/"))
}

/// `%XX` escapes decoded, as a Markdown link writes a space (`%20`);
/// `None` when there are none, or they do not decode to UTF-8.
pub(super) fn percent_decoded(path: &str) -> Option<String> {
    if !path.contains('%') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|s| s != path)
}

/// How many entries of one directory the case-insensitive lookup reads.
const MAX_CASE_SCAN: usize = 4096;

/// `path` (normalized) under `dir` as a file system that ignores case
/// would find it: each part that does not exist as written is matched
/// against the directory's names ignoring ASCII case, and taken when
/// exactly one name matches. `None` when a part matches none, or more
/// than one. Skills written on such systems say `REFERENCE.md` of a file
/// named `reference.md`.
pub(super) fn case_insensitive(dir: &Dir, path: &str) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    for part in path.split('/') {
        let so_far = found.join("/");
        let here = if so_far.is_empty() {
            dir.open_dir(".").ok()?
        } else {
            dir.open_dir(&so_far).ok()?
        };
        if here.symlink_metadata(part).is_ok() {
            found.push(part.to_owned());
            continue;
        }
        let mut matches = here
            .entries()
            .ok()?
            .take(MAX_CASE_SCAN)
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.eq_ignore_ascii_case(part) && !name.starts_with('.'));
        let name = matches.next()?;
        if matches.next().is_some() {
            return None;
        }
        found.push(name);
    }
    Some(found.join("/"))
}

/// The hint a listing gives of where a resource is: its first directory,
/// or `root` for a file beside `SKILL.md`.
pub(crate) fn kind_of(path: &str) -> &str {
    match path.split_once('/') {
        Some((first, _)) => first,
        None => "root",
    }
}

/// Opens `path` under `dir` for reading, without blocking (a FIFO cannot
/// stall the host) and without taking a terminal.
pub(super) fn open(dir: &Dir, path: &str) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    dir.open_with(path, &options)
}

/// At most `max` bytes from the start of `file`.
pub(super) fn head(file: &File, max: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(max.min(SNIFF));
    file.take(max as u64).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether `bytes` are text: UTF-8 with no NUL. `whole` says whether they
/// are the whole file; if not, a character cut at the end is allowed.
pub(super) fn is_text(bytes: &[u8], whole: bool) -> bool {
    if bytes.contains(&0) {
        return false;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => !whole && e.error_len().is_none(),
    }
}

/// The media type of a file, from its name's extension or, failing that,
/// from the first bytes; else plain text or bytes.
pub(super) fn media_type(path: &str, head: &[u8], text: bool) -> &'static str {
    let extension = path
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    if let Some(known) = extension.as_deref().and_then(by_extension) {
        return known;
    }
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF8", "image/gif"),
        (b"%PDF-", "application/pdf"),
        (b"PK\x03\x04", "application/zip"),
        (b"wOFF", "font/woff"),
        (b"wOF2", "font/woff2"),
        (b"OTTO", "font/otf"),
        (b"\x00\x01\x00\x00", "font/ttf"),
        (b"\x1f\x8b", "application/gzip"),
    ];
    if let Some((_, kind)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
        return kind;
    }
    if text {
        "text/plain"
    } else {
        "application/octet-stream"
    }
}

fn by_extension(extension: &str) -> Option<&'static str> {
    Some(match extension {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" => "text/plain",
        "py" => "text/x-python",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "sh" | "bash" => "text/x-shellscript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "xml" | "xsd" | "xsl" => "application/xml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/vnd.microsoft.icon",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_links_path_is_read_as_the_skill_writes_it() {
        assert_eq!(normalize("./REFERENCE.md").unwrap(), "REFERENCE.md");
        assert_eq!(
            normalize("reference/mcp_best_practices.md#tools").unwrap(),
            "reference/mcp_best_practices.md"
        );
        assert_eq!(normalize("a//./b").unwrap(), "a/b");
        assert_eq!(normalize("../x"), Err(BadPath::Escapes));
        assert_eq!(normalize("a/../../x"), Err(BadPath::Escapes));
        assert_eq!(normalize("/etc/passwd"), Err(BadPath::Escapes));
        assert_eq!(normalize("./"), Err(BadPath::Empty));
        assert_eq!(normalize("#top"), Err(BadPath::Empty));
        assert_eq!(normalize("./SKILL.md"), Err(BadPath::SkillFile));
        assert_eq!(normalize(".git/config"), Err(BadPath::Hidden));
        assert_eq!(normalize("a\0b"), Err(BadPath::Hidden));
        assert_eq!(
            percent_decoded("my%20notes.md").as_deref(),
            Some("my notes.md")
        );
        assert_eq!(percent_decoded("plain.md"), None);
        assert_eq!(percent_decoded("100%.md"), None);
        assert_eq!(percent_decoded("%ff.md"), None, "not UTF-8");
    }

    #[test]
    fn text_and_binary_are_told_apart() {
        assert!(is_text(b"# Title\n", true));
        assert!(is_text(b"", true));
        assert!(!is_text(b"\x00\x01\x00\x00font", true));
        assert!(!is_text(b"caf\xc3", true), "a cut character ends no file");
        assert!(is_text(b"caf\xc3", false), "but may end a sample");
        assert!(!is_text(b"\xff\xfe", false));
        assert_eq!(media_type("canvas-fonts/a.ttf", b"", false), "font/ttf");
        assert_eq!(
            media_type("blob", b"\x89PNG\r\n\x1a\nrest", false),
            "image/png"
        );
        assert_eq!(media_type("NOTES", b"hello", true), "text/plain");
        assert_eq!(
            media_type("x.bin", b"\x01\x02", false),
            "application/octet-stream"
        );
        assert_eq!(kind_of("REFERENCE.md"), "root");
        assert_eq!(kind_of("reference/a/b.md"), "reference");
    }
}
