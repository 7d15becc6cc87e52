//! Replays every file of every fuzz corpus (`fuzz/corpus/NAME/`) through its target
//! under a plain `cargo test`: the seeds, what the campaigns found worth keeping, and
//! the reproducers of fixed crashes, so that none of them breaks again unnoticed.
//!
//! A missing or empty corpus fails: a replay that finds nothing to run proves nothing.

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// One test per target, named after it, and the list of targets the corpus must cover.
macro_rules! replays {
    ($($target:ident),* $(,)?) => {
        const TARGETS: &[&str] = &[$(stringify!($target)),*];
        $(
            #[test]
            fn $target() {
                replay(stringify!($target), bondry_fuzz::$target);
            }
        )*
    };
}

replays!(
    adapter_receive,
    sentinel,
    sealed,
    uri_template,
    schema_compile,
    config,
    upstream_listing,
    upstream_messages,
    openapi
);

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target)
}

/// Runs every input of `target`'s corpus, and fails naming each one that panicked.
fn replay(target: &str, run: fn(&[u8])) {
    let dir = corpus_dir(target);
    let entries = fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    let mut files: Vec<PathBuf> = entries.map(|entry| entry.expect("a readable directory entry").path()).collect();
    files.sort();
    assert!(!files.is_empty(), "{} is empty: the replay would test nothing", dir.display());
    let failed: Vec<String> = files
        .iter()
        .filter(|file| {
            let data = fs::read(file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            panic::catch_unwind(AssertUnwindSafe(|| run(&data))).is_err()
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} inputs of {target} panicked:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}

#[test]
fn every_target_has_a_corpus_directory() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut found: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut expected: Vec<String> = TARGETS.iter().map(|name| name.to_string()).collect();
    expected.sort();
    assert_eq!(found, expected, "fuzz/corpus must hold one directory per target, and only those");
}
