//! Records the git commit the suite is built from, for the reports' `suite_commit`.
//!
//! The commit comes from `git rev-parse HEAD` in the package's directory, and only when
//! that repository tracks this package (a copy of the crate vendored into another
//! repository, or a source archive, gives `unknown`). The build script runs again when
//! HEAD or the branch it names moves. Beside it, whether the package's tracked files
//! differ from that commit (`suite_dirty`).

use std::process::Command;

/// `git <args>` in the package's directory, trimmed; `None` when git is absent or
/// fails.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let tracked = git(&["ls-files", "--full-name", "Cargo.toml"])
        .is_some_and(|p| p == "conformance/Cargo.toml");
    let commit = tracked
        .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .flatten();
    if commit.is_some() {
        // HEAD itself, the branch file it points to and packed refs, wherever
        // this checkout (or worktree) keeps them.
        let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(branch);
        }
        for name in watched {
            if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
                && std::path::Path::new(&path).exists()
            {
                println!("cargo::rerun-if-changed={path}");
            }
        }
    }
    println!(
        "cargo::rustc-env=CONFORMANCE_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    // Dirty: a tracked file of this package differs from HEAD (staged or not). The
    // package's files and the index are watched, so the flag follows edits.
    let dirty = commit.is_some()
        && git(&["status", "--porcelain", "--untracked-files=no", "--", "."]).is_some();
    if commit.is_some() {
        for path in ["src", "schema", "Cargo.toml", "build.rs"] {
            println!("cargo::rerun-if-changed={path}");
        }
        if let Some(index) = git(&["rev-parse", "--path-format=absolute", "--git-path", "index"]) {
            println!("cargo::rerun-if-changed={index}");
        }
    }
    println!("cargo::rustc-env=CONFORMANCE_GIT_DIRTY={dirty}");
}
