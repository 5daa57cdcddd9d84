//! What a contender is asked to do in one run: the job descriptions handed to
//! [`Contender`](crate::contenders::Contender) methods.
//!
//! Every job is a bounded amount of work (an operation count, never a duration), so every run
//! stops by itself.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use hyper::body::Bytes;

use crate::echo_client::EchoClient;
use crate::fixture::{BLOCK, FileFixture, Offsets};
use crate::http_client::HttpClient;
use crate::sample::{Meter, Sample, expect_count};

/// Which direction a file workload moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileOp {
    /// `pread` of one 4 KiB block.
    Read,
    /// `pwrite` of one 4 KiB block (no sync: the page cache absorbs it).
    Write,
}

/// 4 KiB random reads or writes at a queue depth.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileJob<'a> {
    /// Read or write.
    pub(crate) op: FileOp,
    /// Operations kept in flight at once: the raw loop keeps this many SQEs submitted; an async
    /// runtime runs this many concurrent tasks ("lanes"), each doing its share sequentially.
    pub(crate) depth: usize,
    /// Operations in the timed window, all lanes together.
    pub(crate) ops: u64,
    /// Seed of the offset streams (lane `i` uses [`FileJob::lane_offsets`]).
    pub(crate) seed: u64,
    /// The page-cached data file.
    pub(crate) file: &'a FileFixture,
}

impl FileJob<'_> {
    /// How many operations lane `lane` (0-based, below `depth`) performs; the lanes add up to
    /// exactly `ops`.
    pub(crate) fn lane_ops(&self, lane: usize) -> u64 {
        lane_share(self.ops, self.depth, lane)
    }

    /// Lane `lane`'s own seeded offset stream.
    pub(crate) fn lane_offsets(&self, lane: usize) -> Offsets {
        let salt = (lane as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Offsets::new(self.seed ^ salt, self.file.blocks())
    }

    /// One offset stream for a loop that is not split into lanes (the raw ring loop).
    pub(crate) fn offsets(&self) -> Offsets {
        Offsets::new(self.seed, self.file.blocks())
    }

    /// A fresh 4 KiB buffer: zeroes for reads, a byte pattern for writes.
    pub(crate) fn buffer(&self) -> Vec<u8> {
        match self.op {
            FileOp::Read => vec![0; BLOCK],
            FileOp::Write => vec![0xA5; BLOCK],
        }
    }
}

/// Lane `lane`'s share of `total` operations split over `lanes` lanes, as even as possible.
fn lane_share(total: u64, lanes: usize, lane: usize) -> u64 {
    let lanes = lanes.max(1) as u64;
    total / lanes + u64::from((lane as u64) < total % lanes)
}

/// Every echo server reads into a buffer of this many bytes (larger than any message).
pub(crate) const SERVER_BUFFER: usize = 16 * 1024;

/// TCP echo over loopback: the contender is the server, the harness's blocking client the load.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EchoJob {
    /// Concurrent client connections; the server must accept exactly this many.
    pub(crate) connections: usize,
    /// Bytes per message (each message is echoed back in full before the next on its
    /// connection).
    pub(crate) message_len: usize,
    /// Timed rounds; one round sends one message on every connection and reads every echo.
    pub(crate) rounds: u64,
}

impl EchoJob {
    /// Messages echoed in the timed window.
    pub(crate) fn ops(&self) -> u64 {
        self.rounds * self.connections as u64
    }

    /// Starts the client thread against a server listening on `addr` (call it after binding,
    /// before accepting). It makes exactly [`EchoJob::connections`] connections, runs its rounds,
    /// closes every connection (the server's cue to finish) and reports the timed sample.
    pub(crate) fn spawn_client(&self, addr: SocketAddr) -> io::Result<EchoClient> {
        EchoClient::spawn(*self, addr)
    }
}

/// What every response of an HTTP row carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpBody {
    /// [`JSON_BODY`] at `/json`, `application/json`.
    Json,
    /// A `len`-byte file at `/file`, served from memory (generated once per run, before the
    /// timed window, as a server would read a small static file once at start).
    File {
        /// Body length in bytes.
        len: usize,
    },
}

/// The `/json` body: TechEmpower's "JSON serialization" message, pre-serialised.
pub(crate) const JSON_BODY: &[u8] = br#"{"message":"Hello, World!"}"#;

impl HttpBody {
    /// The request path the server answers with this body (anything else is a 404).
    pub(crate) fn path(&self) -> &'static str {
        match self {
            Self::Json => "/json",
            Self::File { .. } => "/file",
        }
    }

    /// The response's `Content-Type`.
    pub(crate) fn content_type(&self) -> &'static str {
        match self {
            Self::Json => "application/json",
            Self::File { .. } => "application/octet-stream",
        }
    }

    /// The body's bytes: the JSON message, or a deterministic pattern whose period (251, a
    /// prime) divides no buffer size, so a misplaced chunk fails the client's byte comparison.
    pub(crate) fn bytes(&self) -> Bytes {
        match self {
            Self::Json => Bytes::from_static(JSON_BODY),
            Self::File { len } => (0..*len).map(|i| (i % 251) as u8).collect(),
        }
    }
}

/// HTTP/1.1 over loopback through hyper: the contender serves, the harness's load generator
/// ([`HttpClient`]) asks and checks.
#[derive(Debug, Clone)]
pub(crate) struct HttpJob {
    /// Keep-alive client connections; the server must accept exactly this many.
    pub(crate) connections: usize,
    /// Timed rounds; one round sends one request on every connection and reads every response
    /// (so `connections` requests are in flight at once, none pipelined on a connection).
    pub(crate) rounds: u64,
    /// What is asked for and answered.
    pub(crate) body: HttpBody,
    /// The body every response carries; the server sends it, the client compares against it.
    pub(crate) payload: Bytes,
}

impl HttpJob {
    /// A job of `rounds` rounds on `connections` connections, with its payload built now.
    pub(crate) fn new(body: HttpBody, connections: usize, rounds: u64) -> Self {
        Self {
            connections,
            rounds,
            body,
            payload: body.bytes(),
        }
    }

    /// Requests answered in the timed window.
    pub(crate) fn ops(&self) -> u64 {
        self.rounds * self.connections as u64
    }

    /// Starts the load generator against a server listening on `addr` (call it after binding,
    /// before accepting); see [`crate::http_client`] for what it does and checks.
    pub(crate) fn spawn_client(&self, addr: SocketAddr) -> io::Result<HttpClient> {
        HttpClient::spawn(self.clone(), addr)
    }
}

/// A bare count: tasks to spawn and join, `block_on` calls, or blocking jobs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CountJob {
    /// Total operations in the timed window.
    pub(crate) count: u64,
    /// Spawned work is issued in batches of at most this many, each joined before the next, so
    /// memory stays flat and no runtime is measured on its behaviour with a million live tasks.
    pub(crate) batch: u64,
}

impl CountJob {
    /// The sum of `0..count` (wrapping), which a `block_on` loop returning each index must
    /// reproduce.
    pub(crate) fn sum_below(&self) -> u64 {
        (0..self.count).fold(0_u64, u64::wrapping_add)
    }

    /// The batch sizes in order; they add up to `count`.
    pub(crate) fn batches(&self) -> impl Iterator<Item = u64> + use<> {
        let batch = self.batch.max(1);
        let count = self.count;
        (0..count.div_ceil(batch)).map(move |i| batch.min(count - i * batch))
    }

    /// The spawn + join loop every runtime runs the same way, so only the spawn differs:
    /// `spawn(i)` starts one unit of work returning `i` and hands back its join future; a batch
    /// is spawned in full before any of it is joined. The timed window covers spawning and
    /// joining only, and `what` names the count that is checked at the end.
    pub(crate) async fn join_batches<J>(
        &self,
        what: &str,
        mut spawn: impl FnMut(u64) -> J,
    ) -> io::Result<Sample>
    where
        J: Future<Output = io::Result<u64>>,
    {
        let mut joins = Vec::with_capacity(self.batch as usize);
        let mut joined = 0_u64;
        let meter = Meter::start();
        for size in self.batches() {
            joins.extend((0..size).map(&mut spawn));
            for join in joins.drain(..) {
                joined += u64::from(join.await? < size);
            }
        }
        expect_count(what, joined, self.count)?;
        Ok(meter.finish(self.count))
    }

    /// `count` calls of `block_on(i)`, each driving a ready future that returns `i`; the sum is
    /// checked so no call can be skipped.
    pub(crate) fn block_on_loop(&self, mut block_on: impl FnMut(u64) -> u64) -> io::Result<Sample> {
        let meter = Meter::start();
        let mut sum = 0_u64;
        for i in 0..self.count {
            sum = sum.wrapping_add(block_on(i));
        }
        let sample = meter.finish(self.count);
        expect_count("block_on sum", sum, self.sum_below())?;
        Ok(sample)
    }
}

/// Sequential 4 KiB reads whose futures are polled by a thread that does not run the runtime.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ForeignJob<'a> {
    /// Reads in the timed window (one at a time).
    pub(crate) ops: u64,
    /// Seed of the offset stream.
    pub(crate) seed: u64,
    /// The page-cached data file.
    pub(crate) file: &'a FileFixture,
}

impl ForeignJob<'_> {
    /// The offset stream.
    pub(crate) fn offsets(&self) -> Offsets {
        Offsets::new(self.seed, self.file.blocks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_shares_add_up_and_differ_by_at_most_one() {
        for (total, lanes) in [(1000, 32), (7, 128), (128, 128), (100_000, 1)] {
            let shares: Vec<u64> = (0..lanes).map(|l| lane_share(total, lanes, l)).collect();
            assert_eq!(shares.iter().sum::<u64>(), total);
            let (lo, hi) = (shares.iter().min(), shares.iter().max());
            assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1));
        }
    }

    #[test]
    fn batches_add_up_to_the_count() {
        let job = CountJob {
            count: 2_500,
            batch: 1_000,
        };
        assert_eq!(job.batches().collect::<Vec<_>>(), vec![1_000, 1_000, 500]);
        let empty = CountJob { count: 0, batch: 7 };
        assert_eq!(empty.batches().count(), 0);
    }

    #[test]
    fn http_payloads_have_their_lengths_and_paths() {
        let file = HttpJob::new(HttpBody::File { len: 12 * 1024 }, 64, 3);
        assert_eq!(file.payload.len(), 12 * 1024);
        assert_eq!(file.payload[251], 0);
        assert_eq!(file.ops(), 192);
        assert_eq!(HttpBody::Json.bytes(), JSON_BODY);
        assert_ne!(HttpBody::Json.path(), file.body.path());
    }

    #[test]
    fn echo_ops_count_every_message() {
        let job = EchoJob {
            connections: 64,
            message_len: 64,
            rounds: 10,
        };
        assert_eq!(job.ops(), 640);
    }
}
