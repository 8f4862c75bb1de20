//! Running a cases file: the plugin built (when the file says how),
//! loaded with its grants and script, each case called and compared, and
//! the report of what differed.
//!
//! Invariants:
//! - A case fails on every expectation it states that does not hold, each
//!   told with what was expected and what came back; a case that expects
//!   no `error` fails when the call has none to give (no result), and when
//!   the result is marked an error without `is_error = true`.
//! - What a case says about programs (`ran`) and requests (`fetched`) is
//!   compared with what that case asked for, in order, and nothing else.
//! - Files a case expects are read from the granted directory at most
//!   [`MAX_FILE_BYTES`]; a temporary directory lives as long as the run.

use std::fmt;
use std::os::fd::AsFd;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use tiny_harness_host::{ContentPart, DirMode};

use super::{Cases, CasesError, RawCase, RawMode};
use crate::script::Dialect;
use crate::{Page, PluginTest, Program, Running};

/// The most bytes of a file a case's `files` compares.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// What one run of a cases file came to.
#[derive(Debug, Clone)]
pub struct Report {
    /// The cases file.
    pub file: PathBuf,
    /// Each case, in order (the registered tools first, when the file
    /// names them).
    pub cases: Vec<CaseReport>,
}

/// What one case came to.
#[derive(Debug, Clone)]
pub struct CaseReport {
    /// The case's name (or `case N: TOOL` when it has none).
    pub name: String,
    /// The call as made: the tool's full name and its arguments.
    pub call: String,
    /// What did not hold; empty when the case passed.
    pub mismatches: Vec<Mismatch>,
}

/// One expectation that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Which (`json`, `text`, `error`, `ran`...).
    pub what: String,
    /// What the case expected.
    pub expected: String,
    /// What came back.
    pub got: String,
}

impl Report {
    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(CaseReport::passed)
    }

    /// The cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| !c.passed())
    }
}

impl CaseReport {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
    }
}

impl fmt::Display for CaseReport {
    /// `ok   NAME`, or `FAIL NAME` with the call and, for each mismatch,
    /// what was expected and what came back, each on its own line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            return write!(f, "ok   {}", self.name);
        }
        write!(f, "FAIL {}\n  call:      {}", self.name, self.call)?;
        for m in &self.mismatches {
            write!(
                f,
                "\n  {}:\n    expected:  {}\n    came back: {}",
                m.what, m.expected, m.got
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    /// Every case's line, then `N passed, M failed (FILE)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for case in &self.cases {
            writeln!(f, "{case}")?;
        }
        let failed = self.failures().count();
        write!(
            f,
            "{} passed, {failed} failed ({})",
            self.cases.len() - failed,
            self.file.display()
        )
    }
}

/// `case N: TOOL`, or the case's own name.
pub(super) fn case_name(index: usize, case: &RawCase) -> String {
    case.name
        .clone()
        .unwrap_or_else(|| format!("case {}: {}", index + 1, case.tool))
}

/// Compact JSON, for a report line.
fn shown(value: &Value) -> String {
    value.to_string()
}

impl Cases {
    /// Builds the plugin (when the file says how), loads it with the
    /// file's grants and script, and runs every case in order.
    pub async fn run(&self) -> Result<Report, CasesError> {
        let component = self.component()?;
        let plugin = &self.raw.plugin;
        let name = plugin.name.clone().unwrap_or_else(|| "plugin".to_owned());
        let mut test = PluginTest::new(component).name(&name);
        test.script.dialect = Dialect::Cases;
        if let Some(config) = &plugin.config {
            test = test.config(config.clone());
        }
        for entry in &plugin.grants.exec {
            test = test.grant_program(entry.program());
        }
        for pattern in &plugin.grants.net {
            test = test.grant_net(pattern);
        }
        // Temporary directories live until the run ends.
        let mut temps = Vec::new();
        let mut dirs = Vec::new();
        for dir in &plugin.grants.dirs {
            let mode = match dir.mode {
                RawMode::ReadOnly => DirMode::ReadOnly,
                RawMode::ReadWrite => DirMode::ReadWrite,
            };
            let host = match &dir.host {
                Some(host) => {
                    if !dir.files.is_empty() {
                        return Err(self.invalid(format!(
                            "plugin.grants.dirs: {:?}: files fill a temporary directory; drop host, or put the files in {host}",
                            dir.guest
                        )));
                    }
                    self.base.join(host)
                }
                None => {
                    let temp = tempfile::tempdir().map_err(|e| {
                        self.invalid(format!("cannot make a temporary directory: {e}"))
                    })?;
                    self.fill(temp.path(), &dir.guest, &dir.files)?;
                    let path = temp.path().to_owned();
                    temps.push(temp);
                    path
                }
            };
            dirs.push((dir.guest.clone(), host.clone()));
            test = test.grant_dir(host, &dir.guest, mode);
        }
        for p in &self.raw.programs {
            let mut program = Program::new(&p.program)
                .stdout(p.stdout.as_bytes())
                .stderr(p.stderr.as_bytes());
            if let Some(args) = &p.args {
                program = program.args(args);
            }
            if let Some(code) = p.exit {
                program = program.exit(code);
            }
            if let Some(signal) = p.signal {
                program = program.signal(signal);
            }
            if p.times_out {
                program = program.times_out();
            }
            if let Some(message) = &p.fails {
                program = program.fails(message);
            }
            test = test.program(program);
        }
        for p in &self.raw.pages {
            let mut page = Page::new(&p.url);
            if let Some(method) = &p.method {
                page = page.method(method);
            }
            if let Some(status) = p.status {
                page = page.status(status);
            }
            if let Some(json) = &p.json {
                page = page.json(json);
            }
            for (name, value) in &p.headers {
                page = page.header(name, value);
            }
            if let Some(body) = &p.body {
                page = page.body(body.as_bytes());
            }
            if let Some(message) = &p.fails {
                page = page.fails(message);
            }
            test = test.page(page);
        }
        let running = test.start().await.map_err(|reason| CasesError::Start {
            file: self.file.clone(),
            reason,
        })?;
        let mut cases = Vec::new();
        if let Some(tools) = &plugin.tools {
            let got = running.tools();
            let mismatches = if *tools == got {
                Vec::new()
            } else {
                vec![Mismatch {
                    what: "tools".to_owned(),
                    expected: shown(&Value::from(tools.clone())),
                    got: shown(&Value::from(got)),
                }]
            };
            cases.push(CaseReport {
                name: "the tools it registers".to_owned(),
                call: format!("register (plugin {name})"),
                mismatches,
            });
        }
        for (i, case) in self.raw.cases.iter().enumerate() {
            cases.push(run_case(&running, &name, &dirs, i, case).await);
        }
        drop(temps);
        Ok(Report {
            file: self.file.clone(),
            cases,
        })
    }

    /// The component to load: built first when the file says how.
    fn component(&self) -> Result<PathBuf, CasesError> {
        let plugin = &self.raw.plugin;
        if let Some(dir) = &plugin.krate {
            return crate::build(&self.base.join(dir), None).map_err(|reason| CasesError::Crate {
                file: self.file.clone(),
                reason,
            });
        }
        if let Some(argv) = &plugin.build {
            let shown = argv.join(" ");
            let failed = |reason: String| CasesError::Build {
                file: self.file.clone(),
                command: shown.clone(),
                reason,
            };
            // A program named by a relative path is the file's.
            let program = if argv[0].contains('/') {
                self.base.join(&argv[0])
            } else {
                PathBuf::from(&argv[0])
            };
            // Its output goes with the build's diagnostics, not the report.
            let stdout = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_or_else(|_| Stdio::null(), Stdio::from);
            let status = Command::new(&program)
                .args(&argv[1..])
                .current_dir(&self.base)
                .stdin(Stdio::null())
                .stdout(stdout)
                .status()
                .map_err(|e| failed(format!("cannot run: {e}")))?;
            if !status.success() {
                return Err(failed(format!(
                    "failed ({status}): its messages are above; fix what they say and run again"
                )));
            }
        }
        // Checked at load: one of crate and path is given.
        let path = plugin.path.as_deref().unwrap_or_default();
        Ok(if path.starts_with("builtin:") {
            PathBuf::from(path)
        } else {
            self.base.join(path)
        })
    }

    /// Writes `files` into the temporary directory `dir` granted at
    /// `guest`.
    fn fill(
        &self,
        dir: &Path,
        guest: &str,
        files: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), CasesError> {
        for (name, contents) in files {
            let relative = Path::new(name);
            if !relative
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(self.invalid(format!(
                    "plugin.grants.dirs: {guest:?}: file {name:?}: give a path inside the directory, such as \"notes/a.txt\""
                )));
            }
            let path = dir.join(relative);
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, contents));
            written.map_err(|e| {
                self.invalid(format!(
                    "plugin.grants.dirs: {guest:?}: cannot write {name:?}: {e}"
                ))
            })?;
        }
        Ok(())
    }

    fn invalid(&self, message: String) -> CasesError {
        CasesError::Invalid {
            file: self.file.clone(),
            location: None,
            message,
        }
    }
}

/// Calls one case and compares what came back with what it expects.
async fn run_case(
    running: &Running,
    plugin: &str,
    dirs: &[(String, PathBuf)],
    index: usize,
    case: &RawCase,
) -> CaseReport {
    let full = if case.tool.contains('/') {
        case.tool.clone()
    } else {
        format!("{plugin}/{}", case.tool)
    };
    let ran_before = running.ran().len();
    let fetched_before = running.fetched().len();
    let outcome = running.call(&case.tool, case.arguments.clone()).await;
    let mut mismatches = Vec::new();
    let mut differ = |what: &str, expected: String, got: String| {
        mismatches.push(Mismatch {
            what: what.to_owned(),
            expected,
            got,
        });
    };
    match (outcome.result(), &case.error) {
        (Err(error), Some(code)) => {
            if error.code() != code {
                differ(
                    "error",
                    code.clone(),
                    format!("{} error: {error}", error.code()),
                );
            } else if let Some(message) = &case.message
                && !error.to_string().contains(message.as_str())
            {
                differ(
                    "message",
                    format!("a message holding {message:?}"),
                    error.to_string(),
                );
            }
        }
        (Ok(result), Some(code)) => differ(
            "error",
            code.clone(),
            format!("a result: {:?}", seen(result)),
        ),
        (Err(error), None) => differ(
            "result",
            "a result".to_owned(),
            format!("{} error: {error}", error.code()),
        ),
        (Ok(result), None) => {
            let haystack = seen(result);
            let want_error = case.is_error.unwrap_or(false);
            if result.is_error != want_error {
                differ(
                    "is_error",
                    want_error.to_string(),
                    format!("{}: {haystack:?}", result.is_error),
                );
            }
            let text: String = result
                .content
                .iter()
                .filter_map(|part| match part {
                    ContentPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if let Some(json) = &case.json {
                let data = result.content.iter().find_map(|part| match part {
                    ContentPart::Json { data, .. } => Some(data),
                    _ => None,
                });
                match data {
                    Some(data) if data == json => {}
                    Some(data) => differ("json", shown(json), shown(data)),
                    None => differ("json", shown(json), format!("no JSON part: {haystack:?}")),
                }
            }
            if let Some(want) = &case.text
                && *want != text
            {
                differ("text", format!("{want:?}"), format!("{text:?}"));
            }
            for part in case.contains.iter().flat_map(|c| c.all()) {
                if !haystack.contains(part.as_str()) {
                    differ(
                        "contains",
                        format!("a result holding {part:?}"),
                        format!("{haystack:?}"),
                    );
                }
            }
        }
    }
    if let Some(want) = &case.ran {
        let got: Vec<Vec<String>> = running.ran()[ran_before..]
            .iter()
            .map(|r| {
                std::iter::once(r.program.clone())
                    .chain(r.args.clone())
                    .collect()
            })
            .collect();
        if *want != got {
            differ(
                "ran",
                shown(&Value::from(want.clone())),
                shown(&Value::from(got)),
            );
        }
    }
    if let Some(want) = &case.fetched {
        let got: Vec<String> = running.fetched()[fetched_before..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.url))
            .collect();
        if *want != got {
            differ(
                "fetched",
                shown(&Value::from(want.clone())),
                shown(&Value::from(got)),
            );
        }
    }
    for (guest, want) in case.files.iter().flatten() {
        let got = read_guest(dirs, guest);
        if got.as_deref() != Ok(want.as_str()) {
            differ(
                &format!("file {guest}"),
                format!("{want:?}"),
                got.map_or_else(|e| e, |g| format!("{g:?}")),
            );
        }
    }
    CaseReport {
        name: case_name(index, case),
        call: format!("{full} {}", shown(&case.arguments)),
        mismatches,
    }
}

/// What a result holds, as `contains` searches it: its text parts, and
/// its JSON parts written compactly, one after the other.
fn seen(result: &tiny_harness_host::ToolResult) -> String {
    let mut out = String::new();
    for part in &result.content {
        match part {
            ContentPart::Text { text } => out.push_str(text),
            ContentPart::Json { data, .. } => out.push_str(&shown(data)),
            _ => {}
        }
    }
    out
}

/// The text of the file at guest path `guest`, or why there is none.
fn read_guest(dirs: &[(String, PathBuf)], guest: &str) -> Result<String, String> {
    let (rest, host) = dirs
        .iter()
        .find_map(|(g, host)| Path::new(guest).strip_prefix(g).ok().map(|r| (r, host)))
        .ok_or_else(|| "in no granted directory".to_owned())?;
    let path = host.join(rest);
    let bytes = tiny_harness_core::file::read_regular(&path, "file", MAX_FILE_BYTES)
        .map_err(|e| format!("no file: {}", e.reason))?;
    String::from_utf8(bytes).map_err(|_| "a file that is not UTF-8 text".to_owned())
}
