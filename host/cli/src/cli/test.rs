//! `tiny-harness test CASES...`: a plugin's cases files run through the
//! host (see `tiny_harness_testing::cases`), one line per case.

use std::path::Path;
use std::process::ExitCode;

use tiny_harness_core::display::one_line;
use tiny_harness_testing::Cases;

/// Runs each file in order; exit code 1 when a case failed, 2 when a file
/// could not be run (said on one line; the next file still runs).
pub(super) async fn test(
    files: &[impl AsRef<Path>],
    plugin: Option<&Path>,
    name: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let mut all_passed = true;
    let mut all_ran = true;
    for file in files {
        let outcome = match Cases::load(file.as_ref()) {
            Ok(mut cases) => {
                if let Some(plugin) = plugin {
                    cases = cases.with_plugin(plugin);
                }
                if let Some(name) = name {
                    cases = cases.with_name(name);
                }
                cases.run().await
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(report) => {
                all_passed &= report.passed();
                super::emit(&report.to_string())?;
            }
            Err(e) => {
                all_ran = false;
                eprintln!("tiny-harness: error: {}", one_line(&e.to_string()));
            }
        }
    }
    Ok(if !all_ran {
        ExitCode::from(super::EXIT_USAGE)
    } else if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
