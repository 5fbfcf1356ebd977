//! The rules a chat request must satisfy for its provider to accept it, written from the
//! providers' documentation and error messages (docs/chat.md lists each with its source),
//! independently of ctxpack's own reader, so that they check it.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

fn messages(body: &Value) -> Result<&Vec<Value>, String> {
    let m = body["messages"]
        .as_array()
        .ok_or("messages is not an array")?;
    if m.is_empty() {
        return Err("messages is empty".into());
    }
    Ok(m)
}

fn role(m: &Value) -> &str {
    m["role"].as_str().unwrap_or("")
}

/// OpenAI Chat Completions: roles; every tool message answers a call of the assistant
/// message before its run of tool messages; every call is answered exactly once in that run.
pub fn openai(body: &Value) -> Result<(), String> {
    let msgs = messages(body)?;
    let mut i = 0;
    while i < msgs.len() {
        let r = role(&msgs[i]);
        if ![
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
            "function",
        ]
        .contains(&r)
        {
            return Err(format!("messages[{i}]: role '{r}'"));
        }
        if r == "tool" {
            return Err(format!(
                "messages[{i}]: tool message without its assistant message"
            ));
        }
        let calls: Vec<&str> = msgs[i]["tool_calls"]
            .as_array()
            .map(|c| c.iter().map(|c| c["id"].as_str().unwrap_or("")).collect())
            .unwrap_or_default();
        let mut j = i + 1;
        if r == "assistant" && !calls.is_empty() {
            let mut answered = HashSet::new();
            while j < msgs.len() && role(&msgs[j]) == "tool" {
                let id = msgs[j]["tool_call_id"].as_str().unwrap_or("");
                if !calls.contains(&id) || !answered.insert(id) {
                    return Err(format!(
                        "messages[{j}]: answers '{id}', not an open call of messages[{i}]"
                    ));
                }
                j += 1;
            }
            if answered.len() != calls.len() {
                return Err(format!(
                    "messages[{i}]: {} calls, {} answered",
                    calls.len(),
                    answered.len()
                ));
            }
        }
        i = j;
    }
    Ok(())
}

fn blocks(m: &Value) -> Vec<&Value> {
    m["content"]
        .as_array()
        .map(|b| b.iter().collect())
        .unwrap_or_default()
}

fn of_type<'a>(m: &'a Value, t: &str, key: &str) -> Vec<&'a str> {
    blocks(m)
        .into_iter()
        .filter(|b| b["type"] == t)
        .map(|b| b[key].as_str().unwrap_or(""))
        .collect()
}

/// Anthropic Messages: user and assistant roles, a user message first; every tool_use
/// answered in the next message (a user message), every tool_result answering a tool_use
/// of the message before it, once; tool_result blocks before any other block.
pub fn anthropic(body: &Value) -> Result<(), String> {
    let msgs = messages(body)?;
    if role(&msgs[0]) != "user" {
        return Err("the first message is not a user message".into());
    }
    for (i, m) in msgs.iter().enumerate() {
        let r = role(m);
        if r != "user" && r != "assistant" {
            return Err(format!("messages[{i}]: role '{r}'"));
        }
        let uses = of_type(m, "tool_use", "id");
        if !uses.is_empty() {
            let next = msgs.get(i + 1).filter(|n| role(n) == "user");
            let answers = next
                .map(|n| of_type(n, "tool_result", "tool_use_id"))
                .unwrap_or_default();
            for id in &uses {
                if !answers.contains(id) {
                    return Err(format!(
                        "messages[{i}]: tool_use '{id}' not answered in the next message"
                    ));
                }
            }
        }
        let results = of_type(m, "tool_result", "tool_use_id");
        if !results.is_empty() {
            let before = if i > 0 && role(&msgs[i - 1]) == "assistant" {
                of_type(&msgs[i - 1], "tool_use", "id")
            } else {
                Vec::new()
            };
            let mut seen = HashSet::new();
            for id in &results {
                if !before.contains(id) || !seen.insert(*id) {
                    return Err(format!(
                        "messages[{i}]: tool_result '{id}' without its tool_use just before"
                    ));
                }
            }
            let kinds: Vec<bool> = blocks(m)
                .iter()
                .map(|b| b["type"] == "tool_result")
                .collect();
            if kinds.windows(2).any(|w| !w[0] && w[1]) {
                return Err(format!("messages[{i}]: a block before a tool_result"));
            }
        }
    }
    Ok(())
}

fn starts_with_thinking(m: &Value) -> bool {
    blocks(m)
        .first()
        .is_some_and(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
}

/// The output is the input with messages removed: the same other fields in the same order,
/// the output's messages a subsequence of the input's (`kept` their positions); and, for
/// Anthropic, no assistant message that starts with a thinking block newly follows another
/// assistant message (the API would merge them into one turn that no longer starts with
/// its thinking block).
pub fn trimmed_from(
    input: &Value,
    output: &Value,
    kept: &[usize],
    anthropic: bool,
) -> Result<(), String> {
    let others = |v: &Value| -> Vec<(String, Value)> {
        v.as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != "messages")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    if others(input) != others(output) {
        return Err("a field other than messages changed".into());
    }
    let (inp, out) = (messages(input)?, messages(output)?);
    if kept.len() != out.len() || kept.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!(
            "kept {kept:?} is not an ascending list of {} positions",
            out.len()
        ));
    }
    for (k, m) in kept.iter().zip(out) {
        if inp.get(*k) != Some(m) {
            return Err(format!("output message for input position {k} differs"));
        }
    }
    if anthropic {
        for (w, pair) in kept.windows(2).enumerate() {
            let (a, b) = (&inp[pair[0]], &inp[pair[1]]);
            if pair[1] != pair[0] + 1
                && role(a) == "assistant"
                && role(b) == "assistant"
                && starts_with_thinking(b)
            {
                return Err(format!(
                    "output messages {w} and {}: a thinking turn merged into an assistant message",
                    w + 1
                ));
            }
        }
    }
    Ok(())
}

/// Tool call ids kept in the output, per provider, with how many times each is answered —
/// for tests that want to count pairs.
pub fn pairs(body: &Value, anthropic: bool) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if anthropic {
            for id in of_type(m, "tool_use", "id") {
                out.entry(id.to_owned()).or_insert(0);
            }
            for id in of_type(m, "tool_result", "tool_use_id") {
                *out.entry(id.to_owned()).or_insert(0) += 1;
            }
        } else {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                out.entry(c["id"].as_str().unwrap_or("").to_owned())
                    .or_insert(0);
            }
            if let Some(id) = m["tool_call_id"].as_str() {
                *out.entry(id.to_owned()).or_insert(0) += 1;
            }
        }
    }
    out
}
