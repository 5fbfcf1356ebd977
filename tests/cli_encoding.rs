//! `ctxpack --encoding`: items without `tokens` are counted by the library, items with
//! `tokens` keep theirs, and chat requests are counted with the encoding (default
//! `o200k_base`); `--no-pin-last-turn` lets the last turn of a chat request go.
#![cfg(feature = "tokenizer")]

mod support;

use serde_json::Value;
use support::{chat_rules, ctxpack, input_error, sample, stderr, stdout};

/// The window's items as JSON values.
fn window(out: &std::process::Output) -> Vec<Value> {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn items_without_tokens_are_counted_and_given_tokens_are_kept() {
    // Token ids published in tiktoken's tests and OpenAI's cookbook: "hello world" is 2
    // tokens in cl100k_base, "tiktoken is great!" 6, "お誕生日おめでとう" 9 in cl100k_base
    // and 8 in o200k_base.
    let input = "{\"content\":\"hello world\"}\n\
        {\"content\":\"tiktoken is great!\",\"tokens\":null}\n\
        {\"content\":\"お誕生日おめでとう\"}\n\
        {\"content\":\"given\",\"tokens\":40}\n"
        .as_bytes();
    let tokens = |out: &std::process::Output| -> Vec<i64> {
        window(out)
            .iter()
            .map(|v| v["tokens"].as_i64().unwrap())
            .collect()
    };
    let out = ctxpack(&["--max", "1000", "--encoding", "cl100k_base"], input);
    assert_eq!(tokens(&out), [2, 6, 9, 40]);
    let out = ctxpack(&["--max", "1000", "--encoding", "o200k_base"], input);
    assert_eq!(tokens(&out)[2..], [8, 40]);
    // The counts take part in the selection: 2 + 6 + 9 = 17 fit a budget of 17 without
    // the 40-token item.
    let out = ctxpack(
        &[
            "--max",
            "17",
            "--encoding",
            "cl100k_base",
            "--preset",
            "rag",
        ],
        input,
    );
    let mut kept = tokens(&out);
    kept.sort_unstable();
    assert_eq!(kept, [2, 6, 9]);
    // JSON arrays too.
    let out = ctxpack(
        &["--max", "100", "--encoding", "CL100K_BASE"],
        b"[{\"content\": \"hello world\"}]",
    );
    assert_eq!(tokens(&out), [2]);
}

#[test]
fn without_encoding_tokens_stay_required_and_bad_names_are_refused() {
    let err = input_error(&ctxpack(&["--max", "10"], b"{\"content\":\"a\"}\n"));
    assert_eq!(
        err,
        "ctxpack: standard input: line 1, item 0, field 'tokens': is required (or give \
         --encoding o200k_base to have ctxpack count it)"
    );
    // A present but wrong `tokens` is still an error with an encoding.
    let err = input_error(&ctxpack(
        &["--max", "10", "--encoding", "o200k_base"],
        b"{\"content\":\"a\",\"tokens\":\"3\"}\n",
    ));
    assert!(
        err.ends_with("field 'tokens': must be an integer (64-bit), found a string"),
        "{err}"
    );
    let err = input_error(&ctxpack(&["--max", "10", "--encoding", "gpt2"], b""));
    assert!(
        err.contains("--encoding expects o200k_base or cl100k_base, not 'gpt2'"),
        "{err}"
    );
}

/// The cookbook's example request ("How to count tokens with tiktoken"), whose prompt
/// tokens the OpenAI API reported: 129 with cl100k_base (gpt-4), 124 with o200k_base
/// (gpt-4o).
const COOKBOOK: &str = r#"{"model": "gpt-4o", "messages": [
  {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
  {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
  {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
  {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
  {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
  {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."}]}"#;

#[test]
fn chat_requests_are_counted_with_the_encoding() {
    for (args, total, name) in [
        (vec![], 124, "o200k_base"),
        (vec!["--encoding", "o200k_base"], 124, "o200k_base"),
        (vec!["--encoding", "cl100k_base"], 129, "cl100k_base"),
    ] {
        let mut argv = vec!["--format", "openai", "--max", "1000", "--explain"];
        argv.extend(args);
        let out = ctxpack(&argv, COOKBOOK.as_bytes());
        assert!(out.status.success(), "{}", stderr(&out));
        let table = stdout(&out);
        let want = format!(
            "kept 6 of 6 messages, {total} of {total} tokens (counted with {name}, with the \
             provider's framing)"
        );
        assert_eq!(table.lines().last(), Some(want.as_str()), "{table}");
    }
    // 124 tokens do not fit 123 once the pinned system messages and the last turn are
    // counted exactly: the pinned parts alone are 124.
    let out = ctxpack(&["--format", "openai", "--max", "123"], COOKBOOK.as_bytes());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn the_last_turn_can_be_let_go() {
    let path = sample("openai-request.json");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let n = input["messages"].as_array().unwrap().len();
    // 300 tokens cannot hold the pinned last tool loop (exit 1, as without the switch)...
    let out = ctxpack(&["--format", "openai", &path, "--max", "300"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // ... but without the pin the budget takes what fits, and the last turn goes.
    let out = ctxpack(
        &[
            "--format",
            "openai",
            &path,
            "--max",
            "300",
            "--no-pin-last-turn",
        ],
        b"",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let output: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(chat_rules::openai(&output), Ok(()));
    let kept = output["messages"].as_array().unwrap();
    assert!(!kept.is_empty() && kept.len() < n);
    assert_ne!(kept.last(), input["messages"].as_array().unwrap().last());
    // Items have no last turn.
    let err = input_error(&ctxpack(&["--max", "10", "--no-pin-last-turn"], b""));
    assert!(err.contains("--no-pin-last-turn applies to --format openai or anthropic"));
}
