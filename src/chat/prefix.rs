//! Prefix states for chat requests (`docs/prefix-cache.md`): the state describes the
//! trimmed request the provider receives — its own parts and the kept messages, in
//! conversation order — and recognises each part by the bytes sent, not by the readable
//! rendering the pipeline scores.

use serde_json::Value;

use crate::chat::write::Spans;
use crate::chat::Provider;
use crate::model::ContextItem;
use crate::prefix::hash_bytes;

/// The top-level fields that make up a request's own part (`$`): what the readers count
/// as its framing and tool definitions.
fn own_fields(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::OpenAi => &["tools", "functions", "response_format"],
        Provider::Anthropic => &["tools", "tool_choice"],
    }
}

/// The identity of each engine item, from the JSON path it stands for: a message by the
/// bytes of its element; `system` by its value's text; `$` by the texts of the request's
/// own fields; anything else by the item's content.
pub(crate) fn identities(
    provider: Provider,
    json: &str,
    spans: &Spans,
    paths: &[String],
    items: &[ContextItem],
) -> Vec<u64> {
    let doc: Option<Value> = serde_json::from_str(json).ok();
    let field = |name: &str| -> String {
        doc.as_ref()
            .and_then(|d| d.get(name))
            .map_or_else(String::new, Value::to_string)
    };
    paths
        .iter()
        .zip(items)
        .map(|(path, item)| {
            let element = message_index(path).and_then(|m| spans.elements.get(m));
            match (element, path.as_str()) {
                (Some(span), _) => hash_bytes(&json.as_bytes()[span.start..span.end]),
                (None, "system") => hash_bytes(field("system").as_bytes()),
                (None, "$") => {
                    let text: Vec<String> = own_fields(provider)
                        .iter()
                        .map(|k| format!("{k}={}", field(k)))
                        .collect();
                    hash_bytes(text.join("\n").as_bytes())
                }
                _ => item.content_hash(),
            }
        })
        .collect()
}

/// The index of a `messages[i]` path.
fn message_index(path: &str) -> Option<usize> {
    path.strip_prefix("messages[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Which engine items the trimmed request keeps: every fixed part, and a message's item
/// when the message is kept.
pub(crate) fn kept_items(paths: &[String], keep: &[bool]) -> Vec<bool> {
    paths
        .iter()
        .map(|p| match message_index(p) {
            Some(i) => keep.get(i).copied().unwrap_or(false),
            None => true,
        })
        .collect()
}
