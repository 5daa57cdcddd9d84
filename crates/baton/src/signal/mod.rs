//! Signals: [`ctrl_c`] and Unix signals as streams ([`unix::signal`]).
//!
//! Delivery does not depend on which thread the kernel picks: a process-wide handler counts
//! each delivery and writes to an eventfd per listening runtime, which that runtime reads on
//! its ring (a task of its own), waking its listeners. Every listener of a signal sees each
//! delivery made after it was created; deliveries while it is not polling coalesce into one.
//! Nothing blocks the worker, and no signal mask has to be set up on any thread.

mod hub;
mod registry;
pub mod unix;

pub(crate) use hub::Hub;

use std::io;

/// Waits for `SIGINT` (Ctrl-C). The first call installs the handler (see [`unix::signal`]),
/// so from then on Ctrl-C no longer ends the process by itself.
///
/// # Errors
///
/// [`Error::Closed`](crate::Error::Closed) when the runtime shut down first, or an error of
/// [`unix::signal`].
///
/// # Cancel safety
///
/// Dropping the future stops listening; a Ctrl-C in between is not seen by a later call.
pub async fn ctrl_c() -> io::Result<()> {
    let mut interrupts = unix::signal(unix::SignalKind::interrupt())?;
    match interrupts.recv().await {
        Some(()) => Ok(()),
        None => Err(crate::Error::Closed.into_io()),
    }
}
