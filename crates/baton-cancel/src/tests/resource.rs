//! Unit tests of resource classes (crate rules C4–C6).

#![cfg(not(loom))]

use super::support::PanicOnDrop;
use crate::{CancelHook, HookError, HookOutcome, Interruptible, QuarantineBound, ResourceClass};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;
use web_time::Instant;

/// An interruptible class whose hook counts its calls and reports `Reaped` from call
/// `reap_after` on; the counter beside it.
fn counting_socket(reap_after: u32) -> (Rc<Cell<u32>>, ResourceClass) {
    let calls = Rc::new(Cell::new(0));
    let hook = counting_hook(&calls, reap_after);
    (
        calls,
        ResourceClass::Interruptible(Interruptible::new("socket", hook)),
    )
}

fn counting_hook(calls: &Rc<Cell<u32>>, reap_after: u32) -> impl CancelHook + 'static {
    let calls = Rc::clone(calls);
    move || {
        calls.set(calls.get() + 1);
        Ok(if calls.get() >= reap_after {
            HookOutcome::Reaped
        } else {
            HookOutcome::PendingReap
        })
    }
}

#[test]
fn interruptible_cancels_once() {
    let (calls, mut class) = counting_socket(9);
    assert_eq!(class.cancel(), Some(Ok(HookOutcome::PendingReap)));
    assert_eq!(class.cancel(), None);
    assert_eq!(class.cancel(), None);
    assert_eq!(calls.get(), 1);
}

#[test]
fn interruptible_reaps_until_reaped() {
    let (calls, mut class) = counting_socket(3);
    assert_eq!(class.cancel(), Some(Ok(HookOutcome::PendingReap)));
    assert_eq!(class.reap(), Some(Ok(HookOutcome::PendingReap)));
    assert_eq!(class.reap(), Some(Ok(HookOutcome::Reaped)));
    assert_eq!(calls.get(), 3);
}

#[test]
fn hook_error_names_the_kind() {
    let mut resource = Interruptible::new("child-process", || Err("no such pid".to_owned()));
    let error = resource.cancel().expect("first cancel calls the hook");
    let error = error.expect_err("the hook failed");
    assert_eq!(
        error.to_string(),
        "cancel hook for child-process resource failed: no such pid"
    );
}

#[test]
fn panicking_hook_becomes_hook_error() {
    let mut resource = Interruptible::new("socket", || -> Result<HookOutcome, String> {
        panic!("hook exploded")
    });
    assert_eq!(
        resource.reap(),
        Err(HookError::Panicked {
            kind: "socket",
            message: "hook exploded".into()
        })
    );
}

#[test]
fn panicking_hook_destructor_is_contained() {
    let hostile = PanicOnDrop;
    let resource = Interruptible::new("socket", move || {
        let _keep = &hostile;
        Ok(HookOutcome::Reaped)
    });
    drop(resource);
}

#[test]
fn quarantined_is_never_interrupted() {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut class = ResourceClass::Quarantined(QuarantineBound::Deadline(deadline));
    assert_eq!(class.cancel(), None);
    assert_eq!(class.reap(), None);
    assert_eq!(class.bound(), Some(QuarantineBound::Deadline(deadline)));
}

#[test]
fn deadline_bound_is_exceeded_only_after_its_deadline() {
    let start = Instant::now();
    let bound = QuarantineBound::Deadline(start + Duration::from_secs(1));
    assert!(!bound.is_exceeded_at(start));
    assert!(bound.is_exceeded_at(start + Duration::from_secs(2)));
    let work = QuarantineBound::FiniteWork {
        units: 4096,
        unit: "bytes",
    };
    assert!(!work.is_exceeded_at(start + Duration::from_secs(3600)));
    assert_eq!(work.to_string(), "4096 bytes");
    assert_eq!(work.deadline(), None);
}

#[test]
fn hook_may_hold_rc_state() {
    let shared = Rc::new(Cell::new(false));
    let seen = Rc::clone(&shared);
    let mut resource = Interruptible::new("timer", move || {
        seen.set(true);
        Ok(HookOutcome::Reaped)
    });
    assert_eq!(resource.cancel(), Some(Ok(HookOutcome::Reaped)));
    assert!(shared.get());
    assert!(resource.cancel_requested());
    assert_eq!(resource.kind(), "timer");
}
