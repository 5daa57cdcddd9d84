//! End to end: `baton::fs::read_dir` streams a directory's entries in batches from the
//! blocking pool — ten thousand entries arrive batch by batch, the first long before the
//! listing is done; dropping the listing stops it and closes the directory; each entry says
//! what `std`'s says.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use baton::fs;
use baton_tests::{Scratch, in_scratch, open_fd_count, runtime_with_scratch};

const ENTRIES: usize = 10_000;

/// Serializes this binary's tests: one of them counts the process's descriptors.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn many_files(scratch: &Scratch, n: usize) -> io::Result<BTreeSet<OsString>> {
    let mut names = BTreeSet::new();
    for i in 0..n {
        let name = format!("entry-{i:05}");
        std::fs::write(scratch.join(&name), b"")?;
        names.insert(name.into());
    }
    Ok(names)
}

#[test]
fn read_dir_of_ten_thousand_entries_streams_them_batch_by_batch() -> io::Result<()> {
    let _serial = serial();
    let (rt, scratch) = runtime_with_scratch("read-dir-10k")?;
    let expected = many_files(&scratch, ENTRIES)?;
    let jobs = || rt.metrics().blocking.accepted;
    rt.block_on(async {
        let before = jobs();
        let mut entries = fs::read_dir(scratch.path()).await?;
        let first = entries.next_entry().await?.expect("ten thousand entries");
        let jobs_at_first = jobs() - before;
        let mut seen = BTreeSet::from([first.file_name()]);
        while let Some(entry) = entries.next_entry().await? {
            assert!(seen.insert(entry.file_name()), "no entry twice");
        }
        let jobs_in_all = jobs() - before;
        assert!(
            entries.next_entry().await?.is_none(),
            "the end stays the end"
        );
        assert_eq!(seen, expected, "every entry, as std::fs::write made them");
        assert!(
            jobs_at_first <= 2,
            "the first entry came with the first batch (plus one read ahead): {jobs_at_first} jobs"
        );
        assert!(
            (30..=50).contains(&jobs_in_all),
            "the listing took one pool job per batch of 256: {jobs_in_all} jobs"
        );
        eprintln!(
            "first entry after {jobs_at_first} of {jobs_in_all} pool jobs for {ENTRIES} entries"
        );
        Ok(())
    })
}

#[test]
fn dropping_a_read_dir_stops_the_listing_and_closes_the_directory() -> io::Result<()> {
    let _serial = serial();
    let (rt, scratch) = runtime_with_scratch("read-dir-drop")?;
    many_files(&scratch, 2_000)?;
    let jobs = || rt.metrics().blocking.accepted;
    let fds_before = open_fd_count()?;
    let before = jobs();
    rt.block_on(async {
        let mut entries = fs::read_dir(scratch.path()).await?;
        entries.next_entry().await?.expect("an entry");
        drop(entries);
        io::Result::Ok(())
    })?;
    let start = Instant::now();
    while open_fd_count()? != fds_before || rt.metrics().blocking.running_interruptible != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the directory was not closed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    rt.block_on(baton::time::sleep(Duration::from_millis(20)));
    let used = jobs() - before;
    assert!(
        used <= 2,
        "no batch was read after the drop but the one already asked for: {used} jobs"
    );
    Ok(())
}

#[test]
fn read_dir_entries_say_what_std_entries_say() -> io::Result<()> {
    let _serial = serial();
    in_scratch("read-dir-types", async |scratch| {
        std::fs::write(scratch.join("file"), b"x")?;
        std::fs::create_dir(scratch.join("dir"))?;
        std::os::unix::fs::symlink(scratch.join("file"), scratch.join("link"))?;
        std::os::unix::net::UnixListener::bind(scratch.join("socket"))?;
        let std_entries: Vec<_> = std::fs::read_dir(scratch.path())?.collect::<io::Result<_>>()?;
        let mut ours = Vec::new();
        let mut entries = fs::read_dir(scratch.path()).await?;
        while let Some(entry) = entries.next_entry().await? {
            ours.push(entry);
        }
        assert_eq!(ours.len(), std_entries.len());
        for std_entry in &std_entries {
            let entry = ours
                .iter()
                .find(|e| e.file_name() == std_entry.file_name())
                .expect("the same names");
            assert_eq!(entry.path(), std_entry.path());
            assert_eq!(entry.ino(), std_entry.ino());
            let ty = entry.file_type().await?;
            assert_eq!(ty, baton::fs::FileType::from(std_entry.file_type()?));
            let meta = entry.metadata().await?;
            assert_eq!(meta, baton::fs::Metadata::from(std_entry.metadata()?));
        }
        Ok(())
    })
}

#[test]
fn read_dir_of_an_empty_directory_ends_at_once() -> io::Result<()> {
    let _serial = serial();
    in_scratch("read-dir-empty", async |scratch| {
        let mut entries = fs::read_dir(scratch.path()).await?;
        assert!(entries.next_entry().await?.is_none());
        assert!(entries.next_entry().await?.is_none());
        Ok(())
    })
}
