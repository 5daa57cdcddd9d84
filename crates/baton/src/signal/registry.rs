//! The process-wide half of signal handling: the handler, the delivery counters and the
//! eventfds it writes to.
//!
//! A signal is delivered to whichever thread the kernel picks, so the handler does nothing that
//! depends on the thread: it counts the delivery in [`DELIVERIES`] and writes to every
//! runtime's eventfd in [`SLOTS`] — both async-signal-safe (an atomic add, `write(2)`). Each
//! runtime that listens owns one slot and reads its eventfd on its ring ([`super::hub`]).
//!
//! The eventfds are created once per slot and never closed: the handler may read a slot's
//! descriptor at any moment, so closing it would let the number be reused by an unrelated file
//! that the handler would then write to. A slot is handed to the next runtime instead.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Signal numbers are below this (Linux: 1..=64).
pub(crate) const SIGNALS: usize = 65;

/// How many runtimes may listen for signals at once.
const RUNTIME_SLOTS: usize = 64;

/// Deliveries per signal number since the process started, counted by the handler.
static DELIVERIES: [AtomicU64; SIGNALS] = [const { AtomicU64::new(0) }; SIGNALS];

/// One runtime's eventfd, written by the handler. Invariant: `fd` is −1 or an eventfd this
/// module created and never closes; `owned` says whether a runtime holds the slot.
struct Slot {
    fd: AtomicI32,
    owned: AtomicBool,
}

static SLOTS: [Slot; RUNTIME_SLOTS] = [const {
    Slot {
        fd: AtomicI32::new(-1),
        owned: AtomicBool::new(false),
    }
}; RUNTIME_SLOTS];

/// Which signals have the handler installed (installation is rare and never in the handler).
static INSTALLED: Mutex<[bool; SIGNALS]> = Mutex::new([false; SIGNALS]);

/// How many times `signum` was delivered so far.
pub(crate) fn deliveries(signum: usize) -> u64 {
    DELIVERIES[signum].load(Ordering::Acquire)
}

extern "C" fn on_signal(signum: libc::c_int) {
    // SAFETY: `__errno_location` returns this thread's errno, valid for the thread's life;
    // saved and restored so the interrupted code never sees the handler's `write` errors.
    let errno = unsafe { *libc::__errno_location() };
    if let Some(count) = usize::try_from(signum).ok().and_then(|s| DELIVERIES.get(s)) {
        count.fetch_add(1, Ordering::AcqRel);
    }
    let one: u64 = 1;
    for slot in &SLOTS {
        let fd = slot.fd.load(Ordering::Acquire);
        if fd >= 0 {
            // SAFETY: `fd` is an eventfd this module created and never closes (`Slot`
            // invariant); `one` is valid for reads of 8 bytes. A failed write (the counter
            // is saturated) loses nothing: the listeners read `DELIVERIES`.
            unsafe { libc::write(fd, (&raw const one).cast(), 8) };
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Installs the handler for `signum` if it is not installed yet. It replaces the default
/// action (for `SIGINT`, ending the process) for the rest of the process's life, as tokio's.
pub(crate) fn install(signum: usize) -> io::Result<()> {
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if installed[signum] {
        return Ok(());
    }
    // SAFETY: `sigaction` is plain old data; all-zero is a valid value, then filled in.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset to initialize.
    unsafe { libc::sigemptyset(&raw mut action.sa_mask) };
    let signum_c = libc::c_int::try_from(signum).map_err(io::Error::other)?;
    // SAFETY: `action` is fully initialized; its handler only does async-signal-safe work.
    if unsafe { libc::sigaction(signum_c, &raw const action, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    installed[signum] = true;
    Ok(())
}

/// A slot a runtime holds until it drops this; its eventfd becomes readable after deliveries.
#[derive(Debug)]
pub(crate) struct SlotLease {
    index: usize,
}

impl SlotLease {
    /// Takes a free slot, creating its eventfd the first time.
    pub(crate) fn acquire() -> io::Result<SlotLease> {
        for (index, slot) in SLOTS.iter().enumerate() {
            if slot
                .owned
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            if slot.fd.load(Ordering::Acquire) < 0 {
                // Blocking mode: the ring's read then waits in the kernel for a delivery.
                // SAFETY: eventfd(2) has no memory-safety preconditions; checked below.
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if fd < 0 {
                    slot.owned.store(false, Ordering::Release);
                    return Err(io::Error::last_os_error());
                }
                slot.fd.store(fd, Ordering::Release);
            }
            return Ok(SlotLease { index });
        }
        Err(io::Error::other(format!(
            "more than {RUNTIME_SLOTS} runtimes listen for signals at once"
        )))
    }

    /// A descriptor of the slot's eventfd for the ring to read (a duplicate: the original is
    /// never closed, the duplicate closes with the read request).
    pub(crate) fn eventfd(&self) -> io::Result<OwnedFd> {
        let raw = SLOTS[self.index].fd.load(Ordering::Acquire);
        // SAFETY: the slot's fd is a live eventfd that is never closed (`Slot` invariant),
        // so borrowing it for the duplicate is sound.
        let borrowed = unsafe { BorrowedFd::borrow_raw(raw) };
        borrowed.try_clone_to_owned()
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        SLOTS[self.index].owned.store(false, Ordering::Release);
    }
}
