//! Property: random sequences of `read`, `read_exact`, `append` and sliced reads over a
//! `UnixStream` pair never lose, duplicate or misplace a byte — checked against a model of the
//! bytes sent, and of what each buffer must hold afterwards.

use std::io;

use baton::io::{AsyncReadExt, IoBuf};
use baton::net::UnixStream;
use proptest::prelude::*;

/// One read the property makes, with the sizes that shape it.
#[derive(Debug, Clone)]
enum ReadOp {
    /// A plain read into a fresh buffer of this capacity, pre-filled to `prefix` bytes.
    Read { capacity: usize, prefix: usize },
    /// `read_exact` into a buffer of this capacity.
    Exact { capacity: usize },
    /// `append` after `prefix` bytes of a buffer of this capacity.
    Append { capacity: usize, prefix: usize },
    /// A read into `begin..end` of a buffer of this capacity holding `prefix` bytes.
    Sliced {
        capacity: usize,
        prefix: usize,
        begin: usize,
        end: usize,
    },
}

fn read_op() -> impl Strategy<Value = ReadOp> {
    prop_oneof![
        (1usize..64, 0usize..64).prop_map(|(capacity, prefix)| ReadOp::Read {
            capacity,
            prefix: prefix.min(capacity),
        }),
        (1usize..48).prop_map(|capacity| ReadOp::Exact { capacity }),
        (2usize..64, 0usize..63).prop_map(|(capacity, prefix)| ReadOp::Append {
            capacity,
            prefix: prefix.min(capacity - 1),
        }),
        (1usize..64, 0usize..64, 0usize..64, 0usize..64).prop_map(|(capacity, prefix, a, b)| {
            let (begin, end) = (a.min(b) % capacity, a.max(b) % capacity + 1);
            let (begin, end) = if begin < end {
                (begin, end)
            } else {
                (0, capacity)
            };
            ReadOp::Sliced {
                capacity,
                prefix: prefix.min(capacity),
                begin,
                end,
            }
        }),
    ]
}

/// A buffer of `capacity` whose first `prefix` bytes are `0xAA`.
fn prefixed(capacity: usize, prefix: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(capacity);
    buf.resize(prefix, 0xAA);
    buf
}

/// Runs `ops` against a peer that sent `sent`, checking each result; returns every byte read.
async fn run(ops: Vec<ReadOp>, stream: &UnixStream, sent: &[u8]) -> io::Result<Vec<u8>> {
    let mut stream = stream;
    let mut got: Vec<u8> = Vec::new();
    for op in ops {
        let left = sent.len() - got.len();
        match op {
            ReadOp::Read { capacity, prefix } => {
                let (n, buf) = stream.read(prefixed(capacity, prefix)).await;
                let n = n?;
                assert!(n >= 1 || left == 0, "a read returned 0 with bytes left");
                assert_eq!(buf.len(), n, "the length is exactly the count");
                assert!(buf.capacity() >= capacity);
                got.extend_from_slice(&buf);
            }
            ReadOp::Exact { capacity } if capacity <= left => {
                let (res, buf) = stream.read_exact(Vec::with_capacity(capacity)).await;
                res?;
                assert_eq!(buf.len(), capacity, "read_exact fills the capacity");
                got.extend_from_slice(&buf);
            }
            ReadOp::Exact { .. } => {}
            ReadOp::Append { capacity, prefix } => {
                let (n, buf) = stream.append(prefixed(capacity, prefix)).await;
                let n = n?;
                assert_eq!(buf.len(), prefix + n);
                assert!(
                    buf[..prefix].iter().all(|&b| b == 0xAA),
                    "the contents are kept"
                );
                got.extend_from_slice(&buf[prefix..]);
            }
            ReadOp::Sliced {
                capacity,
                prefix,
                begin,
                end,
            } => {
                let (n, slice) = stream
                    .read(prefixed(capacity, prefix).slice(begin..end))
                    .await;
                let n = n?;
                assert!(n <= end - begin, "a read stays in its slice");
                let buf = slice.into_inner();
                let kept = prefix.min(begin);
                assert!(
                    buf[..kept].iter().all(|&b| b == 0xAA),
                    "bytes before the slice stay"
                );
                assert!(buf.len() >= begin + n, "the read bytes are initialized");
                if prefix <= end {
                    assert_eq!(buf.len(), begin + n, "exactly the count, within the slice");
                } else {
                    assert_eq!(buf.len(), prefix, "data past the slice is kept");
                }
                got.extend_from_slice(&buf[begin..begin + n]);
            }
        }
    }
    Ok(got)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn prop_reads_over_a_stream_never_lose_duplicate_or_misplace_a_byte(
        ops in proptest::collection::vec(read_op(), 1..40),
    ) {
        let rt = baton::Runtime::new().expect("runtime");
        let sent: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        let peer = {
            let sent = sent.clone();
            std::thread::spawn(move || std::io::Write::write_all(&mut theirs, &sent))
        };
        let got = rt.block_on(async {
            let stream = UnixStream::from_std(ours)?;
            run(ops, &stream, &sent).await
        }).expect("the reads succeed");
        prop_assert!(got[..] == sent[..got.len()], "the bytes read are the bytes sent, in order");
        drop(rt);
        peer.join().expect("peer").ok();
    }
}
