//! Unit tests of the chat module: errors with their JSON paths, pass-through, units,
//! counting, pinning and the Anthropic ordering rules.

use serde_json::{json, Value};

use super::*;
use crate::policy::Policy;

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn options() -> ChatOptions<'static> {
    ChatOptions::with_counter(&words)
}

fn chat_pipeline() -> Pipeline {
    Policy::preset("chat").unwrap().build_pipeline().unwrap()
}

fn run(provider: Provider, body: &Value, budget: i64) -> Result<Trimmed> {
    let budget = ContextBudget::new(budget, budget).unwrap();
    trim(
        provider,
        &body.to_string(),
        &budget,
        &chat_pipeline(),
        &options(),
    )
}

fn error(provider: Provider, body: Value) -> String {
    match run(provider, &body, 1_000_000) {
        Err(crate::Error::InvalidRequest(m)) => m,
        other => panic!("expected an invalid request, got {other:?}"),
    }
}

fn roles(trimmed: &Trimmed) -> Vec<String> {
    let body: Value = serde_json::from_str(&trimmed.json).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
}

#[test]
fn openai_errors_name_the_json_path() {
    use Provider::OpenAi;
    let user = json!({"role": "user", "content": "hi"});
    let cases = [
        (json!([1]), "$: a request body must be a JSON object, found an array"),
        (json!({}), "messages: is required"),
        (json!({"messages": []}), "messages: must not be empty"),
        (json!({"messages": {}}), "messages: must be an array, found an object"),
        (json!({"messages": [1]}), "messages[0]: must be an object, found an integer"),
        (json!({"messages": [{"content": "x"}]}), "messages[0].role: is required"),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            "messages[0].role: unknown role 'robot'",
        ),
        (json!({"messages": [{"role": "user"}]}), "messages[0].content: is required"),
        (
            json!({"messages": [{"role": "user", "content": 5}]}),
            "messages[0].content: must be a string or an array of content parts, found an integer",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"text": "a"}]}]}),
            "messages[0].content[0].type: is required",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "text"}]}]}),
            "messages[0].content[0].text: is required",
        ),
        (
            json!({"messages": [user, {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}]}),
            "messages[1].content[0].type: content part 'tool_use' carries a tool call or result",
        ),
        (
            json!({"messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}),
            "messages[0].content[0].type: content part 'tool_result' carries a tool call",
        ),
        (
            json!({"messages": [{"role": "user", "content": [
                {"type": "future_answer", "tool_call_id": "c1"}]}]}),
            "messages[0].content[0].type: content part 'future_answer' carries a tool call",
        ),
        (
            json!({"messages": [user, {"role": "tool", "tool_call_id": "c1", "content": "r"}]}),
            "messages[1].tool_call_id: tool message answers 'c1', but the message before it",
        ),
        (
            json!({"messages": [{"role": "tool", "content": "r"}]}),
            "messages[0].tool_call_id: is required",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "tool_calls": [call("c1"), call("c2")]},
                {"role": "tool", "tool_call_id": "c2", "content": "r"},
                {"role": "user", "content": "next"},
                {"role": "tool", "tool_call_id": "c1", "content": "late"}]}),
            "messages[1].tool_calls[0].id: tool call 'c1' has no tool message answering it",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c9", "content": "r"}]}),
            "messages[2].tool_call_id: tool message answers 'c9', which is not an unanswered tool call of messages[1]",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "tool", "tool_call_id": "c1", "content": "again"}]}),
            "messages[3].tool_call_id: tool message answers 'c1', which is not an unanswered",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "assistant", "tool_calls": [call("c1")]}]}),
            "messages[3].tool_calls[0].id: tool call id 'c1' is used twice (first at messages[1].tool_calls[0].id)",
        ),
        (
            json!({"messages": [user, {"role": "assistant", "tool_calls": [{"type": "function"}]}]}),
            "messages[1].tool_calls[0].id: is required",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a", "name": 3}]}),
            "messages[0].name: must be a string, found an integer",
        ),
    ];
    for (body, want) in cases {
        let got = error(OpenAi, body.clone());
        assert!(got.starts_with(want), "{body}\n got: {got}\nwant: {want}");
    }
    let raw = "{\"messages\": [";
    let got = trim_openai(
        raw,
        &ContextBudget::new(9, 9).unwrap(),
        &chat_pipeline(),
        &options(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        got.starts_with("invalid request: $: malformed JSON: EOF"),
        "{got}"
    );
    let twice = r#"{"messages": [{"role": "user", "content": "a"}], "messages": []}"#;
    let got = trim_openai(
        twice,
        &ContextBudget::new(9, 9).unwrap(),
        &chat_pipeline(),
        &options(),
    )
    .unwrap_err();
    assert_eq!(got.code(), crate::ErrorCode::InvalidRequest);
    assert!(got.to_string().contains("messages: appears twice"), "{got}");
}

#[test]
fn anthropic_errors_name_the_json_path() {
    use Provider::Anthropic;
    let user = json!({"role": "user", "content": "hi"});
    let tool_use = |id: &str| json!({"type": "tool_use", "id": id, "name": "f", "input": {}});
    let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
    let cases = [
        (
            json!({"messages": [{"role": "assistant", "content": "x"}]}),
            "messages[0].role: the first message must be a user message",
        ),
        (
            json!({"messages": [{"role": "system", "content": "x"}]}),
            "messages[0].role: unknown role 'system'",
        ),
        (json!({"messages": [{"role": "user"}]}), "messages[0].content: is required"),
        (
            json!({"messages": [user, {"role": "assistant", "content": [tool_use("t1")]}]}),
            "messages[1].content[0].id: tool_use 't1' has no tool_result in the next message",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "content": [tool_use("t1"), tool_use("t2")]},
                {"role": "user", "content": [result("t2")]}]}),
            "messages[1].content[0].id: tool_use 't1' has no tool_result",
        ),
        (
            json!({"messages": [{"role": "user", "content": [result("t1")]}]}),
            "messages[0].content[0].tool_use_id: tool_result for 't1' does not follow an assistant message with that tool_use",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "content": [tool_use("t1")]},
                {"role": "user", "content": [{"type": "text", "text": "here"}, result("t1")]}]}),
            "messages[2].content[1]: tool_result blocks must come before any other block",
        ),
        (
            json!({"messages": [user,
                {"role": "assistant", "content": [tool_use("t1")]},
                {"role": "user", "content": [result("t1"), result("t1")]}]}),
            "messages[2].content[1].tool_use_id: tool_use 't1' is answered twice",
        ),
        (
            json!({"messages": [{"role": "user", "content": [tool_use("t1")]}]}),
            "messages[0].content[0]: a tool_use block belongs in an assistant message",
        ),
        (
            json!({"messages": [user, {"role": "assistant", "content": [result("t1")]}]}),
            "messages[1].content[0]: a tool_result block belongs in a user message",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "future_result", "tool_use_id": "t1"}]}]}),
            "messages[0].content[0].type: unknown block type 'future_result' with a tool_use_id",
        ),
        (
            json!({"system": 7, "messages": [user]}),
            "system: must be a string or an array of text blocks, found an integer",
        ),
        (
            json!({"system": [{"text": "x"}], "messages": [user]}),
            "system[0].type: is required",
        ),
    ];
    for (body, want) in cases {
        let got = error(Anthropic, body.clone());
        assert!(got.starts_with(want), "{body}\n got: {got}\nwant: {want}");
    }
}

#[test]
fn unknown_parts_and_fields_pass_through_and_count_as_json() {
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "one two"},
                                     {"type": "hologram", "data": "a b c"}],
         "x_trace": "p q"}]});
    let t = run(Provider::OpenAi, &body, 1000).unwrap();
    assert_eq!(t.json, body.to_string());
    // 3 framing + 1 role + 2 text + 1 (the unknown part's compact JSON has no spaces but
    // its value does: `{"type":"hologram","data":"a b c"}` is 3 words) ...
    let part = words(&json!({"type": "hologram", "data": "a b c"}).to_string()) as i64;
    assert_eq!(t.items[1].tokens(), 3 + 1 + 2 + part + 2);
    // ... plus the reply priming as a pinned item of its own.
    assert_eq!(t.items[0].tokens(), 3);
    assert_eq!(t.item_paths[0], "$");

    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "see"}, {"type": "mystery", "x": 1}]}]});
    let t = run(Provider::Anthropic, &body, 1000).unwrap();
    assert_eq!(t.json, body.to_string());
}

#[test]
fn openai_counting_follows_the_cookbook_rule() {
    let body = json!({"tools": [{"type": "function"}], "messages": [
        {"role": "system", "content": "be brief", "name": "ops team"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "detail": "low"}},
                                     {"type": "image_url", "image_url": {"url": "u"}}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look up", "arguments": "{\"q\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found it"}]});
    let t = run(Provider::OpenAi, &body, 10_000).unwrap();
    let tools = words(&json!([{"type": "function"}]).to_string()) as i64;
    let tokens: Vec<i64> = t.items.iter().map(ContextItem::tokens).collect();
    assert_eq!(tokens[0], 3 + tools, "reply priming and tools");
    assert_eq!(
        tokens[1],
        3 + 1 + 2 + 2 + 1,
        "framing, role, content, name and its extra"
    );
    assert_eq!(
        tokens[2],
        3 + 1 + 85 + 765,
        "a low-detail image, an image of unknown size"
    );
    // One unit, one item per message: assistant (3 + role + id + name + arguments) and
    // tool (3 + role + id + text), in one group.
    assert_eq!(tokens[3], 3 + 1 + 1 + 2 + 2);
    assert_eq!(tokens[4], 3 + 1 + 1 + 2);
    assert_eq!(t.item_paths[3..], ["messages[2]", "messages[3]"]);
    assert_eq!(t.items[3].group(), Some("messages[2]"));
    assert_eq!(t.items[4].group(), Some("messages[2]"));
    assert_eq!(t.items[2].group(), None);
    assert_eq!(t.input_tokens, tokens.iter().sum::<i64>());
}

#[test]
fn parallel_calls_and_legacy_functions_form_units() {
    let body = json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "checking", "tool_calls": [call("a"), call("b"), call("c")]},
        {"role": "tool", "tool_call_id": "c", "content": "3"},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "legacy"},
        {"role": "function", "name": "g", "content": "stray"},
        {"role": "user", "content": "thanks"}]});
    let counter = |t: &str| words(t);
    let c = count::Counter {
        count: &counter,
        overheads: Overheads::OPENAI,
    };
    let conv = openai::read(&body, &c).unwrap();
    assert_eq!(conv.units, [0..1, 1..5, 5..7, 7..8, 8..9]);
    assert_eq!(conv.group_key(3).as_deref(), Some("messages[1]"));
    assert_eq!(conv.group_key(0), None);
    assert_eq!(conv.messages[2].kind, conversation::Kind::ToolOutput);
}

#[test]
fn everything_that_fits_comes_back_byte_for_byte() {
    let text = "{\n  \"model\": \"gpt-4o\",\n  \"seed\": 123456789012345678901234567890,\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"hi\"},\n    {\"role\": \"assistant\", \"content\": \"hello\"},\n    {\"role\": \"user\", \"content\": \"bye\"}\n  ],\n  \"temperature\": 0.70\n}";
    let budget = ContextBudget::new(1000, 1000).unwrap();
    let t = trim_openai(text, &budget, &chat_pipeline(), &options()).unwrap();
    assert_eq!(t.json, text);
    assert_eq!((t.kept.len(), t.dropped.len()), (3, 0));
    // A tight budget drops the oldest message and keeps the rest of the text as it was.
    let budget = ContextBudget::new(17, 17).unwrap();
    let t = trim_openai(text, &budget, &chat_pipeline(), &options()).unwrap();
    assert_eq!(t.dropped, [0]);
    assert_eq!(
        t.json,
        "{\n  \"model\": \"gpt-4o\",\n  \"seed\": 123456789012345678901234567890,\n  \"messages\": [\n    {\"role\": \"assistant\", \"content\": \"hello\"},\n    {\"role\": \"user\", \"content\": \"bye\"}\n  ],\n  \"temperature\": 0.70\n}"
    );
    assert!(t.tokens <= 17);
}

#[test]
fn the_last_turn_and_its_question_are_pinned() {
    let big = "word ".repeat(500);
    let body = json!({"messages": [
        {"role": "user", "content": big},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "the question"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": big}]});
    let t = run(Provider::OpenAi, &body, 600).unwrap();
    assert_eq!(t.kept, [1, 2, 3, 4], "the big first message goes");
    // With 400 tokens the pinned tool unit does not fit: the pipeline's error.
    let err = run(Provider::OpenAi, &body, 400).unwrap_err();
    assert_eq!(err.code(), crate::ErrorCode::PinnedExceedsBudget);
    // Without the pin the big tool unit is dropped like any other.
    let mut o = options();
    o.pin_last_turn = false;
    let budget = ContextBudget::new(400, 400).unwrap();
    let t = trim_openai(&body.to_string(), &budget, &chat_pipeline(), &o).unwrap();
    assert_eq!(t.kept, [1, 2]);
    // Without pins and without room for any message: an error, not an empty request.
    let budget = ContextBudget::new(4, 4).unwrap();
    let err = trim_openai(&body.to_string(), &budget, &chat_pipeline(), &o).unwrap_err();
    assert_eq!(err.code(), crate::ErrorCode::InvalidBudget);
}

#[test]
fn anthropic_requests_start_with_a_user_message() {
    let big = "word ".repeat(300);
    let body = json!({"system": "be brief", "messages": [
        {"role": "user", "content": big},
        {"role": "assistant", "content": "short answer"},
        {"role": "user", "content": "next question"},
        {"role": "assistant", "content": "prefill"}]});
    // Pinned: the prefill and the question before it. The first user message does not fit,
    // so the assistant message after it would lead: it is dropped after the run.
    let t = run(Provider::Anthropic, &body, 60).unwrap();
    assert_eq!(t.kept, [2, 3]);
    assert_eq!(roles(&t), ["user", "assistant"]);
    assert_eq!(
        t.adjustments,
        [Adjustment {
            paths: vec!["messages[1]".into()],
            reason: "an Anthropic request must start with a user message".into(),
        }]
    );
    assert_eq!(t.item_paths[0], "system");
}

/// The tokens the item standing for `path` was given.
fn item_tokens(t: &Trimmed, path: &str) -> i64 {
    let i = t.item_paths.iter().position(|p| p == path).unwrap();
    t.items[i].tokens()
}

#[test]
fn a_user_message_is_pinned_when_dropping_the_leading_units_would_keep_less() {
    let body = json!({"messages": [
        {"role": "user", "content": "ten words about the task we are working on today"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "search", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "result ".repeat(40)}]},
        {"role": "assistant", "content": "short answer"},
        {"role": "user", "content": "next question"}]});
    let all = run(Provider::Anthropic, &body, 1_000_000).unwrap();
    assert_eq!(all.kept, [0, 1, 2, 3, 4]);
    // Room for everything but the oldest message, which the pipeline drops first: the
    // selection would start with the tool call. Dropping the leading units would keep the
    // last turn alone; pinning the first message and running again keeps three messages.
    let budget = all.input_tokens - item_tokens(&all, "messages[0]");
    let t = run(Provider::Anthropic, &body, budget).unwrap();
    assert_eq!(t.kept, [0, 3, 4]);
    assert!(t.adjustments.is_empty(), "{:?}", t.adjustments);
    assert_eq!(t.rule_pins.len(), 1);
    assert_eq!(t.rule_pins[0].paths, ["messages[0]"]);
    assert!(t.tokens <= budget);
    // The report is the second run's: the first message is included as pinned.
    let traced = {
        let budget = ContextBudget::new(budget, budget).unwrap();
        let mut o = options();
        o.trace = TraceDetail::Item;
        trim(
            Provider::Anthropic,
            &body.to_string(),
            &budget,
            &chat_pipeline(),
            &o,
        )
        .unwrap()
    };
    let report = traced.selection.report.as_ref().unwrap();
    let first = traced
        .item_paths
        .iter()
        .position(|p| p == "messages[0]")
        .unwrap();
    let included = report.included.iter().find(|i| i.index == first).unwrap();
    assert_eq!(included.reason, crate::diagnostics::InclusionReason::Pinned);
    // An OpenAI request has no such rule: the same conversation drops the first message.
    let openai = json!({"messages": [
        {"role": "user", "content": "ten words about the task we are working on today"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "result ".repeat(40)},
        {"role": "assistant", "content": "short answer"},
        {"role": "user", "content": "next question"}]});
    let all = run(Provider::OpenAi, &openai, 1_000_000).unwrap();
    let budget = all.input_tokens - item_tokens(&all, "messages[0]");
    let t = run(Provider::OpenAi, &openai, budget).unwrap();
    assert_eq!(t.kept, [1, 2, 3, 4]);
    assert!(t.rule_pins.is_empty());
}

#[test]
fn an_agent_loop_cut_in_its_tool_calls_keeps_the_task_and_the_latest_calls() {
    // The task, ten tool calls with their results, the final answer, a new question.
    let task = "please fix the failing build, the log is below. ".repeat(4);
    let mut messages = vec![json!({"role": "user", "content": task})];
    for k in 0..10 {
        let id = format!("t{k}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "shell", "input": {"step": k}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": "output line ".repeat(10)}]}));
    }
    messages.push(json!({"role": "assistant", "content": "fixed: a missing import"}));
    messages.push(json!({"role": "user", "content": "thanks, now add a test"}));
    let body = json!({ "messages": messages });
    let all = run(Provider::Anthropic, &body, 1_000_000).unwrap();
    let t = run(Provider::Anthropic, &body, all.input_tokens / 2).unwrap();
    // Dropping the leading units would have left the answer's unit leading, then dropped it
    // too: the last question alone. Pinning the task keeps it and the latest calls.
    assert_eq!(t.rule_pins.len(), 1);
    assert_eq!(t.rule_pins[0].paths, ["messages[0]"]);
    assert_eq!(t.kept[0], 0);
    assert!(t.kept.len() > 6, "{:?}", t.kept);
    assert_eq!(t.kept[t.kept.len() - 2..], [21, 22]);
    assert!(t.tokens <= all.input_tokens / 2);
}

#[test]
fn dropping_the_leading_unit_wins_when_the_pinned_message_would_push_out_more() {
    // The nearest user message before the leading assistant message is long: pinning it
    // would keep fewer messages than dropping the assistant message.
    let body = json!({"messages": [
        {"role": "user", "content": "word ".repeat(20)},
        {"role": "assistant", "content": "a reply"},
        {"role": "user", "content": "a short follow up"},
        {"role": "assistant", "content": "another reply"},
        {"role": "user", "content": "a second follow up"},
        {"role": "assistant", "content": "a third reply"},
        {"role": "user", "content": "last"}]});
    let all = run(Provider::Anthropic, &body, 1_000_000).unwrap();
    let budget = all.input_tokens - item_tokens(&all, "messages[0]");
    let t = run(Provider::Anthropic, &body, budget).unwrap();
    assert_eq!(t.kept, [2, 3, 4, 5, 6]);
    assert_eq!(t.adjustments.len(), 1);
    assert_eq!(t.adjustments[0].paths, ["messages[1]"]);
    assert!(t.rule_pins.is_empty());
    // The second run was made, and kept fewer messages: the first one, the last one and
    // what fits in the seven tokens left.
    let (valid, runs) = select_recorded(&body, budget);
    assert_eq!(
        valid.run.kept_units,
        [false, false, true, true, true, true, true]
    );
    assert_eq!(runs.len(), 2);
    assert!(runs[1].0[0], "the second run pins the first message");
    assert_eq!(runs[1].1, [true, false, false, false, false, true, true]);
}

#[test]
fn a_thinking_turn_is_not_merged_into_an_earlier_assistant_message() {
    let big = "word ".repeat(300);
    let body = json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": big},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "second answer"}]},
        {"role": "user", "content": "last"}]});
    let t = run(Provider::Anthropic, &body, 60).unwrap();
    assert_eq!(t.kept, [0, 3, 4]);
    assert_eq!(t.adjustments.len(), 1);
    assert_eq!(t.adjustments[0].paths, ["messages[1]"]);
    assert!(t.adjustments[0].reason.contains("messages[3]"));
    // Without the thinking block the two assistant messages may merge: nothing is dropped.
    let mut plain = body.clone();
    plain["messages"][3]["content"] = json!("second answer");
    let t = run(Provider::Anthropic, &plain, 60).unwrap();
    assert_eq!(t.kept, [0, 1, 3, 4]);
    assert!(t.adjustments.is_empty());
}

#[test]
fn anthropic_tool_loops_are_units_and_results_may_be_followed_by_text() {
    let body = json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "looking"},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
            {"type": "tool_use", "id": "t2", "name": "g", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "two"}]},
            {"type": "tool_result", "tool_use_id": "t1", "content": "one", "is_error": true},
            {"type": "text", "text": "and also"}]},
        {"role": "assistant", "content": "done"}]});
    let t = run(Provider::Anthropic, &body, 1000).unwrap();
    assert_eq!(t.item_paths[0], "$");
    assert_eq!(t.item_paths[2..4], ["messages[1]", "messages[2]"]);
    let (call, results) = (&t.items[2], &t.items[3]);
    assert_eq!(call.kind().as_str(), "Message");
    assert_eq!(results.kind().as_str(), "ToolOutput");
    assert_eq!(call.group(), Some("messages[1]"));
    assert_eq!(results.group(), Some("messages[1]"));
    assert!(call.metadata().is_empty());
    assert!(
        results.content().contains("← [t1] one (error)"),
        "{}",
        results.content()
    );
    assert_eq!(t.json, body.to_string());
}

#[test]
fn reports_map_items_back_to_paths() {
    let body = json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "r"}]});
    let mut o = options();
    o.trace = crate::diagnostics::TraceDetail::Stage;
    let budget = ContextBudget::new(100, 100).unwrap();
    let t = trim_openai(&body.to_string(), &budget, &chat_pipeline(), &o).unwrap();
    let report = t.selection.report.as_ref().unwrap();
    assert_eq!(report.total_candidates, 4);
    for e in &report.included {
        let path = &t.item_paths[e.index];
        assert!(t.items[e.index].content().starts_with(path.as_str()));
    }
}

#[test]
fn the_default_counter_is_o200k_base_or_the_estimate_without_the_tokenizer() {
    let text = "Refunds take 5–7 days. 払い戻しには数日かかります。";
    let counted = ChatOptions::default().counter.count_tokens(text);
    assert_eq!(default_counter().count_tokens(text), counted);
    match crate::tokenizer::Encoding::by_name(DEFAULT_ENCODING) {
        Ok(o200k) => {
            assert_eq!(counted, o200k.count(text));
            assert_ne!(counted, estimate_tokens(text), "not the estimate");
        }
        Err(e) => {
            assert_eq!(e.code(), crate::ErrorCode::Unsupported);
            assert_eq!(counted, estimate_tokens(text));
        }
    }
}

/// The bundled Anthropic request read as an OpenAI request is refused at its first tool
/// block instead of passing the blocks through (trimming could then separate a `tool_use`
/// from its `tool_result` without any error).
#[test]
fn an_anthropic_request_read_as_openai_is_refused() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/anthropic-request.json"
    ))
    .unwrap();
    let budget = crate::ContextBudget::new(100_000, 3_000).unwrap();
    let err = crate::chat::trim_openai(&text, &budget, &chat_pipeline(), &ChatOptions::default())
        .unwrap_err();
    assert_eq!(err.code(), crate::ErrorCode::InvalidRequest, "{err}");
    assert!(
        err.to_string().contains("carries a tool call or result"),
        "{err}"
    );
}

/// One pipeline run as [`select_recorded`] saw it: the units pinned, the units kept.
type RecordedRun = (Vec<bool>, Vec<bool>);

/// Runs [`rules::select`] over the Anthropic request `body` with the chat pipeline at
/// `budget`, and records each run it made.
fn select_recorded(body: &Value, budget: i64) -> (rules::Valid, Vec<RecordedRun>) {
    let conv = anthropic_conversation(body);
    let budget = ContextBudget::new(budget, budget).unwrap();
    let runs = std::cell::RefCell::new(Vec::new());
    let run_pinned = |pins: &[bool]| {
        let r = select::run(
            &conv,
            &chat_pipeline(),
            &budget,
            pins,
            TraceDetail::None,
            None,
        )?;
        runs.borrow_mut()
            .push((pins.to_vec(), r.kept_units.clone()));
        Ok(r)
    };
    let valid = rules::select(&conv, &conv.pinned_units(true), &run_pinned).unwrap();
    (valid, runs.into_inner())
}

/// The conversation of an Anthropic request, read with the word counter.
fn anthropic_conversation(body: &Value) -> conversation::Conversation {
    let counter = count::Counter {
        count: &words,
        overheads: Overheads::of(Provider::Anthropic),
    };
    read(Provider::Anthropic, &body.to_string(), &counter, None)
        .unwrap()
        .0
}

/// A request whose thinking turn (messages[3]) answers messages[2], after an earlier
/// answer (messages[1]) of `first_answer` words.
fn thinking_turn(first_answer: usize) -> Value {
    json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "answer ".repeat(first_answer)},
        {"role": "user", "content": "the second question is a little longer than the first"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "a second answer that takes a good many more words than \
                                      the first answer did"}]},
        {"role": "user", "content": "last"}]})
}

#[test]
fn a_thinking_turn_keeps_what_the_pipeline_chose_rather_than_its_question() {
    let body = thinking_turn(2);
    let all = run(Provider::Anthropic, &body, 1_000_000).unwrap();
    // Room for everything but the second question, which the pipeline leaves out: the
    // thinking turn would follow the first answer. Dropping the first answer loses 5 of the
    // tokens the pipeline chose; pinning the question and running again would lose the
    // thinking turn's 20. Both runs are made and the drop is kept.
    let budget = all.input_tokens - item_tokens(&all, "messages[2]");
    let t = run(Provider::Anthropic, &body, budget).unwrap();
    assert_eq!(t.kept, [0, 3, 4]);
    assert_eq!(t.adjustments.len(), 1);
    assert_eq!(t.adjustments[0].paths, ["messages[1]"]);
    assert!(t.rule_pins.is_empty());
    let (_, runs) = select_recorded(&body, budget);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].1, [true, true, false, true, true]);
    assert_eq!(runs[1].0, [false, false, true, false, true]);
    assert_eq!(runs[1].1, [true, true, true, false, true]);
    // Without the thinking block the two assistant messages may merge: one run, nothing
    // pinned or dropped.
    let mut plain = body.clone();
    plain["messages"][3]["content"] = json!("a second answer");
    let all = run(Provider::Anthropic, &plain, 1_000_000).unwrap();
    let budget = all.input_tokens - item_tokens(&all, "messages[2]");
    let t = run(Provider::Anthropic, &plain, budget).unwrap();
    assert_eq!(t.kept, [0, 1, 3, 4]);
    assert!(t.adjustments.is_empty() && t.rule_pins.is_empty());
}

/// Runs [`rules::select`] over `body` with a stand-in for the pipeline: `runs[k]` is the
/// selection (kept units) of the `k`-th run, which must pin `pins[k]` beyond the request's
/// own pinned units.
fn select_with(body: &Value, runs: &[(Option<usize>, Vec<bool>)]) -> rules::Valid {
    let conv = anthropic_conversation(body);
    let pinned = conv.pinned_units(true);
    let made = std::cell::Cell::new(0);
    let stand_in = |pins: &[bool]| {
        let (extra, kept) = &runs[made.get()];
        made.set(made.get() + 1);
        let mut expected = pinned.clone();
        if let Some(u) = extra {
            expected[*u] = true;
        }
        assert_eq!(pins, &expected[..], "run {}", made.get());
        Ok(select::Run {
            items: Vec::new(),
            item_paths: Vec::new(),
            selection: Selection::default(),
            kept_units: kept.clone(),
            shortened: vec![false; conv.messages.len()],
            prefix: None,
        })
    };
    let valid = rules::select(&conv, &pinned, &stand_in).unwrap();
    assert_eq!(made.get(), runs.len(), "every run was made");
    valid
}

#[test]
fn the_question_before_a_thinking_turn_is_pinned_when_that_keeps_more_of_the_selection() {
    // The selection keeps both answers without the question between them. Dropping the
    // long first answer would lose its 31 tokens; the run with the question pinned keeps it
    // and loses the thinking turn's 20 instead, so that run is kept.
    let body = thinking_turn(28);
    let (f, t) = (false, true);
    let valid = select_with(
        &body,
        &[(None, vec![t, t, f, t, t]), (Some(2), vec![t, t, t, f, t])],
    );
    assert_eq!(valid.run.kept_units, [t, t, t, f, t]);
    assert!(valid.dropped.is_empty());
    assert_eq!(valid.pinned.len(), 1);
    assert_eq!(valid.pinned[0].paths, ["messages[2]"]);
    assert!(valid.pinned[0]
        .reason
        .contains("the thinking turn of messages[3] follows a user message"));
    // When the second run keeps less of the first one's selection than dropping the first
    // answer does, the drop is kept.
    let valid = select_with(
        &body,
        &[(None, vec![t, t, f, t, t]), (Some(2), vec![f, f, t, f, t])],
    );
    assert_eq!(valid.run.kept_units, [t, f, f, t, t]);
    assert_eq!(valid.dropped.len(), 1);
    assert!(valid.pinned.is_empty());
}

#[test]
fn a_second_run_that_still_leads_with_an_assistant_pins_the_first_message() {
    let body = json!({"messages": [
        {"role": "user", "content": "the task"},
        {"role": "assistant", "content": "a reply"},
        {"role": "user", "content": "a follow up"},
        {"role": "assistant", "content": "another reply"},
        {"role": "user", "content": "last"}]});
    let (f, t) = (false, true);
    // The first run starts with messages[3]: messages[2] is pinned; that run starts with
    // messages[1]: messages[0] is pinned, and that run is valid and keeps the most.
    let valid = select_with(
        &body,
        &[
            (None, vec![f, f, f, t, t]),
            (Some(2), vec![f, t, t, f, t]),
            (Some(0), vec![t, f, f, t, t]),
        ],
    );
    assert_eq!(valid.run.kept_units, [t, f, f, t, t]);
    assert_eq!(valid.pinned[0].paths, ["messages[0]"]);
    assert!(valid.dropped.is_empty());
}

/// `n` numbered words: `w1 w2 … wn`.
fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Trims with long tool outputs shortened as `spec` says.
fn trim_shortened(
    provider: Provider,
    body: &Value,
    budget: i64,
    spec: &HeadTail,
) -> Result<Trimmed> {
    let mut o = options();
    o.shorten = Some(spec);
    let budget = ContextBudget::new(budget, budget).unwrap();
    trim(provider, &body.to_string(), &budget, &chat_pipeline(), &o)
}

fn shortened_run(provider: Provider, body: &Value, budget: i64, spec: &HeadTail) -> Trimmed {
    trim_shortened(provider, body, budget, spec).unwrap()
}

/// Reads the output again with everything fitting: its tokens as counted from scratch.
fn recount(provider: Provider, json: &str) -> i64 {
    let huge = ContextBudget::new(i64::MAX / 4, i64::MAX / 4).unwrap();
    trim(provider, json, &huge, &chat_pipeline(), &options())
        .unwrap()
        .input_tokens
}

#[test]
fn a_long_openai_tool_output_is_sent_as_its_head_and_tail() {
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "check the logs"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": numbered(500)},
        {"role": "assistant", "content": "the logs are fine"},
        {"role": "user", "content": "thanks, and now?"}]});
    // Without shortening the call and its 500-word output go together.
    let plain = run(Provider::OpenAi, &body, 120).unwrap();
    assert_eq!(plain.kept, [0, 3, 4]);
    assert!(plain.shortened.is_empty());
    let spec = HeadTail::new(10, 5).unwrap();
    let t = shortened_run(Provider::OpenAi, &body, 120, &spec);
    assert_eq!(t.kept, [0, 1, 2, 3, 4]);
    assert_eq!(t.shortened, [2]);
    let out: Value = serde_json::from_str(&t.json).unwrap();
    let text = out["messages"][2]["content"].as_str().unwrap();
    // The word counter cuts after the 10th word's space (the longest prefix of 10 words)
    // and before the 496th word.
    assert_eq!(
        text,
        format!(
            "{} \n[… 485 tokens omitted …]\n {}",
            numbered(10),
            (496..=500)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        )
    );
    // Only that string changed; the tokens are what reading the output counts.
    let mut expected = body.clone();
    expected["messages"][2]["content"] = json!(text);
    assert_eq!(out, expected);
    assert_eq!(t.tokens, recount(Provider::OpenAi, &t.json));
    assert!(t.tokens <= 120);
    // A report names the form: the variant placed for the tool message.
    let placed = t
        .selection
        .indices
        .iter()
        .position(|&i| t.item_paths[i] == "messages[2]");
    assert_eq!(t.selection.form(placed.unwrap()), 1);
    // Everything fits: nothing is shortened and the request is unchanged.
    let whole = shortened_run(Provider::OpenAi, &body, 10_000, &spec);
    assert_eq!((whole.json, whole.shortened), (body.to_string(), vec![]));
}

#[test]
fn anthropic_tool_results_are_cut_text_by_text() {
    let body = json!({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "look both up"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "f", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": numbered(300)},
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "short"},
                {"type": "image", "source": {"type": "url", "url": "https://e.com/a.png"}},
                {"type": "text", "text": numbered(200)}], "is_error": false},
            {"type": "text", "text": numbered(40)}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "and?"}]});
    let spec = HeadTail::new(4, 4).unwrap().with_quality(0.5);
    // The image counts 1 600 tokens: the whole request does not fit 1 800, its shortened
    // form does.
    assert!(run(Provider::Anthropic, &body, 1800).unwrap().input_tokens > 2100);
    let t = shortened_run(Provider::Anthropic, &body, 1800, &spec);
    assert_eq!(t.kept, [0, 1, 2, 3, 4]);
    assert_eq!(t.shortened, [2]);
    let out: Value = serde_json::from_str(&t.json).unwrap();
    let results = &out["messages"][2]["content"];
    let cut = |n: usize| {
        format!(
            "w1 w2 w3 w4 \n[… {} tokens omitted …]\n {}",
            n - 8,
            (n - 3..=n)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    assert_eq!(results[0]["content"], json!(cut(300)));
    assert_eq!(results[1]["content"][0]["text"], "short");
    assert_eq!(results[1]["content"][2]["text"], json!(cut(200)));
    // The user's own text after the results is not a result: it stays whole.
    assert_eq!(results[2]["text"], json!(numbered(40)));
    assert_eq!(t.tokens, recount(Provider::Anthropic, &t.json));
    let item = t
        .item_paths
        .iter()
        .position(|p| p == "messages[2]")
        .unwrap();
    assert_eq!(t.items[item].variants()[0].quality(), 0.5);
}

#[test]
fn shortening_refuses_a_prefix_state_and_skips_what_would_not_save() {
    let body = json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": numbered(12)},
        {"role": "user", "content": "next"}]});
    let spec = HeadTail::new(10, 5).unwrap();
    // 12 words are no more than 10 + 5: no form.
    let t = shortened_run(Provider::OpenAi, &body, 1000, &spec);
    assert!(t.items.iter().all(|i| !i.has_variants()));
    let mut o = options();
    o.shorten = Some(&spec);
    let huge = ContextBudget::new(1000, 1000).unwrap();
    let prefix = crate::prefix::PrefixOptions::new(crate::prefix::PrefixMode::Measure);
    o.prefix = Some(prefix);
    let e = trim(
        Provider::OpenAi,
        &body.to_string(),
        &huge,
        &chat_pipeline(),
        &o,
    )
    .unwrap_err();
    assert_eq!(e.code(), crate::ErrorCode::InvalidArgument);
    assert!(
        e.to_string().contains("not supported with a prefix state"),
        "{e}"
    );
}

#[test]
fn a_pinned_tool_output_too_long_for_the_budget_is_sent_shortened() {
    // An agent loop whose latest call returned a 600-word file: the last unit is pinned.
    let body = json!({"messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "read the file and fix the bug"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": numbered(600)}]});
    let e = run(Provider::OpenAi, &body, 200).unwrap_err();
    assert_eq!(e.code(), crate::ErrorCode::PinnedExceedsBudget);
    let spec = HeadTail::new(30, 20).unwrap();
    let t = shortened_run(Provider::OpenAi, &body, 200, &spec);
    assert_eq!(t.kept, [0, 1, 2, 3]);
    assert_eq!(t.shortened, [3]);
    assert!(t.tokens <= 200);
    assert_eq!(t.tokens, recount(Provider::OpenAi, &t.json));
    // The input's tokens are the whole request's, the long output counted in full.
    assert_eq!(t.input_tokens, recount(Provider::OpenAi, &body.to_string()));
    let out: Value = serde_json::from_str(&t.json).unwrap();
    let text = out["messages"][3]["content"].as_str().unwrap();
    assert!(
        text.starts_with("w1 w2 ") && text.ends_with(" w599 w600"),
        "{text}"
    );
    // The pinned item is the shortened form itself (placed whole, as pinned items are).
    let item = t
        .item_paths
        .iter()
        .position(|p| p == "messages[3]")
        .unwrap();
    assert!(t.items[item].pinned() && !t.items[item].has_variants());
    // Its tokens are those of the sent message, as reading the output counts them.
    let huge = ContextBudget::new(i64::MAX / 4, i64::MAX / 4).unwrap();
    let again = trim(
        Provider::OpenAi,
        &t.json,
        &huge,
        &chat_pipeline(),
        &options(),
    )
    .unwrap();
    let sent = again
        .item_paths
        .iter()
        .position(|p| p == "messages[3]")
        .unwrap();
    assert_eq!(t.items[item].tokens(), again.items[sent].tokens());
    // When even the shortened form does not fit, the error stays the pipeline's.
    let tight = HeadTail::new(300, 200).unwrap();
    let e = trim_shortened(Provider::OpenAi, &body, 200, &tight).unwrap_err();
    assert_eq!(e.code(), crate::ErrorCode::PinnedExceedsBudget);
}
