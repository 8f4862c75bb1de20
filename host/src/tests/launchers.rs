//! One table of grant cases through both launchers: an exec call and a
//! stdio MCP server's declaration must be refused with the same words, or
//! allowed to the same program and environment.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::grant::{ArgPatterns, EnvNames, ExecGrant, Grants};
use crate::mcp_runtime::launch::{Launch, Target};
use crate::mcp_runtime::{Declaration, Stdio, Transport};
use crate::plugin::bindings::tiny_harness::plugin::exec::{Command, ExecError};
use crate::plugin::{ExecAccess, ExecContext, Limits};

/// One request, and what both launchers must say of it: `Ok` (the one
/// allowed case), or words the refusal must hold.
struct Case {
    what: &'static str,
    program: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    expect: Result<(), &'static [&'static str]>,
}

fn grants() -> Grants {
    let base = Path::new("/");
    let mut grants = Grants::default();
    for exec in [
        ExecGrant::resolve("/bin/true", base, None)
            .unwrap()
            .with_env(EnvNames::new(&["ALLOWED".to_owned(), "LC_*".to_owned()]).unwrap()),
        ExecGrant::resolve("/bin/echo", base, None)
            .unwrap()
            .with_args(ArgPatterns::new(&["--only-this".to_owned()]).unwrap()),
        ExecGrant::resolve("/bin/sh", base, None)
            .unwrap()
            .with_env(EnvNames::new(&["*".to_owned()]).unwrap()),
    ] {
        grants.add_exec(exec).unwrap();
    }
    grants.add_env("TINY_HARNESS_LAUNCHERS_GRANTED").unwrap();
    grants
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn cases() -> Vec<Case> {
    let too_many: Vec<(String, String)> = (0..257)
        .map(|i| (format!("LC_{i}"), "x".to_owned()))
        .collect();
    vec![
        Case {
            what: "a granted program with a granted variable",
            program: "/bin/true",
            args: vec![],
            env: pairs(&[
                ("ALLOWED", "${TINY_HARNESS_LAUNCHERS_GRANTED}"),
                ("LC_TIME", "C"),
            ]),
            expect: Ok(()),
        },
        Case {
            what: "a program no grant names",
            program: "/bin/ls",
            args: vec![],
            env: vec![],
            expect: Err(&["program \"/bin/ls\"", "is not granted", "exec = ["]),
        },
        Case {
            what: "a program that does not exist",
            program: "tiny-harness-no-such-program",
            args: vec![],
            env: vec![],
            expect: Err(&["tiny-harness-no-such-program"]),
        },
        Case {
            what: "arguments the grant's patterns refuse",
            program: "/bin/echo",
            args: vec!["--other".to_owned()],
            env: vec![],
            expect: Err(&["--other"]),
        },
        Case {
            what: "a variable the exec grant does not list",
            program: "/bin/true",
            args: vec![],
            env: pairs(&[("GIT_DIR", "/x")]),
            expect: Err(&["variable \"GIT_DIR\"", "is not granted", "env = ["]),
        },
        Case {
            what: "the dynamic loader's variable, even under `*`",
            program: "/bin/sh",
            args: vec![],
            env: pairs(&[("LD_PRELOAD", "/tmp/x.so")]),
            expect: Err(&["LD_PRELOAD", "dynamic loader"]),
        },
        Case {
            what: "a host variable the plugin may not name",
            program: "/bin/sh",
            args: vec![],
            env: pairs(&[("TOKEN", "${HOME}")]),
            expect: Err(&["host variable \"HOME\"", "env = [\"HOME\"]"]),
        },
        Case {
            what: "too many variables",
            program: "/bin/sh",
            args: vec![],
            env: too_many,
            expect: Err(&["257 environment variables", "at most 256"]),
        },
    ]
}

/// What the MCP launcher says: the program's environment, or why not.
fn as_server(grants: &Grants, case: &Case) -> Result<Vec<(String, String)>, String> {
    let declaration = Declaration {
        name: "table".to_owned(),
        transport: Transport::Stdio(Stdio {
            command: case.program.to_owned(),
            args: case.args.clone(),
            env: case.env.clone(),
            cwd: None,
        }),
        timeout: None,
        start_timeout: None,
        eager: false,
        roots: Vec::new(),
    };
    let launch = Launch::resolve("tbl", &declaration, grants, Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    match launch.target {
        Target::Process(program) => Ok(program.env),
        Target::Http(_) => Err("an endpoint".to_owned()),
    }
}

/// What the exec launcher says: `Ok` when the program ran (confined) and
/// exited 0, or why it did not run.
async fn as_exec(grants: &Grants, case: &Case) -> Result<(), String> {
    let access = ExecAccess {
        context: Arc::new(ExecContext {
            plugin: "tbl".to_owned(),
            grants: grants.clone(),
            limits: Limits::default(),
            stand_in: None,
        }),
        deadline: Instant::now() + Duration::from_secs(10),
    };
    let command = Command {
        program: case.program.to_owned(),
        args: case.args.clone(),
        cwd: None,
        env: case.env.clone(),
        stdin: Vec::new(),
        timeout_ms: None,
    };
    match access.run(command).await {
        Ok(output) if output.exit_code == Some(0) => Ok(()),
        Ok(output) => Err(format!("it ran and exited {:?}", output.exit_code)),
        Err(ExecError::Denied(why)) => Err(why),
        Err(other) => Err(format!("not a refusal: {other:?}")),
    }
}

#[tokio::test]
async fn every_grant_case_is_decided_alike_by_both_launchers() {
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var("TINY_HARNESS_LAUNCHERS_GRANTED", "host-value") };
    let grants = grants();
    for case in cases() {
        let server = as_server(&grants, &case);
        let exec = as_exec(&grants, &case).await;
        match case.expect {
            Ok(()) => {
                let env = server.unwrap_or_else(|e| panic!("{}: server refused: {e}", case.what));
                let has = |k: &str, v: &str| env.contains(&(k.to_owned(), v.to_owned()));
                assert!(
                    has("ALLOWED", "host-value") && has("LC_TIME", "C"),
                    "{env:?}"
                );
                assert!(
                    !env.iter()
                        .any(|(k, _)| k == "TINY_HARNESS_LAUNCHERS_GRANTED"),
                    "a host variable leaked: {env:?}"
                );
                exec.unwrap_or_else(|e| panic!("{}: exec refused: {e}", case.what));
            }
            Err(words) => {
                let server = server
                    .err()
                    .unwrap_or_else(|| panic!("{}: server allowed", case.what));
                let exec = exec
                    .err()
                    .unwrap_or_else(|| panic!("{}: exec allowed", case.what));
                assert_eq!(server, exec, "{}: the launchers disagree", case.what);
                for word in words {
                    assert!(
                        server.contains(word),
                        "{}: {server:?} lacks {word:?}",
                        case.what
                    );
                }
                assert!(!server.contains('\n'), "{}: {server:?}", case.what);
            }
        }
    }
}
