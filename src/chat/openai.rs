//! Reading an OpenAI Chat Completions request body into a [`Conversation`].
//!
//! Roles `system` and `developer` become pinned system prompts, `user` and `assistant`
//! messages, `tool` (and the legacy `function`) tool outputs. An assistant message with
//! `tool_calls` and the `tool` messages answering it, which must follow it directly, form
//! one unit; so do a legacy `function_call` and a `function` message right after it.
//! Every rule enforced here is listed, with its source, in `docs/chat.md`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::chat::conversation::{
    invalid, type_name, CallRef, Conversation, Fixed, Kind, Message, Role,
};
use crate::chat::count::{Counter, Tally};
use crate::chat::{request_messages, Provider};
use crate::error::Result;

/// Tokens of a low-detail image (OpenAI's vision guide: a flat 85).
const LOW_DETAIL_IMAGE: i64 = 85;

/// Reads and validates the request.
pub(crate) fn read(doc: &Value, counter: &Counter<'_>) -> Result<Conversation> {
    let (object, values) = request_messages(doc)?;
    let mut ids = HashMap::new();
    let mut messages = Vec::with_capacity(values.len());
    let mut function_calls = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let (message, function_call) = read_message(i, value, counter, &mut ids)?;
        messages.push(message);
        function_calls.push(function_call);
    }
    let units = units(&messages, values, &function_calls)?;
    let mut fixed = Tally(counter.overheads.per_request);
    let mut defined = Vec::new();
    for key in ["tools", "functions", "response_format"] {
        if let Some(v) = object.get(key).filter(|v| !v.is_null()) {
            fixed.add(counter.json(v));
            defined.push(key);
        }
    }
    let content = if defined.is_empty() {
        "reply priming".to_owned()
    } else {
        format!("reply priming, {}", defined.join(", "))
    };
    Ok(Conversation {
        provider: Provider::OpenAi,
        messages,
        units,
        fixed: vec![Fixed {
            path: "$".into(),
            content,
            tokens: fixed.0,
        }],
    })
}

/// One message; the flag says whether it carries a legacy `function_call`.
fn read_message(
    i: usize,
    value: &Value,
    counter: &Counter<'_>,
    ids: &mut HashMap<String, String>,
) -> Result<(Message, bool)> {
    let path = Conversation::path(i);
    let Value::Object(map) = value else {
        return Err(invalid(
            &path,
            format!("must be an object, found {}", type_name(value)),
        ));
    };
    let role_name = string(map, "role", &path)?
        .ok_or_else(|| invalid(format!("{path}.role"), "is required"))?;
    let (role, kind) = match role_name {
        "system" => (Role::System, Kind::SystemPrompt),
        "developer" => (Role::Developer, Kind::SystemPrompt),
        "user" => (Role::User, Kind::Message),
        "assistant" => (Role::Assistant, Kind::Message),
        "tool" => (Role::Tool, Kind::ToolOutput),
        "function" => (Role::Function, Kind::ToolOutput),
        other => {
            return Err(invalid(
                format!("{path}.role"),
                format!(
                    "unknown role '{other}' (expected system, developer, user, assistant, tool \
                     or function)"
                ),
            ))
        }
    };
    let mut m = Message::new(role, kind);
    let mut tokens = Tally(counter.overheads.per_message);
    tokens.add(counter.text(role_name));
    let mut text = Vec::new();
    let mut function_call = false;
    for (key, v) in map {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "role" => {}
            "content" => content(role, v, &at, counter, &mut tokens, &mut text)?,
            "name" => {
                let name = v.as_str().ok_or_else(|| {
                    invalid(&at, format!("must be a string, found {}", type_name(v)))
                })?;
                tokens.add(counter.text(name));
                tokens.add(counter.overheads.per_name);
            }
            "tool_calls" if role == Role::Assistant && !v.is_null() => {
                tool_calls(v, &at, counter, ids, &mut m, &mut tokens, &mut text)?
            }
            "tool_call_id" if role == Role::Tool => {
                let id = v.as_str().ok_or_else(|| {
                    invalid(&at, format!("must be a string, found {}", type_name(v)))
                })?;
                tokens.add(counter.text(id));
                text.insert(0, format!("← [{id}]"));
                m.answers.push(CallRef {
                    id: id.to_owned(),
                    path: at.clone(),
                });
            }
            "function_call" if role == Role::Assistant && !v.is_null() => {
                let (name, arguments) = function(v, &at)?;
                tokens.add(counter.text(name));
                tokens.add(counter.text(arguments));
                text.push(format!("→ {name}({arguments})"));
                function_call = true;
            }
            // Anything else (refusal, audio, fields newer than this reader) is kept as it is
            // and counted as its JSON text.
            _ => tokens.add(counter.json(v)),
        }
    }
    let content_optional = matches!(role, Role::Assistant | Role::Function);
    if !content_optional && map.get("content").is_none_or(Value::is_null) {
        return Err(invalid(format!("{path}.content"), "is required"));
    }
    if role == Role::Tool && m.answers.is_empty() {
        return Err(invalid(format!("{path}.tool_call_id"), "is required"));
    }
    m.tokens = tokens.0;
    m.text = text.join("\n");
    Ok((m, function_call))
}

/// A `content` value: a string, an array of content parts, or null (assistant, function).
fn content(
    role: Role,
    v: &Value,
    at: &str,
    counter: &Counter<'_>,
    tokens: &mut Tally,
    text: &mut Vec<String>,
) -> Result<()> {
    match v {
        Value::String(s) => {
            tokens.add(counter.text(s));
            text.push(s.clone());
        }
        Value::Null if matches!(role, Role::Assistant | Role::Function) => {}
        Value::Array(parts) => {
            for (j, part) in parts.iter().enumerate() {
                let at = format!("{at}[{j}]");
                let (kind, fields) = part_type(part, &at)?;
                match kind {
                    "text" | "refusal" => {
                        let s = string(fields, kind, &at)?
                            .ok_or_else(|| invalid(format!("{at}.{kind}"), "is required"))?;
                        tokens.add(counter.text(s));
                        text.push(s.to_owned());
                    }
                    "image_url" => {
                        let low = part.pointer("/image_url/detail").and_then(Value::as_str)
                            == Some("low");
                        tokens.add(if low {
                            LOW_DETAIL_IMAGE
                        } else {
                            counter.overheads.media
                        });
                        text.push("[image]".into());
                    }
                    "input_audio" | "file" => {
                        tokens.add(counter.overheads.media);
                        text.push(format!("[{kind}]"));
                    }
                    // A tool call or result in a content part (Anthropic's blocks, or a type
                    // newer than this reader that answers a call): dropping its message could
                    // separate it from its partner, so it is refused, never passed through.
                    other if is_tool_part(other, fields) => {
                        return Err(invalid(
                            format!("{at}.type"),
                            format!(
                                "content part '{other}' carries a tool call or result, which an \
                                 OpenAI request holds in tool_calls and tool messages (an \
                                 Anthropic request? read it with the anthropic format)"
                            ),
                        ));
                    }
                    // A part type newer than this reader: kept, counted as its JSON text.
                    other => {
                        tokens.add(counter.json(part));
                        text.push(format!("[{other}]"));
                    }
                }
            }
        }
        other => {
            return Err(invalid(
                at,
                format!(
                    "must be a string or an array of content parts, found {}",
                    type_name(other)
                ),
            ))
        }
    }
    Ok(())
}

/// True for a content part that pairs with a tool call or result: Anthropic's tool blocks,
/// or any part naming a call by `tool_use_id` or `tool_call_id`.
fn is_tool_part(kind: &str, fields: &Map<String, Value>) -> bool {
    matches!(
        kind,
        "tool_use" | "tool_result" | "server_tool_use" | "mcp_tool_use" | "mcp_tool_result"
    ) || ["tool_use_id", "tool_call_id"]
        .iter()
        .any(|k| fields.get(*k).is_some_and(Value::is_string))
}

/// The `type` of a content part and the part's fields.
pub(crate) fn part_type<'v>(
    part: &'v Value,
    at: &str,
) -> Result<(&'v str, &'v Map<String, Value>)> {
    let Value::Object(fields) = part else {
        return Err(invalid(
            at,
            format!("must be an object, found {}", type_name(part)),
        ));
    };
    let kind =
        string(fields, "type", at)?.ok_or_else(|| invalid(format!("{at}.type"), "is required"))?;
    Ok((kind, fields))
}

/// `tool_calls` of an assistant message: ids recorded (unique in the request), names and
/// arguments counted.
fn tool_calls(
    v: &Value,
    at: &str,
    counter: &Counter<'_>,
    ids: &mut HashMap<String, String>,
    m: &mut Message,
    tokens: &mut Tally,
    text: &mut Vec<String>,
) -> Result<()> {
    let Value::Array(calls) = v else {
        return Err(invalid(
            at,
            format!("must be an array, found {}", type_name(v)),
        ));
    };
    for (k, call) in calls.iter().enumerate() {
        let at = format!("{at}[{k}]");
        let Value::Object(fields) = call else {
            return Err(invalid(
                &at,
                format!("must be an object, found {}", type_name(call)),
            ));
        };
        let id = string(fields, "id", &at)?
            .filter(|id| !id.is_empty())
            .ok_or_else(|| invalid(format!("{at}.id"), "is required (a non-empty string)"))?;
        if let Some(first) = ids.insert(id.to_owned(), format!("{at}.id")) {
            return Err(invalid(
                format!("{at}.id"),
                format!("tool call id '{id}' is used twice (first at {first})"),
            ));
        }
        tokens.add(counter.text(id));
        let mut shown = format!("→ [{id}]");
        for (key, value) in fields {
            match key.as_str() {
                "id" | "type" => {}
                "function" => {
                    let (name, arguments) = function(value, &format!("{at}.function"))?;
                    tokens.add(counter.text(name));
                    tokens.add(counter.text(arguments));
                    shown = format!("→ {name}({arguments}) [{id}]");
                }
                _ => tokens.add(counter.json(value)),
            }
        }
        text.push(shown);
        m.calls.push(CallRef {
            id: id.to_owned(),
            path: format!("{at}.id"),
        });
    }
    Ok(())
}

/// `{name, arguments}` of a function call (either may be absent).
fn function<'v>(v: &'v Value, at: &str) -> Result<(&'v str, &'v str)> {
    let Value::Object(fields) = v else {
        return Err(invalid(
            at,
            format!("must be an object, found {}", type_name(v)),
        ));
    };
    Ok((
        string(fields, "name", at)?.unwrap_or(""),
        string(fields, "arguments", at)?.unwrap_or(""),
    ))
}

/// The string under `key`; absent or null is `None`, another type an error.
pub(crate) fn string<'v>(
    fields: &'v Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<&'v str>> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(
            format!("{at}.{key}"),
            format!("must be a string, found {}", type_name(other)),
        )),
    }
}

/// Pairs calls with their answers and cuts the messages into units.
fn units(
    messages: &[Message],
    values: &[Value],
    function_calls: &[bool],
) -> Result<Vec<std::ops::Range<usize>>> {
    let mut units = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if !m.calls.is_empty() {
            let mut pending: HashSet<&str> = m.calls.iter().map(|c| c.id.as_str()).collect();
            let mut j = i + 1;
            while j < messages.len() && messages[j].role == Role::Tool {
                let answer = &messages[j].answers[0];
                let id = answer.id.as_str();
                if !pending.remove(id) {
                    return Err(invalid(
                        &answer.path,
                        format!(
                            "tool message answers '{id}', which is not an unanswered tool call \
                             of {}",
                            Conversation::path(i)
                        ),
                    ));
                }
                j += 1;
            }
            if let Some(call) = m.calls.iter().find(|c| pending.contains(c.id.as_str())) {
                return Err(invalid(
                    &call.path,
                    format!(
                        "tool call '{}' has no tool message answering it (the tool messages \
                         must follow the assistant message directly)",
                        call.id
                    ),
                ));
            }
            units.push(i..j);
            i = j;
        } else if m.role == Role::Tool {
            return Err(invalid(
                &m.answers[0].path,
                format!(
                    "tool message answers '{}', but the message before it is neither an \
                     assistant message with that tool call nor a tool message answering one",
                    m.answers[0].id
                ),
            ));
        } else if function_calls[i]
            && messages
                .get(i + 1)
                .is_some_and(|n| n.role == Role::Function)
        {
            units.push(i..i + 2);
            i += 2;
        } else {
            units.push(i..i + 1);
            i += 1;
        }
    }
    debug_assert_eq!(units.last().map(|u| u.end), Some(values.len()));
    Ok(units)
}
