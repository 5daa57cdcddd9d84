//! Counts the handle polls `JoinSet` makes, to check that joining is linear: each member's
//! handle is polled once when it joins the set and once when its completion is joined, however
//! many members are still running.

use super::JoinSet;
use crate::task::yield_now;

/// Spawns `n` tasks that each yield a different number of times (so they finish out of spawn
/// order and wake the set many times), joins them all, and returns the handle polls made.
fn handle_polls_to_join(n: usize) -> usize {
    let rt = crate::Runtime::new().expect("a runtime with default settings builds");
    rt.block_on(async {
        let mut set = JoinSet::new();
        for i in 0..n {
            set.spawn(async move {
                for _ in 0..(i * 7919) % 13 {
                    yield_now().await;
                }
                i
            });
        }
        let mut seen = vec![false; n];
        while let Some(result) = set.join_next().await {
            let i = result.expect("the task neither panics nor is aborted");
            assert!(!seen[i], "task {i} was joined twice");
            seen[i] = true;
        }
        assert!(seen.iter().all(|&joined| joined), "every task is joined");
        set.handle_polls
    })
}

#[test]
fn joining_tasks_polls_each_handle_at_most_twice() {
    for n in [1, 100, 10_000] {
        let polls = handle_polls_to_join(n);
        assert!(
            polls <= 2 * n,
            "joining {n} tasks polled handles {polls} times; at most {} expected",
            2 * n
        );
    }
}

#[test]
fn try_join_next_polls_only_finished_members() {
    let rt = crate::Runtime::new().expect("a runtime with default settings builds");
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..1000 {
            set.spawn(std::future::pending::<()>());
        }
        set.spawn(async {});
        let after_spawns = set.handle_polls;
        assert_eq!(after_spawns, 1001, "one registration poll per member");
        let mut joined = None;
        while joined.is_none() {
            yield_now().await;
            joined = set.try_join_next();
        }
        assert!(matches!(joined, Some(Ok(()))));
        assert_eq!(
            set.handle_polls - after_spawns,
            1,
            "only the finished member was polled, not the 1000 pending ones"
        );
        assert_eq!(set.len(), 1000);
    });
}
