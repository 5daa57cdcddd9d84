//! End to end: bad input to `baton::fs` gets the `ErrorKind` that `std::fs` gives for the same
//! input — a missing path, a path through a file, a directory that is not empty, a rename
//! across file systems, a name already taken, a path with a NUL byte (refused before anything
//! is submitted) — and nothing panics or hangs.

use std::io::{self, ErrorKind};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use baton::fs;
use baton_tests::{Scratch, in_scratch, runtime_with_scratch};

/// Asserts that both calls failed with `expected`.
#[track_caller]
fn same_kind<A, B>(what: &str, ours: io::Result<A>, std: io::Result<B>, expected: ErrorKind) {
    let ours = ours.map_err(|e| e.kind()).err();
    let std = std.map_err(|e| e.kind()).err();
    assert_eq!(ours, Some(expected), "{what}: baton");
    assert_eq!(std, Some(expected), "{what}: std");
}

/// [`same_kind`] for each `call(args)`: `baton::fs::call` (awaited) and `std::fs::call` with the
/// same arguments both fail with `$expected`; each is named after its call.
macro_rules! same_kinds {
    ($expected:expr => $($call:ident($($arg:expr),*)),* $(,)?) => {
        $(same_kind(
            stringify!($call),
            fs::$call($($arg),*).await,
            std::fs::$call($($arg),*),
            $expected,
        );)*
    };
}

#[test]
fn a_missing_path_is_not_found_for_every_call() -> io::Result<()> {
    in_scratch("errors-missing", async |scratch| {
        let missing = scratch.join("missing");
        let other = scratch.join("other");
        let nf = ErrorKind::NotFound;
        let m = &missing;
        same_kinds!(nf =>
            metadata(m), symlink_metadata(m), remove_file(m), remove_dir(m), remove_dir_all(m),
            rename(m, &other), hard_link(m, &other), copy(m, &other),
        );
        let ours = fs::read_dir(m).await.map(drop);
        same_kind("read_dir", ours, std::fs::read_dir(m).map(drop), nf);
        same_kinds!(nf => canonicalize(m), read_to_string(m));
        let ours = fs::File::open(m).await.map(drop);
        same_kind("File::open", ours, std::fs::File::open(m).map(drop), nf);
        let deep = m.join("child");
        let ours = fs::create_dir(&deep).await;
        same_kind("create_dir", ours, std::fs::create_dir(&deep), nf);
        let ours = fs::symlink(m, &deep).await;
        same_kind("symlink", ours, std::os::unix::fs::symlink(m, &deep), nf);
        assert!(!fs::try_exists(m).await?, "try_exists: false, not an error");
        Ok(())
    })
}

#[test]
fn a_path_through_a_file_is_not_a_directory() -> io::Result<()> {
    in_scratch("errors-not-dir", async |scratch| {
        let file = scratch.file("file", b"x")?;
        let through = file.join("child");
        let nd = ErrorKind::NotADirectory;
        let t = &through;
        same_kinds!(nd => metadata(t), create_dir(t), create_dir_all(t), remove_file(t));
        let ours = fs::remove_dir(&file).await;
        same_kind("remove_dir of a file", ours, std::fs::remove_dir(&file), nd);
        let ours = fs::read_dir(&file).await.map(drop);
        same_kind(
            "read_dir of a file",
            ours,
            std::fs::read_dir(&file).map(drop),
            nd,
        );
        let ours = fs::try_exists(t).await;
        same_kind("try_exists", ours, std::fs::exists(t), nd);
        let dir = scratch.join("dir");
        std::fs::create_dir(&dir)?;
        let ours = fs::rename(&dir, &file).await;
        let std = std::fs::rename(&dir, &file);
        same_kind("rename a directory onto a file", ours, std, nd);
        Ok(())
    })
}

#[test]
fn a_directory_that_is_not_empty_is_directory_not_empty() -> io::Result<()> {
    in_scratch("errors-not-empty", async |scratch| {
        let (full, other) = (scratch.join("full"), scratch.join("other"));
        for dir in [&full, &other] {
            std::fs::create_dir(dir)?;
            std::fs::write(dir.join("inside"), b"x")?;
        }
        let dne = ErrorKind::DirectoryNotEmpty;
        let ours = fs::remove_dir(&full).await;
        same_kind("remove_dir", ours, std::fs::remove_dir(&full), dne);
        let ours = fs::rename(&full, &other).await;
        same_kind("rename onto", ours, std::fs::rename(&full, &other), dne);
        assert!(full.join("inside").exists() && other.join("inside").exists());
        Ok(())
    })
}

/// A directory on another file system than `scratch`, or `None` (after a loud `SKIPPED`
/// line) when this machine has none to offer.
fn other_device(scratch: &Scratch) -> io::Result<Option<PathBuf>> {
    let here = std::fs::metadata(scratch.path())?.dev();
    for candidate in ["/dev/shm", "/run", "/var/tmp", "/tmp"] {
        let candidate = Path::new(candidate);
        let writable = std::fs::metadata(candidate).is_ok_and(|m| m.is_dir() && m.dev() != here)
            && tempfile_in(candidate).is_ok();
        if writable {
            return Ok(Some(candidate.to_path_buf()));
        }
    }
    eprintln!(
        "SKIPPED: no writable directory on another file system than {} (tried /dev/shm, /run, /var/tmp, /tmp)",
        scratch.path().display()
    );
    Ok(None)
}

fn tempfile_in(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!("baton-e2e-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

#[test]
fn a_rename_or_hard_link_across_file_systems_crosses_devices() -> io::Result<()> {
    in_scratch("errors-xdev", async |scratch| {
        let Some(elsewhere) = other_device(scratch)? else {
            return Ok(());
        };
        let file = scratch.file("file", b"stays")?;
        let there = elsewhere.join(format!("baton-e2e-xdev-{}", std::process::id()));
        let xd = ErrorKind::CrossesDevices;
        same_kinds!(xd => rename(&file, &there), hard_link(&file, &there));
        assert_eq!(std::fs::read(&file)?, b"stays");
        assert!(!there.exists());
        Ok(())
    })
}

#[test]
fn a_name_already_taken_is_already_exists() -> io::Result<()> {
    in_scratch("errors-exists", async |scratch| {
        let file = scratch.file("file", b"x")?;
        let dir = scratch.join("dir");
        std::fs::create_dir(&dir)?;
        let ae = ErrorKind::AlreadyExists;
        same_kinds!(ae => create_dir(&dir), hard_link(&file, &dir));
        let ours = fs::create_dir(&file).await;
        same_kind("create_dir on a file", ours, std::fs::create_dir(&file), ae);
        let ours = fs::create_dir_all(&file).await;
        same_kind(
            "create_dir_all on a file",
            ours,
            std::fs::create_dir_all(&file),
            ae,
        );
        let ours = fs::symlink(&file, &dir).await;
        same_kind("symlink", ours, std::os::unix::fs::symlink(&file, &dir), ae);
        let ours = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .await
            .map(drop);
        let std = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .map(drop);
        same_kind("create_new", ours, std, ae);
        Ok(())
    })
}

#[test]
fn a_path_with_a_nul_byte_is_invalid_input_before_anything_is_submitted() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("errors-nul")?;
    let bad = scratch.join("bad\0name");
    let good = scratch.file("good", b"x")?;
    let before = (rt.metrics().ops_completed, rt.metrics().blocking.accepted);
    rt.block_on(async {
        let results: Vec<(&str, io::Result<()>)> = vec![
            ("create_dir", fs::create_dir(&bad).await),
            ("create_dir_all", fs::create_dir_all(&bad).await),
            ("remove_dir", fs::remove_dir(&bad).await),
            ("remove_dir_all", fs::remove_dir_all(&bad).await),
            ("remove_file", fs::remove_file(&bad).await),
            ("rename from", fs::rename(&bad, &good).await),
            ("rename to", fs::rename(&good, &bad).await),
            ("hard_link", fs::hard_link(&good, &bad).await),
            ("symlink", fs::symlink(&good, &bad).await),
            ("copy", fs::copy(&good, &bad).await.map(drop)),
            ("metadata", fs::metadata(&bad).await.map(drop)),
            (
                "symlink_metadata",
                fs::symlink_metadata(&bad).await.map(drop),
            ),
            ("try_exists", fs::try_exists(&bad).await.map(drop)),
            ("read_dir", fs::read_dir(&bad).await.map(drop)),
            ("canonicalize", fs::canonicalize(&bad).await.map(drop)),
            ("read_to_string", fs::read_to_string(&bad).await.map(drop)),
            ("File::open", fs::File::open(&bad).await.map(drop)),
        ];
        for (what, result) in results {
            let err = result.expect_err(what);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
            assert!(
                err.to_string().contains("NUL byte"),
                "{what} says why: {err}"
            );
        }
        let std_kind = std::fs::metadata(&bad).map_err(|e| e.kind());
        assert_eq!(
            std_kind.map(drop),
            Err(ErrorKind::InvalidInput),
            "std agrees"
        );
        Ok::<_, io::Error>(())
    })?;
    let after = (rt.metrics().ops_completed, rt.metrics().blocking.accepted);
    assert_eq!(after, before, "no request and no pool job");
    assert_eq!(std::fs::read(&good)?, b"x");
    Ok(())
}
