//! `ctxpack --state FILE`: the prefix state is read when the file exists and rewritten after
//! the run (binary, or JSON for a `.json` name); `--explain` and `--report json` show the
//! reuse report; a damaged state or one of another conversation is bad input (exit 2,
//! one line naming the file); chat requests carry states the same way.

mod support;

use std::path::PathBuf;

use support::{ctxpack, input_error, sample, stdout};

/// A directory of its own under the system's temporary directory, removed afterwards.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("ctxpack-prefix-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn agent() -> String {
    sample("agent.jsonl")
}

#[test]
fn the_state_file_is_created_read_and_rewritten() {
    let dir = Dir::new("rewrite");
    let state = dir.path("s.bin");
    let args = |extra: &[&str]| {
        let mut a = vec![agent()];
        a.extend(
            [
                "--max",
                "1200",
                "--preset",
                "tool-use",
                "--pinned-first",
                "--state",
            ]
            .map(String::from),
        );
        a.push(state.clone());
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        ctxpack(&a.iter().map(String::as_str).collect::<Vec<_>>(), b"")
    };
    let first = run(&[]);
    assert_eq!(first.status.code(), Some(0));
    let bytes = std::fs::read(&state).unwrap();
    assert_eq!(&bytes[..4], b"CXPS");
    // Again, the same input: the same window, the whole previous window kept.
    let second = run(&[]);
    assert_eq!(stdout(&second), stdout(&first));
    let explained = run(&["--explain", "--cache", "openai"]);
    let text = stdout(&explained);
    assert!(
        text.contains("prefix: hold, turn 3 (2 since the anchor): held"),
        "{text}"
    );
    let windows = stdout(&first).lines().count();
    assert!(
        text.contains(&format!("kept {windows} of {windows} previous items")),
        "{text}"
    );
    assert!(
        text.contains("first difference: none (the previous window is the start"),
        "{text}"
    );
    // The report JSON carries the reuse report as "prefix".
    let report = run(&["--report", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!(json["prefix"]["mode"], "hold");
    assert_eq!(json["prefix"]["turn"], 4);
    assert_eq!(json["prefix"]["kept_entries"], windows);
    assert!(json["included"].is_array());
}

#[test]
fn a_json_state_file_and_a_shorter_history() {
    let dir = Dir::new("json");
    let state = dir.path("state.json");
    let agent = agent();
    let head: String = std::fs::read_to_string(&agent)
        .unwrap()
        .lines()
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    let short = dir.path("short.jsonl");
    std::fs::write(&short, head).unwrap();
    let base = [
        "--max",
        "1200",
        "--preset",
        "tool-use",
        "--pinned-first",
        "--state",
        &state,
    ];
    let out = ctxpack(&[&[agent.as_str()][..], &base[..]].concat(), b"");
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(
        text.starts_with("{\"format\":\"ctxpack-prefix-state\",\"version\":1"),
        "{text}"
    );
    // The history loses its last six items: what the previous window had of them is gone.
    let out = ctxpack(
        &[&[short.as_str(), "--explain"][..], &base[..]].concat(),
        b"",
    );
    let text = stdout(&out);
    assert!(text.contains(": removed; the window now has"), "{text}");
}

#[test]
fn damaged_and_foreign_states_are_bad_input() {
    let dir = Dir::new("damaged");
    let state = dir.path("s.bin");
    let agent = agent();
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut a = vec![
            agent.clone(),
            "--max".into(),
            "1200".into(),
            "--state".into(),
            state.clone(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&'static str]| {
        let a = args(extra);
        ctxpack(&a.iter().map(String::as_str).collect::<Vec<_>>(), b"")
    };
    assert_eq!(run(&["--conversation", "c1"]).status.code(), Some(0));
    let good = std::fs::read(&state).unwrap();
    // Another key: refused, and the file is left as it was.
    let msg = input_error(&run(&["--conversation", "c2"]));
    assert!(
        msg.contains(&state) && msg.contains("another conversation"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&state).unwrap(), good);
    // One flipped bit, and a truncated file.
    let mut flipped = good.clone();
    flipped[30] ^= 4;
    std::fs::write(&state, &flipped).unwrap();
    let msg = input_error(&run(&["--conversation", "c1"]));
    assert!(
        msg.contains("invalid prefix state") && msg.contains("checksum"),
        "{msg}"
    );
    std::fs::write(&state, &good[..good.len() / 2]).unwrap();
    let msg = input_error(&run(&["--conversation", "c1"]));
    assert!(msg.contains("invalid prefix state"), "{msg}");
    // A flag that needs --state.
    let out = ctxpack(&[&agent, "--max", "1200", "--prefix", "hold"], b"");
    assert!(input_error(&out).contains("--prefix needs --state FILE"));
}

#[test]
fn chat_requests_carry_the_state_of_the_trimmed_request() {
    let dir = Dir::new("chat");
    let state = dir.path("chat.bin");
    let request = sample("openai-request.json");
    let args = [
        "--format", "openai", &request, "--max", "4000", "--state", &state,
    ];
    let first = ctxpack(&args, b"");
    assert_eq!(first.status.code(), Some(0));
    let second = ctxpack(&args, b"");
    assert_eq!(stdout(&second), stdout(&first));
    let explained = ctxpack(&[&args[..], &["--explain"]].concat(), b"");
    let text = stdout(&explained);
    assert!(text.contains("turn 3 (2 since the anchor): held"), "{text}");
    assert!(text.contains("first difference: none"), "{text}");
}
