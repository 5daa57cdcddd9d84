//! Tests of `inbox.rs`.

use std::sync::Arc as StdArc;
use std::sync::atomic::AtomicUsize;

use std::sync::Arc;
use std::sync::atomic::Ordering as StdOrdering;

use baton_completion::{
    CompletionIdentity, CompletionKind, CompletionSender, DeliveryOutcome, ExternalCompletion,
    IdentityAllocator, RuntimeId,
};

use crate::handle::Unparker;
use crate::inbox::*;
use crate::mailbox::Mailbox;

/// Counts its drops.
struct Counted(StdArc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, StdOrdering::Relaxed);
    }
}

fn completion(drops: &StdArc<AtomicUsize>) -> ExternalCompletion {
    let runtime = RuntimeId::allocate().expect("runtime id");
    let allocator = IdentityAllocator::new(runtime);
    let slot = allocator.allocate_wait().expect("wait id");
    let identity = CompletionIdentity {
        runtime_id: runtime,
        wait_id: slot.wait_id(),
        generation: slot.generation(),
        operation_id: allocator.allocate_operation().expect("operation id"),
        kind: CompletionKind::try_from_raw(1).expect("non-zero kind"),
    };
    ExternalCompletion::new(identity, Ok(Box::new(Counted(StdArc::clone(drops)))))
}

/// One delivery racing the model's thread: the worker's mailbox, both ends of its inbox, the
/// completion's drop count, and the thread delivering that completion.
struct Race {
    shared: crate::sync::Arc<Mailbox>,
    sender: Arc<InboxSender>,
    receiver: InboxReceiver,
    drops: StdArc<AtomicUsize>,
    delivering: loom::thread::JoinHandle<DeliveryOutcome>,
}

impl Race {
    fn start() -> Race {
        let shared = Mailbox::new(1, None);
        let (sender, receiver) = inbox(Unparker::new(shared.clone()));
        let drops = StdArc::new(AtomicUsize::new(0));
        let delivering = {
            let sender = Arc::clone(&sender);
            let completion = completion(&drops);
            loom::thread::spawn(move || sender.deliver(completion))
        };
        Race {
            shared,
            sender,
            receiver,
            drops,
            delivering,
        }
    }
}

/// Inbox rules I1 and I2: a delivery racing closure is either accepted — then the worker's
/// final drain after closing finds it, and the worker was unparked — or refused with
/// `InboxClosed` and its payload dropped. Never accepted and lost, never both.
#[test]
fn loom_delivery_racing_closure_is_drained_or_refused() {
    loom::model(|| {
        let Race {
            shared,
            sender,
            receiver,
            drops,
            delivering,
        } = Race::start();
        sender.close();
        let mut drained = 0;
        loop {
            match receiver.next() {
                Received::Completion(completion) => {
                    drained += 1;
                    drop(completion);
                }
                Received::Finished => break,
                Received::Empty => panic!("a closed inbox reports Finished once drained"),
            }
        }
        let outcome = delivering.join().expect("delivering thread");
        match outcome {
            DeliveryOutcome::Delivered => {
                assert_eq!(drained, 1, "an accepted completion reaches the final drain");
                assert!(shared.take_notified(), "an accepted completion unparks");
            }
            DeliveryOutcome::InboxClosed => assert_eq!(drained, 0),
        }
        assert_eq!(drops.load(StdOrdering::Relaxed), 1);
        assert_eq!(sender.traffic().accepted + sender.traffic().refused, 1);
    });
}

/// Inbox rule I2 against the worker's park protocol (look at the inbox, then take the unpark
/// token, and block only when both were empty): a delivery racing two such rounds always
/// leaves either a completion to drain or a token that ends the block. No lost wake-up.
#[test]
fn loom_delivery_wakes_a_parking_worker() {
    loom::model(|| {
        let Race {
            shared,
            sender: _sender,
            receiver,
            drops: _drops,
            delivering,
        } = Race::start();
        let mut drained = 0;
        let mut blocked = false;
        for _ in 0..2 {
            if let Received::Completion(completion) = receiver.next() {
                drained += 1;
                drop(completion);
            } else if !shared.take_notified() {
                blocked = true;
                break;
            }
        }
        let outcome = delivering.join().expect("delivering thread");
        assert_eq!(outcome, DeliveryOutcome::Delivered);
        if blocked {
            assert!(
                shared.take_notified(),
                "the worker blocked with the completion undrained and no token to end it"
            );
        }
        while let Received::Completion(completion) = receiver.next() {
            drained += 1;
            drop(completion);
        }
        assert_eq!(drained, 1);
    });
}
