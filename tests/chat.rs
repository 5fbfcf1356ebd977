//! Chat requests in, chat requests out: every trimmed request passes the provider rules
//! (`support::chat_rules`, written from the providers' documentation), is the input with
//! messages removed, and fits the budget — over generated agent sessions (parallel tool
//! calls, several results, long outputs, thinking blocks), every preset, policies with
//! quotas, caps and truncation, a custom slicer that splits groups, and many budgets, and
//! over the bundled sample requests.

mod support;

use ctxpack::chat::{estimate_tokens, trim, ChatOptions, CountTokens, Provider, Trimmed};
use ctxpack::diagnostics::TraceDetail;
use ctxpack::model::HeadTail;
use ctxpack::model::ScoredItem;
use ctxpack::placer::ChronologicalPlacer;
use ctxpack::policy::{Policy, Preset};
use ctxpack::scorer::RecencyScorer;
use ctxpack::slicer::{SliceOutcome, Slicer};
use ctxpack::tokenizer::{Encoding, ENCODING_NAMES};
use ctxpack::{ContextBudget, ErrorCode, Pipeline};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::chat_rules;

/// xorshift64*: reproducible cases without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn text(&mut self, words: usize) -> String {
        const WORDS: [&str; 12] = [
            "invoice", "the", "seat", "ok", "error:", "{\"id\":", "42}", "日本", "total", "🙂",
            "refund", "line",
        ];
        (0..words)
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
    /// One to `max` words.
    fn some_text(&mut self, max: usize) -> String {
        let n = 1 + self.below(max);
        self.text(n)
    }
    /// Mostly short, sometimes very long (a tool output).
    fn output(&mut self) -> String {
        let words = if self.chance(30) {
            400 + self.below(4000)
        } else {
            1 + self.below(60)
        };
        self.text(words)
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

fn openai_session(rng: &mut Rng) -> Value {
    let mut msgs = Vec::new();
    let mut next_id = 0;
    if rng.chance(80) {
        let role = if rng.chance(50) {
            "system"
        } else {
            "developer"
        };
        msgs.push(json!({"role": role, "content": rng.text(20)}));
    }
    for _ in 0..1 + rng.below(6) {
        let content = if rng.chance(20) {
            json!([{"type": "text", "text": rng.text(10)},
                   {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])
        } else {
            json!(rng.some_text(40))
        };
        msgs.push(json!({"role": "user", "content": content}));
        for _ in 0..rng.below(4) {
            let k = 1 + rng.below(4);
            let ids: Vec<String> = (0..k)
                .map(|_| {
                    next_id += 1;
                    format!("call_{next_id}")
                })
                .collect();
            let calls: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({"id": id, "type": "function",
                "function": {"name": "lookup", "arguments": "{\"q\": 1}"}})
                })
                .collect();
            let text = if rng.chance(50) {
                Value::Null
            } else {
                json!(rng.text(8))
            };
            msgs.push(json!({"role": "assistant", "content": text, "tool_calls": calls}));
            let mut answers = ids.clone();
            rng.shuffle(&mut answers);
            for id in answers {
                msgs.push(json!({"role": "tool", "tool_call_id": id, "content": rng.output()}));
            }
        }
        if rng.chance(10) {
            msgs.push(json!({"role": "assistant", "content": null,
                             "function_call": {"name": "legacy", "arguments": "{}"}}));
            msgs.push(json!({"role": "function", "name": "legacy", "content": rng.output()}));
        }
        if rng.chance(75) {
            msgs.push(json!({"role": "assistant", "content": rng.some_text(50)}));
        }
        if rng.chance(5) {
            msgs.push(json!({"role": "system", "content": "Be brief from now on."}));
        }
    }
    json!({"model": "gpt-4o", "temperature": 0.25, "seed": 12345678901234567u64,
           "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
           "messages": msgs, "user": "tester"})
}

fn anthropic_session(rng: &mut Rng) -> Value {
    let mut msgs = Vec::new();
    let mut next_id = 0;
    msgs.push(json!({"role": "user", "content": rng.some_text(30)}));
    for _ in 0..1 + rng.below(7) {
        let mut content = Vec::new();
        if rng.chance(30) {
            content.push(json!({"type": "thinking", "thinking": rng.text(20), "signature": "sig"}));
        }
        if rng.chance(70) {
            content.push(json!({"type": "text", "text": rng.some_text(40)}));
        }
        let k = if rng.chance(60) { 1 + rng.below(4) } else { 0 };
        let ids: Vec<String> = (0..k)
            .map(|_| {
                next_id += 1;
                format!("toolu_{next_id}")
            })
            .collect();
        for id in &ids {
            content.push(json!({"type": "tool_use", "id": id, "name": "search", "input": {"q": rng.text(3)}}));
        }
        if content.is_empty() {
            content.push(json!({"type": "text", "text": "ok"}));
        }
        msgs.push(json!({"role": "assistant", "content": content}));
        if k > 0 {
            let mut answers = ids.clone();
            rng.shuffle(&mut answers);
            let mut results: Vec<Value> = answers
                .iter()
                .map(|id| {
                    let body = if rng.chance(30) {
                        json!([{"type": "text", "text": rng.output()}])
                    } else {
                        json!(rng.output())
                    };
                    let mut r = json!({"type": "tool_result", "tool_use_id": id, "content": body});
                    if rng.chance(10) {
                        r["is_error"] = json!(true);
                    }
                    r
                })
                .collect();
            if rng.chance(25) {
                results.push(json!({"type": "text", "text": rng.text(6)}));
            }
            msgs.push(json!({"role": "user", "content": results}));
        } else {
            msgs.push(json!({"role": "user", "content": rng.some_text(30)}));
            if rng.chance(15) {
                msgs.push(
                    json!({"role": "user", "content": [{"type": "text", "text": rng.text(5)}]}),
                );
            }
        }
    }
    if rng.chance(10) {
        msgs.push(json!({"role": "assistant", "content": "The answer is"}));
    }
    let system = if rng.chance(50) {
        json!(rng.text(25))
    } else {
        json!([{"type": "text", "text": rng.text(25), "cache_control": {"type": "ephemeral"}}])
    };
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system,
           "tools": [{"name": "search", "input_schema": {"type": "object"}}],
           "messages": msgs, "metadata": {"user_id": "u1"}})
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The counting functions the sweeps alternate: the estimate, a word count, and the
/// built-in encodings when the tokenizer is built in.
fn counters() -> Vec<&'static dyn CountTokens> {
    let mut counters: Vec<&'static dyn CountTokens> = vec![&estimate_tokens, &words];
    for name in ENCODING_NAMES {
        if let Ok(encoding) = Encoding::by_name(name) {
            counters.push(encoding);
        }
    }
    counters
}

/// Checks one trimmed request against the rules and the input.
fn check(provider: Provider, input: &Value, t: &Trimmed, target: i64) {
    let output: Value = serde_json::from_str(&t.json).expect("the output is JSON");
    let anthropic = provider == Provider::Anthropic;
    let rules = if anthropic {
        chat_rules::anthropic(&output)
    } else {
        chat_rules::openai(&output)
    };
    rules.unwrap_or_else(|e| panic!("{e}\n{}", t.json));
    let restored = unshortened(input, &output, t);
    chat_rules::trimmed_from(input, &restored, &t.kept, anthropic)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        t.tokens <= target,
        "{} tokens over the target {target}",
        t.tokens
    );
    let n = input["messages"].as_array().unwrap().len();
    assert_eq!(t.kept.len() + t.dropped.len(), n);
}

/// The output with every shortened message (`t.shortened`) put back as the input's, after
/// checking that it differs from the input's only in strings that were cut to a head and a
/// tail of the original with the marker between (at least one of them).
fn unshortened(input: &Value, output: &Value, t: &Trimmed) -> Value {
    let mut restored = output.clone();
    for &i in &t.shortened {
        let at = t
            .kept
            .iter()
            .position(|&k| k == i)
            .expect("shortened messages are kept");
        let (original, sent) = (&input["messages"][i], &output["messages"][at]);
        let cuts = cut_strings(original, sent).unwrap_or_else(|e| panic!("messages[{i}]: {e}"));
        assert!(
            cuts > 0,
            "messages[{i}] is listed as shortened but was sent whole"
        );
        restored["messages"][at] = original.clone();
    }
    restored
}

/// How many strings of `sent` are head-and-tail cuts of the same place's string in
/// `original`; an error for any other difference.
fn cut_strings(original: &Value, sent: &Value) -> Result<usize, String> {
    match (original, sent) {
        (Value::String(a), Value::String(b)) if a == b => Ok(0),
        (Value::String(a), Value::String(b)) => {
            let (head, rest) = b.split_once("\n[… ").ok_or("no marker")?;
            let (omitted, tail) = rest.split_once(" tokens omitted …]\n").ok_or("no marker")?;
            omitted
                .parse::<usize>()
                .map_err(|_| "no count in the marker")?;
            if a.starts_with(head) && a.ends_with(tail) && head.len() + tail.len() < a.len() {
                Ok(1)
            } else {
                Err(format!("{b:?} is not a head and tail of the original"))
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .try_fold(0, |n, (x, y)| Ok(n + cut_strings(x, y)?)),
        (Value::Object(a), Value::Object(b)) if a.keys().eq(b.keys()) => a
            .values()
            .zip(b.values())
            .try_fold(0, |n, (x, y)| Ok(n + cut_strings(x, y)?)),
        (a, b) if a == b => Ok(0),
        _ => Err("a value other than a string changed".into()),
    }
}

/// A unit pinned for the provider's rules is one user message, and it is kept.
fn check_rule_pins(t: &Trimmed) {
    let output: Value = serde_json::from_str(&t.json).unwrap();
    for pin in &t.rule_pins {
        assert_eq!(pin.paths.len(), 1, "{pin:?}");
        let i: usize = pin.paths[0]
            .strip_prefix("messages[")
            .and_then(|p| p.strip_suffix(']'))
            .and_then(|p| p.parse().ok())
            .unwrap();
        let at = t
            .kept
            .iter()
            .position(|&k| k == i)
            .expect("a pinned unit is kept");
        assert_eq!(output["messages"][at]["role"], "user", "{pin:?}");
    }
}

struct Tally {
    runs: usize,
    trimmed: usize,
    refused: usize,
    /// Runs where units were dropped after the pipeline to satisfy a provider rule.
    adjusted: usize,
    /// Runs whose selection came from a second run with a user message pinned.
    repinned: usize,
}

/// Every preset, in turn.
fn presets() -> Vec<Pipeline> {
    Preset::ALL
        .iter()
        .map(|p| Policy::preset(p.name()).unwrap().build_pipeline().unwrap())
        .collect()
}

/// Generated sessions trimmed at eight budgets each, case `i` with `pipelines[i % len]`.
fn sweep(provider: Provider, seed: u64, cases: usize, pipelines: &[Pipeline]) -> Tally {
    let mut rng = Rng(seed);
    let mut tally = Tally {
        runs: 0,
        trimmed: 0,
        refused: 0,
        adjusted: 0,
        repinned: 0,
    };
    let greedy = Policy::preset("chat").unwrap().build_pipeline().unwrap();
    for case in 0..cases {
        let input = if provider == Provider::OpenAi {
            openai_session(&mut rng)
        } else {
            anthropic_session(&mut rng)
        };
        let text = input.to_string();
        let counters = counters();
        let mut options = ChatOptions::with_counter(counters[case % counters.len()]);
        let huge = ContextBudget::new(i64::MAX / 4, i64::MAX / 4).unwrap();
        let pipeline = &pipelines[case % pipelines.len()];
        // Measured with greedy slicing: a knapsack table for this budget would be refused.
        let whole = trim(provider, &text, &huge, &greedy, &options).expect("a valid request");
        assert_eq!(
            whole.json, text,
            "everything fits: the request is unchanged"
        );
        for percent in [3, 8, 15, 25, 40, 60, 80, 100] {
            options.pin_last_turn = rng.chance(70);
            let target = (whole.input_tokens * percent / 100).max(1);
            let budget = ContextBudget::new(target, target).unwrap();
            tally.runs += 1;
            match trim(provider, &text, &budget, pipeline, &options) {
                Ok(t) => {
                    check(provider, &input, &t, target);
                    if options.pin_last_turn {
                        assert_eq!(
                            t.kept.last(),
                            Some(&(input["messages"].as_array().unwrap().len() - 1))
                        );
                    }
                    if !t.dropped.is_empty() {
                        tally.trimmed += 1;
                    }
                    if !t.adjustments.is_empty() {
                        tally.adjusted += 1;
                    }
                    if !t.rule_pins.is_empty() {
                        tally.repinned += 1;
                        check_rule_pins(&t);
                    }
                }
                Err(e) => {
                    assert!(
                        matches!(
                            e.code(),
                            ErrorCode::PinnedExceedsBudget
                                | ErrorCode::Overflow
                                | ErrorCode::InvalidBudget
                        ),
                        "case {case}, {percent}%: {e}"
                    );
                    tally.refused += 1;
                }
            }
        }
    }
    tally
}

#[test]
fn openai_trims_always_pass_the_rules() {
    let t = sweep(Provider::OpenAi, 0x05ee_d0a1, 250, &presets());
    eprintln!(
        "openai: {} runs, {} trimmed, {} refused (budget below the pinned parts)",
        t.runs, t.trimmed, t.refused
    );
    assert!(t.trimmed * 2 > t.runs, "most runs must actually trim");
    assert_eq!(
        t.adjusted + t.repinned,
        0,
        "OpenAI has no ordering rule beyond the units"
    );
}

#[test]
fn anthropic_trims_always_pass_the_rules() {
    let t = sweep(Provider::Anthropic, 0x05ee_da17, 250, &presets());
    eprintln!(
        "anthropic: {} runs, {} trimmed, {} refused (budget below the pinned parts), {} adjusted after the run, {} run again with a user message pinned",
        t.runs, t.trimmed, t.refused, t.adjusted, t.repinned
    );
    assert!(t.trimmed * 2 > t.runs, "most runs must actually trim");
    assert!(t.adjusted > 0, "the ordering rules were exercised");
    assert!(
        t.repinned > 0,
        "the second run with a pinned user message was exercised"
    );
}

/// A slicer that ignores groups: it walks the sorted items and takes every other one that
/// fits, so it often returns part of a tool call's unit. The engine must drop such a unit
/// whole. It counts the runs in which it split a group, to prove the case was exercised.
#[derive(Debug)]
struct EveryOther;

static SPLIT_GROUPS: AtomicUsize = AtomicUsize::new(0);

impl Slicer for EveryOther {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: &ContextBudget,
    ) -> ctxpack::Result<SliceOutcome> {
        let mut used = 0;
        let mut selected = Vec::new();
        for (i, s) in items.iter().enumerate().step_by(2) {
            if used + s.item.tokens() <= budget.target_tokens() {
                used += s.item.tokens();
                selected.push(i);
            }
        }
        let split = items.iter().enumerate().any(|(i, s)| {
            s.item.group().is_some_and(|g| {
                !selected.contains(&i) && selected.iter().any(|&j| items[j].item.group() == Some(g))
            })
        });
        if split {
            SPLIT_GROUPS.fetch_add(1, Ordering::Relaxed);
        }
        Ok(SliceOutcome {
            selected,
            ..SliceOutcome::default()
        })
    }
}

/// Since every message is an item of its own, the slicers and placers see the members of
/// each unit: count caps and percentage quotas counting members of two kinds, knapsack over
/// units, truncation at placement, other group value modes, and a slicer that splits units.
/// None may produce an invalid request.
#[test]
fn trims_pass_the_rules_under_quotas_caps_truncation_and_a_group_splitting_slicer() {
    let policies = [
        r#"{"scorers": [{"type": "recency", "weight": 2}, {"type": "kind", "weight": 1}],
            "slicerType": "countQuota", "groupValue": "max",
            "countQuotas": [{"kind": "ToolOutput", "requireCount": 1, "capCount": 2}]}"#,
        r#"{"scorers": [{"type": "kind", "weight": 1}, {"type": "recency", "weight": 1}],
            "slicerType": "knapsack", "knapsackBucketSize": 50, "placerType": "uShaped",
            "groupValue": "mean",
            "quotas": [{"kind": "ToolOutput", "maxPercent": 50},
                       {"kind": "Message", "minPercent": 10}]}"#,
        r#"{"scorers": [{"type": "recency", "weight": 1}],
            "slicerType": "countConstrainedKnapsack", "overflowStrategy": "truncate",
            "pinnedFirst": true,
            "countQuotas": [{"kind": "Message", "requireCount": 2, "capCount": 6}]}"#,
    ];
    let mut pipelines: Vec<Pipeline> = policies
        .iter()
        .map(|p| Policy::from_json(p).unwrap().build_pipeline().unwrap())
        .collect();
    pipelines.push(
        Pipeline::builder()
            .scorer(Arc::new(RecencyScorer::new()))
            .slicer(Arc::new(EveryOther))
            .placer(Arc::new(ChronologicalPlacer::new()))
            .build()
            .unwrap(),
    );
    for (provider, seed) in [(Provider::OpenAi, 0xca95), (Provider::Anthropic, 0xca96)] {
        let t = sweep(provider, seed, 120, &pipelines);
        eprintln!(
            "{provider:?}: {} runs, {} trimmed, {} refused, {} adjusted",
            t.runs, t.trimmed, t.refused, t.adjusted
        );
        assert!(t.trimmed * 2 > t.runs, "most runs must actually trim");
    }
    assert!(
        SPLIT_GROUPS.load(Ordering::Relaxed) > 20,
        "the custom slicer split units"
    );
}

/// An Anthropic user turn that answers tool calls and also says something new stays with
/// the assistant turn that made the calls: one group, kept or dropped whole at every
/// budget, each message explained on its own row.
#[test]
fn a_user_turn_with_tool_results_and_new_text_goes_with_its_call() {
    let long = "ledger line 42 refund pending ".repeat(150);
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 512, "messages": [
        {"role": "user", "content": "Why was I charged twice?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checking the ledger."},
            {"type": "tool_use", "id": "t1", "name": "ledger", "input": {"account": "a1"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": long},
            {"type": "text", "text": "Also, please check March."}]},
        {"role": "assistant", "content": "Two charges on May 2; one is a pending refund."},
        {"role": "user", "content": "And March?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "ledger", "input": {"month": "March"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "one charge"},
            {"type": "text", "text": "Thanks, and April?"}]}]});
    let text = body.to_string();
    let pipeline = Policy::preset("chat").unwrap().build_pipeline().unwrap();
    let mut options = ChatOptions::default();
    options.trace = TraceDetail::Stage;
    let huge = ContextBudget::new(1 << 40, 1 << 40).unwrap();
    let whole = trim(Provider::Anthropic, &text, &huge, &pipeline, &options).unwrap();
    assert_eq!(whole.json, text);
    // Items: "$" (reply priming) first, then one per message.
    let at = |m: usize| 1 + m;
    assert_eq!(whole.item_paths[at(2)], "messages[2]");
    assert_eq!(whole.items[at(1)].group(), Some("messages[1]"));
    assert_eq!(whole.items[at(2)].group(), Some("messages[1]"));
    assert_eq!(whole.items[at(2)].kind().as_str(), "ToolOutput");
    assert!(whole.items[at(2)]
        .content()
        .contains("Also, please check March."));
    assert_eq!(whole.items[at(6)].group(), Some("messages[5]"));
    let (mut dropped_mid, mut kept_mid) = (0, 0);
    for target in (50..=whole.input_tokens + 50).step_by(25) {
        let budget = ContextBudget::new(target, target).unwrap();
        let Ok(t) = trim(Provider::Anthropic, &text, &budget, &pipeline, &options) else {
            continue;
        };
        check(Provider::Anthropic, &body, &t, target);
        // The middle unit (messages 1 and 2) goes whole; the last one, pinned, always stays.
        assert_eq!(
            t.kept.contains(&1),
            t.kept.contains(&2),
            "{target}: {:?}",
            t.kept
        );
        assert!(t.kept.ends_with(&[5, 6]), "{target}: {:?}", t.kept);
        let report = t.selection.report.as_ref().unwrap();
        assert_eq!(
            report.included.len() + report.excluded.len(),
            t.items.len(),
            "one report row per message"
        );
        if t.kept.contains(&2) {
            kept_mid += 1;
        } else {
            dropped_mid += 1;
        }
    }
    assert!(kept_mid > 0 && dropped_mid > 0, "{kept_mid} {dropped_mid}");
}

/// The validator is a real check: each rule rejects a request that breaks it.
#[test]
fn the_rules_reject_what_providers_reject() {
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let ok = json!({"messages": [{"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "tool", "tool_call_id": "a", "content": "1"}]});
    assert_eq!(chat_rules::openai(&ok), Ok(()));
    for broken in [
        json!({"messages": []}),
        json!({"messages": [{"role": "tool", "tool_call_id": "a", "content": "1"}]}),
        json!({"messages": [{"role": "assistant", "tool_calls": [call("a")]}]}),
        json!({"messages": [{"role": "assistant", "tool_calls": [call("a")]}, {"role": "user", "content": "x"},
                            {"role": "tool", "tool_call_id": "a", "content": "1"}]}),
        json!({"messages": [{"role": "assistant", "tool_calls": [call("a")]},
                            {"role": "tool", "tool_call_id": "a", "content": "1"},
                            {"role": "tool", "tool_call_id": "a", "content": "1"}]}),
        json!({"messages": [{"role": "wizard", "content": "x"}]}),
    ] {
        assert!(chat_rules::openai(&broken).is_err(), "{broken}");
    }

    let tu = |id: &str| json!({"type": "tool_use", "id": id, "name": "f", "input": {}});
    let tr = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "r"});
    let text = json!({"type": "text", "text": "t"});
    let ok = json!({"messages": [{"role": "user", "content": "q"},
        {"role": "assistant", "content": [text, tu("a"), tu("b")]},
        {"role": "user", "content": [tr("b"), tr("a"), text]}]});
    assert_eq!(chat_rules::anthropic(&ok), Ok(()));
    for broken in [
        json!({"messages": [{"role": "assistant", "content": "x"}]}),
        json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [tu("a")]}]}),
        json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [tu("a")]},
                            {"role": "assistant", "content": "x"}, {"role": "user", "content": [tr("a")]}]}),
        json!({"messages": [{"role": "user", "content": [tr("a")]}]}),
        json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [tu("a")]},
                            {"role": "user", "content": [text, tr("a")]}]}),
        json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [tu("a")]},
                            {"role": "user", "content": [tr("a"), tr("a")]}]}),
        json!({"messages": [{"role": "system", "content": "q"}]}),
    ] {
        assert!(chat_rules::anthropic(&broken).is_err(), "{broken}");
    }

    // The relation to the input: changed fields, reordered or edited messages, a thinking
    // turn newly merged into an assistant message.
    let thinking = json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]});
    let input = json!({"a": 1, "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"},
                                            {"role": "user", "content": "r"}, thinking]});
    let m = input["messages"].as_array().unwrap().clone();
    let out = |msgs: Vec<Value>, a: i64| json!({"a": a, "messages": msgs});
    assert_eq!(
        chat_rules::trimmed_from(
            &input,
            &out(vec![m[0].clone(), m[3].clone()], 1),
            &[0, 3],
            true
        ),
        Ok(())
    );
    assert!(chat_rules::trimmed_from(&input, &out(vec![m[0].clone()], 2), &[0], true).is_err());
    assert!(chat_rules::trimmed_from(
        &input,
        &out(vec![m[2].clone(), m[0].clone()], 1),
        &[2, 0],
        true
    )
    .is_err());
    assert!(chat_rules::trimmed_from(&input, &out(vec![m[2].clone()], 1), &[0], true).is_err());
    let merged = out(vec![m[0].clone(), m[1].clone(), m[3].clone()], 1);
    assert!(chat_rules::trimmed_from(&input, &merged, &[0, 1, 3], true).is_err());
    assert_eq!(
        chat_rules::trimmed_from(&input, &merged, &[0, 1, 3], false),
        Ok(())
    );
}

fn sample(name: &str) -> String {
    std::fs::read_to_string(support::sample(name)).unwrap()
}

/// The bundled samples trimmed over a range of budgets with every preset: every tool call
/// keeps its results.
#[test]
fn sample_requests_keep_every_pair() {
    for (provider, name) in [
        (Provider::OpenAi, "openai-request.json"),
        (Provider::Anthropic, "anthropic-request.json"),
    ] {
        let text = sample(name);
        let input: Value = serde_json::from_str(&text).unwrap();
        let anthropic = provider == Provider::Anthropic;
        let pairs_in = chat_rules::pairs(&input, anthropic);
        assert!(
            pairs_in.len() >= 6,
            "{name}: a realistic session with several tool calls"
        );
        assert!(pairs_in.values().all(|&n| n == 1));
        let mut trims = 0;
        for preset in Preset::ALL {
            let pipeline = Policy::preset(preset.name())
                .unwrap()
                .build_pipeline()
                .unwrap();
            for target in (500..=14_000).step_by(500) {
                let budget = ContextBudget::new(target, target).unwrap();
                let Ok(t) = trim(provider, &text, &budget, &pipeline, &ChatOptions::default())
                else {
                    continue;
                };
                check(provider, &input, &t, target);
                let output: Value = serde_json::from_str(&t.json).unwrap();
                assert!(chat_rules::pairs(&output, anthropic)
                    .values()
                    .all(|&n| n == 1));
                trims += 1;
            }
        }
        eprintln!("{name}: {trims} valid trims over 7 presets x 28 budgets");
        assert!(trims > 100);
    }
}

/// The framing on top of the built-in tokenizer reproduces the prompt tokens the OpenAI
/// API reported for the cookbook's example request ("How to count tokens with tiktoken":
/// 129 for gpt-4, whose encoding is cl100k_base; 124 for gpt-4o, o200k_base).
#[cfg(feature = "tokenizer")]
#[test]
fn counts_match_the_prompt_tokens_openai_reported() {
    let request = json!({"model": "gpt-4o", "messages": [
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."}]})
    .to_string();
    let pipeline = Policy::preset("chat").unwrap().build_pipeline().unwrap();
    let budget = ContextBudget::new(1000, 1000).unwrap();
    for (encoding, reported) in [("cl100k_base", 129), ("o200k_base", 124)] {
        let options = ChatOptions::with_counter(Encoding::by_name(encoding).unwrap());
        let t = trim(Provider::OpenAi, &request, &budget, &pipeline, &options).unwrap();
        assert_eq!(t.input_tokens, reported, "{encoding}");
        assert_eq!(t.tokens, reported, "{encoding}: everything fits");
    }
    // The default counter is o200k_base.
    let t = trim(
        Provider::OpenAi,
        &request,
        &budget,
        &pipeline,
        &ChatOptions::default(),
    )
    .unwrap();
    assert_eq!(t.input_tokens, 124);
}

/// A cancel token in the options: never cancelled it changes nothing; cancelled, the trim
/// fails with Cancelled and says it had not started.
#[test]
fn a_cancel_token_stops_a_trim() {
    let pipeline = presets().remove(0);
    let budget = ContextBudget::new(100_000, 100_000).unwrap();
    let request = serde_json::to_string(&openai_session(&mut Rng(7))).unwrap();
    let plain = trim(
        Provider::OpenAi,
        &request,
        &budget,
        &pipeline,
        &ChatOptions::default(),
    )
    .unwrap();
    let token = ctxpack::CancelToken::new();
    let mut options = ChatOptions::default();
    options.cancel = Some(&token);
    let live = trim(Provider::OpenAi, &request, &budget, &pipeline, &options).unwrap();
    assert_eq!(plain.json, live.json);
    token.cancel();
    let e = trim(Provider::OpenAi, &request, &budget, &pipeline, &options).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    assert!(e.to_string().contains("before the trim started"), "{e}");
}

/// With `ChatOptions::shorten`, over generated sessions of both providers, every preset,
/// every counter and several head-and-tail sizes: every trimmed request passes the rules,
/// differs from the input only by dropped messages and by result texts cut to a head and a
/// tail, fits the budget, and costs exactly what reading it again counts. Against the same
/// trims without shortening, more tool outputs reach the model.
#[test]
fn shortened_trims_pass_the_rules_and_send_what_they_count() {
    let specs = [
        HeadTail::new(20, 20).unwrap(),
        HeadTail::new(60, 5).unwrap(),
        HeadTail::new(0, 12).unwrap().with_quality(0.3),
    ];
    let pipelines = presets();
    let greedy = Policy::preset("chat").unwrap().build_pipeline().unwrap();
    let huge = ContextBudget::new(i64::MAX / 4, i64::MAX / 4).unwrap();
    let (mut runs, mut with_short, mut tool_kept, mut tool_kept_plain) = (0, 0, 0, 0);
    // Trims that succeeded only by sending a pinned (last-turn) tool output shortened.
    let mut rescued = 0;
    for (provider, seed) in [
        (Provider::OpenAi, 0x0540_70a1),
        (Provider::Anthropic, 0x0540_7da1),
    ] {
        let mut rng = Rng(seed);
        for case in 0..120 {
            let input = match provider {
                Provider::OpenAi => openai_session(&mut rng),
                Provider::Anthropic => anthropic_session(&mut rng),
            };
            let text = input.to_string();
            let counters = counters();
            let mut options = ChatOptions::with_counter(counters[case % counters.len()]);
            let plain_options = options;
            options.shorten = Some(&specs[case % specs.len()]);
            let pipeline = &pipelines[case % pipelines.len()];
            let whole = trim(provider, &text, &huge, &greedy, &options).unwrap();
            assert_eq!(
                (whole.json.as_str(), whole.shortened.len()),
                (text.as_str(), 0)
            );
            // The items are the fixed parts, then one per message.
            let fixed = whole.items.len() - whole.kept.len();
            for percent in [5, 15, 30, 50, 75] {
                let target = (whole.input_tokens * percent / 100).max(1);
                let budget = ContextBudget::new(target, target).unwrap();
                let Ok(t) = trim(provider, &text, &budget, pipeline, &options) else {
                    continue;
                };
                runs += 1;
                check(provider, &input, &t, target);
                let again = trim(provider, &t.json, &huge, &greedy, &plain_options).unwrap();
                assert_eq!(t.tokens, again.input_tokens, "case {case}, {percent}%");
                assert_eq!(
                    t.input_tokens, whole.input_tokens,
                    "case {case}, {percent}%"
                );
                with_short += usize::from(!t.shortened.is_empty());
                let tool_outputs = |kept: &[usize]| {
                    let is_tool = |i: usize| whole.items[fixed + i].kind().as_str() == "ToolOutput";
                    kept.iter().filter(|&&i| is_tool(i)).count()
                };
                tool_kept += tool_outputs(&t.kept);
                match trim(provider, &text, &budget, pipeline, &plain_options) {
                    Ok(plain) => tool_kept_plain += tool_outputs(&plain.kept),
                    Err(e) => {
                        assert_eq!(e.code(), ErrorCode::PinnedExceedsBudget, "{e}");
                        assert!(!t.shortened.is_empty(), "case {case}, {percent}%");
                        rescued += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "shortening: {runs} trims, {with_short} sent a shortened tool output, {rescued} only possible by shortening a pinned one; tool outputs kept: {tool_kept} (without shortening: {tool_kept_plain})"
    );
    assert!(rescued > 0, "pinned outputs were shortened");
    assert!(with_short * 5 > runs, "shortening was exercised");
    assert!(tool_kept > tool_kept_plain);
}
