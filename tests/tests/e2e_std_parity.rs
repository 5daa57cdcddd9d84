//! End to end: inputs where Baton once answered differently from std, each given to both. The
//! same input must give the same result: `Ok` against `Ok` (with the same data and cursor), or
//! the same `ErrorKind` — and never a hang.

use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::time::Duration;

use baton::io::{AsyncReadExt, AsyncWrite};
use baton_tests::runtime_with_scratch;

#[test]
fn a_unix_socket_path_with_a_nul_byte_is_invalid_input_and_binds_nothing() -> io::Result<()> {
    let (_rt, scratch) = runtime_with_scratch("unix-nul")?;
    let std = std::os::unix::net::UnixListener::bind(scratch.join("s\0tail")).map(drop);
    let ours = baton::net::UnixListener::bind(scratch.join("b\0tail")).map(drop);
    assert_eq!(std.map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    assert_eq!(ours.map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    assert!(
        !scratch.join("b").exists(),
        "the path's prefix before the NUL was bound"
    );
    let leading = baton::net::UnixListener::bind("\0abstract").map(drop);
    assert_eq!(leading.map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    Ok(())
}

#[test]
fn connecting_to_an_empty_unix_path_is_invalid_input() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let std = std::os::unix::net::UnixStream::connect("").map(drop);
    let ours = rt.block_on(async { baton::net::UnixStream::connect("").await.map(drop) });
    assert_eq!(std.map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    assert_eq!(ours.map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    Ok(())
}

#[test]
#[expect(
    clippy::nonsensical_open_options,
    reason = "std accepts this combination (create_new makes truncate moot); so must Baton"
)]
fn append_truncate_and_create_new_together_open_a_new_file() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("append-truncate-new")?;
    let std = std::fs::OpenOptions::new()
        .append(true)
        .truncate(true)
        .create_new(true)
        .open(scratch.join("s"))
        .map(drop);
    let ours = rt.block_on(async {
        baton::fs::OpenOptions::new()
            .append(true)
            .truncate(true)
            .create_new(true)
            .open(scratch.join("b"))
            .await
            .map(drop)
    });
    assert_eq!(std.map_err(|e| e.kind()), Ok(()));
    assert_eq!(ours.map_err(|e| e.kind()), Ok(()));
    Ok(())
}

#[test]
fn seeking_past_i64_max_is_invalid_input() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("seek-max")?;
    let path = scratch.file("f", b"0123456789")?;
    let mut std = std::fs::File::open(&path)?;
    // How far below i64::MAX std may seek is the file system's own limit, so only positions
    // past i64::MAX are compared (and one in the file, which both allow).
    let std_results = [
        std.seek(SeekFrom::Start(1 << 63)).map_err(|e| e.kind()),
        std.seek(SeekFrom::End(i64::MAX)).map_err(|e| e.kind()),
        std.seek(SeekFrom::Start(3)).map_err(|e| e.kind()),
        std.seek(SeekFrom::Current(i64::MAX)).map_err(|e| e.kind()),
    ];
    let ours = rt.block_on(async {
        let mut file = baton::fs::File::open(&path).await?;
        Ok::<_, io::Error>([
            file.seek(SeekFrom::Start(1 << 63)).map_err(|e| e.kind()),
            file.seek(SeekFrom::End(i64::MAX)).map_err(|e| e.kind()),
            file.seek(SeekFrom::Start(3)).map_err(|e| e.kind()),
            file.seek(SeekFrom::Current(i64::MAX)).map_err(|e| e.kind()),
        ])
    })?;
    let invalid = Err(ErrorKind::InvalidInput);
    let expected = [invalid, invalid, Ok(3), invalid];
    assert_eq!(std_results, expected, "std");
    assert_eq!(ours, expected, "baton");
    Ok(())
}

#[test]
fn seeking_past_the_file_systems_largest_offset_fails_as_std_does() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("seek-fs-max")?;
    let path = scratch.file("f", b"0123456789")?;
    // Every file system has its own largest offset (ext4: 16 TiB; xfs and tmpfs: near
    // i64::MAX), so std's answer on this very file is the expected one, position by position.
    let positions = [
        1 << 40,
        1 << 44,
        (1 << 44) + 4096,
        1 << 50,
        1 << 62,
        i64::MAX as u64,
    ];
    let mut std = std::fs::File::open(&path)?;
    let std_results: Vec<_> = positions
        .iter()
        .map(|&at| std.seek(SeekFrom::Start(at)).map_err(|e| e.kind()))
        .collect();
    let (ours, after) = rt.block_on(async {
        let mut file = baton::fs::File::open(&path).await?;
        file.seek(SeekFrom::Start(3))?;
        let ours: Vec<_> = positions
            .iter()
            .map(|&at| {
                let res = file.seek(SeekFrom::Start(at)).map_err(|e| e.kind());
                // A refused seek leaves the cursor where it was, as std's does.
                let kept = res.is_ok() || file.stream_position() == 3;
                file.seek(SeekFrom::Start(3)).map(|_| (res, kept))
            })
            .collect::<io::Result<_>>()?;
        let (res, rest) = file.read_to_end(Vec::new()).await;
        res?;
        Ok::<_, io::Error>((ours, rest))
    })?;
    let (ours, kept): (Vec<_>, Vec<_>) = ours.into_iter().unzip();
    assert_eq!(ours, std_results, "seeks to {positions:x?}");
    assert!(
        kept.iter().all(|&kept| kept),
        "a refused seek moved the cursor"
    );
    assert_eq!(after, b"3456789");
    Ok(())
}

#[test]
fn a_file_adopted_from_std_keeps_std_s_cursor() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("from-std-cursor")?;
    let path = scratch.file("f", b"0123456789")?;
    let mut std = std::fs::File::open(&path)?;
    std.seek(SeekFrom::Start(4))?;
    let mut std_rest = Vec::new();
    std.try_clone()?.read_to_end(&mut std_rest)?;
    std.seek(SeekFrom::Start(4))?;
    let (pos, rest) = rt.block_on(async {
        let mut file = baton::fs::File::from_std(std)?;
        let pos = file.stream_position();
        let (res, rest) = file.read_to_end(Vec::new()).await;
        res?;
        Ok::<_, io::Error>((pos, rest))
    })?;
    assert_eq!(pos, 4);
    assert_eq!(rest, std_rest);
    assert_eq!(rest, b"456789");
    Ok(())
}

#[test]
fn seeking_a_pipe_fails_as_std_does() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let (std_reader, _std_writer) = io::pipe()?;
    let mut std = std::fs::File::from(std::os::fd::OwnedFd::from(std_reader));
    let std_result = std.seek(SeekFrom::Start(0)).map_err(|e| e.raw_os_error());
    let (our_reader, _our_writer) = io::pipe()?;
    let ours = rt.block_on(async {
        let mut file =
            baton::fs::File::from_std(std::fs::File::from(std::os::fd::OwnedFd::from(our_reader)))?;
        let pos = file.stream_position();
        Ok::<_, io::Error>((
            pos,
            file.seek(SeekFrom::Start(0)).map_err(|e| e.raw_os_error()),
        ))
    })?;
    assert_eq!(std_result, Err(Some(libc::ESPIPE)));
    assert_eq!(ours, (0, std_result));
    Ok(())
}

#[test]
fn after_a_write_in_append_mode_the_cursor_is_at_the_end() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("append-cursor")?;
    let [std_path, our_path] = [scratch.file("s", b"abc")?, scratch.file("b", b"abc")?];
    let mut std = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(&std_path)?;
    std.write_all(b"de")?;
    let std_pos = std.stream_position()?;
    let mut std_rest = Vec::new();
    std.read_to_end(&mut std_rest)?;
    let (our_pos, our_rest, from_std_pos) = rt.block_on(async {
        let mut file = baton::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(&our_path)
            .await?;
        let (res, _) = AsyncWrite::write(&mut file, b"de".to_vec()).await;
        assert_eq!(res?, 2);
        let pos = file.stream_position();
        let (res, rest) = file.read_to_end(Vec::new()).await;
        res?;
        // A std file opened for appending and adopted keeps the behaviour.
        let adopted = std::fs::OpenOptions::new().append(true).open(&our_path)?;
        let mut adopted = baton::fs::File::from_std(adopted)?;
        let (res, _) = AsyncWrite::write(&mut adopted, b"f".to_vec()).await;
        assert_eq!(res?, 1);
        Ok::<_, io::Error>((pos, rest, adopted.stream_position()))
    })?;
    assert_eq!((std_pos, std_rest.as_slice()), (5, &b""[..]), "std");
    assert_eq!((our_pos, our_rest.as_slice()), (5, &b""[..]), "baton");
    assert_eq!(from_std_pos, 6, "an adopted appending file");
    assert_eq!(std::fs::read(&our_path)?, b"abcdef");
    Ok(())
}

#[test]
fn a_sync_range_past_i64_max_is_refused_and_a_huge_one_ends() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("sync-range")?;
    let path = scratch.join("f");
    let (refused, synced) = rt.block_on(async {
        let file = baton::fs::File::create(&path).await?;
        let (res, _) = file.write_all_at(vec![7; 8192], 0).await;
        res?;
        let refused = file.sync_range(0, u64::MAX).await.map_err(|e| e.kind());
        // The kernel's bound: this range is accepted, and ends with the file's 8 KiB.
        let synced = baton::time::timeout(
            Duration::from_secs(30),
            file.sync_range(4096, i64::MAX as u64 - 4096),
        )
        .await
        .map_err(|_| io::Error::other("sync_range(4096, i64::MAX - 4096) never ended"))?;
        Ok::<_, io::Error>((refused, synced.map_err(|e| e.kind())))
    })?;
    assert_eq!(refused, Err(ErrorKind::InvalidInput));
    assert_eq!(synced, Ok(()));
    Ok(())
}

#[test]
fn writing_an_empty_buffer_is_ok_zero() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("empty-write")?;
    let std_file = std::fs::File::create(scratch.join("s"))?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let std_results = [
        std::os::unix::fs::FileExt::write_at(&std_file, &[], 0).map_err(|e| e.kind()),
        (&std::net::TcpStream::connect(addr)?)
            .write(&[])
            .map_err(|e| e.kind()),
        (&std::net::TcpStream::connect(addr)?)
            .write_vectored(&[io::IoSlice::new(&[])])
            .map_err(|e| e.kind()),
    ];
    let ours = rt.block_on(async {
        let file = baton::fs::File::create(scratch.join("b")).await?;
        let at = file.write_at(Vec::new(), 0).await.0;
        let vectored_at = file.write_vectored_at(vec![Vec::new()], 0).await.0;
        let stream = baton::net::TcpStream::connect(addr).await?;
        let sent = stream.write(Vec::new()).await.0;
        let sent_vectored = stream.write_vectored(vec![Vec::<u8>::new()]).await.0;
        Ok::<_, io::Error>([at, vectored_at, sent, sent_vectored].map(|r| r.map_err(|e| e.kind())))
    })?;
    assert_eq!(std_results, [Ok(0); 3], "std");
    assert_eq!(ours, [Ok(0); 4], "baton");
    Ok(())
}
