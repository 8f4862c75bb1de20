//! The script a test writes for the world outside its plugin: which
//! programs it may run and what each answers ([`Program`]), what each URL
//! answers ([`Page`]), and the record of what the plugin asked for.
//!
//! Invariants:
//! - A program runs only if the test granted it (by the name or path the
//!   plugin uses); any other is `denied`, with the grant that would allow
//!   it, as the real host does.
//! - The first entry that matches answers, every time it matches; a
//!   request nothing matches fails with a message naming what to script.
//! - Every request is recorded, answered or not, in the order it came.

use std::sync::Mutex;

use tiny_harness_wasm::bindings::tiny_harness::plugin::exec::{Command, ExecError, Output};
use tiny_harness_wasm::{HttpRequest, HttpResponse, StandIn, StandInError};

/// A scripted program: what it answers when the plugin runs it with
/// matching arguments.
#[derive(Debug, Clone)]
pub struct Program {
    program: String,
    args: Option<Vec<String>>,
    output: Output,
    failure: Option<String>,
}

impl Program {
    /// `program` (as the plugin names it: `git` or `/usr/bin/git`), with
    /// any arguments, exiting 0 with no output until said otherwise.
    pub fn new(program: impl Into<String>) -> Program {
        Program {
            program: program.into(),
            args: None,
            output: Output {
                exit_code: Some(0),
                signal: None,
                stdout: Vec::new(),
                stderr: Vec::new(),
                stdout_truncated: false,
                stderr_truncated: false,
                timed_out: false,
            },
            failure: None,
        }
    }

    /// Matches only these arguments, exactly.
    pub fn args<I, S>(mut self, args: I) -> Program
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// Exits with `code`.
    pub fn exit(mut self, code: i32) -> Program {
        self.output.exit_code = Some(code);
        self.output.signal = None;
        self
    }

    /// Is ended by `signal`.
    pub fn signal(mut self, signal: i32) -> Program {
        self.output.exit_code = None;
        self.output.signal = Some(signal);
        self
    }

    /// Is stopped at its timeout (killed by signal 9).
    pub fn times_out(mut self) -> Program {
        self = self.signal(9);
        self.output.timed_out = true;
        self
    }

    /// Writes `bytes` to standard output.
    pub fn stdout(mut self, bytes: impl Into<Vec<u8>>) -> Program {
        self.output.stdout = bytes.into();
        self
    }

    /// Writes `bytes` to standard error.
    pub fn stderr(mut self, bytes: impl Into<Vec<u8>>) -> Program {
        self.output.stderr = bytes.into();
        self
    }

    /// Cannot be started: the plugin gets `failed` with `message`.
    pub fn fails(mut self, message: impl Into<String>) -> Program {
        self.failure = Some(message.into());
        self
    }

    fn matches(&self, command: &Command) -> bool {
        self.program == command.program
            && self.args.as_ref().is_none_or(|args| *args == command.args)
    }
}

/// A scripted HTTP response: what a URL answers.
#[derive(Debug, Clone)]
pub struct Page {
    method: Option<String>,
    url: String,
    response: HttpResponse,
    failure: Option<String>,
}

impl Page {
    /// `url` (exactly as the plugin sends it, query included) for any
    /// method, answering 200 with an empty body until said otherwise.
    pub fn new(url: impl Into<String>) -> Page {
        Page {
            method: None,
            url: url.into(),
            response: HttpResponse {
                status: 200,
                headers: Vec::new(),
                body: Vec::new(),
            },
            failure: None,
        }
    }

    /// Matches only `method` (`GET`, `POST`, ...).
    pub fn method(mut self, method: impl Into<String>) -> Page {
        self.method = Some(method.into().to_ascii_uppercase());
        self
    }

    /// Answers with `status`.
    pub fn status(mut self, status: u16) -> Page {
        self.response.status = status;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Page {
        self.response.headers.push((name.into(), value.into()));
        self
    }

    /// Answers with `body`.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Page {
        self.response.body = body.into();
        self
    }

    /// Answers with `value` as JSON (and `content-type: application/json`).
    pub fn json(self, value: &serde_json::Value) -> Page {
        self.header("content-type", "application/json")
            .body(value.to_string())
    }

    /// Cannot be reached: the plugin's request fails with `message`.
    pub fn fails(mut self, message: impl Into<String>) -> Page {
        self.failure = Some(message.into());
        self
    }

    fn matches(&self, request: &HttpRequest) -> bool {
        self.url == request.url
            && self
                .method
                .as_ref()
                .is_none_or(|m| m.eq_ignore_ascii_case(&request.method))
    }
}

/// A program the plugin asked to run, as it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// The program, as the plugin named it.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (a guest path), if the plugin gave one.
    pub cwd: Option<String>,
    /// The variables the plugin set for it.
    pub env: Vec<(String, String)>,
    /// What it was given on standard input.
    pub stdin: Vec<u8>,
    /// Whether it was granted (a denied one did not run).
    pub granted: bool,
}

/// Whose words the script's hints are in: a Rust test's builder calls,
/// or a cases file's tables.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    #[default]
    Rust,
    Cases,
}

/// The script, and what the plugin asked of it.
#[derive(Debug, Default)]
pub(crate) struct Script {
    pub(crate) dialect: Dialect,
    pub(crate) granted: Vec<String>,
    pub(crate) programs: Vec<Program>,
    pub(crate) pages: Vec<Page>,
    pub(crate) ran: Mutex<Vec<Ran>>,
    pub(crate) fetched: Mutex<Vec<HttpRequest>>,
}

impl StandIn for Script {
    fn exec(&self, command: &Command) -> Result<Output, ExecError> {
        let granted = self.granted.contains(&command.program);
        if let Ok(mut ran) = self.ran.lock() {
            ran.push(Ran {
                program: command.program.clone(),
                args: command.args.clone(),
                cwd: command.cwd.clone(),
                env: command.env.clone(),
                stdin: command.stdin.clone(),
                granted,
            });
        }
        if !granted {
            let how = match self.dialect {
                Dialect::Rust => "(in a test, PluginTest::grant_program)",
                Dialect::Cases => "in [plugin.grants]",
            };
            return Err(ExecError::Denied(format!(
                "program {:?} is not granted: grant it with exec = [{:?}] {how}",
                command.program, command.program
            )));
        }
        match self.programs.iter().find(|p| p.matches(command)) {
            Some(program) => match &program.failure {
                Some(message) => Err(ExecError::Failed(message.clone())),
                None => Ok(program.output.clone()),
            },
            None => Err(ExecError::Failed(match self.dialect {
                Dialect::Rust => format!(
                    "the test scripts no answer for {} {:?}: add \
                     Program::new({:?}).args({:?}) to it",
                    command.program, command.args, command.program, command.args
                ),
                Dialect::Cases => format!(
                    "the test scripts no answer for {} {:?}: add a [[program]] \
                     with program = {:?} and args = {:?}",
                    command.program, command.args, command.program, command.args
                ),
            })),
        }
    }

    fn http(&self, request: &HttpRequest) -> Result<HttpResponse, StandInError> {
        if let Ok(mut fetched) = self.fetched.lock() {
            fetched.push(request.clone());
        }
        match self.pages.iter().find(|p| p.matches(request)) {
            Some(page) => match &page.failure {
                Some(message) => Err(StandInError::Unanswered(message.clone())),
                None => Ok(page.response.clone()),
            },
            None => Err(StandInError::Unanswered(match self.dialect {
                Dialect::Rust => format!(
                    "the test scripts no answer for {} {}: add Page::new({:?}) to it",
                    request.method, request.url, request.url
                ),
                Dialect::Cases => format!(
                    "the test scripts no answer for {} {}: add a [[page]] with url = {:?}",
                    request.method, request.url, request.url
                ),
            })),
        }
    }
}
