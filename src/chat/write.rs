//! Writing the trimmed request back: the input text with its `messages` array cut down to
//! the kept messages. Everything else — every other field, the kept messages themselves,
//! number spellings, key order, whitespace — is copied byte for byte from the input.

use std::ops::Range;

use crate::chat::conversation::invalid;
use crate::error::Result;

/// Where the top-level `messages` array and its elements lie in the request text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spans {
    /// From `[` to `]` inclusive.
    pub(crate) array: Range<usize>,
    /// Each element, without surrounding whitespace.
    pub(crate) elements: Vec<Range<usize>>,
}

/// Finds the spans in a text that is a valid JSON object (it parsed). A request naming
/// `messages` or `system` twice is refused: readers disagree on which copy counts.
pub(crate) fn messages_spans(text: &str) -> Result<Option<Spans>> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Ok(None);
    }
    i = skip_ws(b, i + 1);
    let mut found = None;
    let mut seen_messages = false;
    let mut seen_system = false;
    while b.get(i) == Some(&b'"') {
        let key_end = skip_string(b, i);
        let key: String = serde_json::from_str(&text[i..key_end]).unwrap_or_default();
        i = skip_ws(b, key_end);
        i = skip_ws(b, i + 1); // the ':'
        let value_end = match key.as_str() {
            "messages" if seen_messages => {
                return Err(invalid("messages", "appears twice in the request"))
            }
            // The array's elements are found in the same pass as its end.
            "messages" if b[i] == b'[' => {
                let (elements, end) = array_elements(b, i);
                found = Some(Spans {
                    array: i..end,
                    elements,
                });
                end
            }
            _ => skip_value(b, i),
        };
        match key.as_str() {
            "messages" => seen_messages = true,
            "system" if seen_system => {
                return Err(invalid("system", "appears twice in the request"))
            }
            "system" => seen_system = true,
            _ => {}
        }
        i = skip_ws(b, value_end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    Ok(found)
}

/// The elements of the (valid) array whose `[` is at `start`, and the index after its `]`.
fn array_elements(b: &[u8], start: usize) -> (Vec<Range<usize>>, usize) {
    let mut elements = Vec::new();
    let mut i = skip_ws(b, start + 1);
    while b[i] != b']' {
        let end = skip_value(b, i);
        elements.push(i..end);
        i = skip_ws(b, end);
        if b[i] == b',' {
            i = skip_ws(b, i + 1);
        }
    }
    (elements, i + 1)
}

/// The text with only the elements whose `keep` is true left in the array. The separators
/// of the input are reused, so a pretty-printed request stays pretty-printed.
pub(crate) fn splice(text: &str, spans: &Spans, keep: &[bool]) -> String {
    if keep.iter().all(|&k| k) {
        return text.to_owned();
    }
    let els = &spans.elements;
    let (open, close) = (spans.array.start + 1, spans.array.end - 1);
    let lead = els.first().map_or("", |e| &text[open..e.start]);
    let trail = els.last().map_or("", |e| &text[e.end..close]);
    let sep = if els.len() > 1 {
        &text[els[0].end..els[1].start]
    } else {
        ","
    };
    let kept: Vec<&str> = els
        .iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(e, _)| &text[e.clone()])
        .collect();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..open]);
    if !kept.is_empty() {
        out.push_str(lead);
        out.push_str(&kept.join(sep));
        out.push_str(trail);
    }
    out.push_str(&text[close..]);
    out
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `b[i]` is the opening quote; returns the index after the closing one.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while let Some(offset) = b[i.min(b.len())..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\')
    {
        i += offset;
        if b[i] == b'"' {
            return i + 1;
        }
        i += 2; // a backslash and the character it escapes
    }
    b.len()
}

/// Returns the index after the value starting at `i`.
fn skip_value(b: &[u8], mut i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = skip_string(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            i
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_element_and_keeps_the_rest_byte_for_byte() {
        let text = "{\"model\":\"m\", \"messages\" : [\n  {\"a\":\"]\\\"}\"},\n  [1,{\"b\":[]}],\n  3.50e1\n], \"n\": 1e400 }";
        serde_json::from_str::<serde_json::Value>(text).unwrap_err(); // 1e400 overflows f64...
        let text = text.replace("1e400", "12345678901234567890123");
        let spans = messages_spans(&text).unwrap().unwrap();
        let parts: Vec<&str> = spans.elements.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(parts, ["{\"a\":\"]\\\"}\"}", "[1,{\"b\":[]}]", "3.50e1"]);
        assert_eq!(splice(&text, &spans, &[true, true, true]), text);
        assert_eq!(
            splice(&text, &spans, &[true, false, true]),
            "{\"model\":\"m\", \"messages\" : [\n  {\"a\":\"]\\\"}\"},\n  3.50e1\n], \"n\": 12345678901234567890123 }"
        );
        assert_eq!(
            splice(&text, &spans, &[false, false, false]),
            "{\"model\":\"m\", \"messages\" : [], \"n\": 12345678901234567890123 }"
        );
    }

    #[test]
    fn escaped_keys_and_duplicates() {
        let text = r#"{"messag\u0065s":[1,2],"x":{"messages":[]}}"#;
        let spans = messages_spans(text).unwrap().unwrap();
        assert_eq!(spans.elements.len(), 2);
        assert_eq!(
            splice(text, &spans, &[false, true]),
            r#"{"messag\u0065s":[2],"x":{"messages":[]}}"#
        );
        let twice = r#"{"messages":[1],"messages":[2]}"#;
        assert!(messages_spans(twice)
            .unwrap_err()
            .to_string()
            .contains("messages: appears twice"));
        // The first copy need not be an array to count.
        let twice = r#"{"messages":{"a":[1]},"messages":[2]}"#;
        assert!(messages_spans(twice)
            .unwrap_err()
            .to_string()
            .contains("messages: appears twice"));
        let system = r#"{"system":"a","messages":[1],"system":"b"}"#;
        assert!(messages_spans(system)
            .unwrap_err()
            .to_string()
            .contains("system: appears twice"));
        assert_eq!(messages_spans("[1]").unwrap(), None);
        assert_eq!(messages_spans(r#"{"messages":{}}"#).unwrap(), None);
        assert_eq!(messages_spans(r#"{}"#).unwrap(), None);
    }
}
