//! A runtime's side of the blocking pool: a channel-backed completion inbox and a registrar and
//! wait table wired to it. One file for every test that plays a runtime against a real pool:
//! this crate's end-to-end test (through `support`), its `pool_round_trip` example and the
//! workspace tests' `baton_tests::pool` (both include this file by path).

use std::sync::Arc;

use baton_completion::{
    BlockingPool, CompletionKind, CompletionSender, DeliveryOutcome, ExecutorLease,
    ExternalCompletion, IdentityAllocator, IoExecutor, Registrar, RuntimeId, WaitTable,
};
use crossbeam_channel::{Receiver, Sender};

/// The runtime's inbox: a channel its thread drains.
#[derive(Debug)]
pub struct ChannelInbox(pub Sender<ExternalCompletion>);

impl CompletionSender for ChannelInbox {
    fn deliver(&self, completion: ExternalCompletion) -> DeliveryOutcome {
        match self.0.send(completion) {
            Ok(()) => DeliveryOutcome::Delivered,
            Err(_) => DeliveryOutcome::InboxClosed,
        }
    }
}

/// One runtime's side of the blocking pool, wired the way a runtime wires it: a registrar of a
/// fresh runtime id delivering to a [`ChannelInbox`], the wait table of the same id, and the
/// inbox's receiving end.
#[derive(Debug)]
pub struct ChannelRuntime {
    /// Issues and binds identities; its `runtime_id()` is what to attach to a pool.
    pub registrar: Registrar,
    /// Where waits are registered and settled.
    pub table: WaitTable,
    /// The completions the pool delivered.
    pub inbox: Receiver<ExternalCompletion>,
}

impl ChannelRuntime {
    /// Allocates a fresh runtime id and wires its registrar, table and inbox.
    pub fn fresh() -> ChannelRuntime {
        let runtime = RuntimeId::allocate().expect("ids available");
        let allocator = IdentityAllocator::new(runtime);
        let (tx, rx) = crossbeam_channel::unbounded();
        ChannelRuntime {
            registrar: Registrar::new(Arc::clone(&allocator), Arc::new(ChannelInbox(tx))),
            table: WaitTable::new(allocator),
            inbox: rx,
        }
    }
}

/// A [`ChannelRuntime`] attached to a pool: what a runtime needs to submit jobs of one kind
/// and settle their completions.
#[derive(Debug)]
pub struct PoolRuntime {
    /// Issues and binds identities of the runtime's fresh id.
    pub registrar: Registrar,
    /// Where waits are registered and settled.
    pub table: WaitTable,
    /// The completions the pool delivered.
    pub inbox: Receiver<ExternalCompletion>,
    /// The runtime's lease on the pool.
    pub lease: Arc<dyn ExecutorLease>,
    /// The kind every job of this runtime carries.
    pub kind: CompletionKind,
}

impl PoolRuntime {
    /// A [`ChannelRuntime::fresh`] runtime attached to `pool`, its jobs of kind `kind`.
    pub fn attach(pool: &BlockingPool, kind: CompletionKind) -> PoolRuntime {
        let ChannelRuntime {
            registrar,
            table,
            inbox,
        } = ChannelRuntime::fresh();
        PoolRuntime {
            lease: (pool.attach_runtime(registrar.runtime_id()))
                .expect("a fresh runtime id attaches"),
            registrar,
            table,
            inbox,
            kind,
        }
    }
}
