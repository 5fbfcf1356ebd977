//! The JSON wire form of a SelectionReport (spec 06 §10).
//!
//! Keys are snake_case; optional members are omitted, never written as `null`; reasons are
//! `{"reason": "<Variant>", ...fields}`. Items are written with `content`, `tokens`,
//! `kind`, `source` and every other field that is set. Extensions (documented in
//! `docs/diagnostics-json.md`): an `overflow` member when a Proceed run went over target,
//! non-finite numbers (possible only in caller-supplied hints) written as `null`, and for
//! inputs with groups (`docs/groups.md`) the `GroupExcluded` reason, a `group` member in
//! items and a `groups` listing; for inputs with variants (`docs/variants.md`) a `variants`
//! member in items, the `Downgraded` inclusion reason with its fields and a `pruned_forms`
//! listing.

use std::fmt::{self, Write};

use crate::alloc;
use crate::diagnostics::{
    CountRequirementShortfall, ExcludedItem, ExclusionReason, GroupDecision, GroupReport,
    IncludedItem, InclusionReason, OverflowEvent, SelectionReport, TraceEvent,
};
use crate::error::Result;
use crate::model::{format_rfc3339, ContextBudget, ContextItem};

/// Writes the report in the JSON wire form; items are looked up in `items` by position.
///
/// Like every Rust allocation, running out of memory aborts; [`try_report_to_json`]
/// fails with [`Error::OutOfMemory`](crate::Error::OutOfMemory) instead.
pub fn report_to_json(report: &SelectionReport, items: &[ContextItem]) -> String {
    report_text(report, items, false)
}

/// The wire form with one extension: every `included` and `excluded` entry starts with an
/// `"index"` member, the item's 0-based position in `items` (the caller's input order), so
/// that entries with equal contents can be told apart. Everything else is as in
/// [`report_to_json`].
pub fn report_to_json_with_positions(report: &SelectionReport, items: &[ContextItem]) -> String {
    report_text(report, items, true)
}

/// The report's JSON text, with or without the entries' positions.
fn report_text(report: &SelectionReport, items: &[ContextItem], positions: bool) -> String {
    let mut w = JsonWriter::default();
    write_report(&mut w, report, items, positions);
    w.out.text
}

/// [`report_to_json`] with fallible allocation: a report whose JSON cannot be allocated
/// (it holds every item's content) fails with
/// [`Error::OutOfMemory`](crate::Error::OutOfMemory).
pub fn try_report_to_json(report: &SelectionReport, items: &[ContextItem]) -> Result<String> {
    let mut w = JsonWriter {
        out: Sink {
            fallible: true,
            ..Sink::default()
        },
        need_comma: false,
    };
    write_report(&mut w, report, items, false);
    match w.out.failed {
        None => Ok(w.out.text),
        Some(bytes) => Err(alloc::out_of_memory_bytes(bytes, "the report's JSON")),
    }
}

fn write_report(
    w: &mut JsonWriter,
    report: &SelectionReport,
    items: &[ContextItem],
    positions: bool,
) {
    w.begin_object();
    w.key("events");
    w.array(&report.events, write_event);
    w.key("included");
    w.array(&report.included, |w, e| {
        write_included(w, e, items, positions)
    });
    w.key("excluded");
    w.array(&report.excluded, |w, e| {
        write_excluded(w, e, items, positions)
    });
    w.key("total_candidates");
    w.uint(report.total_candidates as u64);
    w.key("total_tokens_considered");
    w.int(report.total_tokens_considered);
    w.key("count_requirement_shortfalls");
    w.array(&report.count_requirement_shortfalls, write_shortfall);
    if let Some(overflow) = &report.overflow {
        w.key("overflow");
        write_overflow(w, overflow, items);
    }
    if !report.groups.is_empty() {
        w.key("groups");
        w.array(&report.groups, write_group);
    }
    if !report.pruned_forms.is_empty() {
        w.key("pruned_forms");
        w.array(&report.pruned_forms, |w, p| {
            w.begin_object();
            w.key("index");
            w.uint(p.index as u64);
            w.key("form");
            w.uint(p.form as u64);
            w.key("dominated_by");
            w.uint(p.dominated_by as u64);
            w.end_object();
        });
    }
    w.end_object();
}

/// Writes one item as a JSON object (the form used inside reports and by the CLI).
pub fn item_to_json(item: &ContextItem) -> String {
    let mut w = JsonWriter::default();
    write_item(&mut w, item);
    w.out.text
}

fn write_event(w: &mut JsonWriter, e: &TraceEvent) {
    w.begin_object();
    w.key("stage");
    w.string(e.stage.name());
    w.key("duration_ms");
    w.float(e.duration_ms);
    w.key("item_count");
    w.uint(e.item_count as u64);
    if let Some(message) = &e.message {
        w.key("message");
        w.string(message);
    }
    w.end_object();
}

fn write_included(w: &mut JsonWriter, e: &IncludedItem, items: &[ContextItem], position: bool) {
    w.begin_object();
    if position {
        w.key("index");
        w.uint(e.index as u64);
    }
    w.key("item");
    write_item(w, &items[e.index]);
    w.key("score");
    w.float(e.score);
    w.key("reason");
    w.begin_object();
    w.key("reason");
    w.string(e.reason.name());
    if let InclusionReason::Downgraded {
        form,
        full_tokens,
        chosen_tokens,
        available_tokens,
        cause,
    } = e.reason
    {
        w.key("form");
        w.uint(form as u64);
        w.field_int("full_tokens", full_tokens);
        w.field_int("chosen_tokens", chosen_tokens);
        w.field_int("available_tokens", available_tokens);
        w.field_str("cause", cause.name());
    }
    w.end_object();
    w.end_object();
}

fn write_excluded(w: &mut JsonWriter, e: &ExcludedItem, items: &[ContextItem], position: bool) {
    w.begin_object();
    if position {
        w.key("index");
        w.uint(e.index as u64);
    }
    w.key("item");
    write_item(w, &items[e.index]);
    w.key("score");
    w.float(e.score);
    w.key("reason");
    write_exclusion_reason(w, &e.reason);
    w.end_object();
}

fn write_exclusion_reason(w: &mut JsonWriter, reason: &ExclusionReason) {
    w.begin_object();
    w.key("reason");
    w.string(reason.name());
    match reason {
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => {
            w.field_int("item_tokens", *item_tokens);
            w.field_int("available_tokens", *available_tokens);
        }
        ExclusionReason::ScoredTooLow { score, threshold } => {
            w.key("score");
            w.float(*score);
            w.key("threshold");
            w.float(*threshold);
        }
        ExclusionReason::Deduplicated {
            deduplicated_against,
        } => w.field_str("deduplicated_against", deduplicated_against),
        ExclusionReason::QuotaCapExceeded { kind, cap, actual } => {
            w.field_str("kind", kind);
            w.field_int("cap", *cap);
            w.field_int("actual", *actual);
        }
        ExclusionReason::QuotaRequireDisplaced { displaced_by_kind } => {
            w.field_str("displaced_by_kind", displaced_by_kind)
        }
        ExclusionReason::NegativeTokens { tokens } => w.field_int("tokens", *tokens),
        ExclusionReason::PinnedOverride { displaced_by } => {
            w.field_str("displaced_by", displaced_by)
        }
        ExclusionReason::Filtered { filter_name } => w.field_str("filter_name", filter_name),
        ExclusionReason::CountCapExceeded { kind, cap, count } => {
            w.field_str("kind", kind);
            w.key("cap");
            w.uint(*cap);
            w.key("count");
            w.uint(*count);
        }
        ExclusionReason::CountRequireCandidatesExhausted { kind } => w.field_str("kind", kind),
        ExclusionReason::GroupExcluded {
            group,
            member_index,
            member_content,
            member_reason,
        } => {
            w.field_str("group", group);
            w.key("member_index");
            w.uint(*member_index as u64);
            w.field_str("member_content", member_content);
            w.field_str("member_reason", member_reason);
        }
        ExclusionReason::Unknown { .. } => {}
    }
    w.end_object();
}

fn write_group(w: &mut JsonWriter, g: &GroupReport) {
    w.begin_object();
    w.field_str("key", &g.key);
    w.key("members");
    w.array(&g.members, |w, &m| w.uint(m as u64));
    w.field_int("tokens", g.tokens);
    if let Some(value) = g.value {
        w.key("value");
        w.float(value);
    }
    w.field_str("decision", g.decision.name());
    if let GroupDecision::Excluded {
        stage,
        member_index,
    } = g.decision
    {
        w.field_str("stage", stage.name());
        w.key("member_index");
        w.uint(member_index as u64);
    }
    if let Some(pinned_by) = g.pinned_by {
        w.key("pinned_by");
        w.uint(pinned_by as u64);
    }
    if g.partial_selection {
        w.key("partial_selection");
        w.raw("true");
    }
    w.end_object();
}

fn write_shortfall(w: &mut JsonWriter, s: &CountRequirementShortfall) {
    w.begin_object();
    w.field_str("kind", &s.kind);
    w.key("required_count");
    w.uint(s.required_count);
    w.key("satisfied_count");
    w.uint(s.satisfied_count);
    w.end_object();
}

fn write_overflow(w: &mut JsonWriter, o: &OverflowEvent, items: &[ContextItem]) {
    w.begin_object();
    w.field_int("tokens_over_budget", o.tokens_over_budget);
    w.key("overflowing_items");
    w.array(&o.overflowing_items, |w, &i| write_item(w, &items[i]));
    w.key("budget");
    write_budget(w, &o.budget);
    w.end_object();
}

fn write_budget(w: &mut JsonWriter, b: &ContextBudget) {
    w.begin_object();
    w.field_int("max_tokens", b.max_tokens());
    w.field_int("target_tokens", b.target_tokens());
    w.field_int("output_reserve", b.output_reserve());
    w.key("reserved_slots");
    w.begin_object();
    for (kind, count) in b.reserved_slots() {
        w.field_int(kind.as_str(), *count);
    }
    w.end_object();
    w.key("estimation_safety_margin_percent");
    w.float(b.estimation_safety_margin_percent());
    w.end_object();
}

fn write_item(w: &mut JsonWriter, item: &ContextItem) {
    w.begin_object();
    w.field_str("content", item.content());
    w.field_int("tokens", item.tokens());
    write_item_fields(w, item);
    if item.has_variants() {
        w.key("variants");
        w.array(item.variants(), |w, v| {
            w.begin_object();
            w.field_str("content", v.content());
            w.field_int("tokens", v.tokens());
            w.key("quality");
            w.float(v.quality());
            w.end_object();
        });
    }
    w.end_object();
}

/// The members of an item after `content` and `tokens`, up to its `group`.
fn write_item_fields(w: &mut JsonWriter, item: &ContextItem) {
    w.field_str("kind", item.kind().as_str());
    w.field_str("source", item.source().as_str());
    if let Some(priority) = item.priority() {
        w.field_int("priority", priority);
    }
    if !item.tags().is_empty() {
        w.key("tags");
        w.array(item.tags(), |w, t| w.string(t));
    }
    if !item.metadata().is_empty() {
        w.key("metadata");
        w.begin_object();
        for (k, v) in item.metadata() {
            w.field_str(k, v);
        }
        w.end_object();
    }
    if let Some(ts) = item.timestamp() {
        w.field_str("timestamp", &format_rfc3339(ts));
    }
    if let Some(hint) = item.future_relevance_hint() {
        w.key("future_relevance_hint");
        w.float(hint);
    }
    if item.pinned() {
        w.key("pinned");
        w.raw("true");
    }
    if let Some(original) = item.original_tokens() {
        w.field_int("original_tokens", original);
    }
    if let Some(group) = item.group() {
        w.field_str("group", group);
    }
}

/// Writes the form `form` of `item` as it goes into a window: the item with that form's
/// content and tokens, no `variants`, and `"form": <n>` when the form is a variant (the
/// CLI's window output, `docs/variants.md`). Form 0 of an item without variants is exactly
/// [`item_to_json`].
pub fn placed_item_to_json(item: &ContextItem, form: usize) -> String {
    let mut w = JsonWriter::default();
    w.begin_object();
    w.field_str("content", item.form_content(form));
    w.field_int("tokens", item.form_tokens(form));
    write_item_fields(&mut w, item);
    if form != 0 {
        w.key("form");
        w.uint(form as u64);
    }
    w.end_object();
    w.out.text
}

/// The text a [`JsonWriter`] appends to. In fallible mode, growth goes through
/// `try_reserve`; the first failure is remembered (with the bytes asked for) and every
/// later write is dropped.
#[derive(Default)]
struct Sink {
    text: String,
    fallible: bool,
    failed: Option<u128>,
}

impl Sink {
    fn push(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.push_str(c.encode_utf8(&mut buf));
    }
    fn push_str(&mut self, s: &str) {
        if self.fallible {
            if self.failed.is_some() {
                return;
            }
            if let Err(bytes) = alloc::grow_string(&mut self.text, s.len()) {
                self.failed = Some(bytes);
                return;
            }
        }
        self.text.push_str(s);
    }
}

impl Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// A minimal streaming JSON writer: it tracks only whether a comma is due.
#[derive(Default)]
struct JsonWriter {
    out: Sink,
    need_comma: bool,
}

impl JsonWriter {
    fn value_prefix(&mut self) {
        if self.need_comma {
            self.out.push(',');
        }
        self.need_comma = true;
    }
    fn begin_object(&mut self) {
        self.value_prefix();
        self.out.push('{');
        self.need_comma = false;
    }
    fn end_object(&mut self) {
        self.out.push('}');
        self.need_comma = true;
    }
    fn array<I: IntoIterator>(&mut self, values: I, mut each: impl FnMut(&mut Self, I::Item)) {
        self.value_prefix();
        self.out.push('[');
        self.need_comma = false;
        for v in values {
            each(self, v);
        }
        self.out.push(']');
        self.need_comma = true;
    }
    fn key(&mut self, key: &str) {
        self.value_prefix();
        write_escaped(&mut self.out, key);
        self.out.push(':');
        self.need_comma = false;
    }
    fn raw(&mut self, text: &str) {
        self.value_prefix();
        self.out.push_str(text);
    }
    fn string(&mut self, s: &str) {
        self.value_prefix();
        write_escaped(&mut self.out, s);
    }
    fn int(&mut self, v: impl Into<i128>) {
        self.value_prefix();
        let _ = write!(self.out, "{}", v.into());
    }
    fn uint(&mut self, v: u64) {
        self.value_prefix();
        let _ = write!(self.out, "{v}");
    }
    /// Finite numbers in the shortest form that reads back exactly; non-finite as null.
    fn float(&mut self, v: f64) {
        self.value_prefix();
        if v.is_finite() {
            let _ = write!(self.out, "{v:?}");
        } else {
            self.out.push_str("null");
        }
    }
    fn field_str(&mut self, key: &str, value: &str) {
        self.key(key);
        self.string(value);
    }
    fn field_int(&mut self, key: &str, value: i64) {
        self.key(key);
        self.int(value);
    }
}

fn write_escaped(out: &mut Sink, s: &str) {
    out.push('"');
    // Runs of characters that need no escape are copied as one slice.
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            b if b < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::{DowngradeCause, InclusionReason, PipelineStage};
    use crate::model::PrunedForm;

    #[test]
    fn writes_variants_downgrades_and_pruned_forms() {
        let items = vec![ContextItem::builder("full text", 900)
            .variant("summary", 30, 0.5)
            .variant("bigger", 950, 0.9)
            .build()
            .unwrap()];
        let report = SelectionReport {
            included: vec![IncludedItem {
                index: 0,
                score: 0.5,
                reason: InclusionReason::Downgraded {
                    form: 1,
                    full_tokens: 900,
                    chosen_tokens: 30,
                    available_tokens: 12,
                    cause: DowngradeCause::BudgetExceeded,
                },
            }],
            total_candidates: 1,
            total_tokens_considered: 900,
            pruned_forms: vec![PrunedForm {
                index: 0,
                form: 2,
                dominated_by: 0,
            }],
            ..SelectionReport::default()
        };
        let json = report_to_json(&report, &items);
        let parsed: serde_json::Value = serde_json::from_str(&json).expect(&json);
        let included = &parsed["included"][0];
        assert_eq!(
            included["reason"],
            serde_json::json!({"reason": "Downgraded", "form": 1, "full_tokens": 900,
                "chosen_tokens": 30, "available_tokens": 12, "cause": "BudgetExceeded"})
        );
        assert_eq!(
            included["item"]["variants"],
            serde_json::json!([{"content": "summary", "tokens": 30, "quality": 0.5},
                {"content": "bigger", "tokens": 950, "quality": 0.9}])
        );
        assert_eq!(
            parsed["pruned_forms"],
            serde_json::json!([{"index": 0, "form": 2, "dominated_by": 0}])
        );
        // The placed form of the window: its content and tokens, no variants, its number.
        let placed: serde_json::Value =
            serde_json::from_str(&placed_item_to_json(&items[0], 1)).unwrap();
        assert_eq!(
            placed,
            serde_json::json!({"content": "summary", "tokens": 30, "kind": "Message",
                "source": "Chat", "form": 1})
        );
        let plain = ContextItem::new("x", 1).unwrap();
        assert_eq!(placed_item_to_json(&plain, 0), item_to_json(&plain));
        // Without variants nothing of this is written.
        let json = report_to_json(&SelectionReport::default(), &[]);
        assert!(
            !json.contains("pruned_forms") && !json.contains("variants"),
            "{json}"
        );
    }

    #[test]
    fn the_fallible_writer_writes_the_same_text() {
        let items = vec![
            ContextItem::builder("x\u{1}\"y\\z\nü", 3).build().unwrap(),
            ContextItem::builder("plain", 4).build().unwrap(),
        ];
        let report = SelectionReport {
            included: vec![IncludedItem {
                index: 0,
                score: 0.5,
                reason: InclusionReason::Scored,
            }],
            excluded: vec![ExcludedItem {
                index: 1,
                score: 0.25,
                reason: ExclusionReason::NegativeTokens { tokens: -1 },
            }],
            total_candidates: 2,
            total_tokens_considered: 7,
            ..SelectionReport::default()
        };
        let json = report_to_json(&report, &items);
        assert_eq!(try_report_to_json(&report, &items).unwrap(), json);
        assert!(json.contains(r#""content":"x\u0001\"y\\z\nü""#), "{json}");
    }

    #[test]
    fn writes_the_wire_form() {
        let items = vec![
            ContextItem::builder("a \"quoted\"\nline", 120)
                .timestamp(0)
                .build()
                .unwrap(),
            ContextItem::builder("corrupt", -3)
                .pinned(true)
                .build()
                .unwrap(),
        ];
        let report = SelectionReport {
            events: vec![TraceEvent {
                stage: PipelineStage::Classify,
                duration_ms: 0.5,
                item_count: 1,
                message: None,
                item_index: None,
            }],
            included: vec![IncludedItem {
                index: 0,
                score: 0.75,
                reason: InclusionReason::Scored,
            }],
            excluded: vec![ExcludedItem {
                index: 1,
                score: 0.0,
                reason: ExclusionReason::NegativeTokens { tokens: -3 },
            }],
            total_candidates: 2,
            total_tokens_considered: 117,
            count_requirement_shortfalls: vec![],
            overflow: None,
            groups: vec![],
            pruned_forms: vec![],
        };
        let json = report_to_json(&report, &items);
        let parsed: serde_json::Value = serde_json::from_str(&json).expect(&json);
        assert_eq!(parsed["events"][0]["stage"], "Classify");
        assert!(parsed["events"][0].get("message").is_none());
        assert_eq!(
            parsed["included"][0]["item"]["content"],
            "a \"quoted\"\nline"
        );
        assert_eq!(
            parsed["included"][0]["item"]["timestamp"],
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(parsed["included"][0]["reason"]["reason"], "Scored");
        assert_eq!(parsed["excluded"][0]["reason"]["reason"], "NegativeTokens");
        assert_eq!(parsed["excluded"][0]["reason"]["tokens"], -3);
        assert!(parsed["excluded"][0]["reason"].get("item_tokens").is_none());
        assert_eq!(parsed["excluded"][0]["item"]["pinned"], true);
        assert_eq!(parsed["total_tokens_considered"], 117);
        assert_eq!(
            parsed["count_requirement_shortfalls"],
            serde_json::json!([])
        );
        assert!(parsed.get("overflow").is_none());
        assert!(parsed["included"][0].get("index").is_none());

        let with_positions = report_to_json_with_positions(&report, &items);
        let parsed: serde_json::Value = serde_json::from_str(&with_positions).unwrap();
        assert_eq!(parsed["included"][0]["index"], 0);
        assert_eq!(parsed["excluded"][0]["index"], 1);
        assert_eq!(
            with_positions
                .replace("\"index\":0,", "")
                .replace("\"index\":1,", ""),
            json,
            "the positions are the only difference"
        );
    }

    #[test]
    fn escapes_control_characters_and_writes_null_for_non_finite() {
        let mut w = JsonWriter::default();
        w.begin_object();
        w.field_str("s", "\u{1}\t\\");
        w.key("n");
        w.float(f64::NAN);
        w.end_object();
        assert_eq!(w.out.text, r#"{"s":"\u0001\t\\","n":null}"#);
    }
}
