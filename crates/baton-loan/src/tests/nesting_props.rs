//! Property test: random trees of nested `block_on` calls over two runtimes on one thread.
//! Every frame borrows its runtime's worker (`ThreadRole::Root`), every spawned task runs on the
//! calling thread, and every frame's output arrives.

use std::sync::{Arc, mpsc};
use std::thread::{self, ThreadId};
use std::time::Duration;

use proptest::prelude::*;

use crate::tests::support::{TestHandle, YieldNow, runtime};
use crate::{Loan, ThreadRole};

/// One `block_on` frame: which runtime, how often its root yields, and the frames nested in it.
#[derive(Debug, Clone)]
struct Node {
    runtime: usize,
    yields: usize,
    children: Vec<Node>,
}

impl Node {
    fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = (0..2usize, 0..3usize).prop_map(|(runtime, yields)| Node {
        runtime,
        yields,
        children: Vec::new(),
    });
    leaf.prop_recursive(4, 24, 3, |inner| {
        (0..2usize, 0..3usize, prop::collection::vec(inner, 0..3)).prop_map(
            |(runtime, yields, children)| Node {
                runtime,
                yields,
                children,
            },
        )
    })
}

type Runtime = (Arc<Loan>, TestHandle);

/// Runs `node` and its children; returns (frames run, all checks held).
fn run(runtimes: &[Runtime; 2], node: &Node, caller: ThreadId) -> (usize, bool) {
    let (loan, handle) = &runtimes[node.runtime];
    loan.block_on(async {
        let join = handle.spawn(async { thread::current().id() });
        let mut frames = 1;
        let mut held = loan.thread_role() == ThreadRole::Root;
        for child in &node.children {
            YieldNow { times: node.yields }.await;
            let (child_frames, child_held) = run(runtimes, child, caller);
            frames += child_frames;
            held &= child_held;
        }
        held &= join.await == caller;
        (frames, held)
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        max_shrink_iters: 8,
        ..ProptestConfig::default()
    })]

    #[test]
    fn prop_nested_block_on_trees_borrow_at_every_level(tree in node()) {
        let expected = tree.count();
        // A frame that wrongly falls back deadlocks on its own join; the watchdog turns that
        // hang into a failure.
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let runtimes = [runtime(), runtime()];
            let (frames, held) = run(&runtimes, &tree, thread::current().id());
            let quiet = runtimes.iter().all(|(loan, _)| {
                loan.thread_role() == ThreadRole::Outside && loan.active_roots() == 0
            });
            let _sent = tx.send((frames, held, quiet));
        });
        let (frames, held, quiet) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the tree finished without hanging");
        prop_assert_eq!(frames, expected);
        prop_assert!(held, "a frame fell back or a task ran off the calling thread");
        prop_assert!(quiet, "a runtime still shows a frame or an active root");
    }
}
