//! Reading an Anthropic Messages request body into a [`Conversation`].
//!
//! The top-level `system` becomes a pinned fixed part; `user` and `assistant` messages
//! become messages, a user message holding `tool_result` blocks a tool output. An assistant
//! message with `tool_use` blocks and the user message right after it, which must hold a
//! `tool_result` for each of them, form one unit. Every rule enforced here is listed, with
//! its source, in `docs/chat.md`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::chat::conversation::{
    invalid, type_name, CallRef, Conversation, Fixed, Kind, Message, Role,
};
use crate::chat::count::{Counter, Tally};
use crate::chat::openai::{part_type, string};
use crate::chat::{request_messages, Provider};
use crate::error::Result;

/// Reads and validates the request.
pub(crate) fn read(doc: &Value, counter: &Counter<'_>) -> Result<Conversation> {
    let (object, values) = request_messages(doc)?;
    let mut ids = HashMap::new();
    let messages = values
        .iter()
        .enumerate()
        .map(|(i, v)| read_message(i, v, counter, &mut ids))
        .collect::<Result<Vec<_>>>()?;
    if messages[0].role != Role::User {
        return Err(invalid(
            "messages[0].role",
            "the first message must be a user message",
        ));
    }
    let units = units(&messages)?;
    let mut fixed = Vec::new();
    if let Some(system) = object.get("system").filter(|v| !v.is_null()) {
        let mut tokens = Tally(counter.overheads.per_message);
        let mut text = Vec::new();
        match system {
            Value::String(s) => {
                tokens.add(counter.text(s));
                text.push(s.clone());
            }
            Value::Array(blocks) => {
                for (j, block) in blocks.iter().enumerate() {
                    block_tokens(
                        block,
                        &format!("system[{j}]"),
                        counter,
                        &mut tokens,
                        &mut text,
                    )?;
                }
            }
            other => {
                return Err(invalid(
                    "system",
                    format!(
                        "must be a string or an array of text blocks, found {}",
                        type_name(other)
                    ),
                ))
            }
        }
        fixed.push(Fixed {
            path: "system".into(),
            content: text.join("\n"),
            tokens: tokens.0,
        });
    }
    let mut framing = Tally(counter.overheads.per_request);
    let mut defined = Vec::new();
    for key in ["tools", "tool_choice"] {
        if let Some(v) = object.get(key).filter(|v| !v.is_null()) {
            framing.add(counter.json(v));
            defined.push(key);
        }
    }
    if framing.0 != 0 {
        let content = if defined.is_empty() {
            "reply priming".to_owned()
        } else {
            format!("reply priming, {}", defined.join(", "))
        };
        fixed.push(Fixed {
            path: "$".into(),
            content,
            tokens: framing.0,
        });
    }
    Ok(Conversation {
        provider: Provider::Anthropic,
        messages,
        units,
        fixed,
    })
}

fn read_message(
    i: usize,
    value: &Value,
    counter: &Counter<'_>,
    ids: &mut HashMap<String, String>,
) -> Result<Message> {
    let path = Conversation::path(i);
    let Value::Object(map) = value else {
        return Err(invalid(
            &path,
            format!("must be an object, found {}", type_name(value)),
        ));
    };
    let role = match string(map, "role", &path)? {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some(other) => {
            return Err(invalid(
                format!("{path}.role"),
                format!(
                    "unknown role '{other}' (Anthropic messages are user or assistant; the \
                     system prompt is the top-level 'system')"
                ),
            ))
        }
        None => return Err(invalid(format!("{path}.role"), "is required")),
    };
    let mut m = Message::new(role, Kind::Message);
    let mut tokens = Tally(counter.overheads.per_message);
    tokens.add(counter.text(role.name()));
    let mut text = Vec::new();
    for (key, v) in map {
        match key.as_str() {
            "role" | "content" => {}
            // Fields newer than this reader are kept as they are and counted as JSON text.
            _ => tokens.add(counter.json(v)),
        }
    }
    let at = format!("{path}.content");
    match map.get("content") {
        Some(Value::String(s)) => {
            tokens.add(counter.text(s));
            text.push(s.clone());
        }
        Some(Value::Array(blocks)) => {
            let mut other_seen = false;
            for (j, block) in blocks.iter().enumerate() {
                let at = format!("{at}[{j}]");
                let (kind, fields) = part_type(block, &at)?;
                if j == 0 {
                    m.starts_with_thinking = matches!(kind, "thinking" | "redacted_thinking");
                }
                match (kind, role) {
                    ("tool_use", Role::Assistant) => {
                        let id = string(fields, "id", &at)?
                            .filter(|id| !id.is_empty())
                            .ok_or_else(|| {
                                invalid(format!("{at}.id"), "is required (a non-empty string)")
                            })?;
                        if let Some(first) = ids.insert(id.to_owned(), format!("{at}.id")) {
                            return Err(invalid(
                                format!("{at}.id"),
                                format!("tool_use id '{id}' is used twice (first at {first})"),
                            ));
                        }
                        m.calls.push(CallRef {
                            id: id.to_owned(),
                            path: format!("{at}.id"),
                        });
                    }
                    ("tool_result", Role::User) => {
                        if other_seen {
                            return Err(invalid(
                                &at,
                                "tool_result blocks must come before any other block of the \
                                 message",
                            ));
                        }
                        let id = string(fields, "tool_use_id", &at)?
                            .ok_or_else(|| invalid(format!("{at}.tool_use_id"), "is required"))?;
                        m.answers.push(CallRef {
                            id: id.to_owned(),
                            path: format!("{at}.tool_use_id"),
                        });
                        m.kind = Kind::ToolOutput;
                    }
                    ("tool_use", _) => {
                        return Err(invalid(
                            &at,
                            "a tool_use block belongs in an assistant message",
                        ))
                    }
                    ("tool_result", _) => {
                        return Err(invalid(
                            &at,
                            "a tool_result block belongs in a user message",
                        ))
                    }
                    (_, Role::User) if fields.get("tool_use_id").is_some_and(Value::is_string) => {
                        // A block type newer than this reader that answers a tool call: its
                        // pairing rule is unknown, so it cannot be trimmed safely.
                        return Err(invalid(
                            format!("{at}.type"),
                            format!(
                                "unknown block type '{kind}' with a tool_use_id: ctxpack does \
                                 not know how it pairs with its call"
                            ),
                        ));
                    }
                    _ => other_seen = true,
                }
                block_tokens(block, &at, counter, &mut tokens, &mut text)?;
            }
        }
        Some(other) => {
            return Err(invalid(
                &at,
                format!(
                    "must be a string or an array of content blocks, found {}",
                    type_name(other)
                ),
            ))
        }
        None => return Err(invalid(&at, "is required")),
    }
    m.tokens = tokens.0;
    m.text = text.join("\n");
    Ok(m)
}

/// Counts one content block and renders it for the item's content.
fn block_tokens(
    block: &Value,
    at: &str,
    counter: &Counter<'_>,
    tokens: &mut Tally,
    text: &mut Vec<String>,
) -> Result<()> {
    let (kind, fields) = part_type(block, at)?;
    let str_field = |key: &str| fields.get(key).and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => {
            let s = string(fields, "text", at)?
                .ok_or_else(|| invalid(format!("{at}.text"), "is required"))?;
            tokens.add(counter.text(s));
            text.push(s.to_owned());
        }
        "thinking" => {
            tokens.add(counter.text(str_field("thinking")));
            text.push(format!("[thinking] {}", str_field("thinking")));
        }
        "redacted_thinking" => {
            tokens.add(counter.text(str_field("data")));
            text.push("[redacted thinking]".into());
        }
        "tool_use" | "server_tool_use" | "mcp_tool_use" => {
            let input = fields
                .get("input")
                .map(Value::to_string)
                .unwrap_or_default();
            tokens.add(counter.text(str_field("name")));
            tokens.add(counter.text(&input));
            tokens.add(counter.text(str_field("id")));
            text.push(format!(
                "→ {}({input}) [{}]",
                str_field("name"),
                str_field("id")
            ));
        }
        "tool_result" => {
            let id = str_field("tool_use_id");
            tokens.add(counter.text(id));
            let mut shown = vec![format!("← [{id}]")];
            match fields.get("content") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => {
                    tokens.add(counter.text(s));
                    shown.push(s.clone());
                }
                Some(Value::Array(inner)) => {
                    nested(inner, &format!("{at}.content"), counter, tokens, &mut shown)?;
                }
                Some(other) => {
                    return Err(invalid(
                        format!("{at}.content"),
                        format!(
                            "must be a string or an array of blocks, found {}",
                            type_name(other)
                        ),
                    ))
                }
            }
            if fields.get("is_error") == Some(&Value::Bool(true)) {
                shown.push("(error)".into());
            }
            text.push(shown.join(" "));
        }
        "image" => {
            tokens.add(counter.overheads.media);
            text.push("[image]".into());
        }
        "document" => {
            tokens.add(counter.text(str_field("title")));
            tokens.add(counter.text(str_field("context")));
            let source = fields.get("source");
            match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("text") => {
                    let data = source
                        .and_then(|s| s.get("data"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    tokens.add(counter.text(data));
                    text.push(format!("[document] {data}"));
                }
                Some("content") => match source.and_then(|s| s.get("content")) {
                    Some(Value::String(s)) => {
                        tokens.add(counter.text(s));
                        text.push(format!("[document] {s}"));
                    }
                    Some(Value::Array(inner)) => {
                        nested(
                            inner,
                            &format!("{at}.source.content"),
                            counter,
                            tokens,
                            text,
                        )?;
                    }
                    _ => {}
                },
                _ => {
                    tokens.add(counter.overheads.media);
                    text.push(format!("[document {}]", str_field("title")));
                }
            }
        }
        "search_result" => {
            tokens.add(counter.text(str_field("title")));
            tokens.add(counter.text(str_field("source")));
            if let Some(Value::Array(inner)) = fields.get("content") {
                nested(inner, &format!("{at}.content"), counter, tokens, text)?;
            }
        }
        // Server tool results, containers, blocks newer than this reader: kept as they are,
        // counted as their JSON text.
        other => {
            tokens.add(counter.json(block));
            text.push(format!("[{other}]"));
        }
    }
    Ok(())
}

/// Counts the blocks nested in a block (`at` is the path of their array).
fn nested(
    blocks: &[Value],
    at: &str,
    counter: &Counter<'_>,
    tokens: &mut Tally,
    text: &mut Vec<String>,
) -> Result<()> {
    for (k, b) in blocks.iter().enumerate() {
        block_tokens(b, &format!("{at}[{k}]"), counter, tokens, text)?;
    }
    Ok(())
}

/// Pairs every assistant message's `tool_use` blocks with the `tool_result` blocks of the
/// user message right after it and cuts the messages into units.
fn units(messages: &[Message]) -> Result<Vec<std::ops::Range<usize>>> {
    let mut units = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if !m.calls.is_empty() {
            let next = messages.get(i + 1).filter(|n| n.role == Role::User);
            let answered: HashSet<&str> = next
                .map(|n| n.answers.iter().map(|a| a.id.as_str()).collect())
                .unwrap_or_default();
            if let Some(call) = m.calls.iter().find(|c| !answered.contains(c.id.as_str())) {
                return Err(invalid(
                    &call.path,
                    format!(
                        "tool_use '{}' has no tool_result in the next message (it must be a \
                         user message that answers every tool_use of this one)",
                        call.id
                    ),
                ));
            }
            check_answers(messages, i + 1, &m.calls)?;
            units.push(i..i + 2);
            i += 2;
        } else {
            check_answers(messages, i, &[])?;
            units.push(i..i + 1);
            i += 1;
        }
    }
    Ok(units)
}

/// Every `tool_result` of message `i` answers one of `calls` (the tool_use blocks of the
/// message before it), each at most once.
fn check_answers(messages: &[Message], i: usize, calls: &[CallRef]) -> Result<()> {
    let mut seen = HashSet::new();
    for answer in &messages[i].answers {
        let id = answer.id.as_str();
        if !calls.iter().any(|c| c.id == id) {
            return Err(invalid(
                &answer.path,
                format!(
                    "tool_result for '{id}' does not follow an assistant message with that \
                     tool_use"
                ),
            ));
        }
        if !seen.insert(id) {
            return Err(invalid(
                &answer.path,
                format!("tool_use '{id}' is answered twice"),
            ));
        }
    }
    Ok(())
}
