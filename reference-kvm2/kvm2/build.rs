//! Records the git commit the `kvm2` command is built from, for `kvm2 --version`.
//!
//! The commit comes from `git rev-parse HEAD` in the source tree; without git or
//! without a repository (a source archive) it is `unknown`. The build script runs
//! again when HEAD or the branch it names moves. Beside it, whether the provider's
//! tracked files differ from that commit, for the reports' `provider_dirty`.

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
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
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
        "cargo::rustc-env=KVM2_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    // Dirty: a tracked file of the reference provider (`reference-kvm2/`: kvm2 and its
    // libvirt crates) differs from HEAD. Those files and the index are watched.
    let dirty = commit.is_some()
        && git(&["status", "--porcelain", "--untracked-files=no", "--", ".."]).is_some();
    if commit.is_some() {
        println!("cargo::rerun-if-changed=..");
        if let Some(index) = git(&["rev-parse", "--path-format=absolute", "--git-path", "index"]) {
            println!("cargo::rerun-if-changed={index}");
        }
    }
    println!("cargo::rustc-env=KVM2_GIT_DIRTY={dirty}");
}
