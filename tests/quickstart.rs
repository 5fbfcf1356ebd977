//! The Rust quickstart is written three times for three readers: the README, the
//! crate-level documentation (where `cargo test --doc` compiles and runs it) and
//! `examples/quickstart.rs` (`cargo run --example quickstart`). This test keeps the three
//! word for word the same, so the README shows code that is compiled.

use std::fs;
use std::path::Path;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The lines between the fence line `open` and the next closing fence.
fn fenced<'a>(lines: &[&'a str], open: &str) -> Vec<&'a str> {
    let start = lines
        .iter()
        .position(|l| *l == open)
        .unwrap_or_else(|| panic!("no `{open}` fence"))
        + 1;
    let len = lines[start..]
        .iter()
        .position(|l| l.trim_end() == "```" || l.trim_end() == "//! ```")
        .expect("an unclosed fence");
    lines[start..start + len].to_vec()
}

/// The README's `rust` code block.
fn readme() -> Vec<String> {
    let text = read("README.md");
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines
        .iter()
        .position(|l| *l == "## Rust quickstart")
        .expect("a Rust quickstart section")..];
    fenced(tail, "```rust")
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The visible lines of the crate-level doctest (hidden `# ` lines left out).
fn crate_doc() -> Vec<String> {
    let text = read("src/lib.rs");
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines
        .iter()
        .position(|l| *l == "//! # Quickstart")
        .expect("a Quickstart section in the crate doc")..];
    fenced(tail, "//! ```")
        .into_iter()
        .map(|l| l.strip_prefix("//!").expect("a crate doc line"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .filter(|l| !l.starts_with("# "))
        .map(str::to_owned)
        .collect()
}

/// The example's imports, then the body of its `main` without the final `Ok(())`,
/// one level of indentation removed.
fn example() -> Vec<String> {
    let text = read("examples/quickstart.rs");
    let lines: Vec<&str> = text.lines().collect();
    let first_use = lines
        .iter()
        .position(|l| l.starts_with("use "))
        .expect("imports");
    let main = lines
        .iter()
        .position(|l| l.starts_with("fn main()"))
        .expect("a main function");
    let end = lines
        .iter()
        .rposition(|l| *l == "    Ok(())")
        .expect("main ends with Ok(())");
    let mut out: Vec<String> = lines[first_use..main]
        .iter()
        .map(|l| l.to_string())
        .collect();
    out.extend(
        lines[main + 1..end]
            .iter()
            .map(|l| l.strip_prefix("    ").unwrap_or(l).to_string()),
    );
    out
}

#[test]
fn readme_crate_doc_and_example_show_the_same_quickstart() {
    let readme = readme();
    assert!(readme.len() > 20, "README block too short: {readme:?}");
    assert_eq!(crate_doc(), readme, "src/lib.rs crate doc vs README.md");
    assert_eq!(example(), readme, "examples/quickstart.rs vs README.md");
}
