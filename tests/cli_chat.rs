//! `ctxpack --format openai|anthropic`: chat requests trimmed on the command line.

mod support;

use serde_json::Value;
use support::{chat_rules, ctxpack, input_error, sample, stderr, stdout};

const FORMATS: [(&str, &str, bool); 2] = [
    ("openai", "openai-request.json", false),
    ("anthropic", "anthropic-request.json", true),
];

#[test]
fn a_request_that_fits_comes_back_unchanged() {
    for (format, file, _) in FORMATS {
        let out = ctxpack(
            &[
                "--format",
                format,
                &sample(file),
                "--max",
                "128000",
                "--target",
                "100000",
            ],
            b"",
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), std::fs::read_to_string(sample(file)).unwrap());
    }
}

#[test]
fn a_tight_budget_trims_and_keeps_every_pair() {
    for (format, file, anthropic) in FORMATS {
        let text = std::fs::read_to_string(sample(file)).unwrap();
        let input: Value = serde_json::from_str(&text).unwrap();
        // Standard input works as for items.
        let out = ctxpack(&["--format", format, "--max", "4000"], text.as_bytes());
        assert!(out.status.success(), "{}", stderr(&out));
        let output: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let rules = if anthropic {
            chat_rules::anthropic(&output)
        } else {
            chat_rules::openai(&output)
        };
        assert_eq!(rules, Ok(()));
        let (n_in, n_out) = (
            input["messages"].as_array().unwrap().len(),
            output["messages"].as_array().unwrap().len(),
        );
        assert!(n_out < n_in, "{format}: {n_out} of {n_in} messages kept");
        let kept: Vec<usize> = {
            let all = input["messages"].as_array().unwrap();
            let mut from = 0;
            output["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    from += all[from..].iter().position(|x| x == m).unwrap() + 1;
                    from - 1
                })
                .collect()
        };
        assert_eq!(
            chat_rules::trimmed_from(&input, &output, &kept, anthropic),
            Ok(())
        );
        let pairs = chat_rules::pairs(&output, anthropic);
        assert!(pairs.values().all(|&n| n == 1), "{format}: {pairs:?}");
    }
}

#[test]
fn explain_and_report_name_every_message() {
    for (format, file, anthropic) in FORMATS {
        let path = sample(file);
        let input: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let n = input["messages"].as_array().unwrap().len();
        let out = ctxpack(
            &["--format", format, &path, "--max", "4000", "--explain"],
            b"",
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let table = stdout(&out);
        // One row per message (a tool call and each of its results on rows of their own),
        // its content starting with the message's path and role.
        let rows: Vec<&str> = table.lines().skip(1).collect();
        for (i, m) in input["messages"].as_array().unwrap().iter().enumerate() {
            let label = format!("messages[{i}] {}:", m["role"].as_str().unwrap());
            let named = rows.iter().filter(|r| r.contains(&label)).count();
            assert_eq!(named, 1, "{format}: {label}\n{table}");
        }
        let last = table.lines().last().unwrap();
        assert!(
            last.starts_with("kept ")
                && last.contains(&format!(" of {n} messages, "))
                && last.ends_with(" tokens (counted with o200k_base, with the provider's framing)"),
            "{last}"
        );

        let out = ctxpack(
            &[
                "--format", format, &path, "--max", "4000", "--report", "json",
            ],
            b"",
        );
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let entries: Vec<&Value> = ["included", "excluded"]
            .iter()
            .flat_map(|k| report[k].as_array().unwrap())
            .collect();
        assert_eq!(
            entries.len() as u64,
            report["total_candidates"].as_u64().unwrap()
        );
        assert!(entries.iter().all(|e| e["index"].is_u64()));
        // A unit of several messages is one group in the report, decided whole.
        let groups = report["groups"].as_array().unwrap();
        let calling_turns = input["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                if anthropic {
                    m["content"]
                        .as_array()
                        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_use"))
                } else {
                    m["tool_calls"].is_array()
                }
            })
            .count();
        assert!(
            calling_turns >= 3,
            "{format}: a sample with several tool loops"
        );
        assert_eq!(
            groups.len(),
            calling_turns,
            "{format}: one group per tool loop"
        );
        for g in groups {
            let members = g["members"].as_array().unwrap();
            assert!(members.len() >= 2, "{format}: {g}");
            let included: Vec<bool> = members
                .iter()
                .map(|m| {
                    let e = entries
                        .iter()
                        .find(|e| e["index"] == *m)
                        .expect("every member has an entry");
                    assert_eq!(e["item"]["group"], g["key"]);
                    report["included"].as_array().unwrap().contains(e)
                })
                .collect();
            assert!(
                included.iter().all(|&x| x) || !included.iter().any(|&x| x),
                "{format}: {g}"
            );
        }
    }
}

#[test]
fn bad_requests_name_the_json_path_and_exit_2() {
    let orphan = br#"{"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c1", "content": "r"}]}"#;
    let err = input_error(&ctxpack(&["--format", "openai", "--max", "100"], orphan));
    assert!(
        err.starts_with("ctxpack: standard input: invalid request: messages[1].tool_call_id: tool message answers 'c1'"),
        "{err}"
    );
    let first = br#"{"messages": [{"role": "assistant", "content": "hi"}]}"#;
    let err = input_error(&ctxpack(&["--format", "anthropic", "--max", "100"], first));
    assert!(
        err.contains("messages[0].role: the first message must be a user message"),
        "{err}"
    );
    let err = input_error(&ctxpack(
        &["--format", "openai", "--max", "100"],
        b"{\"messages\": [",
    ));
    assert!(err.contains("invalid request: $: malformed JSON"), "{err}");
    let err = input_error(&ctxpack(&["--format", "chatml", "--max", "100"], b""));
    assert!(
        err.contains("--format expects items, openai or anthropic, not 'chatml'"),
        "{err}"
    );
}

#[test]
fn a_budget_below_the_pinned_parts_exits_1() {
    let out = ctxpack(
        &[
            "--format",
            "openai",
            &sample("openai-request.json"),
            "--max",
            "300",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("pinned tokens"), "{}", stderr(&out));
}

#[test]
fn explain_names_a_user_message_pinned_for_the_rules() {
    // An Anthropic agent turn: the task, a call with a long result, an answer, a question.
    let task = r#"{"role": "user", "content": "ten words about the task we are working on today"}"#;
    let request = |first: &str| {
        format!(
            r#"{{"model": "m", "max_tokens": 10, "messages": [{first}{task},
              {{"role": "assistant", "content": [{{"type": "tool_use", "id": "t1", "name": "search", "input": {{}}}}]}},
              {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": "{}"}}]}},
              {{"role": "assistant", "content": "short answer"}},
              {{"role": "user", "content": "next question"}}]}}"#,
            "result ".repeat(40)
        )
    };
    // Input tokens from the last line of --explain ("kept 5 of 5 messages, N of N tokens").
    let tokens = |body: &str| -> i64 {
        let out = ctxpack(
            &["--format", "anthropic", "--max", "100000", "--explain"],
            body.as_bytes(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let last = text.lines().last().unwrap().to_owned();
        last.split(" of ")
            .nth(2)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let all = tokens(&request(""));
    // Two user messages in a row are one turn: repeating the task measures it.
    let first = tokens(&request(&format!("{task},"))) - all;
    let max = (all - first).to_string();
    let out = ctxpack(
        &["--format", "anthropic", "--max", &max, "--explain"],
        request("").as_bytes(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("\npinned messages[0]: pinned so that the request starts with a user message; the pipeline ran again around it\n"),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("kept 3 of 5 messages"),
        "{text}"
    );
    assert!(!text.contains("dropped "), "{text}");
}

#[test]
fn head_tail_shortens_long_tool_outputs_instead_of_dropping_them() {
    for (format, file, anthropic) in FORMATS {
        let path = sample(file);
        let run = |extra: &[&str]| {
            let mut args = vec!["--format", format, path.as_str(), "--max", "3000"];
            args.extend_from_slice(extra);
            let out = ctxpack(&args, b"");
            assert!(out.status.success(), "{}", stderr(&out));
            stdout(&out)
        };
        let plain: Value = serde_json::from_str(&run(&[])).unwrap();
        let short: Value = serde_json::from_str(&run(&["--head-tail", "120:60"])).unwrap();
        let rules = if anthropic {
            chat_rules::anthropic(&short)
        } else {
            chat_rules::openai(&short)
        };
        assert_eq!(rules, Ok(()));
        let count = |v: &Value| v["messages"].as_array().unwrap().len();
        assert!(count(&short) > count(&plain), "{format}");
        assert!(short.to_string().contains(" tokens omitted …]"), "{format}");
        // --explain names each shortened message with its tokens.
        let explain = run(&["--head-tail", "120:60", "--explain"]);
        let lines: Vec<&str> = explain
            .lines()
            .filter(|l| l.starts_with("shortened messages["))
            .collect();
        assert!(!lines.is_empty(), "{explain}");
        assert!(
            lines
                .iter()
                .all(|l| l.contains(": sent as its head and tail, ")),
            "{explain}"
        );
        // A fixed quality is accepted with --format (and checked by the argument parser).
        let fixed: Value = serde_json::from_str(&run(&[
            "--head-tail",
            "120:60",
            "--head-tail-quality",
            "0.4",
        ]))
        .unwrap();
        assert!(fixed.to_string().contains(" tokens omitted …]"), "{format}");
    }
}

#[test]
fn explain_names_a_pinned_tool_output_sent_shortened() {
    let words: Vec<String> = (1..=600).map(|i| format!("w{i}")).collect();
    let request = serde_json::json!({"messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": words.join(" ")}]})
    .to_string();
    let args = ["--format", "openai", "--max", "300", "--head-tail", "40:20"];
    // Without shortening the pinned last turn does not fit: the selection fails (exit 1).
    let plain = ctxpack(&args[..4], request.as_bytes());
    assert_eq!(plain.status.code(), Some(1), "{}", stderr(&plain));
    let mut explain = args.to_vec();
    explain.push("--explain");
    let out = ctxpack(&explain, request.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("shortened messages[2]: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.ends_with(" tokens (pinned; it did not fit whole)"),
        "{line}"
    );
    let trimmed = ctxpack(&args, request.as_bytes());
    let body: serde_json::Value = serde_json::from_str(&stdout(&trimmed)).unwrap();
    assert_eq!(chat_rules::openai(&body), Ok(()));
    assert!(body["messages"][2]["content"]
        .as_str()
        .unwrap()
        .contains(" tokens omitted …]"));
}
