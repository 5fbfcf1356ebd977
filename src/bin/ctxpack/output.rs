//! What the `ctxpack` tool prints: the window as JSON Lines, the explain table, or the
//! report as JSON. Each is built completely before anything is written, so a failure never
//! leaves half an output behind.

use std::fmt::Write;

use ctxpack::diagnostics::{
    placed_item_to_json, report_to_json_with_positions, InclusionReason, SelectionReport,
};
use ctxpack::{ContextItem, Selection};

/// The selected items as JSON Lines, in placed order, each in the form placed (an item
/// placed as one of its variants shows that variant's content and tokens and its `form`).
pub fn window_jsonl(items: &[ContextItem], selection: &Selection) -> String {
    let mut out = String::new();
    for (rank, &i) in selection.indices.iter().enumerate() {
        out.push_str(&placed_item_to_json(&items[i], selection.form(rank)));
        out.push('\n');
    }
    out
}

/// The report as JSON followed by a newline; every included and excluded entry carries the
/// item's input position as `"index"`.
pub fn report_json(items: &[ContextItem], report: &SelectionReport) -> String {
    let mut out = report_to_json_with_positions(report, items);
    out.push('\n');
    out
}

/// One row per candidate in input order: position, decision (with placed rank), score,
/// tokens, kind, group (when any item has one), reason and the start of the content.
pub fn explain_table(items: &[ContextItem], report: &SelectionReport) -> String {
    let mut rows: Vec<Option<(String, f64, String)>> = vec![None; items.len()];
    for (rank, e) in report.included.iter().enumerate() {
        rows[e.index] = Some((
            format!("included #{}", rank + 1),
            e.score,
            describe_inclusion(e.reason),
        ));
    }
    for e in &report.excluded {
        rows[e.index] = Some((
            "excluded".to_owned(),
            e.score,
            describe_exclusion(&e.reason),
        ));
    }
    let grouped = items.iter().any(ContextItem::has_group);
    let group_cell = |item: &ContextItem| match (grouped, item.group()) {
        (false, _) => String::new(),
        (true, group) => format!("{:<12} ", clip(group.unwrap_or("-"), 12)),
    };
    let mut out = String::new();
    let group_header = if grouped {
        format!("{:<12} ", "group")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{:>5}  {:<12} {:>8} {:>8}  {:<12} {group_header}{:<44} content",
        "item", "decision", "score", "tokens", "kind", "reason"
    );
    for (i, (item, row)) in items.iter().zip(rows).enumerate() {
        let (decision, score, reason) =
            row.unwrap_or_else(|| ("?".into(), f64::NAN, String::new()));
        let _ = writeln!(
            out,
            "{i:>5}  {decision:<12} {score:>8.4} {:>8}  {:<12} {}{reason:<44} {}",
            item.tokens(),
            clip(item.kind().as_str(), 12),
            group_cell(item),
            clip(&item.content().replace(['\n', '\r', '\t'], " "), 60),
        );
    }
    let used: i64 = report
        .included
        .iter()
        .map(|e| items[e.index].form_tokens(e.reason.form()))
        .sum();
    let _ = writeln!(
        out,
        "{} of {} candidates included, {used} tokens; {} tokens considered{}",
        report.included.len(),
        report.total_candidates,
        report.total_tokens_considered,
        negative_note(items)
    );
    out
}

/// Why the total of tokens considered can be below the tokens used, or negative: it sums every
/// candidate's count, and items with negative counts (always excluded) lower it.
fn negative_note(items: &[ContextItem]) -> String {
    let negative: Vec<i64> = items
        .iter()
        .map(ContextItem::tokens)
        .filter(|&t| t < 0)
        .collect();
    if negative.is_empty() {
        return String::new();
    }
    let n = negative.len();
    let sum = negative.iter().fold(0i64, |a, &t| a.saturating_add(t));
    let which = if n == 1 {
        "1 item with a negative count".to_owned()
    } else {
        format!("{n} items with negative counts")
    };
    format!(
        " (the sum of every candidate's tokens, including {which} adding {sum}; such items \
         are never selected)"
    )
}

fn describe_inclusion(reason: InclusionReason) -> String {
    match reason {
        InclusionReason::Downgraded {
            form,
            full_tokens,
            chosen_tokens,
            cause,
            ..
        } => format!(
            "Downgraded (form {form}: {chosen_tokens} of {full_tokens}; {})",
            cause.name()
        ),
        other => other.name().to_owned(),
    }
}

fn describe_exclusion(reason: &ctxpack::diagnostics::ExclusionReason) -> String {
    use ctxpack::diagnostics::ExclusionReason as R;
    match reason {
        R::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => {
            format!("BudgetExceeded ({item_tokens} > {available_tokens} available)")
        }
        R::Deduplicated { .. } => "Deduplicated (same content kept elsewhere)".into(),
        R::NegativeTokens { tokens } => format!("NegativeTokens ({tokens})"),
        R::PinnedOverride { displaced_by } => {
            format!("PinnedOverride (by {})", clip(displaced_by, 20))
        }
        R::CountCapExceeded { kind, cap, count } => {
            format!("CountCapExceeded ({kind}: {count}/{cap})")
        }
        R::GroupExcluded {
            member_index,
            member_reason,
            ..
        } => format!("GroupExcluded (with item {member_index}: {member_reason})"),
        other => other.name().to_owned(),
    }
}

/// A one-line hint when a pinned, undated item ends up at the end of the window — placed
/// after every dated item and after at least one item that is not pinned. Chronological
/// placement puts undated items last (as the specification says), which is rarely what a
/// system prompt wants; `--pinned-first` moves pinned items to the front.
pub fn pinned_last_hint(items: &[ContextItem], selection: &Selection) -> String {
    let placed: Vec<(usize, bool)> = selection
        .indices
        .iter()
        .zip(&selection.reasons)
        .map(|(&i, r)| (i, *r == InclusionReason::Pinned))
        .collect();
    let late = placed.iter().enumerate().find(|&(rank, &(i, pinned))| {
        pinned
            && items[i].timestamp().is_none()
            && placed[..rank].iter().any(|&(_, p)| !p)
            && placed[rank..]
                .iter()
                .all(|&(j, _)| items[j].timestamp().is_none())
    });
    match late {
        Some((rank, &(i, _))) => format!(
            "hint: pinned item {i} has no timestamp and is placed at the end ({} of {}); \
             --pinned-first places pinned items first\n",
            rank + 1,
            placed.len()
        ),
        None => String::new(),
    }
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}
