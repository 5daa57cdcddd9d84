//! The optional tracing hook: an embedder with a tracing garbage collector visits the
//! references that hooks and decoders own, so values kept alive only by a pending operation are
//! not collected.

use std::any::Any;

/// Receives the references a hook or decoder owns. Implemented by the embedder's collector.
pub trait TraceVisitor {
    /// Visits one owned reference; the embedder downcasts it to its own handle type.
    fn visit(&mut self, reference: &dyn Any);
}

/// Whether a trace visited everything it owns.
#[must_use = "an incomplete trace means the collector must not free what it did not see"]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceOutcome {
    /// Every owned reference was visited.
    Complete,
    /// The trace could not finish (for example a `RefCell` was already borrowed); the collector
    /// should treat the owner as holding unknown references and retry later.
    Incomplete {
        /// Why the trace stopped.
        reason: String,
    },
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct Collect(Vec<u32>);

    impl TraceVisitor for Collect {
        fn visit(&mut self, reference: &dyn Any) {
            if let Some(value) = reference.downcast_ref::<u32>() {
                self.0.push(*value);
            }
        }
    }

    fn trace_cell(cell: &RefCell<u32>, visitor: &mut dyn TraceVisitor) -> TraceOutcome {
        match cell.try_borrow() {
            Ok(value) => {
                visitor.visit(&*value);
                TraceOutcome::Complete
            }
            Err(_) => TraceOutcome::Incomplete {
                reason: "cell already borrowed".into(),
            },
        }
    }

    #[test]
    fn borrowed_cell_reports_incomplete_trace() {
        let cell = RefCell::new(5_u32);
        let mut collect = Collect(Vec::new());
        assert_eq!(trace_cell(&cell, &mut collect), TraceOutcome::Complete);
        assert_eq!(collect.0, vec![5]);
        let _held = cell.borrow_mut();
        assert!(matches!(
            trace_cell(&cell, &mut collect),
            TraceOutcome::Incomplete { .. }
        ));
    }
}
