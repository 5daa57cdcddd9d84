//! Where things are, found at run time: the workspace root (from the current directory, not
//! from where this binary was compiled, so a shared target directory never runs a stale xtask
//! against another checkout) and the target directory (`CARGO_TARGET_DIR` when set).

use std::path::{Path, PathBuf};

/// The workspace root: the nearest ancestor of the current directory whose `Cargo.toml`
/// declares `[workspace]`.
pub(crate) fn root() -> Result<PathBuf, String> {
    let start = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let mut dir: &Path = &start;
    loop {
        let manifest = dir.join("Cargo.toml");
        if std::fs::read_to_string(&manifest).is_ok_and(|text| declares_workspace(&text)) {
            return Ok(dir.to_path_buf());
        }
        dir = dir.parent().ok_or_else(|| {
            format!(
                "{} is not inside a Cargo workspace (no ancestor Cargo.toml with [workspace]); \
                 run `cargo xtask` from the Baton checkout",
                start.display()
            )
        })?;
    }
}

fn declares_workspace(manifest: &str) -> bool {
    manifest.lines().any(|line| line.trim() == "[workspace]")
}

/// The target directory cargo uses for this workspace: `CARGO_TARGET_DIR` when set (relative
/// paths are taken from the workspace root, as cargo does), else `<root>/target`.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Rust files under `dir`, recursively, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
