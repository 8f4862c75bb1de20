//! The registry changes while calls run: a server's tools are replaced by
//! swapping in a new snapshot, and a call in flight keeps the one it
//! started with.

use std::time::Duration;

use serde_json::json;
use tiny_harness_host::{PendingTool, RegistrationLimits, RegistryError};

use crate::common::{call, error_code, host, hostile, text_of};

/// The tools of `hostile/chaos` named in `names`, as the registry holds them.
fn pending(host: &tiny_harness_host::Host, names: &[&str]) -> Vec<PendingTool> {
    let registry = host.registry();
    names
        .iter()
        .map(|name| PendingTool {
            server: "chaos".into(),
            definition: registry
                .get(&format!("hostile/chaos.{name}"))
                .unwrap()
                .definition
                .clone(),
        })
        .collect()
}

#[tokio::test]
async fn replacing_a_server_does_not_disturb_a_call_in_flight() {
    let mut spec = hostile("normal");
    spec.limits.timeout = Duration::from_millis(500);
    let host = host(vec![spec]).await;
    let limits = RegistrationLimits::default();

    // Start a call of `spin` (it runs until its deadline) and poll it once:
    // it has looked up its tool and is running.
    let spin = call(&host, "hostile/chaos.spin", json!({}));
    let mut spin = std::pin::pin!(spin);
    assert!(
        tokio::time::timeout(Duration::ZERO, &mut spin)
            .await
            .is_err()
    );

    // Replace the server with `echo` alone. The change does not wait for
    // the call, which is still running afterwards.
    let before = host.registry();
    let count = host
        .live_registry()
        .replace_server("hostile", "chaos", pending(&host, &["echo"]), &limits)
        .unwrap();
    assert_eq!(count, 1);
    assert!(
        tokio::time::timeout(Duration::ZERO, &mut spin)
            .await
            .is_err(),
        "the call is still in flight"
    );

    // New calls see the new registry; the old snapshot is unchanged.
    assert_eq!(
        error_code(&call(&host, "hostile/chaos.spin", json!({})).await),
        "unknown_tool"
    );
    let echo = call(&host, "hostile/chaos.echo", json!({"message": "new"})).await;
    assert_eq!(text_of(&echo), "new");
    assert!(before.get("hostile/chaos.spin").is_some());
    assert_eq!(host.registry().len(), 1);

    // The call in flight ends as it would have: at its deadline.
    assert_eq!(error_code(&spin.await), "timeout");
}

#[tokio::test]
async fn a_refused_replacement_changes_nothing() {
    let host = host(vec![hostile("normal")]).await;
    let limits = RegistrationLimits::default();
    let count = host.registry().len();
    let live = host.live_registry();

    let err = live
        .replace_server("nobody", "chaos", pending(&host, &["echo"]), &limits)
        .unwrap_err();
    assert!(matches!(err, RegistryError::UnknownSource(_)), "{err}");

    let mut broken = pending(&host, &["echo", "trap"]);
    broken[1].definition.input_schema = json!({"type": 12});
    let err = live
        .replace_server("hostile", "chaos", broken, &limits)
        .unwrap_err();
    assert!(matches!(err, RegistryError::InvalidSchema { .. }), "{err}");

    let mut elsewhere = pending(&host, &["echo"]);
    elsewhere[0].server = "other".into();
    assert!(
        live.replace_server("hostile", "chaos", elsewhere, &limits)
            .is_err()
    );

    let mut tight = limits;
    tight.tools = 1;
    let err = live
        .replace_server(
            "hostile",
            "chaos",
            pending(&host, &["echo", "trap"]),
            &tight,
        )
        .unwrap_err();
    assert!(matches!(err, RegistryError::OverLimit { .. }), "{err}");

    assert_eq!(host.registry().len(), count, "nothing was half-applied");
    let echo = call(&host, "hostile/chaos.echo", json!({"message": "same"})).await;
    assert_eq!(text_of(&echo), "same");
}
