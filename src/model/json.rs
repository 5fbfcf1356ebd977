//! Reading items from JSON (spec 01 §1.2): a JSON array of item objects, or JSON Lines
//! (one object per line; blank lines are skipped).
//!
//! Keys are snake_case (`future_relevance_hint`, `original_tokens`); the .NET camelCase
//! spellings `futureRelevanceHint` and `originalTokens` are accepted too. `content` and
//! `tokens` are required ([`read_items_counted`] counts the items without `tokens` with an
//! encoding instead); unknown keys are rejected. `timestamp` is an RFC 3339 string or
//! an integer of nanoseconds since the Unix epoch. `group` (an extension, `docs/groups.md`)
//! is a non-empty string; items with equal keys form a group. `variants` (an extension,
//! `docs/variants.md`) is an array of `{"content", "tokens", "quality"}` objects, whose
//! `tokens` may be left out when the reader is given an encoding to count them. Errors name
//! the line and the field (`variants[1].quality`).

use std::fmt;

use serde_json::{Map, Value};

use crate::model::variant::{variant_problem, Variant};
use crate::model::{
    parse_rfc3339, ContextItem, ContextItemBuilder, ContextKind, ContextSource, HeadTail,
};
use crate::tokenizer::Encoding;

/// Why an item could not be read: where (1-based line, item ordinal, field) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemReadError {
    /// 1-based line where the item (or the syntax error) starts.
    pub line: usize,
    /// 0-based ordinal of the item in the input, when known.
    pub item: Option<usize>,
    /// The offending field, when the error concerns one.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ItemReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field '{field}'")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ItemReadError {}

/// Reads items from a JSON array or from JSON Lines; the first error stops the read.
/// `tokens` is required.
pub fn read_items(text: &str) -> Result<Vec<ContextItem>, ItemReadError> {
    read_items_with(text, &ItemReadOptions::default())
}

/// Reads items like [`read_items`], except that an item without `tokens` (absent or
/// `null`) is counted by the library: its tokens are `encoding`'s count of its content
/// ([`ContextItem::builder_counted`]). An item with `tokens` keeps the number it gives; so
/// does a variant, and a variant without `tokens` is counted the same way.
pub fn read_items_counted(
    text: &str,
    encoding: &Encoding,
) -> Result<Vec<ContextItem>, ItemReadError> {
    let options = ItemReadOptions {
        encoding: Some(encoding),
        ..ItemReadOptions::default()
    };
    read_items_with(text, &options)
}

/// How [`read_items_with`] counts tokens left out and treats variants (`docs/variants.md`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ItemReadOptions<'a> {
    /// Counts the tokens of an item or a variant that leaves `tokens` out (as
    /// [`read_items_counted`] does); without it, such an item or variant is an error.
    pub encoding: Option<&'a Encoding>,
    /// Adds a head-and-tail form to every item long enough for one, with this encoding
    /// ([`ContextItemBuilder::head_tail`]), after the item's own variants.
    pub head_tail: Option<(&'a Encoding, &'a HeadTail)>,
}

/// [`read_items`] with options: counting with an encoding, generated variants.
pub fn read_items_with(
    text: &str,
    options: &ItemReadOptions<'_>,
) -> Result<Vec<ContextItem>, ItemReadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('[') {
        read_array(text, options)
    } else {
        read_lines(text, options)
    }
}

fn read_lines(
    text: &str,
    options: &ItemReadOptions<'_>,
) -> Result<Vec<ContextItem>, ItemReadError> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = Location {
            line: n + 1,
            item: items.len(),
        };
        let value: Value =
            serde_json::from_str(line).map_err(|e| at.error(None, malformed_json(&e)))?;
        items.push(item_from_value(&value, &at, options)?);
    }
    Ok(items)
}

fn read_array(
    text: &str,
    options: &ItemReadOptions<'_>,
) -> Result<Vec<ContextItem>, ItemReadError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ItemReadError {
        line: e.line(),
        item: None,
        field: None,
        message: malformed_json(&e),
    })?;
    let Value::Array(elements) = value else {
        unreachable!("text starting with '[' parsed as a non-array");
    };
    let lines = array_element_lines(text);
    elements
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = Location {
                line: lines.get(i).copied().unwrap_or(1),
                item: i,
            };
            item_from_value(v, &at, options)
        })
        .collect()
}

/// "malformed JSON at column C: what": serde_json's message without its own "at line L
/// column C" suffix, whose line counts from the start of the text it was given (one line of
/// JSON Lines), so that an error names one line number only — the reader's.
fn malformed_json(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let what = full.strip_suffix(&suffix).unwrap_or(&full);
    if e.line() == 0 {
        format!("malformed JSON: {what}")
    } else {
        format!("malformed JSON at column {}: {what}", e.column())
    }
}

/// The 1-based line on which each top-level element of a (valid) JSON array starts.
fn array_element_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let (mut line, mut depth, mut in_string, mut escaped, mut expect_element) =
        (1, 0, false, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if expect_element && depth == 1 && !c.is_whitespace() && c != ']' {
            lines.push(line);
            expect_element = false;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expect_element = true;
                }
            }
            ']' | '}' => depth -= 1,
            ',' if depth == 1 => expect_element = true,
            _ => {}
        }
    }
    lines
}

struct Location {
    line: usize,
    item: usize,
}

impl Location {
    fn error(&self, field: Option<&str>, message: String) -> ItemReadError {
        ItemReadError {
            line: self.line,
            item: Some(self.item),
            field: field.map(str::to_owned),
            message,
        }
    }
}

fn item_from_value(
    value: &Value,
    at: &Location,
    options: &ItemReadOptions<'_>,
) -> Result<ContextItem, ItemReadError> {
    let Value::Object(map) = value else {
        return Err(at.error(
            None,
            format!("expected an item object, found {}", type_name(value)),
        ));
    };
    let fields = ItemFields { map, at };
    for key in map.keys() {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            return Err(at.error(Some(key), "unknown field".into()));
        }
    }
    let content = fields.required("content", Value::as_str, "a string")?;
    let tokens = fields.optional(&["tokens"], Value::as_i64, "an integer (64-bit)")?;
    let mut b = match (tokens, options.encoding) {
        (Some(tokens), _) => ContextItem::builder(content, tokens),
        (None, Some(encoding)) => ContextItem::builder_counted(content, encoding),
        (None, None) => return Err(at.error(Some("tokens"), "is required".into())),
    };
    if let Some(kind) = fields.optional(&["kind"], Value::as_str, "a string")? {
        b = b.kind(ContextKind::new(kind).map_err(|e| at.error(Some("kind"), e.to_string()))?);
    }
    if let Some(source) = fields.optional(&["source"], Value::as_str, "a string")? {
        b = b.source(
            ContextSource::new(source).map_err(|e| at.error(Some("source"), e.to_string()))?,
        );
    }
    if let Some(p) = fields.optional(&["priority"], Value::as_i64, "an integer (64-bit)")? {
        b = b.priority(p);
    }
    if let Some(tags) = fields.optional(&["tags"], Value::as_array, "an array of strings")? {
        let tags: Option<Vec<&str>> = tags.iter().map(Value::as_str).collect();
        b = b.tags(
            tags.ok_or_else(|| at.error(Some("tags"), "must be an array of strings".into()))?,
        );
    }
    if let Some(meta) = fields.optional(&["metadata"], Value::as_object, "an object of strings")? {
        for (k, v) in meta {
            let v = v.as_str().ok_or_else(|| {
                at.error(
                    Some(&format!("metadata.{k}")),
                    format!("must be a string, found {}", type_name(v)),
                )
            })?;
            b = b.metadata_entry(k, v);
        }
    }
    if let Some(ts) = fields.optional(&["timestamp"], Some, "")? {
        b = b.timestamp(timestamp_value(ts).ok_or_else(|| {
            at.error(
                Some("timestamp"),
                "must be an RFC 3339 date-time string or integer nanoseconds".into(),
            )
        })?);
    }
    let hint_keys = ["future_relevance_hint", "futureRelevanceHint"];
    if let Some(h) = fields.optional(&hint_keys, Value::as_f64, "a number")? {
        b = b.future_relevance_hint(h);
    }
    if let Some(p) = fields.optional(&["pinned"], Value::as_bool, "a boolean")? {
        b = b.pinned(p);
    }
    let original_keys = ["original_tokens", "originalTokens"];
    if let Some(o) = fields.optional(&original_keys, Value::as_i64, "an integer (64-bit)")? {
        b = b.original_tokens(o);
    }
    if let Some(key) = fields.optional(&["group"], Value::as_str, "a string")? {
        if key.is_empty() {
            return Err(at.error(Some("group"), "must be a non-empty string".into()));
        }
        b = b.group(key);
    }
    if let Some(variants) = fields.optional(&["variants"], Value::as_array, "an array")? {
        b = read_variants(b, variants, at, options.encoding)?;
    }
    if let Some((encoding, spec)) = options.head_tail {
        b = b.head_tail(encoding, spec);
    }
    b.build()
        .map_err(|e| at.error(Some("content"), e.to_string()))
}

/// Adds the variants of the JSON array `variants` to `b`, checking each field.
fn read_variants(
    mut b: ContextItemBuilder,
    variants: &[Value],
    at: &Location,
    encoding: Option<&Encoding>,
) -> Result<ContextItemBuilder, ItemReadError> {
    for (i, value) in variants.iter().enumerate() {
        let path = |field: &str| format!("variants[{i}]{field}");
        let Value::Object(map) = value else {
            return Err(at.error(
                Some(&path("")),
                format!("must be an object, found {}", type_name(value)),
            ));
        };
        if let Some(key) = map.keys().find(|k| !VARIANT_KEYS.contains(&k.as_str())) {
            return Err(at.error(Some(&path(&format!(".{key}"))), "unknown field".into()));
        }
        let get = |key: &str| map.get(key).filter(|v| !v.is_null());
        let wrong = |key: &str, v: &Value, expected: &str| {
            at.error(
                Some(&path(&format!(".{key}"))),
                format!("must be {expected}, found {}", type_name(v)),
            )
        };
        let content = match get("content") {
            None => return Err(at.error(Some(&path(".content")), "is required".into())),
            Some(v) => v.as_str().ok_or_else(|| wrong("content", v, "a string"))?,
        };
        let tokens = match (get("tokens"), encoding) {
            (Some(v), _) => v
                .as_i64()
                .ok_or_else(|| wrong("tokens", v, "an integer (64-bit)"))?,
            (None, Some(encoding)) => i64::try_from(encoding.count(content)).unwrap_or(i64::MAX),
            (None, None) => {
                return Err(at.error(
                    Some(&path(".tokens")),
                    "is required (or give an encoding to count it)".into(),
                ))
            }
        };
        let quality = match get("quality") {
            None => return Err(at.error(Some(&path(".quality")), "is required".into())),
            Some(v) => v.as_f64().ok_or_else(|| wrong("quality", v, "a number"))?,
        };
        let variant = Variant::unchecked(content.to_owned(), tokens, quality);
        if let Some((field, problem)) = variant_problem(&variant) {
            return Err(at.error(Some(&path(&format!(".{field}"))), problem));
        }
        b = b.variant(content, tokens, quality);
    }
    Ok(b)
}

const VARIANT_KEYS: [&str; 3] = ["content", "tokens", "quality"];

const KNOWN_KEYS: [&str; 15] = [
    "content",
    "tokens",
    "kind",
    "source",
    "priority",
    "tags",
    "metadata",
    "timestamp",
    "future_relevance_hint",
    "futureRelevanceHint",
    "pinned",
    "original_tokens",
    "originalTokens",
    "group",
    "variants",
];

struct ItemFields<'a> {
    map: &'a Map<String, Value>,
    at: &'a Location,
}

impl<'a> ItemFields<'a> {
    fn required<T>(
        &self,
        key: &str,
        get: impl Fn(&'a Value) -> Option<T>,
        expected: &str,
    ) -> Result<T, ItemReadError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Err(self.at.error(Some(key), "is required".into())),
            Some(v) => get(v).ok_or_else(|| self.wrong_type(key, v, expected)),
        }
    }

    /// The value under the first present key of `keys`; `null` counts as absent.
    fn optional<T>(
        &self,
        keys: &[&str],
        get: impl Fn(&'a Value) -> Option<T>,
        expected: &str,
    ) -> Result<Option<T>, ItemReadError> {
        for key in keys {
            match self.map.get(*key) {
                None | Some(Value::Null) => continue,
                Some(v) => {
                    return get(v)
                        .map(Some)
                        .ok_or_else(|| self.wrong_type(key, v, expected))
                }
            }
        }
        Ok(None)
    }

    fn wrong_type(&self, key: &str, v: &Value, expected: &str) -> ItemReadError {
        self.at.error(
            Some(key),
            format!("must be {expected}, found {}", type_name(v)),
        )
    }
}

fn timestamp_value(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_rfc3339(s),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// How a JSON value is named in error messages: "an integer", "a string", ...
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_lines_and_arrays_alike() {
        let jsonl = "{\"content\":\"a\",\"tokens\":3,\"kind\":\"Document\",\"tags\":[\"x\"],\"metadata\":{\"k\":\"v\"},\"timestamp\":\"2024-01-01T00:00Z\",\"futureRelevanceHint\":0.5,\"pinned\":true,\"priority\":2,\"original_tokens\":9,\"source\":\"Rag\"}\n\n{\"content\":\"b\",\"tokens\":-1,\"timestamp\":5}\n";
        let items = read_items(jsonl).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].kind().as_str(), "Document");
        assert_eq!(items[0].timestamp(), parse_rfc3339("2024-01-01T00:00:00Z"));
        assert_eq!(items[0].future_relevance_hint(), Some(0.5));
        assert_eq!(
            (items[0].priority(), items[0].original_tokens()),
            (Some(2), Some(9))
        );
        assert_eq!(items[1].timestamp(), Some(5));
        let array = "[\n {\"content\":\"a\",\"tokens\":3},\n {\"content\":\"b\",\"tokens\":4}\n]";
        let items = read_items(array).unwrap();
        assert_eq!(items[1].tokens(), 4);
        assert!(read_items("").unwrap().is_empty());
        assert!(read_items("[]").unwrap().is_empty());
    }

    #[test]
    fn errors_name_line_item_and_field() {
        let e = read_items("{\"content\":\"a\",\"tokens\":1}\n{\"content\":\"b\"}").unwrap_err();
        assert_eq!(e.to_string(), "line 2, item 1, field 'tokens': is required");
        let e = read_items("{\"content\":\"a\",\"tokens\":\"7\"}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1, item 0, field 'tokens': must be an integer (64-bit), found a string"
        );
        let e = read_items("{\"content\":\"a\",\"tokens\":1,\"colour\":1}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("colour"));
        let e = read_items("{\"content\":\"\",\"tokens\":1}").unwrap_err();
        assert_eq!(e.message, "content must be non-empty");
        let e = read_items("{\"content\":\"a\",\"tokens\":1,\"kind\":\" \"}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("kind"));
        let e = read_items("{\"content\":\"a\",\"tokens\":1,\"metadata\":{\"k\":1}}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("metadata.k"));
        let e =
            read_items("{\"content\":\"a\",\"tokens\":1,\"timestamp\":\"yesterday\"}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("timestamp"));
        let e = read_items("{\"content\":\"a\",\"tokens\":1}\n{\"content\":\"b\",").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2, item 1: malformed JSON at column 15: EOF while parsing a value"
        );
        let e = read_items("[\n{\"content\":\"a\",\"tokens\":1},\n{\"content\" 1}]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3: malformed JSON at column 12: expected `:`"
        );
        let e = read_items(
            "[\n{\"content\":\"a\",\"tokens\":1},\n\n{\"content\":\"b\",\"tokens\":1.5}]",
        )
        .unwrap_err();
        assert_eq!((e.line, e.item), (4, Some(1)));
        let e = read_items("[1]").unwrap_err();
        assert!(e.message.contains("expected an item object"));
        let e = read_items("{\"content\":\"a\",\"tokens\":99999999999999999999}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tokens"));
    }

    #[test]
    fn reads_variants_and_names_their_fields() {
        let items = read_items(
            "{\"content\":\"long\",\"tokens\":90,\"variants\":[\
             {\"content\":\"short\",\"tokens\":9,\"quality\":0.5},\
             {\"content\":\"stub\",\"tokens\":0,\"quality\":0.01}]}\n\
             {\"content\":\"b\",\"tokens\":1,\"variants\":null}\n\
             {\"content\":\"c\",\"tokens\":1,\"variants\":[]}",
        )
        .unwrap();
        assert_eq!(items[0].form_count(), 3);
        assert_eq!(
            (
                items[0].form_content(1),
                items[0].form_tokens(1),
                items[0].form_quality(1)
            ),
            ("short", 9, 0.5)
        );
        assert_eq!(items[0].form_tokens(2), 0);
        assert!(!items[1].has_variants() && !items[2].has_variants());
        let err = |variant: &str| {
            read_items(&format!(
                "{{\"content\":\"a\",\"tokens\":9,\"variants\":[{{\"content\":\"ok\",\
                 \"tokens\":1,\"quality\":1}},{variant}]}}"
            ))
            .unwrap_err()
            .to_string()
        };
        let at = "line 1, item 0, field 'variants[1]";
        assert_eq!(
            err("{\"content\":\"s\",\"tokens\":1,\"quality\":0}"),
            format!("{at}.quality': must be in (0, 1], got 0")
        );
        assert_eq!(
            err("{\"content\":\"s\",\"tokens\":1,\"quality\":1.25}"),
            format!("{at}.quality': must be in (0, 1], got 1.25")
        );
        assert_eq!(
            err("{\"content\":\"s\",\"tokens\":-2,\"quality\":0.5}"),
            format!("{at}.tokens': must be >= 0, got -2")
        );
        assert_eq!(
            err("{\"content\":\"\",\"tokens\":2,\"quality\":0.5}"),
            format!("{at}.content': must not be empty")
        );
        assert_eq!(
            err("{\"content\":\"s\",\"quality\":0.5}"),
            format!("{at}.tokens': is required (or give an encoding to count it)")
        );
        assert_eq!(
            err("{\"content\":\"s\",\"tokens\":2}"),
            format!("{at}.quality': is required")
        );
        assert_eq!(
            err("{\"content\":\"s\",\"tokens\":2,\"quality\":\"high\"}"),
            format!("{at}.quality': must be a number, found a string")
        );
        assert_eq!(
            err("{\"content\":\"s\",\"tokens\":2,\"quality\":0.5,\"score\":1}"),
            format!("{at}.score': unknown field")
        );
        assert_eq!(
            err("7"),
            format!("{at}': must be an object, found an integer")
        );
        let e = read_items("{\"content\":\"a\",\"tokens\":1,\"variants\":{}}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1, item 0, field 'variants': must be an array, found an object"
        );
    }

    #[cfg(feature = "tokenizer")]
    #[test]
    fn counts_variant_tokens_and_adds_head_tail_forms_on_request() {
        let enc = Encoding::by_name("o200k_base").unwrap();
        let options = ItemReadOptions {
            encoding: Some(enc),
            head_tail: None,
        };
        let text = "{\"content\":\"a\",\"tokens\":50,\"variants\":[\
                    {\"content\":\"hello world\",\"quality\":0.5}]}";
        let items = read_items_with(text, &options).unwrap();
        assert_eq!(items[0].form_tokens(1), 2);
        let long = "x ".repeat(500);
        let spec = HeadTail::new(10, 10).unwrap();
        let options = ItemReadOptions {
            encoding: None,
            head_tail: Some((enc, &spec)),
        };
        let line = format!(
            "{{\"content\":\"{long}\",\"tokens\":500}}\n{{\"content\":\"b\",\"tokens\":1}}"
        );
        let items = read_items_with(&line, &options).unwrap();
        assert_eq!(items[0].form_count(), 2);
        assert!(items[0].form_tokens(1) < 40);
        assert_eq!(items[1].form_count(), 1);
    }

    #[test]
    fn reads_group_keys() {
        let items = read_items(
            "{\"content\":\"a\",\"tokens\":1,\"group\":\"call_1\"}\n\
             {\"content\":\"b\",\"tokens\":1,\"group\":null}\n\
             {\"content\":\"c\",\"tokens\":1}",
        )
        .unwrap();
        let groups: Vec<Option<&str>> = items.iter().map(ContextItem::group).collect();
        assert_eq!(groups, [Some("call_1"), None, None]);
        let e = read_items("{\"content\":\"a\",\"tokens\":1,\"group\":\"\"}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1, item 0, field 'group': must be a non-empty string"
        );
        let e = read_items("{\"content\":\"a\",\"tokens\":1,\"group\":7}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1, item 0, field 'group': must be a string, found an integer"
        );
    }

    #[cfg(feature = "tokenizer")]
    #[test]
    fn counts_the_items_without_tokens() {
        // "hello world" is [15339, 1917] in cl100k_base (tiktoken's own test).
        let cl100k = Encoding::by_name("cl100k_base").unwrap();
        let jsonl = "{\"content\":\"hello world\"}\n\
                     {\"content\":\"hello world\",\"tokens\":7}\n\
                     {\"content\":\"hello world\",\"tokens\":null,\"pinned\":true}\n\
                     {\"content\":\"hello world\",\"tokens\":-1}";
        let items = read_items_counted(jsonl, cl100k).unwrap();
        let tokens: Vec<i64> = items.iter().map(ContextItem::tokens).collect();
        assert_eq!(tokens, [2, 7, 2, -1]);
        assert!(items[2].pinned());
        let array = "[{\"content\":\"hello world\"}, {\"content\":\"x\",\"tokens\":3}]";
        let tokens: Vec<i64> = read_items_counted(array, cl100k)
            .unwrap()
            .iter()
            .map(ContextItem::tokens)
            .collect();
        assert_eq!(tokens, [2, 3]);
        // A present `tokens` is still checked; without an encoding it is required.
        let e = read_items_counted("{\"content\":\"a\",\"tokens\":\"7\"}", cl100k).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1, item 0, field 'tokens': must be an integer (64-bit), found a string"
        );
        let e = read_items("{\"content\":\"a\"}").unwrap_err();
        assert_eq!(e.to_string(), "line 1, item 0, field 'tokens': is required");
        let e = read_items_counted("{\"tokens\":1}", cl100k).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1, item 0, field 'content': is required"
        );
    }
}
