//! The single-file tools: `read_file`, `write_file` and `stat`.

use std::fs::{self, File, Metadata};
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::time::UNIX_EPOCH;

use serde::Deserialize;
use serde_json::{Value, json};
use tiny_harness_plugin::{Context, Json, Output, ToolError, tool};

use crate::{check_range, defs, io_failure, is_denial, resolve};

/// How many leading bytes are checked for a NUL to decide a file is binary.
pub const BINARY_PROBE: usize = 8 * 1024;

/// The most text `read_file` returns in one call.
const MAX_TEXT: usize = 256 * 1024;

/// Arguments of `read_file`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    path: String,
    #[serde(default = "one")]
    offset: u64,
    #[serde(default = "default_limit")]
    limit: u64,
}

/// The default `offset`.
fn one() -> u64 {
    1
}

/// The default `limit`.
fn default_limit() -> u64 {
    2_000
}

/// Arguments of `write_file`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    path: String,
    content: String,
    #[serde(default)]
    create_dirs: bool,
}

/// Arguments of `stat`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stat {
    path: String,
}

/// Whether a file's leading bytes say it is binary (they hold a NUL).
pub fn looks_binary(prefix: &[u8]) -> bool {
    prefix[..prefix.len().min(BINARY_PROBE)].contains(&0)
}

/// Reads up to [`BINARY_PROBE`] bytes from the start of `reader`.
pub fn read_prefix(reader: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(BINARY_PROBE);
    reader.take(BINARY_PROBE as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// The lines `read_file` selected from a file.
struct Selection {
    /// The selected bytes, line endings included.
    text: Vec<u8>,
    /// How many lines `text` holds (the last may be cut, see `cut`).
    lines: u64,
    /// How many lines the file has.
    total: u64,
    /// Whether the last selected line was cut at [`MAX_TEXT`], which
    /// happens only when a single line is longer than that.
    cut: bool,
    /// Whether selected lines were left out to keep within [`MAX_TEXT`].
    capped: bool,
}

/// Scans `reader` to its end, selecting up to `limit` lines from line
/// `offset` (1-based) and at most [`MAX_TEXT`] bytes, ending at a line
/// boundary unless the first selected line alone is too long.
fn select_lines(reader: &mut impl BufRead, offset: u64, limit: u64) -> io::Result<Selection> {
    let mut selection = Selection {
        text: Vec::new(),
        lines: 0,
        total: 0,
        cut: false,
        capped: false,
    };
    // The 1-based number of the line the next byte belongs to, and whether
    // that line has started (has any bytes yet).
    let mut line = 1u64;
    let mut started = false;
    // Where in `text` the line being copied began.
    let mut line_start = 0usize;
    // Whether lines are still being copied into `text`.
    let mut copying = true;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        let mut rest = chunk;
        while !rest.is_empty() {
            let (piece, ends_line) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            rest = &rest[piece.len()..];
            started = true;
            let wanted = line >= offset && line - offset < limit;
            if wanted && copying {
                if line_start == selection.text.len() {
                    selection.lines += 1;
                }
                selection.text.extend_from_slice(piece);
                if selection.text.len() > MAX_TEXT {
                    copying = false;
                    if selection.lines == 1 {
                        // One line longer than the cap: keep its first part.
                        selection.text.truncate(MAX_TEXT);
                        selection.cut = true;
                    } else {
                        selection.text.truncate(line_start);
                        selection.lines -= 1;
                        selection.capped = true;
                    }
                }
            }
            if ends_line {
                line += 1;
                started = false;
                line_start = selection.text.len();
            }
        }
        reader.consume(len);
    }
    selection.total = if started { line } else { line - 1 };
    Ok(selection)
}

/// Reads lines of a text file. Returns the selected lines exactly as in
/// the file, then JSON {path, first_line, last_line, total_lines,
/// truncated}; truncated means more lines follow (read them with a larger
/// offset). At most 256 KiB of text is returned per call. Binary files are
/// refused.
#[tool(
    read_only,
    idempotent,
    input_schema = defs::read_file_input,
    output_schema = defs::read_file_output
)]
pub fn read_file(cx: &Context, args: ReadFile) -> Result<Output, ToolError> {
    check_range("offset", args.offset, 1, u64::MAX)?;
    check_range("limit", args.limit, 1, 10_000)?;
    let path = resolve(cx, &args.path)?;
    let failed = |err: io::Error| io_failure("read", &path, err);
    let mut file = File::open(&path).map_err(failed)?;
    let prefix = read_prefix(&mut file).map_err(failed)?;
    if looks_binary(&prefix) {
        return Err(ToolError::Reported(format!(
            "{} looks binary; read_file returns text only",
            path.display()
        )));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(prefix).chain(file));
    let selection = select_lines(&mut reader, args.offset, args.limit).map_err(failed)?;
    let total = selection.total;
    // An empty file has no lines, but reading it from the start is fine.
    if args.offset > total && !(args.offset == 1 && total == 0) {
        return Err(ToolError::Reported(format!(
            "cannot read {} from line {}: the file has {total} line{}",
            path.display(),
            args.offset,
            if total == 1 { "" } else { "s" },
        )));
    }
    let last_line = args.offset + selection.lines - 1;
    let mut info = json!({
        "path": path.display().to_string(),
        "first_line": args.offset,
        "last_line": last_line,
        "total_lines": total,
        "truncated": last_line < total || selection.capped || selection.cut,
    });
    if selection.cut {
        info["last_line_cut"] = true.into();
    }
    let text = String::from_utf8_lossy(&selection.text).into_owned();
    Output::new().text(text).json(&info)
}

/// Writes a text file, creating it or replacing all of its content.
/// Returns a line of text, then JSON {path, bytes_written}.
#[tool(
    idempotent,
    destructive,
    input_schema = defs::write_file_input,
    output_schema = defs::write_file_output
)]
pub fn write_file(cx: &Context, args: WriteFile) -> Result<Output, ToolError> {
    let path = resolve(cx, &args.path)?;
    if args.create_dirs
        && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
    {
        fs::create_dir_all(parent).map_err(|err| io_failure("create directory", parent, err))?;
    }
    fs::write(&path, args.content.as_bytes()).map_err(|err| io_failure("write", &path, err))?;
    Output::new()
        .text(format!(
            "wrote {} bytes to {}",
            args.content.len(),
            path.display()
        ))
        .json(&json!({
            "path": path.display().to_string(),
            "bytes_written": args.content.len(),
        }))
}

/// The `type` the tools report for an entry.
pub fn kind(file_type: fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// Describes a file, directory or symlink (a symlink itself, not its
/// target). Returns JSON {path, type, size, modified, readonly}; modified
/// is in seconds since the Unix epoch, or null when unknown; readonly says
/// whether this tool set may not write the file (null for anything but a
/// regular file).
#[tool(
    read_only,
    idempotent,
    input_schema = defs::stat_input,
    output_schema = defs::stat_output
)]
pub fn stat(cx: &Context, args: Stat) -> Result<Json<Value>, ToolError> {
    let path = resolve(cx, &args.path)?;
    // A final symlink is described, not followed.
    let metadata: Metadata =
        fs::symlink_metadata(&path).map_err(|err| io_failure("stat", &path, err))?;
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map(|since| since.as_secs_f64());
    Ok(Json(json!({
        "path": path.display().to_string(),
        "type": kind(metadata.file_type()),
        "size": metadata.len(),
        "modified": modified,
        "readonly": readonly(&path, &metadata),
    })))
}

/// Whether this plugin cannot write the file at `path`, or `None` for
/// anything but a regular file.
///
/// WASI reports no permission bits (std's `Permissions::readonly` is always
/// true there), so for a regular file this asks the sandbox instead: it
/// opens the file for writing, without creating or truncating it, and
/// closes it again at once. Neither the content nor the modification time
/// changes. Directories and symlinks cannot be probed without a side
/// effect, so they get `None` (JSON `null`).
fn readonly(path: &Path, metadata: &Metadata) -> Option<bool> {
    if !metadata.is_file() {
        return None;
    }
    match fs::OpenOptions::new().write(true).open(path) {
        Ok(_) => Some(false),
        Err(err) if is_denial(&err) => Some(true),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(text: &str, offset: u64, limit: u64) -> (String, u64, u64) {
        let s = select_lines(&mut Cursor::new(text.as_bytes()), offset, limit).unwrap();
        (String::from_utf8(s.text).unwrap(), s.lines, s.total)
    }

    #[test]
    fn selects_lines_and_counts_all() {
        assert_eq!(select("a\nb\r\nc", 1, 2000), ("a\nb\r\nc".into(), 3, 3));
        assert_eq!(select("a\nb\nc\n", 2, 1), ("b\n".into(), 1, 3));
        assert_eq!(select("a\nb\nc\n", 3, 5), ("c\n".into(), 1, 3));
        assert_eq!(select("", 1, 5), (String::new(), 0, 0));
        assert_eq!(select("\n\n", 2, 5), ("\n".into(), 1, 2));
    }

    #[test]
    fn caps_text_at_a_line_boundary() {
        let line = "x".repeat(1000) + "\n";
        let text = line.repeat(300);
        let s = select_lines(&mut Cursor::new(text.as_bytes()), 1, 10_000).unwrap();
        assert_eq!(s.lines, (MAX_TEXT / line.len()) as u64);
        assert_eq!(s.text.len(), s.lines as usize * line.len());
        assert!(s.capped && !s.cut);
        assert_eq!(s.total, 300);
    }

    #[test]
    fn cuts_a_single_overlong_line() {
        let text = "y".repeat(MAX_TEXT + 10) + "\nz\n";
        let s = select_lines(&mut Cursor::new(text.as_bytes()), 1, 10).unwrap();
        assert_eq!(
            (s.lines, s.text.len(), s.cut, s.total),
            (1, MAX_TEXT, true, 2)
        );
    }
}
