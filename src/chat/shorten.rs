//! Shortening long tool outputs (`ChatOptions::shorten`, docs/chat.md "Shortening tool
//! outputs"): each text a tool result carries that is longer than the head and tail is cut
//! to its head and tail with a marker between, and the message with its texts cut becomes
//! a cheaper form of the message's item (the variant extension, docs/variants.md). When the
//! pipeline places that form, the message is written back with only those strings
//! replaced.
//!
//! The texts cut are the results themselves: an OpenAI `tool` or `function` message's
//! `content` (a string, or the `text` of its text parts); an Anthropic `tool_result`
//! block's `content` (a string, or the `text` of its text blocks). Everything else — the
//! call ids, a user's text after the results, images — stays as it is.

use serde_json::Value;

use crate::chat::conversation::{Kind, Message};
use crate::chat::count::Counter;
use crate::chat::Provider;
use crate::model::{HeadTail, HeadTailCut};

/// One step from a message object to a string inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The member of an object with this key (the last one when the key is repeated, as
    /// the readers see it).
    Key(&'static str),
    /// The element of an array at this position.
    Index(usize),
}

/// The cheaper form of a tool output message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Short {
    /// Tokens of the message with its long texts cut, framing included: counted exactly as
    /// the reader would count the rewritten message.
    pub(crate) tokens: i64,
    /// The form's quality, in (0, 1): the head-and-tail option's fixed quality, or the
    /// share of the message's tokens the form keeps.
    pub(crate) quality: f64,
    /// Each cut text: where it is in the message, and what replaces it.
    pub(crate) texts: Vec<(Vec<Step>, String)>,
}

impl Short {
    /// A readable rendering of the form, for the item's variant content.
    pub(crate) fn rendering(&self) -> String {
        let texts: Vec<&str> = self.texts.iter().map(|(_, t)| t.as_str()).collect();
        texts.join("\n")
    }
}

/// The cheaper form of message `value` (already read into `message`), or `None` when it is
/// not a tool output, none of its result texts is longer than the head and tail, or
/// cutting them would not save a token.
pub(crate) fn short_form(
    provider: Provider,
    value: &Value,
    message: &Message,
    counter: &Counter<'_>,
    spec: &HeadTail,
) -> Option<Short> {
    if message.kind != Kind::ToolOutput {
        return None;
    }
    let mut tokens = message.tokens;
    let mut texts = Vec::new();
    for (steps, text) in result_texts(provider, value) {
        let Some(cut) = cut(counter, spec, text) else {
            continue;
        };
        let form = spec.form_text(&cut);
        // The cut counted the whole text with the same counter.
        let original = i64::try_from(cut.total_tokens).unwrap_or(i64::MAX);
        tokens = tokens
            .saturating_sub(original)
            .saturating_add(counter.text(&form));
        texts.push((steps, form));
    }
    if texts.is_empty() || tokens >= message.tokens || tokens <= 0 {
        return None;
    }
    let quality = spec
        .quality()
        .unwrap_or(tokens as f64 / message.tokens as f64);
    Some(Short {
        tokens,
        quality,
        texts,
    })
}

/// The result texts of a message (see the module documentation), with their places.
fn result_texts(provider: Provider, message: &Value) -> Vec<(Vec<Step>, &str)> {
    use Step::{Index, Key};
    let mut out = Vec::new();
    let content = message.get("content");
    match provider {
        Provider::OpenAi => text_or_parts(content, vec![Key("content")], &mut out),
        Provider::Anthropic => {
            for (j, block) in content
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                    let at = vec![Key("content"), Index(j), Key("content")];
                    text_or_parts(block.get("content"), at, &mut out);
                }
            }
        }
    }
    out
}

/// A string at `at`, or the `text` of each text part of an array at `at`.
fn text_or_parts<'v>(value: Option<&'v Value>, at: Vec<Step>, out: &mut Vec<(Vec<Step>, &'v str)>) {
    match value {
        Some(Value::String(s)) => out.push((at, s)),
        Some(Value::Array(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                let text = part.get("text").and_then(Value::as_str);
                if let (Some("text"), Some(text)) = (part.get("type").and_then(Value::as_str), text)
                {
                    let mut steps = at.clone();
                    steps.extend([Step::Index(k), Step::Key("text")]);
                    out.push((steps, text));
                }
            }
        }
        _ => {}
    }
}

/// Where to cut `text`, or `None` when it has no more than the head and tail tokens or
/// nothing of it can be kept. With a built-in encoding this is [`HeadTail::cut`]; with any
/// other counter, the head is the longest prefix ending on a character boundary that counts
/// at most the head tokens, and the tail the longest suffix after it, starting on a
/// character boundary, that counts at most the tail tokens (both found by binary search,
/// which assumes a longer text never counts fewer tokens).
fn cut<'t>(counter: &Counter<'_>, spec: &HeadTail, text: &'t str) -> Option<HeadTailCut<'t>> {
    if let Some(encoding) = counter.count.as_encoding() {
        return spec.cut(encoding, text);
    }
    let count = |t: &str| counter.count.count_tokens(t);
    let total = count(text);
    if total <= spec.head_tokens().saturating_add(spec.tail_tokens()) {
        return None;
    }
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let ceil = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i += 1;
        }
        i
    };
    // The largest i whose floor prefix fits the head.
    let (mut lo, mut hi) = (0, text.len());
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if count(&text[..floor(mid)]) <= spec.head_tokens() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let head = &text[..floor(lo)];
    // The smallest i from the head's end whose ceil suffix fits the tail.
    let (mut lo, mut hi) = (head.len(), text.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count(&text[ceil(mid)..]) <= spec.tail_tokens() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let tail = &text[ceil(lo)..];
    let kept = count(head).saturating_add(count(tail));
    (kept > 0).then(|| HeadTailCut {
        head,
        tail,
        kept_tokens: kept,
        omitted_tokens: total.saturating_sub(kept),
        total_tokens: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::count::{estimate_tokens, Overheads};

    fn words() -> impl Fn(&str) -> usize {
        |t: &str| t.split_whitespace().count()
    }

    #[test]
    fn a_counter_without_an_encoding_cuts_on_its_own_counts() {
        let count = words();
        let counter = Counter {
            count: &count,
            overheads: Overheads::OPENAI,
        };
        let text: String = (1..=50).map(|i| format!("w{i} ")).collect();
        let spec = HeadTail::new(3, 2).unwrap();
        let c = cut(&counter, &spec, &text).unwrap();
        assert_eq!(
            c.head.split_whitespace().collect::<Vec<_>>(),
            ["w1", "w2", "w3"]
        );
        assert_eq!(
            c.tail.split_whitespace().collect::<Vec<_>>(),
            ["w49", "w50"]
        );
        assert_eq!(
            (c.kept_tokens, c.omitted_tokens, c.total_tokens),
            (5, 45, 50)
        );
        // No more than head + tail: nothing to cut.
        assert!(cut(&counter, &spec, "a b c d e").is_none());
    }

    #[test]
    fn the_generic_cut_keeps_characters_whole() {
        let counter = Counter {
            count: &estimate_tokens,
            overheads: Overheads::OPENAI,
        };
        let text = "日本語のテキスト".repeat(20);
        let spec = HeadTail::new(4, 3).unwrap();
        let c = cut(&counter, &spec, &text).unwrap();
        assert_eq!(c.head, "日本語の");
        assert_eq!(c.tail, "キスト");
        assert_eq!(c.kept_tokens, 7);
        assert_eq!(c.total_tokens, 160);
    }

    #[test]
    fn only_result_texts_are_found() {
        let openai: Value = serde_json::json!({"role": "tool", "tool_call_id": "c1",
            "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]});
        let found: Vec<_> = result_texts(Provider::OpenAi, &openai);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[1].0,
            [Step::Key("content"), Step::Index(2), Step::Key("text")]
        );
        assert_eq!(found[1].1, "b");
        let anthropic: Value = serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "r2"}]},
            {"type": "text", "text": "not a result"}]});
        let found: Vec<_> = result_texts(Provider::Anthropic, &anthropic)
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(found, ["r1", "r2"]);
    }
}
