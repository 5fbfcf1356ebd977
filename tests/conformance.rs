//! Conformance runner (STUB: to be implemented).
fn main() {}
