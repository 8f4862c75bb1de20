//! A source whose start fails keeps the failure's cause.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use tiny_harness_core::registry::RegistrationLimits;
use tiny_harness_core::source::CallLimits;

use super::super::launch::{Launch, Program, Target};
use super::{McpSource, SourceError, SourceLimits, State};

/// A launch of a program that is not there.
fn missing_program() -> Launch {
    Launch {
        server: "gone".to_owned(),
        target: Target::Process(Program {
            command: "gone".to_owned(),
            program: "/nonexistent/tiny-harness-test/gone".into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            policy: None,
            secrets: Vec::new(),
        }),
        timeout: Duration::from_secs(5),
        start_timeout: Duration::from_secs(5),
        eager: false,
        roots: Vec::new(),
        store_check: None,
    }
}

#[tokio::test]
async fn a_failed_start_keeps_its_cause_on_one_line() {
    let source = McpSource::new(
        "plugin",
        "gone",
        Ok(missing_program()),
        SourceLimits {
            call: CallLimits::new(Duration::from_secs(5), 1 << 20),
            result_bytes: 1 << 20,
            result_parts: 16,
            registration: RegistrationLimits::default(),
        },
        Arc::default(),
    );
    let error = source.list().await.expect_err("the program is not there");
    assert!(
        matches!(error, SourceError::Unavailable { .. }),
        "{error:?}"
    );
    let line = error.to_string();
    assert!(
        line.starts_with("cannot start /nonexistent/tiny-harness-test/gone: "),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
    let cause = error.source().expect("the start's cause is the source");
    let io = cause
        .downcast_ref::<std::io::Error>()
        .expect("the cause is the spawn's I/O error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(matches!(source.status().state, State::Failed(_)));
}
