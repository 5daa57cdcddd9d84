//! Resource classes: what cancelling *started* work means (crate rules C4–C6).
//!
//! * [`Interruptible`]: a kind name (`"socket"`, `"child-process"`) plus a user [`CancelHook`].
//!   `cancel()` calls the hook the first time only; `reap()` calls it every time, until the
//!   resource reports [`HookOutcome::Reaped`].
//! * Quarantined: work that cannot be interrupted, described by a copyable [`QuarantineBound`]
//!   (a hard deadline or a finite amount of named work) that a runtime reports and enforces.
//!
//! Hooks live on the runtime thread, so they may hold `!Send` state such as `Rc`.

use crate::containment::{ContainedDrop, call_contained};
use crate::trace::{TraceOutcome, TraceVisitor};
use std::fmt;
use web_time::Instant;

/// What a cancel hook reports about its resource.
#[must_use = "`PendingReap` means the hook must be called again through `reap()`"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookOutcome {
    /// The resource is released; nothing more to do.
    Reaped,
    /// Interruption was requested but the resource is not released yet: call `reap()` again.
    PendingReap,
}

/// A cancel hook failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The hook reported a failure of its own.
    #[error("cancel hook for {kind} resource failed: {message}")]
    Failed {
        /// The resource kind (as given to [`Interruptible::new`]).
        kind: &'static str,
        /// The hook's explanation.
        message: String,
    },
    /// The hook panicked; the panic was caught (C6).
    #[error("cancel hook for {kind} resource panicked: {message}")]
    Panicked {
        /// The resource kind.
        kind: &'static str,
        /// The panic message.
        message: String,
    },
}

/// The result of one hook call.
pub type HookResult = Result<HookOutcome, HookError>;

/// User code that interrupts a started operation (closes a socket, kills a child, ...).
///
/// Implemented for every `FnMut() -> Result<HookOutcome, String>`; implement it by hand to
/// also support tracing.
pub trait CancelHook {
    /// Requests interruption (first call) or checks/forces release (later calls through
    /// `reap`). An `Err` is a message explaining the failure.
    fn interrupt(&mut self) -> Result<HookOutcome, String>;

    /// Visits the references the hook owns (see [`crate::trace`]). The default owns none.
    fn trace(&self, visitor: &mut dyn TraceVisitor) -> TraceOutcome {
        let _ = visitor;
        TraceOutcome::Complete
    }
}

impl<F: FnMut() -> Result<HookOutcome, String>> CancelHook for F {
    fn interrupt(&mut self) -> Result<HookOutcome, String> {
        self()
    }
}

/// A resource whose started work can be interrupted through a hook (C4).
///
/// Invariant: `hook` is `Some` until `Drop`, where it is taken and dropped through
/// [`ContainedDrop::drop_value`].
pub struct Interruptible {
    kind: &'static str,
    hook: Option<Box<dyn CancelHook>>,
    cancel_requested: bool,
}

impl Interruptible {
    /// A resource of the named kind, interrupted by `hook`.
    pub fn new(kind: &'static str, hook: impl CancelHook + 'static) -> Self {
        Self {
            kind,
            hook: Some(Box::new(hook)),
            cancel_requested: false,
        }
    }

    /// The resource kind name.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether `cancel()` already called the hook.
    pub fn cancel_requested(&self) -> bool {
        self.cancel_requested
    }

    /// Rule C4: calls the hook the first time, returns `None` afterwards.
    pub fn cancel(&mut self) -> Option<HookResult> {
        if self.cancel_requested {
            return None;
        }
        self.cancel_requested = true;
        Some(self.call_hook())
    }

    /// Rule C4: calls the hook every time (reap until `Reaped`).
    pub fn reap(&mut self) -> HookResult {
        self.call_hook()
    }

    /// Visits the hook's references.
    pub fn trace(&self, visitor: &mut dyn TraceVisitor) -> TraceOutcome {
        match &self.hook {
            Some(hook) => hook.trace(visitor),
            None => TraceOutcome::Complete,
        }
    }

    fn call_hook(&mut self) -> HookResult {
        let kind = self.kind;
        let hook = self
            .hook
            .as_mut()
            .expect("the hook is only taken by Drop (type invariant)");
        // Rule C6: a panicking hook becomes an error, never an unwind through the runtime.
        match call_contained(|| hook.interrupt()) {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(message)) => Err(HookError::Failed { kind, message }),
            Err(message) => Err(HookError::Panicked { kind, message }),
        }
    }
}

impl Drop for Interruptible {
    fn drop(&mut self) {
        if let Some(hook) = self.hook.take() {
            // Rule C6: a hostile hook destructor is caught, or leaked during an unwind.
            let _ = ContainedDrop::drop_value(hook);
        }
    }
}

impl fmt::Debug for Interruptible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interruptible")
            .field("kind", &self.kind)
            .field("cancel_requested", &self.cancel_requested)
            .finish_non_exhaustive()
    }
}

/// How long quarantined (uninterruptible) work may run (C5). Copyable so a runtime can
/// report it and check it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuarantineBound {
    /// The work must finish by this instant; a runtime that sees it still running afterwards
    /// reports `BoundExceeded`.
    Deadline(Instant),
    /// The work is a finite amount of named units (for example 4096 `"bytes"`); it ends on its
    /// own, so no clock applies.
    FiniteWork {
        /// How many units.
        units: u64,
        /// The unit's name.
        unit: &'static str,
    },
}

impl QuarantineBound {
    /// The hard deadline, if this bound has one.
    pub fn deadline(&self) -> Option<Instant> {
        match self {
            Self::Deadline(deadline) => Some(*deadline),
            Self::FiniteWork { .. } => None,
        }
    }

    /// Whether work still running at `now` has outlived this bound.
    pub fn is_exceeded_at(&self, now: Instant) -> bool {
        self.deadline().is_some_and(|deadline| now > deadline)
    }
}

impl fmt::Display for QuarantineBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Deadline(_) => f.write_str("a hard deadline"),
            Self::FiniteWork { units, unit } => write!(f, "{units} {unit}"),
        }
    }
}

/// What cancelling started work means.
#[derive(Debug)]
pub enum ResourceClass {
    /// Interrupt through a hook (C4).
    Interruptible(Interruptible),
    /// Cannot be interrupted; runs under a bound (C5).
    Quarantined(QuarantineBound),
}

impl ResourceClass {
    /// Rule C4/C5: the hook's first result for an interruptible resource, `None` afterwards and
    /// always `None` for a quarantined one.
    pub fn cancel(&mut self) -> Option<HookResult> {
        match self {
            Self::Interruptible(resource) => resource.cancel(),
            Self::Quarantined(_) => None,
        }
    }

    /// Rule C4/C5: calls the hook every time for an interruptible resource; `None` for a
    /// quarantined one.
    pub fn reap(&mut self) -> Option<HookResult> {
        match self {
            Self::Interruptible(resource) => Some(resource.reap()),
            Self::Quarantined(_) => None,
        }
    }

    /// The quarantine bound, if quarantined.
    pub fn bound(&self) -> Option<QuarantineBound> {
        match self {
            Self::Interruptible(_) => None,
            Self::Quarantined(bound) => Some(*bound),
        }
    }

    /// Visits the references the resource's hook owns.
    pub fn trace(&self, visitor: &mut dyn TraceVisitor) -> TraceOutcome {
        match self {
            Self::Interruptible(resource) => resource.trace(visitor),
            Self::Quarantined(_) => TraceOutcome::Complete,
        }
    }
}
