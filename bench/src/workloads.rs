//! The workload catalog: what is measured, how much work one run does, and which column each
//! workload's ratios are taken against.

use crate::contenders::{Contender, RAW, TOKIO};
use crate::fixture::FileFixture;
use crate::jobs::{CountJob, EchoJob, FileJob, FileOp, ForeignJob, HttpBody, HttpJob};
use crate::sample::Outcome;

/// Spawned tasks and blocking jobs are issued in batches of this many, each joined before the
/// next.
const BATCH: u64 = 1_000;

/// Keep-alive connections of every HTTP row.
pub(crate) const HTTP_CONNECTIONS: usize = 64;

/// One row of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    /// 4 KiB random reads or writes on the page-cached file at a queue depth.
    File {
        /// Read or write.
        op: FileOp,
        /// Operations in flight.
        depth: usize,
    },
    /// TCP echo over loopback.
    Echo {
        /// Client connections.
        connections: usize,
        /// Bytes per message.
        message_len: usize,
    },
    /// HTTP/1.1 requests through hyper on keep-alive connections.
    Http {
        /// What every response carries.
        body: HttpBody,
    },
    /// Spawn and join tiny tasks.
    SpawnJoin,
    /// Spawn and join tiny thread-local (`!Send`) tasks.
    SpawnLocalJoin,
    /// `block_on` of a ready future.
    BlockOn,
    /// Tiny jobs on the blocking pool.
    Blocking,
    /// Read futures polled from a thread that does not run the runtime.
    ForeignPoll,
}

/// Operation counts for one run, per size of run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    /// `--quick`: about a fifth of the full counts.
    Quick,
    /// The default.
    Full,
}

impl Workload {
    /// The row label.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::File { op, depth } => {
                let verb = match op {
                    FileOp::Read => "read",
                    FileOp::Write => "write",
                };
                format!("file {verb} 4 KiB, QD {depth}")
            }
            Self::Echo {
                connections,
                message_len,
            } => {
                let conns = if *connections == 1 { "conn" } else { "conns" };
                let size = if message_len % 1024 == 0 {
                    format!("{} KiB", message_len / 1024)
                } else {
                    format!("{message_len} B")
                };
                format!("TCP echo {connections} {conns}, {size}")
            }
            Self::Http { body } => {
                let what = match body {
                    HttpBody::Json => "JSON".to_string(),
                    HttpBody::File { len } if len % (1024 * 1024) == 0 => {
                        format!("{} MiB file", len / (1024 * 1024))
                    }
                    HttpBody::File { len } => format!("{} KiB file", len / 1024),
                };
                format!("hyper http/1.1 {HTTP_CONNECTIONS} conns, {what}")
            }
            Self::SpawnJoin => "spawn + join tiny task".into(),
            Self::SpawnLocalJoin => "spawn_local + join tiny task".into(),
            Self::BlockOn => "block_on round trip".into(),
            Self::Blocking => "blocking job".into(),
            Self::ForeignPoll => "read polled from foreign thread".into(),
        }
    }

    /// What one counted operation is.
    pub(crate) fn unit(&self) -> &'static str {
        match self {
            Self::File { .. } | Self::ForeignPoll => "ops/s",
            Self::Echo { .. } => "msgs/s",
            Self::Http { .. } => "req/s",
            Self::SpawnJoin | Self::SpawnLocalJoin => "tasks/s",
            Self::BlockOn => "calls/s",
            Self::Blocking => "jobs/s",
        }
    }

    /// The column whose median is 1.00× in this row.
    pub(crate) fn reference(&self) -> &'static str {
        match self {
            Self::File { .. } => RAW,
            _ => TOKIO,
        }
    }

    /// Operations in one run.
    pub(crate) fn ops(&self, size: Size) -> u64 {
        let full = match self {
            Self::File {
                op: FileOp::Read, ..
            } => 100_000,
            // Buffered writes cost the kernel ten times a read (page dirtying, journaled
            // timestamps), so fewer of them keep the full run within about ten minutes.
            Self::File {
                op: FileOp::Write, ..
            } => 40_000,
            Self::Echo { connections, .. } => {
                if *connections == 1 {
                    20_000
                } else {
                    1_000 * *connections as u64
                }
            }
            // Whole rounds of 64 requests at either size: about a second per run each.
            Self::Http {
                body: HttpBody::Json,
            } => 1_600 * HTTP_CONNECTIONS as u64,
            Self::Http {
                body: HttpBody::File { len },
            } => {
                if *len > 64 * 1024 {
                    50 * HTTP_CONNECTIONS as u64
                } else {
                    1_000 * HTTP_CONNECTIONS as u64
                }
            }
            Self::SpawnJoin | Self::SpawnLocalJoin => 1_000_000,
            Self::BlockOn => 500_000,
            Self::Blocking => 100_000,
            Self::ForeignPoll => 50_000,
        };
        match size {
            Size::Full => full,
            Size::Quick => full / 5,
        }
    }

    /// Runs `ops` operations of this workload once on `contender` (for echo and HTTP rows,
    /// `ops` is rounded down to whole rounds); `seed` is shared by every contender in a round.
    pub(crate) fn run(
        &self,
        contender: &mut dyn Contender,
        ops: u64,
        seed: u64,
        file: &FileFixture,
    ) -> Outcome {
        let count = CountJob {
            count: ops,
            batch: BATCH,
        };
        match *self {
            Self::File { op, depth } => contender.file_io(&FileJob {
                op,
                depth,
                ops,
                seed,
                file,
            }),
            Self::Echo {
                connections,
                message_len,
            } => contender.tcp_echo(&EchoJob {
                connections,
                message_len,
                rounds: ops / connections as u64,
            }),
            Self::Http { body } => contender.http(&HttpJob::new(
                body,
                HTTP_CONNECTIONS,
                ops / HTTP_CONNECTIONS as u64,
            )),
            Self::SpawnJoin => contender.spawn_join(&count),
            Self::SpawnLocalJoin => contender.spawn_local_join(&count),
            Self::BlockOn => contender.block_on_round_trip(&count),
            Self::Blocking => contender.blocking_jobs(&count),
            Self::ForeignPoll => contender.foreign_poll(&ForeignJob { ops, seed, file }),
        }
    }
}

/// Every workload in report order.
pub(crate) fn catalog() -> Vec<Workload> {
    let mut all = Vec::new();
    for op in [FileOp::Read, FileOp::Write] {
        for depth in [1, 32, 128] {
            all.push(Workload::File { op, depth });
        }
    }
    for connections in [1, 64] {
        for message_len in [64, 4096] {
            all.push(Workload::Echo {
                connections,
                message_len,
            });
        }
    }
    for body in [
        HttpBody::Json,
        HttpBody::File { len: 12 * 1024 },
        HttpBody::File { len: 1024 * 1024 },
    ] {
        all.push(Workload::Http { body });
    }
    all.extend([
        Workload::SpawnJoin,
        Workload::SpawnLocalJoin,
        Workload::BlockOn,
        Workload::Blocking,
        Workload::ForeignPoll,
    ]);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_covers_every_required_workload_once() {
        let all = catalog();
        assert_eq!(all.len(), 6 + 4 + 3 + 5);
        let labels: std::collections::HashSet<String> = all.iter().map(Workload::label).collect();
        assert_eq!(labels.len(), all.len(), "labels must be unique");
        assert!(labels.contains("file read 4 KiB, QD 128"));
        assert!(labels.contains("TCP echo 64 conns, 4 KiB"));
        assert!(labels.contains("TCP echo 1 conn, 64 B"));
        assert!(labels.contains("hyper http/1.1 64 conns, JSON"));
        assert!(labels.contains("hyper http/1.1 64 conns, 12 KiB file"));
        assert!(labels.contains("hyper http/1.1 64 conns, 1 MiB file"));
    }

    #[test]
    fn quick_runs_do_less_work_but_whole_echo_and_http_rounds() {
        for w in catalog() {
            assert!(w.ops(Size::Quick) < w.ops(Size::Full));
            assert!(w.ops(Size::Quick) > 0);
            let connections = match w {
                Workload::Echo { connections, .. } => connections,
                Workload::Http { .. } => HTTP_CONNECTIONS,
                _ => 1,
            };
            assert_eq!(w.ops(Size::Quick) % connections as u64, 0, "{}", w.label());
        }
    }

    #[test]
    fn file_rows_compare_against_the_raw_loop() {
        for w in catalog() {
            let expected = if matches!(w, Workload::File { .. }) {
                RAW
            } else {
                TOKIO
            };
            assert_eq!(w.reference(), expected, "{}", w.label());
        }
    }
}
