//! One iteration of the tool loop, as a harness host runs it: begin the
//! iteration, offer the registered tools in a provider's format, decode the
//! tool calls of the model's response, run them concurrently through the
//! sandbox, and build the provider's tool-result message.
//!
//! No network is needed: the model's response is a recorded one.
//!
//! ```sh
//! cargo run -p tiny-harness-host --example loop -- \
//!     tiny-harness.toml anthropic tests/fixtures/providers/anthropic/parallel.json
//! ```
//!
//! With the repository's `tiny-harness.toml` (the `fs` plugin, this
//! directory read-only), the recorded response reads two files and tries to
//! write one: two results and one `denied` error result, in the order the
//! model asked.

// A benchmark or example that cannot set up has nothing to measure or
// show: it stops at once, saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error;
use std::path::Path;

use tiny_harness_host::{Config, Host, Provider, Turn, Workflow};

/// One turn: `config`'s plugins, `provider`'s format, the response
/// recorded in `response`.
async fn one_turn(
    config: &Path,
    provider: Provider,
    response: &Path,
) -> Result<Turn, Box<dyn Error>> {
    // Everything the config says, as the CLI builds it: its plugins, the
    // lock beside it, the intrinsics, the compile cache.
    let host = Host::from_config(&Config::load(config)?).await?;
    // The task's state, which the intrinsics among the calls change.
    let mut workflow = Workflow::new();

    // 1. A new iteration: MCP servers list their tools again before their
    //    first call in it, and refuse any that changed under us.
    host.begin_iteration();

    // 2. The tools to offer, in the provider's format, with the codec that
    //    maps this request's wire names back to registry names.
    //    `request.tools.to_string()` is the compact JSON of the request
    //    body's tools (written from text cached per tool, so 10,000 tools
    //    take under a millisecond); `write_json` streams it instead.
    let request = host.offer(provider);
    let tools_json = request.tools.to_string();
    eprintln!("offering {} bytes of tools", tools_json.len());

    // 3. The model's answer (here, recorded) ...
    let response: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(response)?)?;

    // 4. ... its calls decoded, validated and run concurrently; every call
    //    gets one result, in order, and the provider's tool-result message
    //    is built from them.
    let turn = host
        .run_calls_in(&request, &response, &mut workflow, None)
        .await?;

    // 5. The next iteration offers `next` (the same tools, with those the
    //    turn's searches found when the config defers some, `[search]`).
    let next = host.offer_next(&request, &turn);
    eprintln!(
        "next offer: {} bytes of tools",
        next.tools.to_string().len()
    );
    host.shutdown().await;
    Ok(turn)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let config = args.next().unwrap_or_else(|| "tiny-harness.toml".into());
    let provider: Provider = args.next().unwrap_or_else(|| "anthropic".into()).parse()?;
    let response = args
        .next()
        .unwrap_or_else(|| format!("tests/fixtures/providers/{provider}/parallel.json"));
    let turn = one_turn(config.as_ref(), provider, response.as_ref()).await?;
    for (call, outcome) in turn.calls.iter().zip(&turn.outcomes) {
        let status = match &outcome.result {
            Ok(result) if result.is_error => "tool_error",
            Ok(_) => "ok",
            Err(error) => error.code(),
        };
        eprintln!(
            "call {} {} -> {}: {status}",
            call.id, call.wire_name, outcome.tool
        );
    }
    // The message(s) to append to the conversation before asking again.
    println!("{}", serde_json::to_string_pretty(&turn.results)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    #[tokio::test]
    async fn a_recorded_parallel_response_gets_one_result_per_call_in_order() {
        for provider in Provider::ALL {
            let response =
                root().join(format!("tests/fixtures/providers/{provider}/parallel.json"));
            let turn = one_turn(&root().join("tiny-harness.toml"), provider, &response)
                .await
                .unwrap_or_else(|e| panic!("{provider}: {e}"));
            let codes: Vec<&str> = turn
                .outcomes
                .iter()
                .map(|o| o.result.as_ref().map_or_else(|e| e.code(), |_| "ok"))
                .collect();
            // Read README.md, write (refused: the grant is read-only), read
            // Cargo.toml: as the model asked, in its order.
            assert_eq!(codes, ["ok", "denied", "ok"], "{provider}");
            assert!(turn.any_error());
            assert!(
                turn.outcomes[0].render().contains("# tiny-harness"),
                "{provider}"
            );
            let results = serde_json::to_string(&turn.results).unwrap();
            for call in &turn.calls {
                if call.origin == tiny_harness_host::IdOrigin::Given {
                    assert!(
                        results.contains(&call.id),
                        "{provider}: no result for {}",
                        call.id
                    );
                }
            }
        }
    }
}
