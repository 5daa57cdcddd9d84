//! The `tracing` feature: a task's span (id, spawn site) encloses the spans of its I/O requests
//! (opcode, fd, bytes or error), and shutdown is an event. Run with `--features tracing`
//! (`cargo xtask ci` does).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One span as the subscriber saw it: its name, fields, and the span it was created in.
#[derive(Debug, Clone, Default)]
struct SeenSpan {
    name: String,
    fields: BTreeMap<String, String>,
    parent: Option<u64>,
}

#[derive(Default)]
struct Seen {
    spans: BTreeMap<u64, SeenSpan>,
    events: Vec<BTreeMap<String, String>>,
}

/// A subscriber that records every span, field and event of Baton's targets.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Seen>>,
    next: Arc<AtomicU64>,
}

thread_local! {
    /// Spans entered on this thread, innermost last.
    static ENTERED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Recorder {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("baton")
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut seen = SeenSpan {
            name: span.metadata().name().to_owned(),
            parent: ENTERED.with(|e| e.borrow().last().copied()),
            ..SeenSpan::default()
        };
        span.record(&mut Fields(&mut seen.fields));
        self.seen().spans.insert(id, seen);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(seen) = self.seen().spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        fields.insert("target".to_owned(), event.metadata().target().to_owned());
        event.record(&mut Fields(&mut fields));
        self.seen().events.push(fields);
    }

    fn enter(&self, span: &Id) {
        ENTERED.with(|e| e.borrow_mut().push(span.into_u64()));
    }

    fn exit(&self, span: &Id) {
        ENTERED.with(|e| {
            let mut entered = e.borrow_mut();
            if let Some(at) = entered.iter().rposition(|s| *s == span.into_u64()) {
                entered.remove(at);
            }
        });
    }
}

#[test]
fn a_task_span_encloses_its_io_spans_and_shutdown_is_an_event() -> std::io::Result<()> {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(recorder.clone()).map_err(std::io::Error::other)?;
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let (a, b) = baton::net::UnixStream::pair()?;
        let task = baton::spawn(async move {
            let (res, _) = a.write_all(b"traced".to_vec()).await;
            res
        });
        let (res, _) = b.read(Vec::with_capacity(16)).await;
        assert_eq!(res?, 6);
        task.await.map_err(std::io::Error::other)?
    })?;
    let report = rt.shutdown_timeout(std::time::Duration::from_secs(5));
    assert!(report.is_clean(), "{report:?}");

    let seen = recorder.seen();
    let tasks: Vec<(&u64, &SeenSpan)> = seen
        .spans
        .iter()
        .filter(|(_, s)| s.name == "task")
        .collect();
    let sends: Vec<&SeenSpan> = seen
        .spans
        .values()
        .filter(|s| {
            s.name == "io"
                && s.fields
                    .get("opcode")
                    .is_some_and(|o| o == "IORING_OP_SEND")
        })
        .collect();
    assert!(!tasks.is_empty(), "a span per task: {:?}", seen.spans);
    let (task_id, task) = tasks[0];
    assert!(
        task.fields
            .get("spawned_at")
            .is_some_and(|at| at.contains("tests/tracing.rs")),
        "the spawn site: {task:?}"
    );
    assert!(task.fields.contains_key("id"));
    let send = sends
        .first()
        .unwrap_or_else(|| panic!("a span per I/O request: {:?}", seen.spans));
    assert_eq!(
        send.parent,
        Some(*task_id),
        "the send ran inside its task's span"
    );
    assert_eq!(send.fields.get("bytes").map(String::as_str), Some("6"));
    assert!(send.fields.get("fd").is_some_and(|fd| fd != "-1"));
    assert!(
        seen.events
            .iter()
            .any(|e| e.get("target").is_some_and(|t| t == "baton::runtime")),
        "shutdown is an event: {:?}",
        seen.events
    );
    Ok(())
}
