//! docs/cli.md against the binary's own help: every option `oplite <command>
//! --help` lists has a row in that command's option table, and every row
//! names options the command has. The help is the source; the page explains
//! it, and cannot drift from it unnoticed.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The options `oplite <command> --help` lists (`--db`, `-v`), without
/// clap's own `--help`/`-h`.
fn help_options(command: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_oplite")).args([command, "--help"]).output().unwrap();
    assert!(output.status.success(), "oplite {command} --help: {output:?}");
    let help = String::from_utf8(output.stdout).unwrap();
    help.lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .flat_map(|line| options_in(line.split("  ").next().unwrap()))
        .filter(|option| option != "--help" && option != "-h")
        .collect()
}

/// The options named in the first cells of the option table under the
/// heading `` ## `oplite <command>` ``, or in its text if it has no table.
fn documented_options(command: &str) -> BTreeSet<String> {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md")).unwrap();
    let heading = format!("## `oplite {command}`");
    let section = page.split_once(&heading).unwrap_or_else(|| panic!("docs/cli.md has no {heading}")).1;
    let section = section.split("\n## ").next().unwrap();
    let rows: BTreeSet<String> = section
        .lines()
        .filter(|line| line.starts_with("| `-"))
        .flat_map(|line| options_in(line.split('|').nth(1).unwrap()))
        .collect();
    if rows.is_empty() {
        // A command of one or two options says them in its paragraph.
        return options_in(section).into_iter().collect();
    }
    rows
}

/// The option names in a piece of text: `--token T / --token-command CMD`
/// gives `--token` and `--token-command`, `-v, --verbose` both.
fn options_in(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| word.len() > 1 && word.starts_with('-') && word[1..].chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '-'))
        .map(str::to_owned)
        .collect()
}

fn check(command: &str) {
    let help = help_options(command);
    let documented = documented_options(command);
    let undocumented: Vec<_> = help.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&help).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "oplite {command}: options in --help but not in docs/cli.md: {undocumented:?}; in docs/cli.md but not in --help: {unknown:?}"
    );
}

#[test]
fn the_sync_options_are_documented_as_the_binary_has_them() {
    check("sync");
}

#[test]
fn the_demo_options_are_documented_as_the_binary_has_them() {
    check("demo");
}

#[test]
fn the_uninstall_options_are_documented_as_the_binary_has_them() {
    check("uninstall");
}

#[test]
fn options_in_reads_table_cells_and_help_lines() {
    assert_eq!(options_in("`--token T` / `--token-command CMD`"), ["--token", "--token-command"]);
    assert_eq!(options_in("-v, --verbose"), ["-v", "--verbose"]);
    assert_eq!(options_in("`--shape benchmark\\|wide` (see -1)"), ["--shape"]);
}
