use std::sync::{Arc, Mutex};

use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use super::{Invoker, ToolCall};
use crate::registry::{LiveRegistry, RegistrationLimits, Registry};
use crate::source::{CallFuture, ListFuture, PendingTool, ToolSource};
use crate::tool::{ToolDefinition, ToolResult};

/// One tool that answers at once.
#[derive(Debug)]
struct Answers;

impl ToolSource for Answers {
    fn list_tools(&self) -> ListFuture<'_> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn call<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a serde_json::Value,
        _: std::time::Instant,
    ) -> CallFuture<'a> {
        Box::pin(async { Ok(ToolResult::text("done")) })
    }
}

/// A subscriber that keeps each span's name and fields as one line.
struct Spans(Arc<Mutex<Vec<String>>>);

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={value:?}", field.name()));
            }
        }
        let mut fields = Fields(span.metadata().name().to_owned());
        span.record(&mut fields);
        let mut spans = self.0.lock().unwrap();
        spans.push(fields.0);
        Id::from_u64(spans.len() as u64)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn a_call_runs_in_a_span_with_its_id_once_something_listens() {
    let tool = ToolDefinition::new("t", "d", serde_json::json!({"type": "object"}));
    let mut registry = Registry::new();
    registry
        .register(
            "p",
            vec![PendingTool::new("s", tool)],
            Arc::new(Answers),
            &RegistrationLimits::default(),
        )
        .unwrap();
    let invoker = Invoker::new(Arc::new(LiveRegistry::new(registry)));
    let call = ToolCall {
        id: "call-7".into(),
        name: "p/s.t".into(),
        arguments: serde_json::json!({}),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Nothing listens yet. This call also registers the span's callsite
    // from this thread: `tracing` judges a callsite first reached on
    // another thread by that thread's subscriber (none), and caches it.
    assert!(!runtime.block_on(invoker.invoke(&call)).is_error());

    let spans = Arc::new(Mutex::new(Vec::new()));
    let listening = tracing::subscriber::set_default(Spans(spans.clone()));
    assert!(!runtime.block_on(invoker.invoke(&call)).is_error());
    drop(listening);
    let spans = spans.lock().unwrap();
    assert!(
        spans.iter().any(|span| span == "call id=call-7"),
        "{spans:?}"
    );
}
