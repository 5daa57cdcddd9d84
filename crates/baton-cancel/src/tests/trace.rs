//! Unit test of the tracing hook.

#![cfg(not(loom))]

use crate::{TraceOutcome, TraceVisitor};
use std::any::Any;
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
    let outcome = trace_cell(&cell, &mut collect);
    assert!(matches!(outcome, TraceOutcome::Incomplete { .. }));
}
