//! Builds oplite's static library for this crate to link.
//!
//! oplite's extension cannot be an ordinary dependency here: it uses rusqlite
//! 0.43, the SDK rusqlite 0.39, and both libsqlite3-sys versions claim
//! `links = "sqlite3"`, which cargo refuses in one build. So this script runs
//! a cargo build of its own, in oplite's workspace (two folders up, with its
//! Cargo.lock), of the extension as a static library that calls SQLite
//! directly (`--features static`, as the mobile libraries), and links the
//! result. The library's SQLite calls then resolve to the SQLite the app
//! links, the only one in the binary.
//!
//! The library carries its own copy of Rust's standard library, compiled
//! into one object by fat LTO. Its symbols are made local with objcopy, all
//! but oplite's C entry points and `DW.ref.rust_eh_personality`, which stays
//! global for the linker to merge it with the app's own: the `export` and
//! `merged` names of scripts/mobile-symbols.txt, read from there. The same
//! recipe as scripts/build-mobile.sh, whose comments and that file say more.
//!
//! Environment: `OPLITE_OBJCOPY`, the objcopy to use (else rustup's
//! llvm-tools, `llvm-objcopy`, `llvm-objcopy-<N>`, then GNU `objcopy` for ELF
//! targets); `OPLITE_COMPAT_TARGET_DIR`, a target directory for the inner
//! build to share between builds (default: inside OUT_DIR).

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    if let Err(message) = run() {
        eprintln!("error: building oplite for powersync_core failed: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    let repo = manifest_dir.join("../..");
    let extension = repo.join("extension");
    if !extension.join("Cargo.toml").is_file() {
        return Err(format!(
            "{} is not oplite's extension: this crate builds oplite from the repository around it, so \
             depend on it by path or git, not as a copy of the folder",
            extension.display()
        ));
    }
    let symbols = repo.join("scripts/mobile-symbols.txt");
    for watched in ["extension/src", "extension/Cargo.toml", "extension/build.rs", "sql", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", repo.join(watched).display());
    }
    println!("cargo:rerun-if-changed={}", symbols.display());
    println!("cargo:rerun-if-env-changed=OPLITE_OBJCOPY");
    println!("cargo:rerun-if-env-changed=OPLITE_COMPAT_TARGET_DIR");

    let target = var("TARGET")?;
    let out_dir = PathBuf::from(var("OUT_DIR")?);
    let target_dir = env::var_os("OPLITE_COMPAT_TARGET_DIR").map_or_else(|| out_dir.join("oplite"), PathBuf::from);
    let built = build_static_library(&repo, &target, &target_dir)?;

    let objcopy = find_objcopy(&target)?;
    let lib_dir = out_dir.join("lib");
    fs::create_dir_all(&lib_dir).map_err(|e| format!("creating {}: {e}", lib_dir.display()))?;
    let global = global_names(&symbols)?;
    localise(&objcopy, &target, &built, &global, &lib_dir.join("liboplite_core.a"))?;

    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=oplite_core");
    Ok(())
}

fn var(name: &str) -> Result<String, String> {
    env::var(name).map_err(|_| format!("cargo did not set {name}"))
}

/// Runs `cargo rustc` on oplite's extension, as the mobile build does, and
/// returns the archive it wrote.
fn build_static_library(repo: &Path, target: &str, target_dir: &Path) -> Result<PathBuf, String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command
        .current_dir(repo)
        .args(["rustc", "--release", "--locked", "-p", "oplite", "--lib", "--crate-type", "staticlib"])
        .args(["--no-default-features", "--features", "static", "--target", target])
        .arg("--target-dir")
        .arg(target_dir)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    // The outer build's settings are for this crate, not for oplite's
    // workspace: its target dir, its wrapper for workspace members (clippy),
    // its manifest and features. What reaches the network, the registry, the
    // jobserver, rustc and the target's flags is kept.
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let kept = ["CARGO_HOME", "CARGO_MAKEFLAGS", "CARGO_ENCODED_RUSTFLAGS"].contains(&key)
            || ["CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRIES_", "CARGO_REGISTRY_"].iter().any(|p| key.starts_with(p));
        if (key.starts_with("CARGO_") && !kept) || key == "RUSTC_WORKSPACE_WRAPPER" || key == "RUSTFLAGS" {
            command.env_remove(key);
        }
    }
    let status = command.status().map_err(|e| format!("running {}: {e}", Path::new(&cargo).display()))?;
    if !status.success() {
        return Err(format!("`cargo rustc -p oplite` in {} failed ({status})", repo.display()));
    }
    let archive = target_dir.join(target).join("release").join("liboplite.a");
    if archive.is_file() {
        Ok(archive)
    } else {
        Err(format!("cargo wrote no {}", archive.display()))
    }
}

/// The first objcopy that can rewrite this target's objects.
fn find_objcopy(target: &str) -> Result<PathBuf, String> {
    if let Some(given) = env::var_os("OPLITE_OBJCOPY") {
        return Ok(PathBuf::from(given));
    }
    let mut candidates = Vec::new();
    // rustup's `llvm-tools` component, beside the compiler in use.
    if let Some(sysroot) = rustc_sysroot() {
        let host = env::var("HOST").unwrap_or_default();
        candidates.push(sysroot.join("lib/rustlib").join(host).join("bin/llvm-objcopy"));
    }
    candidates.push(PathBuf::from("llvm-objcopy"));
    candidates.extend((14..=30).rev().map(|n| PathBuf::from(format!("llvm-objcopy-{n}"))));
    // GNU objcopy rewrites ELF and COFF, not Mach-O.
    if !target.contains("-apple-") {
        candidates.push(PathBuf::from("objcopy"));
    }
    candidates.into_iter().find(|tool| runs(tool)).ok_or_else(|| {
        "no objcopy found to hide the Rust symbols of oplite's library: install rustup's llvm-tools \
         (`rustup component add llvm-tools`), LLVM's llvm-objcopy, or binutils, or set OPLITE_OBJCOPY"
            .to_owned()
    })
}

fn rustc_sysroot() -> Option<PathBuf> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
    let out = Command::new(rustc).args(["--print", "sysroot"]).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(PathBuf::from(text.trim()))
}

fn runs(tool: &Path) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The names that stay global: the `export` and `merged` lines of
/// scripts/mobile-symbols.txt.
fn global_names(symbols: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(symbols).map_err(|e| format!("reading {}: {e}", symbols.display()))?;
    let names: Vec<String> = text
        .lines()
        .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["export" | "merged", name] => Some(name.to_owned()),
            _ => None,
        })
        .collect();
    if names.iter().any(|name| name == "oplite_auto_extension") {
        Ok(names)
    } else {
        Err(format!("{} exports no oplite_auto_extension", symbols.display()))
    }
}

/// Copies `archive` to `out` with every defined symbol local but `global`,
/// in every member (compiler_builtins' members end up with no global
/// symbol, so the linker never takes them: the app's own copy serves
/// oplite's calls).
fn localise(objcopy: &Path, target: &str, archive: &Path, global: &[String], out: &Path) -> Result<(), String> {
    let prefix = if target.contains("-apple-") { "_" } else { "" };
    let keep = out.with_extension("keep");
    let names: String = global.iter().map(|name| format!("{prefix}{name}\n")).collect();
    fs::write(&keep, names).map_err(|e| format!("writing {}: {e}", keep.display()))?;
    let output = Command::new(objcopy)
        .arg(format!("--keep-global-symbols={}", keep.display()))
        .arg(archive)
        .arg(out)
        .output()
        .map_err(|e| format!("running {}: {e}", objcopy.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} could not rewrite {}: {}",
            objcopy.display(),
            archive.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}
