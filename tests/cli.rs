//! The `ctxpack` command-line tool, run as a user would run it.

mod support;

use std::process::Output;

fn ctxpack(args: &[&str], stdin: &str) -> Output {
    support::ctxpack(args, stdin.as_bytes())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/chat.jsonl");

/// Asserts a bad-input failure: status 2, nothing on stdout, one stderr line with `needle`.
fn assert_input_error(out: &Output, needle: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout must stay empty: {}",
        text(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err:?} should contain {needle:?}");
}

#[test]
fn prints_the_window_as_json_lines_in_placed_order() {
    let out = ctxpack(&[SAMPLE, "--max", "400", "--target", "300"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 15);
    // Chronological placement: timestamps ascend, undated items (the pinned prompt) last.
    let stamps: Vec<&str> = lines
        .iter()
        .filter_map(|v| v["timestamp"].as_str())
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    assert_eq!(lines[13]["pinned"], true);
    let total: i64 = lines.iter().map(|v| v["tokens"].as_i64().unwrap()).sum();
    assert!(total <= 300);
}

#[test]
fn reads_standard_input_and_json_arrays() {
    let array = r#"[{"content":"a","tokens":5},{"content":"b","tokens":500}]"#;
    let out = ctxpack(&["-", "--max", "100", "--preset", "rag"], array);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 1);
}

#[test]
fn explain_and_report_cover_every_candidate() {
    let out = ctxpack(
        &[SAMPLE, "--max", "400", "--target", "300", "--explain"],
        "",
    );
    let table = text(&out.stdout);
    assert!(out.status.success());
    // Header, 18 rows, the summary, and the hint about the undated pinned prompt.
    assert_eq!(table.lines().count(), 18 + 3, "{table}");
    assert!(table.contains("Deduplicated") && table.contains("NegativeTokens (-1)"));
    assert!(table
        .lines()
        .last()
        .unwrap()
        .starts_with("hint: pinned item 0 has no timestamp"));

    let out = ctxpack(
        &[
            SAMPLE, "--max", "400", "--target", "300", "--report", "json",
        ],
        "",
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (inc, exc) = (
        report["included"].as_array().unwrap(),
        report["excluded"].as_array().unwrap(),
    );
    assert_eq!(inc.len() + exc.len(), 18);
    assert_eq!(report["total_candidates"], 18);
}

#[test]
fn bad_input_names_line_and_field_and_exits_2() {
    let two_lines = "{\"content\":\"a\",\"tokens\":1}\n{\"content\":\"b\",\"tokens\":\"many\"}\n";
    assert_input_error(
        &ctxpack(&["--max", "10"], two_lines),
        "line 2, item 1, field 'tokens'",
    );
    assert_input_error(
        &ctxpack(&["--max", "10"], "{\"tokens\":1}"),
        "field 'content': is required",
    );
    assert_input_error(
        &ctxpack(&["--max", "10"], "{\"content\":\"a\",\"tokens\":1,"),
        "line 1",
    );
    assert_input_error(
        &ctxpack(&["--max", "10", "--target", "20"], ""),
        "target_tokens (20) must be <= max_tokens (10)",
    );
    assert_input_error(&ctxpack(&["--max", "ten"], ""), "--max expects an integer");
    assert_input_error(&ctxpack(&["--max", "10", "--preset", "nope"], ""), "nope");
    assert_input_error(
        &ctxpack(&["/no/such/file", "--max", "10"], ""),
        "/no/such/file",
    );
}

/// A scratch folder for the files of one test, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ctxpack-cli-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Writes `text` to `name` in the folder and returns its path.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn bad_policy_files_name_the_file_and_the_json_path_once() {
    let dir = Scratch::new("bad-policy");
    let path = dir.file(
        "policy.json",
        r#"{"scorers":[{"type":"recency","weight":-1}],"slicerType":"greedy","placerType":"chronological"}"#,
    );
    let out = ctxpack(&["--max", "10", "--policy", &path], "");
    assert_input_error(&out, "scorers[0].weight");
    assert_eq!(
        text(&out.stderr),
        format!("ctxpack: {path}: invalid policy: scorers[0].weight: must be positive and finite (got -1)\n")
    );
    // A value checked when the pipeline is built names the file too.
    let path = dir.file(
        "kinds.json",
        r#"{"scorers":[{"type":"kind","weight":1,"kindWeights":{"Document":-1}}]}"#,
    );
    let out = ctxpack(&["--max", "10", "--policy", &path], "");
    assert_input_error(
        &out,
        &format!("ctxpack: {path}: invalid scorer configuration: "),
    );
}

/// The chat sample's window under `args`: (exit status, stdout, stderr).
fn sample_run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec![SAMPLE];
    all.extend_from_slice(args);
    let out = ctxpack(&all, "");
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn policy_file_warnings_go_to_stderr_and_strict_rejects_them() {
    let dir = Scratch::new("policy-warnings");
    let clean = dir.file(
        "clean.json",
        r#"{"scorers":[{"type":"recency","weight":3},{"type":"kind","weight":1,"kindWeights":{"Message":2,"Document":1}}]}"#,
    );
    let lenient = dir.file(
        "lenient.json",
        r#"{"scorers":[{"weight":3,"note":"x"},{"type":"kind","weight":1,"kindWeights":{"Message":1,"Document":1,"MESSAGE":2}}],"futureOption":true}"#,
    );
    let (status, window, stderr) =
        sample_run(&["--max", "400", "--target", "300", "--policy", &clean]);
    assert_eq!((status, stderr.as_str()), (Some(0), ""));
    assert!(!window.is_empty());
    // The lenient file means the same policy: same window, and one warning line each.
    let (status, same, stderr) =
        sample_run(&["--max", "400", "--target", "300", "--policy", &lenient]);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(same, window);
    assert_eq!(
        stderr,
        format!(
            "ctxpack: warning: {lenient}: futureOption: unknown property; ignored\n\
             ctxpack: warning: {lenient}: scorers[0].note: unknown property; ignored\n\
             ctxpack: warning: {lenient}: scorers[0].type: absent; read as recency, as .NET reads it\n\
             ctxpack: warning: {lenient}: scorers[1].kindWeights.MESSAGE: repeats the kind \"Message\" (kinds compare ASCII case-insensitively); the last value is kept\n"
        )
    );
    let out = ctxpack(
        &[SAMPLE, "--max", "400", "--policy", &lenient, "--strict"],
        "",
    );
    assert_input_error(
        &out,
        &format!("ctxpack: {lenient}: invalid policy: futureOption: unknown property"),
    );
}

#[test]
fn budget_files_replace_the_budget_flags() {
    let dir = Scratch::new("budget");
    let (status, by_flags, _) = sample_run(&["--max", "400", "--target", "300", "--reserve", "20"]);
    assert_eq!(status, Some(0));
    // The .NET form, as .NET writes it (indented), with every property.
    let budget = dir.file(
        "budget.json",
        "{\n  \"maxTokens\": 400,\n  \"targetTokens\": 300,\n  \"outputReserve\": 20,\n  \"reservedSlots\": {},\n  \"estimationSafetyMarginPercent\": 0\n}",
    );
    let (status, by_file, stderr) = sample_run(&["--budget", &budget]);
    assert_eq!((status, stderr.as_str()), (Some(0), ""));
    assert_eq!(by_file, by_flags);
    // Reserved slots and the safety margin, which have no flags, take effect: 100 tokens
    // less for the slicer select fewer items.
    let slots = dir.file(
        "slots.json",
        r#"{"maxTokens":400,"targetTokens":300,"outputReserve":20,"reservedSlots":{"Memory":100},"estimationSafetyMarginPercent":10}"#,
    );
    let (status, smaller, _) = sample_run(&["--budget", &slots]);
    assert_eq!(status, Some(0));
    assert!(smaller.lines().count() < by_file.lines().count());
    // Warnings and errors name the file.
    let partial = dir.file(
        "partial.json",
        r#"{"maxTokens":400,"targetTokens":300,"reserve":20}"#,
    );
    let (status, _, stderr) = sample_run(&["--budget", &partial]);
    assert_eq!(status, Some(0));
    assert_eq!(
        stderr,
        format!("ctxpack: warning: {partial}: reserve: unknown property; ignored\n")
    );
    let out = ctxpack(&[SAMPLE, "--budget", &partial, "--strict"], "");
    assert_input_error(
        &out,
        &format!("ctxpack: {partial}: invalid budget: reserve: unknown property"),
    );
    let bad = dir.file("bad.json", r#"{"maxTokens":1000,"targetTokens":2000}"#);
    let out = ctxpack(&[SAMPLE, "--budget", &bad], "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "ctxpack: {bad}: invalid budget: targetTokens: 2000 cannot exceed maxTokens (1000)\n"
        )
    );
    assert_input_error(&out, "targetTokens");
    assert_input_error(
        &ctxpack(&[SAMPLE, "--budget", &bad, "--max", "10"], ""),
        "give either --budget or --max/--target/--reserve",
    );
    assert_input_error(
        &ctxpack(&[SAMPLE, "--budget", "/no/such/budget.json"], ""),
        "/no/such/budget.json",
    );
}

#[test]
fn a_failed_selection_exits_1() {
    // A pinned item larger than the target overflows under the chat preset's strategy.
    let items = "{\"content\":\"sys\",\"tokens\":80,\"pinned\":true}\n";
    let out = ctxpack(&["--max", "100", "--target", "50"], items);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("exceed target tokens (50)"));
}

const AGENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/agent.jsonl");

#[test]
fn groups_are_read_written_and_never_split() {
    // The agent transcript at a tight budget: whatever is placed, every "group" appears
    // whole, members next to each other in input order, and the key is written back.
    let input = std::fs::read_to_string(AGENT).unwrap();
    let keys: Vec<Option<String>> = input
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["group"].as_str().map(str::to_owned)
        })
        .collect();
    for target in ["300", "500", "900"] {
        let out = ctxpack(&[AGENT, "--max", target, "--preset", "tool-use"], "");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let placed: Vec<Option<String>> = text(&out.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["group"].as_str().map(str::to_owned)
            })
            .collect();
        for key in keys.iter().flatten() {
            let members = keys.iter().filter(|k| k.as_ref() == Some(key)).count();
            let at: Vec<usize> = (0..placed.len())
                .filter(|&i| placed[i].as_ref() == Some(key))
                .collect();
            assert!(
                at.is_empty() || at.len() == members,
                "{key} split at {target}"
            );
            assert!(at.windows(2).all(|w| w[1] == w[0] + 1), "{key} scattered");
        }
    }
}

#[test]
fn explain_shows_groups_and_the_pinned_first_option_moves_the_prompt() {
    let out = ctxpack(&[AGENT, "--max", "600", "--explain"], "");
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let header = table.lines().next().unwrap();
    assert!(header.contains(" group "), "{header}");
    assert!(table.contains("call_09") && table.contains("GroupExcluded (with item"));
    assert!(
        table.contains("hint: pinned item 0 has no timestamp"),
        "{table}"
    );

    let out = ctxpack(&[AGENT, "--max", "600", "--explain", "--pinned-first"], "");
    assert!(!text(&out.stdout).contains("hint:"));
    let out = ctxpack(&[AGENT, "--max", "600", "--pinned-first"], "");
    let first: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["kind"], "SystemPrompt");

    // Without group keys the table keeps its former columns.
    let out = ctxpack(&[SAMPLE, "--max", "400", "--explain"], "");
    assert!(!text(&out.stdout).lines().next().unwrap().contains("group"));

    let out = ctxpack(
        &[
            AGENT,
            "--max",
            "600",
            "--report",
            "json",
            "--group-value",
            "mean",
        ],
        "",
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["groups"].as_array().unwrap().len(), 9);
    assert_input_error(
        &ctxpack(&[AGENT, "--max", "600", "--group-value", "median"], ""),
        "--group-value expects sum, max or mean, got 'median'",
    );
    assert_input_error(
        &ctxpack(
            &["--max", "600"],
            "{\"content\":\"a\",\"tokens\":1,\"group\":\"\"}",
        ),
        "field 'group': must be a non-empty string",
    );
}
