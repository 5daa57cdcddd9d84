//! The stash's drained hint as the facade's two stream receives keep it: a receive that comes
//! back short of its buffer marks the socket drained (so the next one starts as a readiness
//! wait), a full one clears the mark.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream as StdStream;

use crate::io::ReadOwned;
use crate::net::Socket;

/// A facade socket over one end of a stream pair, and the other end.
fn pair() -> (Socket, StdStream) {
    let (ours, theirs) = StdStream::pair().expect("socketpair");
    (Socket::new(OwnedFd::from(ours), None), theirs)
}

#[test]
fn socket_reads_mark_the_stash_drained_when_short_and_clear_it_when_full() {
    let rt = crate::Runtime::new().expect("runtime");
    let (socket, mut peer) = pair();
    rt.block_on(async {
        peer.write_all(&[1; 3]).expect("write");
        let (got, _) = socket.read(Vec::with_capacity(8)).await;
        assert_eq!(got.expect("read"), 3);
        assert!(socket.stash().is_drained(), "3 of 8 bytes: drained");
        peer.write_all(&[2; 8]).expect("write");
        let (got, _) = socket.read(Vec::with_capacity(8)).await;
        assert_eq!(got.expect("read"), 8);
        assert!(
            !socket.stash().is_drained(),
            "8 of 8 bytes: maybe more queued"
        );
    });
}

#[test]
fn owned_reads_mark_the_stash_drained_when_short_and_clear_it_when_full() {
    let rt = crate::Runtime::new().expect("runtime");
    let (socket, mut peer) = pair();
    rt.block_on(async {
        peer.write_all(&[1; 3]).expect("write");
        let (got, _) = ReadOwned::new(socket.ring_start(), Vec::with_capacity(8)).await;
        assert_eq!(got.expect("read"), 3);
        assert!(socket.stash().is_drained(), "3 of 8 bytes: drained");
        peer.write_all(&[2; 8]).expect("write");
        let (got, _) = ReadOwned::new(socket.ring_start(), Vec::with_capacity(8)).await;
        assert_eq!(got.expect("read"), 8);
        assert!(
            !socket.stash().is_drained(),
            "8 of 8 bytes: maybe more queued"
        );
    });
}
