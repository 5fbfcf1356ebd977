//! Helpers shared by the CLI test files that run the `ctxpack` binary.
#![allow(dead_code)] // each test file uses a subset

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs the `ctxpack` binary with `args`, feeding `stdin` (bytes, so that invalid UTF-8 can
/// be sent).
pub fn ctxpack(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxpack"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ctxpack");
    // A child that exits before reading everything closes the pipe; that is not a failure.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Asserts a bad-input failure and returns its message: status 2, nothing on standard
/// output, exactly one line on standard error.
pub fn input_error(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout must stay empty: {}",
        stdout(out)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err.trim_end().to_owned()
}

/// A path under `examples/data`.
pub fn sample(name: &str) -> String {
    format!("{}/examples/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub mod chat_rules;
