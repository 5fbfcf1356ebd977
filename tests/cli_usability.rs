//! The `ctxpack` tool as a new user meets it: error positions, report positions, the
//! summary line, `--version` and `make demo`.

mod support;

use support::{ctxpack, input_error, sample, stdout};

#[test]
fn invalid_utf8_names_line_and_column() {
    let input = b"{\"content\":\"a\",\"tokens\":1}\n{\"content\":\"b\xff\",\"tokens\":1}\n";
    let err = input_error(&ctxpack(&["--max", "10"], input));
    assert_eq!(
        err,
        "ctxpack: standard input: line 2, column 14: not valid UTF-8 (byte 0xff)"
    );

    let path = std::env::temp_dir().join(format!("ctxpack-utf8-{}.jsonl", std::process::id()));
    std::fs::write(&path, input).unwrap();
    let name = path.to_str().unwrap();
    let err = input_error(&ctxpack(&[name, "--max", "10"], b""));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        err,
        format!("ctxpack: {name}: line 2, column 14: not valid UTF-8 (byte 0xff)")
    );
}

#[test]
fn malformed_json_names_one_line_number() {
    let lines = b"{\"content\":\"a\",\"tokens\":1}\n\n{\"content\":\"b\",\"tokens\":\n";
    let err = input_error(&ctxpack(&["--max", "10"], lines));
    assert!(
        err.contains("line 3, item 1: malformed JSON at column"),
        "{err}"
    );
    assert_eq!(err.matches("line").count(), 1, "{err}");

    let array = b"[\n{\"content\":\"a\",\"tokens\":1},\n{\"content\":\"b\" \"tokens\":1}\n]";
    let err = input_error(&ctxpack(&["--max", "10"], array));
    assert!(err.contains("line 3: malformed JSON at column 16"), "{err}");
    assert_eq!(err.matches("line").count(), 1, "{err}");
}

#[test]
fn report_entries_carry_their_input_position() {
    let text = std::fs::read_to_string(sample("chat.jsonl")).unwrap();
    let inputs: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let out = ctxpack(
        &[
            &sample("chat.jsonl"),
            "--max",
            "400",
            "--target",
            "300",
            "--report",
            "json",
        ],
        b"",
    );
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let entries: Vec<&serde_json::Value> = ["included", "excluded"]
        .iter()
        .flat_map(|k| report[k].as_array().unwrap())
        .collect();
    let mut seen: Vec<u64> = entries
        .iter()
        .map(|e| e["index"].as_u64().unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..inputs.len() as u64).collect::<Vec<_>>());
    for e in &entries {
        let i = e["index"].as_u64().unwrap() as usize;
        assert_eq!(e["item"]["content"], inputs[i]["content"], "entry {e}");
    }
    // The sample repeats the first user message: the two copies are now told apart.
    let first_user = &inputs[1]["content"];
    let copies: Vec<u64> = entries
        .iter()
        .filter(|e| &e["item"]["content"] == first_user)
        .map(|e| e["index"].as_u64().unwrap())
        .collect();
    assert_eq!(copies.len(), 2);
    assert_ne!(copies[0], copies[1]);
}

#[test]
fn the_summary_explains_negative_totals() {
    let items = b"{\"content\":\"a\",\"tokens\":-50}\n{\"content\":\"b\",\"tokens\":5}\n";
    let out = ctxpack(&["--max", "100", "--explain"], items);
    let last = stdout(&out).lines().last().unwrap().to_owned();
    assert_eq!(
        last,
        "1 of 2 candidates included, 5 tokens; -45 tokens considered (the sum of every \
         candidate's tokens, including 1 item with a negative count adding -50; such items \
         are never selected)"
    );
    let out = ctxpack(
        &["--max", "100", "--explain"],
        b"{\"content\":\"b\",\"tokens\":5}\n",
    );
    let last = stdout(&out).lines().last().unwrap().to_owned();
    assert_eq!(
        last,
        "1 of 1 candidates included, 5 tokens; 5 tokens considered"
    );
}

#[test]
fn version_is_printed() {
    for flag in ["--version", "-V"] {
        let out = ctxpack(&[flag], b"");
        assert!(out.status.success());
        assert_eq!(
            stdout(&out),
            format!("ctxpack {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
    assert!(stdout(&ctxpack(&["--help"], b"")).contains("--version"));
}

/// `make demo` must show progress: the build is announced and runs without `--quiet`, and
/// the selection then runs the built binary with the README's arguments.
#[test]
fn make_demo_shows_progress() {
    let out = std::process::Command::new("make")
        .args(["--no-print-directory", "-n", "demo"])
        .env_remove("MAKEFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("MFLAGS")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("make is installed");
    assert!(out.status.success());
    let recipe = stdout(&out);
    let lines: Vec<&str> = recipe.lines().collect();
    let build = lines
        .iter()
        .position(|l| l.contains(" build --release"))
        .expect("a cargo build line");
    assert!(!lines[build].contains("--quiet") && !lines[build].contains(" -q"));
    assert!(
        lines[..build].iter().any(|l| l.starts_with("echo ")),
        "{recipe}"
    );
    let run = lines.last().unwrap();
    assert!(
        run.contains("/ctxpack examples/data/chat.jsonl --max 400 --target 300 --explain"),
        "{recipe}"
    );
    assert!(!recipe.contains("cargo run"), "{recipe}");
}
