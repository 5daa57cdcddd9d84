//! End to end: `baton::fs`'s path calls on real files — each one against what `std` sees
//! afterwards: directories made and removed (a nested tree too), renames, hard and symbolic
//! links, copies, canonical paths, whole-file text, existence checks.

use std::io;
use std::os::unix::fs::MetadataExt;

use baton::fs;
use baton_tests::{assert_kind, in_scratch, runtime_with_scratch};

#[test]
fn create_dir_makes_one_directory_and_remove_dir_removes_it() -> io::Result<()> {
    in_scratch("create-dir", async |scratch| {
        let dir = scratch.join("one");
        fs::create_dir(&dir).await?;
        assert!(std::fs::metadata(&dir)?.is_dir());
        fs::remove_dir(&dir).await?;
        assert!(!dir.exists());
        Ok(())
    })
}

#[test]
fn create_dir_all_makes_every_missing_parent_and_accepts_an_existing_tree() -> io::Result<()> {
    in_scratch("create-dir-all", async |scratch| {
        let deep = scratch.join("a/b/c/d");
        fs::create_dir_all(&deep).await?;
        assert!(std::fs::metadata(&deep)?.is_dir());
        fs::create_dir_all(&deep).await?;
        fs::create_dir_all(scratch.join("a/b")).await?;
        fs::create_dir_all(scratch.join("a/./b/../b/e")).await?;
        assert!(scratch.join("a/b/e").is_dir());
        fs::create_dir_all("").await?;
        Ok(())
    })
}

#[test]
fn create_dir_all_under_a_file_fails_as_std_does() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("create-dir-all-file")?;
    let file = scratch.file("file", b"x")?;
    let under = file.join("sub/dir");
    let std_kind = std::fs::create_dir_all(&under).map_err(|e| e.kind());
    let ours = rt
        .block_on(fs::create_dir_all(&under))
        .map_err(|e| e.kind());
    assert_eq!(ours, std_kind);
    assert_eq!(ours, Err(io::ErrorKind::NotADirectory));
    let ours = rt.block_on(fs::create_dir_all(&file)).map_err(|e| e.kind());
    assert_eq!(ours, std::fs::create_dir_all(&file).map_err(|e| e.kind()));
    Ok(())
}

/// Builds `levels` directories deep, each holding `files` files and a symlink to the root,
/// with `std`, and returns how many entries it made.
fn nested_tree(root: &std::path::Path, levels: usize, files: usize) -> io::Result<usize> {
    let mut made = 0;
    let mut dir = root.to_path_buf();
    for level in 0..levels {
        dir = dir.join(format!("level-{level}"));
        std::fs::create_dir(&dir)?;
        for f in 0..files {
            std::fs::write(dir.join(format!("file-{f}")), b"contents")?;
        }
        std::os::unix::fs::symlink(root, dir.join("to-root"))?;
        made += files + 2;
    }
    Ok(made)
}

#[test]
fn remove_dir_all_removes_a_nested_tree_without_following_its_symlinks() -> io::Result<()> {
    in_scratch("remove-dir-all", async |scratch| {
        let tree = scratch.join("tree");
        std::fs::create_dir(&tree)?;
        let made = nested_tree(&tree, 8, 16)?;
        assert_eq!(made, 8 * 18);
        let outside = scratch.file("outside", b"kept")?;
        std::os::unix::fs::symlink(&outside, tree.join("level-0/to-outside"))?;
        fs::remove_dir_all(&tree).await?;
        assert!(!fs::try_exists(&tree).await?);
        assert_eq!(
            std::fs::read(&outside)?,
            b"kept",
            "a link's target survives"
        );
        assert_kind(
            fs::remove_dir_all(&tree).await,
            io::ErrorKind::NotFound,
            "gone",
        );
        Ok(())
    })
}

#[test]
fn remove_file_removes_a_file_and_refuses_a_directory() -> io::Result<()> {
    in_scratch("remove-file", async |scratch| {
        let file = scratch.file("file", b"x")?;
        fs::remove_file(&file).await?;
        assert!(!file.exists());
        let dir = fs::remove_file(scratch.path())
            .await
            .expect_err("a directory");
        let std_kind = std::fs::remove_file(scratch.path())
            .expect_err("std too")
            .kind();
        assert_eq!(dir.kind(), std_kind);
        assert_eq!(dir.kind(), io::ErrorKind::IsADirectory);
        Ok(())
    })
}

#[test]
fn rename_moves_files_and_directories_and_replaces_a_file() -> io::Result<()> {
    in_scratch("rename", async |scratch| {
        let [a, b, dir, moved] = scratch.joins(["a", "b", "dir", "moved"]);
        std::fs::write(&a, b"new")?;
        std::fs::write(&b, b"old")?;
        std::fs::create_dir(&dir)?;
        std::fs::write(dir.join("inside"), b"x")?;
        fs::rename(&a, &b).await?;
        assert_eq!(std::fs::read(&b)?, b"new", "the target was replaced");
        assert!(!a.exists());
        fs::rename(&dir, &moved).await?;
        assert_eq!(std::fs::read(moved.join("inside"))?, b"x");
        Ok(())
    })
}

#[test]
fn hard_link_shares_the_inode_and_symlink_points_at_its_target() -> io::Result<()> {
    in_scratch("links", async |scratch| {
        let [original, hard, soft, dangling] =
            scratch.joins(["original", "hard", "soft", "dangling"]);
        std::fs::write(&original, b"shared")?;
        fs::hard_link(&original, &hard).await?;
        let (a, b) = (std::fs::metadata(&original)?, std::fs::metadata(&hard)?);
        assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));
        fs::symlink(&original, &soft).await?;
        assert_eq!(std::fs::read_link(&soft)?, original);
        assert_eq!(fs::read(&soft).await?, b"shared");
        fs::symlink(scratch.join("nowhere"), &dangling).await?;
        assert!(fs::symlink_metadata(&dangling).await?.is_symlink());
        assert!(
            !fs::try_exists(&dangling).await?,
            "a dangling link does not exist"
        );
        Ok(())
    })
}

#[test]
fn copy_copies_contents_and_permissions_and_returns_the_length() -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    in_scratch("copy", async |scratch| {
        let (from, to) = (scratch.join("from"), scratch.join("to"));
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&from, &data)?;
        std::fs::set_permissions(&from, std::fs::Permissions::from_mode(0o640))?;
        std::fs::write(&to, b"to be truncated, longer than nothing")?;
        assert_eq!(fs::copy(&from, &to).await?, data.len() as u64);
        assert!(std::fs::read(&to)? == data);
        assert_eq!(std::fs::metadata(&to)?.mode() & 0o777, 0o640);
        let dir = fs::copy(scratch.path(), scratch.join("dir-copy")).await;
        let std_kind =
            std::fs::copy(scratch.path(), scratch.join("std-copy")).map_err(|e| e.kind());
        assert_eq!(dir.map_err(|e| e.kind()), std_kind);
        Ok(())
    })
}

#[test]
fn canonicalize_resolves_dots_and_symlinks_as_std_does() -> io::Result<()> {
    in_scratch("canonicalize", async |scratch| {
        std::fs::create_dir(scratch.join("real"))?;
        std::os::unix::fs::symlink(scratch.join("real"), scratch.join("link"))?;
        let twisted = scratch.join("link/../link/./");
        let ours = fs::canonicalize(&twisted).await?;
        assert_eq!(ours, std::fs::canonicalize(&twisted)?);
        assert_eq!(ours, std::fs::canonicalize(scratch.join("real"))?);
        assert_kind(
            fs::canonicalize(scratch.join("missing")).await,
            io::ErrorKind::NotFound,
            "missing",
        );
        Ok(())
    })
}

#[test]
fn read_to_string_reads_utf8_and_refuses_other_bytes() -> io::Result<()> {
    in_scratch("read-to-string", async |scratch| {
        let (text, binary) = (scratch.join("text"), scratch.join("binary"));
        let long: String = "ünïcödé line\n".repeat(10_000);
        std::fs::write(&text, &long)?;
        std::fs::write(&binary, [b'o', b'k', 0xc3, 0x28])?;
        assert_eq!(fs::read_to_string(&text).await?, long);
        let err = fs::read_to_string(&binary).await.expect_err("not UTF-8");
        let std_err = std::fs::read_to_string(&binary).expect_err("std too");
        assert_eq!(err.kind(), std_err.kind());
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        Ok(())
    })
}

#[test]
fn try_exists_tells_present_absent_and_unanswerable_apart() -> io::Result<()> {
    in_scratch("try-exists", async |scratch| {
        let file = scratch.file("file", b"x")?;
        assert!(fs::try_exists(&file).await?);
        assert!(fs::try_exists(scratch.path()).await?);
        assert!(!fs::try_exists(scratch.join("missing")).await?);
        let under_a_file = file.join("child");
        let ours = fs::try_exists(&under_a_file).await.map_err(|e| e.kind());
        assert_eq!(ours, std::fs::exists(&under_a_file).map_err(|e| e.kind()));
        Ok(())
    })
}

/// Compiles only if `future` is `Send` (so it can be spawned on any runtime thread).
fn send<F: std::future::Future + Send>(future: F) -> F {
    future
}

#[test]
fn every_call_future_is_send_and_runs_in_a_spawned_task() -> io::Result<()> {
    in_scratch("send", async |scratch| {
        let (dir, file) = (scratch.join("dir"), scratch.join("file"));
        std::fs::write(&file, b"0123")?;
        let task = baton::spawn(async move {
            let f = &file;
            send(fs::create_dir(&dir)).await?;
            send(fs::create_dir_all(dir.join("a"))).await?;
            send(fs::rename(dir.join("a"), dir.join("b"))).await?;
            send(fs::hard_link(f, dir.join("h"))).await?;
            send(fs::symlink(f, dir.join("s"))).await?;
            send(fs::copy(f, dir.join("c"))).await?;
            send(fs::metadata(f)).await?;
            send(fs::symlink_metadata(f)).await?;
            send(fs::try_exists(f)).await?;
            send(fs::canonicalize(f)).await?;
            send(fs::read_to_string(f)).await?;
            let mut entries = send(fs::read_dir(&dir)).await?;
            while let Some(entry) = send(entries.next_entry()).await? {
                send(entry.file_type()).await?;
                send(entry.metadata()).await?;
            }
            let opened = send(fs::OpenOptions::new().read(true).write(true).open(f)).await?;
            send(opened.metadata()).await?;
            send(opened.set_len(2)).await?;
            send(opened.sync_range(0, 0)).await?;
            send(fs::remove_file(dir.join("h"))).await?;
            send(fs::remove_dir(dir.join("b"))).await?;
            send(fs::remove_dir_all(&dir)).await?;
            std::fs::read(f)
        });
        assert_eq!(task.await.map_err(io::Error::other)??, b"01");
        Ok(())
    })
}
