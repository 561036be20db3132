//! Records the git revision so `powersync_rs_version()` and
//! `oplite_version()` can report which build is loaded, and refuses the
//! feature `loadable` beside `static` or `bundled`.
use std::process::Command;

fn main() {
    // Before rusqlite's own, less clear, compile error for the same mix
    // (rusqlite is compiled before this crate, so a compile_error! here
    // would come too late).
    if std::env::var_os("CARGO_FEATURE_LOADABLE").is_some() && std::env::var_os("CARGO_FEATURE_STATIC").is_some() {
        eprintln!(
            "oplite's feature `loadable` excludes `static` and `bundled`, and this build has both, perhaps through \
             another package's dependency on oplite: build the loadable extension alone, with \
             `cargo build --release --manifest-path loadable/Cargo.toml` (docs/development.md, \"One build\")"
        );
        std::process::exit(1);
    }
    let hash = Command::new("git")
        .args(["rev-parse", "--short=8", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=OPLITE_GIT_HASH={hash}");
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
}
