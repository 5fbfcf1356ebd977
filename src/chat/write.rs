//! Writing the trimmed request back: the input text with its `messages` array cut down to
//! the kept messages. Everything else — every other field, the kept messages themselves,
//! number spellings, key order, whitespace — is copied byte for byte from the input.

use std::ops::Range;

use crate::chat::conversation::invalid;
use crate::chat::shorten::Step;
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
    let start = skip_ws(b, 0);
    if b.get(start) != Some(&b'{') {
        return Ok(None);
    }
    let mut found = None;
    let mut seen_messages = false;
    let mut seen_system = false;
    members(b, start, |key, i| {
        let value_end = match key {
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
        match key {
            "messages" => seen_messages = true,
            "system" if seen_system => {
                return Err(invalid("system", "appears twice in the request"))
            }
            "system" => seen_system = true,
            _ => {}
        }
        Ok(value_end)
    })?;
    Ok(found)
}

/// Visits the members of the (valid) object whose `{` is at `start`, in order: `value` gets
/// each key (unescaped) and the index where its value starts, and returns the index after
/// the value.
fn members(
    b: &[u8],
    start: usize,
    mut value: impl FnMut(&str, usize) -> Result<usize>,
) -> Result<()> {
    let mut i = skip_ws(b, start + 1);
    while b.get(i) == Some(&b'"') {
        let key_end = skip_string(b, i);
        let key: String = std::str::from_utf8(&b[i..key_end])
            .ok()
            .and_then(|k| serde_json::from_str(k).ok())
            .unwrap_or_default();
        i = skip_ws(b, key_end);
        i = skip_ws(b, i + 1); // the ':'
        i = skip_ws(b, value(&key, i)?);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    Ok(())
}

/// The span of the value that `steps` lead to from the (valid) JSON value at `start`: an
/// object member by key (the last one when a key is repeated, the one a JSON reader keeps)
/// or an array element by position. `None` when a step finds nothing.
fn value_span(b: &[u8], start: usize, steps: &[Step]) -> Option<Range<usize>> {
    let mut i = start;
    for step in steps {
        i = match (*step, b.get(i)?) {
            (Step::Key(key), b'{') => {
                let mut found = None;
                members(b, i, |k, at| {
                    if k == key {
                        found = Some(at);
                    }
                    Ok(skip_value(b, at))
                })
                .ok()?;
                found?
            }
            (Step::Index(n), b'[') => array_elements(b, i).0.get(n)?.start,
            _ => return None,
        };
    }
    Some(i..skip_value(b, i))
}

/// `element` (a message's JSON text) with the string at each place of `texts` replaced by
/// the given text, every other byte unchanged; `None` when a place is not in it.
pub(crate) fn rewrite(element: &str, texts: &[(Vec<Step>, String)]) -> Option<String> {
    let b = element.as_bytes();
    let mut edits = Vec::with_capacity(texts.len());
    for (steps, text) in texts {
        let span = value_span(b, skip_ws(b, 0), steps)?;
        edits.push((span, serde_json::to_string(text).ok()?));
    }
    edits.sort_by_key(|(span, _)| span.start);
    let mut out = String::with_capacity(element.len());
    let mut at = 0;
    for (span, text) in edits {
        out.push_str(element.get(at..span.start)?);
        out.push_str(&text);
        at = span.end;
    }
    out.push_str(element.get(at..)?);
    Some(out)
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

/// The text with only the elements whose `keep` is true left in the array, each written
/// as its `replace` text when it has one (`replace` is empty or parallel to the elements).
/// The separators of the input are reused, so a pretty-printed request stays
/// pretty-printed.
pub(crate) fn splice(
    text: &str,
    spans: &Spans,
    keep: &[bool],
    replace: &[Option<String>],
) -> String {
    if keep.iter().all(|&k| k) && replace.iter().all(Option::is_none) {
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
        .enumerate()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|((i, e), _)| match replace.get(i) {
            Some(Some(r)) => r.as_str(),
            _ => &text[e.clone()],
        })
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
        assert_eq!(splice(&text, &spans, &[true, true, true], &[]), text);
        assert_eq!(
            splice(&text, &spans, &[true, false, true], &[]),
            "{\"model\":\"m\", \"messages\" : [\n  {\"a\":\"]\\\"}\"},\n  3.50e1\n], \"n\": 12345678901234567890123 }"
        );
        assert_eq!(
            splice(&text, &spans, &[false, false, false], &[]),
            "{\"model\":\"m\", \"messages\" : [], \"n\": 12345678901234567890123 }"
        );
    }

    #[test]
    fn escaped_keys_and_duplicates() {
        let text = r#"{"messag\u0065s":[1,2],"x":{"messages":[]}}"#;
        let spans = messages_spans(text).unwrap().unwrap();
        assert_eq!(spans.elements.len(), 2);
        assert_eq!(
            splice(text, &spans, &[false, true], &[]),
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

    #[test]
    fn rewrites_only_the_strings_named() {
        use Step::{Index, Key};
        // A repeated key: the last copy is the one a reader keeps, so it is the one replaced.
        let element = r#"{ "role":"tool", "content" : "old", "x":[1,{"y":"]"}], "content": ["a", {"type":"text","text":"long \"text\""}] }"#;
        let texts = vec![(
            vec![Key("content"), Index(1), Key("text")],
            "new \"ü\"\n".to_owned(),
        )];
        assert_eq!(
            rewrite(element, &texts).unwrap(),
            r#"{ "role":"tool", "content" : "old", "x":[1,{"y":"]"}], "content": ["a", {"type":"text","text":"new \"ü\"\n"}] }"#
        );
        let two = vec![
            (vec![Key("x"), Index(1), Key("y")], "z".to_owned()),
            (vec![Key("role")], "tool".to_owned()),
        ];
        assert_eq!(
            rewrite(element, &two).unwrap(),
            element.replace(r#""y":"]""#, r#""y":"z""#)
        );
        assert_eq!(
            rewrite(element, &[(vec![Key("none")], String::new())]),
            None
        );
        assert_eq!(
            rewrite(element, &[(vec![Key("x"), Index(2)], String::new())]),
            None
        );
        assert_eq!(rewrite(element, &[(vec![Index(0)], String::new())]), None);
    }

    #[test]
    fn splice_writes_replaced_elements() {
        let text = r#"{"messages": [{"a":1}, {"b":2}, {"c":3}]}"#;
        let spans = messages_spans(text).unwrap().unwrap();
        let replace = [None, Some(r#"{"b":"short"}"#.to_owned()), None];
        assert_eq!(
            splice(text, &spans, &[false, true, true], &replace),
            r#"{"messages": [{"b":"short"}, {"c":3}]}"#
        );
        assert_eq!(
            splice(text, &spans, &[true, true, true], &replace),
            r#"{"messages": [{"a":1}, {"b":"short"}, {"c":3}]}"#
        );
    }
}
