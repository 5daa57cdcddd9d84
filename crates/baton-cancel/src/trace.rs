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
