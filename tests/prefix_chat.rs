//! Prefix states on chat requests (`ctxpack::chat` with `ChatOptions::prefix`,
//! `docs/prefix-cache.md`): over a growing agent conversation, Hold keeps the previous
//! turn's trimmed messages as the start of the next trimmed request (every request still
//! passes the provider rules); the same request twice gives the same body and full reuse;
//! a one-byte edit is found in the message's JSON even where the readable rendering does
//! not show it; the state describes what is sent after the provider rules' adjustments.

mod support;

use ctxpack::chat::{trim, ChatOptions, Provider, Trimmed};
use ctxpack::policy::Policy;
use ctxpack::prefix::{DifferenceReason, PrefixMode, PrefixOptions, PrefixState, TurnOutcome};
use ctxpack::ContextBudget;
use serde_json::{json, Value};
use support::chat_rules;

fn pipeline() -> ctxpack::Pipeline {
    Policy::preset("tool-use")
        .unwrap()
        .build_pipeline()
        .unwrap()
}

/// Trims `body` with the prefix options of `mode` and `previous`.
fn turn(
    provider: Provider,
    body: &Value,
    max: i64,
    mode: Option<PrefixMode>,
    previous: Option<&PrefixState>,
) -> Trimmed {
    let mut options = ChatOptions::default();
    options.prefix = mode.map(|m| {
        let mut o = PrefixOptions::new(m);
        o.previous = previous;
        o
    });
    let budget = ContextBudget::new(max, max).unwrap();
    trim(provider, &body.to_string(), &budget, &pipeline(), &options).expect("trim")
}

/// An OpenAI agent conversation after `turns` turns: a system message, then per turn a
/// user message (every third turn), a call with one or two parallel tool calls and their
/// results (long), and an answer.
fn conversation(turns: usize) -> Value {
    let mut messages = vec![json!({"role": "system", "content": "You fix bugs. Use the tools."})];
    for t in 0..turns {
        if t % 3 == 0 {
            messages.push(
                json!({"role": "user", "content": format!("Task {t}: look at module {}", t % 7)}),
            );
        }
        let calls = 1 + t % 2;
        let tool_calls: Vec<Value> = (0..calls)
            .map(|c| {
                json!({"id": format!("call_{t}_{c}"), "type": "function",
                       "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/m{t}_{c}.rs\"}}")}})
            })
            .collect();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}));
        for c in 0..calls {
            let size = 150 + (t * 37 + c * 101) % 900;
            messages.push(json!({"role": "tool", "tool_call_id": format!("call_{t}_{c}"),
                                 "content": format!("file m{t}_{c}: {}", "fn x() {} ".repeat(size / 3))}));
        }
        messages.push(
            json!({"role": "assistant", "content": format!("Turn {t}: found it in m{t}_0.")}),
        );
    }
    json!({"model": "gpt-4o", "messages": messages})
}

fn messages(t: &Trimmed) -> Vec<Value> {
    let body: Value = serde_json::from_str(&t.json).unwrap();
    body["messages"].as_array().unwrap().clone()
}

#[test]
fn hold_keeps_the_previous_trimmed_request_as_the_start_of_the_next() {
    let max = 6_000;
    let (mut hold_state, mut off_state): (Option<PrefixState>, Option<PrefixState>) = (None, None);
    let (mut hold_kept, mut off_kept, mut reanchors) = (0i64, 0i64, 0);
    let (mut hold_full, mut off_full) = (0, 0);
    let mut previous: Option<Vec<Value>> = None;
    for turns in 1..=60 {
        let body = conversation(turns);
        let h = turn(
            Provider::OpenAi,
            &body,
            max,
            Some(PrefixMode::Hold),
            hold_state.as_ref(),
        );
        let m = turn(
            Provider::OpenAi,
            &body,
            max,
            Some(PrefixMode::Measure),
            off_state.as_ref(),
        );
        // The plain trim and Measure agree.
        let plain = turn(Provider::OpenAi, &body, max, None, None);
        assert_eq!(plain.json, m.json, "turn {turns}");
        for t in [&h, &m] {
            let out: Value = serde_json::from_str(&t.json).unwrap();
            chat_rules::openai(&out).unwrap_or_else(|e| panic!("turn {turns}: {e}"));
            chat_rules::trimmed_from(&body, &out, &t.kept, false).unwrap();
            assert!(t.tokens <= max, "turn {turns}");
        }
        let reuse = h.reuse.clone().unwrap();
        let sent = messages(&h);
        if let Some(prev) = &previous {
            if reuse.outcome == TurnOutcome::Held && reuse.kept_entries == reuse.previous_entries {
                // The whole previous request is the start of this one.
                assert!(sent.starts_with(prev), "turn {turns}");
            }
        }
        assert!(reuse.value_share_given_up() <= 0.05 + 1e-12, "turn {turns}");
        if reuse.outcome == TurnOutcome::Reanchored {
            reanchors += 1;
        }
        // Entries: the request's own part and each kept message (one unit item each here).
        assert_eq!(
            h.state.as_ref().unwrap().entries().len(),
            reuse.window_entries
        );
        if reuse.kept_entries == reuse.previous_entries {
            hold_full += 1;
        }
        let off_reuse = m.reuse.as_ref().unwrap();
        if off_reuse.kept_entries == off_reuse.previous_entries {
            off_full += 1;
        }
        hold_kept += reuse.kept_tokens;
        off_kept += m.reuse.as_ref().unwrap().kept_tokens;
        previous = Some(sent);
        hold_state = h.state;
        off_state = m.state;
    }
    eprintln!(
        "kept tokens: hold {hold_kept}, off {off_kept}; whole previous request kept: hold \
         {hold_full}, off {off_full} of 60 turns; {reanchors} re-anchors"
    );
    // A fresh trim keeps the previous request whole only until something early is dropped;
    // Hold keeps it whole on most turns.
    assert!(hold_kept > off_kept, "hold {hold_kept}, off {off_kept}");
    assert!(
        hold_full >= 48 && hold_full >= off_full + 10,
        "{hold_full} vs {off_full}"
    );
    assert!((1..=10).contains(&reanchors), "{reanchors}");
}

#[test]
fn the_same_request_twice_gives_the_same_body_and_full_reuse() {
    let body = conversation(12);
    for mode in [PrefixMode::Measure, PrefixMode::Hold] {
        let first = turn(Provider::OpenAi, &body, 3_000, Some(mode), None);
        let again = turn(
            Provider::OpenAi,
            &body,
            3_000,
            Some(mode),
            first.state.as_ref(),
        );
        assert_eq!(again.json, first.json, "{mode:?}");
        let r = again.reuse.unwrap();
        assert_eq!(r.kept_entries, r.previous_entries, "{mode:?}");
        assert_eq!(r.first_difference, None, "{mode:?}");
        assert!(r.kept_tokens > 0);
    }
}

#[test]
fn a_one_byte_edit_is_found_in_the_json_not_the_rendering() {
    let body = conversation(6);
    let first = turn(
        Provider::OpenAi,
        &body,
        100_000,
        Some(PrefixMode::Measure),
        None,
    );
    // A field the readable rendering does not show: the tool call's type.
    let mut edited = body.clone();
    edited["messages"][2]["tool_calls"][0]["type"] = json!("functioN");
    let t = turn(
        Provider::OpenAi,
        &edited,
        100_000,
        Some(PrefixMode::Measure),
        first.state.as_ref(),
    );
    let r = t.reuse.unwrap();
    let d = r.first_difference.expect("a difference");
    assert_eq!(d.reason, DifferenceReason::Edited);
    // The request's own part, the system message, the user message, then the edited call.
    assert_eq!(t.item_paths[d.index], "messages[2]");
    assert_eq!(r.kept_entries, 3);
}

#[test]
fn the_state_describes_what_is_sent_after_the_provider_rules() {
    // The selection would start with an assistant message, which the Anthropic rules drop
    // after the run (see the chat tests): the state leaves it out as well.
    let big = "word ".repeat(300);
    let body = json!({"system": "be brief", "messages": [
        {"role": "user", "content": big},
        {"role": "assistant", "content": "short answer"},
        {"role": "user", "content": "next question"},
        {"role": "assistant", "content": "prefill"}]});
    let mut options = ChatOptions::default();
    let mut prefix = PrefixOptions::new(PrefixMode::Hold);
    prefix.low_watermark = 1.0;
    options.prefix = Some(prefix);
    let budget = ContextBudget::new(60, 60).unwrap();
    let t = trim(
        Provider::Anthropic,
        &body.to_string(),
        &budget,
        &pipeline(),
        &options,
    )
    .unwrap();
    assert_eq!(t.kept, [2, 3]);
    assert_eq!(t.adjustments.len(), 1);
    let state = t.state.unwrap();
    let sent: Vec<&str> = state
        .entries()
        .iter()
        .map(|e| t.item_paths[e.position as usize].as_str())
        .collect();
    assert_eq!(sent, ["system", "$", "messages[2]", "messages[3]"]);
    assert_eq!(t.reuse.unwrap().window_entries, 4);
}

/// An Anthropic agent conversation after `turns` turns: per turn a user message with a
/// long task (every third turn), a call with one or two parallel `tool_use` blocks, the
/// user message of their results (long), and, except in the last turn (the model answers
/// next), an answer.
fn anthropic_conversation(turns: usize) -> Value {
    let mut messages = Vec::new();
    for t in 0..turns {
        if t % 3 == 0 {
            let task = format!(
                "Task {t}: look at module {}. {}",
                t % 7,
                "Context line. ".repeat(80)
            );
            messages.push(json!({"role": "user", "content": task}));
        }
        let calls = 1 + t % 2;
        let uses: Vec<Value> = (0..calls)
            .map(|c| {
                json!({"type": "tool_use", "id": format!("toolu_{t}_{c}"), "name": "read_file",
                       "input": {"path": format!("src/m{t}_{c}.rs")}})
            })
            .collect();
        let results: Vec<Value> = (0..calls)
            .map(|c| {
                let size = 150 + (t * 37 + c * 101) % 900;
                json!({"type": "tool_result", "tool_use_id": format!("toolu_{t}_{c}"),
                       "content": format!("file m{t}_{c}: {}", "fn x() {} ".repeat(size / 3))})
            })
            .collect();
        messages.push(json!({"role": "assistant", "content": uses}));
        messages.push(json!({"role": "user", "content": results}));
        if t + 1 < turns {
            messages.push(
                json!({"role": "assistant", "content": format!("Turn {t}: found it in m{t}_0.")}),
            );
        }
    }
    json!({"model": "claude-x", "max_tokens": 1024, "system": "You fix bugs. Use the tools.",
           "messages": messages})
}

#[test]
fn anthropic_requests_with_a_user_message_pinned_for_the_rules_across_turns() {
    // Old tasks are long, so the selection often starts with an assistant message; the
    // trim then pins a user message for a second run. With and without Hold, every request
    // passes the rules, and the state describes what is sent.
    let max = 6_000;
    for mode in [PrefixMode::Measure, PrefixMode::Hold] {
        let mut state: Option<PrefixState> = None;
        let mut previous: Option<Vec<Value>> = None;
        let (mut pinned_turns, mut full) = (0, 0);
        for turns in 1..=40 {
            let body = anthropic_conversation(turns);
            let t = turn(Provider::Anthropic, &body, max, Some(mode), state.as_ref());
            let out: Value = serde_json::from_str(&t.json).unwrap();
            chat_rules::anthropic(&out).unwrap_or_else(|e| panic!("turn {turns}: {e}"));
            chat_rules::trimmed_from(&body, &out, &t.kept, true).unwrap();
            assert!(t.tokens <= max, "turn {turns}");
            let reuse = t.reuse.clone().unwrap();
            let s = t.state.clone().unwrap();
            assert_eq!(s.entries().len(), reuse.window_entries, "turn {turns}");
            let kept_paths: Vec<String> = t.kept.iter().map(|i| format!("messages[{i}]")).collect();
            for e in s.entries() {
                let path = &t.item_paths[e.position as usize];
                assert!(
                    !path.starts_with("messages") || kept_paths.contains(path),
                    "turn {turns}: the state names {path}, which was not sent"
                );
            }
            if let Some(pin) = t.rule_pins.first() {
                pinned_turns += 1;
                assert!(kept_paths.contains(&pin.paths[0]), "turn {turns}");
            }
            let sent = messages(&t);
            if let Some(prev) = &previous {
                if reuse.outcome == TurnOutcome::Held
                    && reuse.kept_entries == reuse.previous_entries
                {
                    full += 1;
                    assert!(sent.starts_with(prev), "turn {turns}");
                }
            }
            previous = Some(sent);
            state = t.state;
        }
        eprintln!(
            "anthropic {mode:?}: {pinned_turns} of 40 turns pinned a user message, {full} kept \
             the whole previous request"
        );
        assert!(
            pinned_turns > 0,
            "{mode:?}: a pinned user message was exercised"
        );
    }
}
