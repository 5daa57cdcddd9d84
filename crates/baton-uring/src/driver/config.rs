//! How a driver is set up: [`DriverConfig`] and the [`WakerPanics`] policy.

use crate::backend::ring::KERNEL_MAX_ENTRIES;
use crate::error::SetupError;

/// What the driver does with a panic from a waker it wakes or drops while serving requests (a
/// turn, closure, shutdown) — typically a foreign executor's waker of a forwarded operation.
/// Either way the panic is caught first and every other wake and release of that step still
/// runs, so the operation retires as usual.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WakerPanics {
    /// Count it ([`DriverMetrics::waker_panics`](crate::DriverMetrics::waker_panics)), report the first one on stderr, and keep
    /// running: one executor's broken waker must not stop the runtime. The default.
    #[default]
    Contain,
    /// Re-raise it from the turn (or shutdown) once that step's cleanup is done, for an
    /// embedder that drives the driver itself and wants the panic. Still counted.
    Propagate,
}

/// How a driver is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverConfig {
    pub(super) ring_entries: u32,
    pub(super) max_in_flight: Option<u32>,
    pub(super) pinned: bool,
    pub(super) waker_panics: WakerPanics,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            ring_entries: 256,
            max_in_flight: None,
            pinned: false,
            waker_panics: WakerPanics::Contain,
        }
    }
}

impl DriverConfig {
    /// The defaults: 256 entries, in-flight limit = the ring's completion queue size (twice the
    /// SQ), migratable.
    pub fn new() -> Self {
        Self::default()
    }

    /// SQ entries (1..=32768; the kernel rounds up to a power of two).
    pub fn ring_entries(mut self, entries: u32) -> Self {
        self.ring_entries = entries;
        self
    }

    /// How many requests that complete on their own (file I/O, syncs, opens, closes, nops) the
    /// kernel may own at once; more are queued and submitted as earlier ones complete. The
    /// limit keeps a burst of their completions within the completion queue; it defaults to
    /// the completion queue's size (twice the SQ). Requests that wait on a peer (receive,
    /// send, accept, connect) are never held back by it: thousands of idle connections cannot
    /// stall anything else. Completions beyond the completion queue are kept by the kernel
    /// (`IORING_FEAT_NODROP`, required), so a larger limit costs time, never a completion.
    pub fn max_in_flight(mut self, limit: u32) -> Self {
        self.max_in_flight = Some(limit);
        self
    }

    /// What to do with a panicking waker (default [`WakerPanics::Contain`]).
    pub fn waker_panics(mut self, policy: WakerPanics) -> Self {
        self.waker_panics = policy;
        self
    }

    /// Whether the driver stays on one thread for its whole life. Only a pinned driver uses
    /// `IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN`, which bind the ring to one submitter.
    pub fn pinned(mut self, pinned: bool) -> Self {
        self.pinned = pinned;
        self
    }

    pub(super) fn validate(&self) -> Result<(), SetupError> {
        if self.ring_entries == 0 {
            return Err(SetupError::ZeroEntries);
        }
        if self.ring_entries > KERNEL_MAX_ENTRIES {
            return Err(SetupError::TooManyEntries {
                requested: self.ring_entries,
                max: KERNEL_MAX_ENTRIES,
            });
        }
        if self.max_in_flight == Some(0) {
            return Err(SetupError::ZeroInFlight);
        }
        Ok(())
    }
}
