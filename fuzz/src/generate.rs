//! Builds ctxpack values from a [`ByteReader`]: items, budgets, run options and every
//! built-in scorer, slicer and placer (plus a callback scorer with arbitrary scores).
//!
//! Generators return `ctxpack::Result` where the library validates: an invalid value must
//! be rejected with an error, and the targets simply stop there. Spellings are drawn from
//! small pools so that kinds, tags, metadata keys and contents collide often enough to
//! exercise deduplication, quotas and the kind and tag tables.

use std::sync::Arc;

use ctxpack::diagnostics::TraceDetail;
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::scorer::{
    CompositeScorer, DecayCurve, DecayScorer, FixedClock, FrequencyScorer, KindScorer,
    MetadataKeyScorer, MetadataTrustScorer, PerItemScorer, PriorityScorer, RecencyScorer,
    ReflexiveScorer, ScaledScorer, Scorer, TagScorer,
};
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, Slicer,
};
use ctxpack::GroupValue;
use ctxpack::{
    ContextBudget, ContextItem, ContextKind, ContextSource, OverflowStrategy, Pipeline, Result,
};

use crate::reader::ByteReader;

/// Kind spellings: the well-known kinds, a case variant, and invalid ones.
pub const KINDS: &[&str] = &[
    "Message",
    "Document",
    "ToolOutput",
    "Memory",
    "SystemPrompt",
    "message",
    "MESSAGE",
    "Other",
    "",
    " ",
];
/// Contents; repeats trigger deduplication.
pub const CONTENTS: &[&str] = &["a", "b", "hello", "a ", "A", "\u{0}", "é"];
/// Tags and metadata keys and values.
pub const WORDS: &[&str] = &[
    "x",
    "y",
    "X",
    "cupel:trust",
    "",
    "0.5",
    "1e400",
    "NaN",
    "-1",
];
/// Trust values for the `cupel:trust` metadata key.
pub const TRUST_VALUES: &[&str] = &["0.5", "1", "0", "-0", "2", "-1", "NaN", "inf", "1e999", ""];

/// Nesting limit for scaled and composite scorers and for quota wrappers.
const MAX_DEPTH: u8 = 3;
/// Keep-table guard used for fuzzed knapsacks: small, so that one execution never fills
/// hundreds of megabytes (the guard itself is still exercised: it trips often).
pub const MAX_FUZZ_TABLE_BYTES: u64 = 1 << 20;

/// Up to `max` items; items the builder rejects (empty content, …) are skipped after
/// checking that the rejection is an error, not a panic.
pub fn items(r: &mut ByteReader<'_>, max: usize) -> Vec<ContextItem> {
    let count = r.below(max + 1);
    (0..count).filter_map(|_| item(r).ok()).collect()
}

/// One item with every optional field chosen by the input.
pub fn item(r: &mut ByteReader<'_>) -> Result<ContextItem> {
    let content = r.pick_or_string(CONTENTS);
    let mut b = ContextItem::builder(content, tokens(r));
    let flags = r.u8();
    if flags & 1 != 0 {
        b = b.kind(ContextKind::new(r.pick_or_string(KINDS))?);
    }
    if flags & 2 != 0 {
        b = b.source(ContextSource::new(r.pick_or_string(KINDS))?);
    }
    if flags & 4 != 0 {
        b = b.priority(r.i64());
    }
    if flags & 8 != 0 {
        let tags: Vec<String> = (0..r.below(4)).map(|_| r.pick_or_string(WORDS)).collect();
        b = b.tags(tags);
    }
    if flags & 16 != 0 {
        b = b.metadata_entry("cupel:trust", r.pick_or_string(TRUST_VALUES));
        b = b.metadata_entry(r.pick_or_string(WORDS), r.pick_or_string(WORDS));
    }
    if flags & 32 != 0 {
        b = b.timestamp(r.i64());
    }
    if flags & 64 != 0 {
        b = b.future_relevance_hint(r.f64());
    }
    if flags & 128 != 0 {
        b = b.original_tokens(r.i64());
    }
    b = b.pinned(r.one_in(8));
    // Item groups: a key from a small pool, so that groups have several members.
    if r.one_in(3) {
        b = b.group(r.pick_or_string(GROUPS));
    }
    b.build()
}

/// Group keys: few, so that members collide; arbitrary strings (the empty one included)
/// come from `pick_or_string`.
const GROUPS: &[&str] = &["call_1", "call_2", "call_3", "Call_1"];

/// A token count: mostly small and non-negative, sometimes negative or near `i64::MAX`.
pub fn tokens(r: &mut ByteReader<'_>) -> i64 {
    if r.one_in(4) {
        r.i64()
    } else {
        i64::from(r.u8())
    }
}

/// A budget; invalid combinations are rejected by `ContextBudget::with_all`.
pub fn budget(r: &mut ByteReader<'_>) -> Result<ContextBudget> {
    let max = r.i64();
    let target = match r.u8() % 4 {
        0 => max,
        1 => max / 2,
        2 => max.saturating_sub(i64::from(r.u8())),
        _ => r.i64(),
    };
    let reserve = match r.u8() % 4 {
        0 | 1 => 0,
        2 => i64::from(r.u8()),
        _ => r.i64(),
    };
    let slots = (0..r.below(3))
        .map(|_| Ok((ContextKind::new(r.pick_or_string(KINDS))?, r.i64())))
        .collect::<Result<Vec<_>>>()?;
    let margin = if r.bool() { 0.0 } else { r.f64() };
    ContextBudget::with_all(max, target, reserve, slots, margin)
}

/// A trace level.
pub fn trace(r: &mut ByteReader<'_>) -> TraceDetail {
    [TraceDetail::None, TraceDetail::Stage, TraceDetail::Item][r.below(3)]
}

/// An overflow strategy.
pub fn overflow_strategy(r: &mut ByteReader<'_>) -> OverflowStrategy {
    [
        OverflowStrategy::Throw,
        OverflowStrategy::Truncate,
        OverflowStrategy::Proceed,
    ][r.below(3)]
}

/// A whole pipeline from built-in components, with a random deduplication flag and
/// overflow strategy.
pub fn pipeline(r: &mut ByteReader<'_>) -> Result<Pipeline> {
    Pipeline::builder()
        .scorer(scorer(r, 0)?)
        .slicer(slicer(r, 0)?)
        .placer(placer(r))
        .deduplication(r.bool())
        .overflow_strategy(overflow_strategy(r))
        .group_value(GroupValue::ALL[r.below(GroupValue::ALL.len())])
        .pinned_first(r.one_in(4))
        .build()
}

/// Any scorer, nesting scaled and composite scorers up to [`MAX_DEPTH`].
pub fn scorer(r: &mut ByteReader<'_>, depth: u8) -> Result<Arc<dyn Scorer>> {
    let leaf_only = depth >= MAX_DEPTH;
    let choice = r.below(13);
    Ok(match choice {
        0 => Arc::new(RecencyScorer::new()),
        1 => Arc::new(PriorityScorer::new()),
        2 => Arc::new(KindScorer::new()),
        3 => {
            let weights = (0..r.below(4))
                .map(|_| Ok((ContextKind::new(r.pick_or_string(KINDS))?, r.f64())))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(KindScorer::with_weights(weights)?)
        }
        4 => {
            let weights = (0..r.below(4))
                .map(|_| (r.pick_or_string(WORDS), r.f64()))
                .collect();
            Arc::new(TagScorer::new(weights)?)
        }
        5 => Arc::new(FrequencyScorer::new()),
        6 => Arc::new(ReflexiveScorer::new()),
        7 => Arc::new(DecayScorer::new(
            Arc::new(FixedClock(r.i64())),
            decay_curve(r),
            r.f64(),
        )?),
        8 => Arc::new(MetadataTrustScorer::new(r.f64())?),
        9 => Arc::new(MetadataKeyScorer::new(
            r.pick_or_string(WORDS),
            r.pick_or_string(WORDS),
            r.f64(),
        )?),
        10 => callback_scorer(r),
        11 if !leaf_only => Arc::new(ScaledScorer::new(scorer(r, depth + 1)?)),
        12 if !leaf_only => {
            let children = (0..=r.below(3))
                .map(|_| Ok((scorer(r, depth + 1)?, r.f64())))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(CompositeScorer::new(children)?)
        }
        _ => Arc::new(RecencyScorer::new()),
    })
}

/// A decay curve of any shape with arbitrary durations and step scores.
fn decay_curve(r: &mut ByteReader<'_>) -> DecayCurve {
    match r.below(3) {
        0 => DecayCurve::Exponential {
            half_life_ns: r.i64(),
        },
        1 => DecayCurve::Window {
            max_age_ns: r.i64(),
        },
        _ => DecayCurve::Step {
            windows: (0..r.below(4)).map(|_| (r.i64(), r.f64())).collect(),
        },
    }
}

/// A per-item callback scorer returning input-chosen scores (NaN and ±inf included, which
/// the library must reject as a callback error).
fn callback_scorer(r: &mut ByteReader<'_>) -> Arc<dyn Scorer> {
    let scores: Vec<f64> = (0..=r.below(4)).map(|_| r.f64()).collect();
    Arc::new(PerItemScorer::new(
        move |i: usize, _items: &[&ContextItem]| Ok(scores[i % scores.len()]),
    ))
}

/// Any slicer, nesting quota wrappers up to [`MAX_DEPTH`].
pub fn slicer(r: &mut ByteReader<'_>, depth: u8) -> Result<Arc<dyn Slicer>> {
    let leaf_only = depth >= MAX_DEPTH;
    Ok(match r.below(5) {
        0 => Arc::new(GreedySlice::new()),
        1 => Arc::new(knapsack(r)?),
        2 if !leaf_only => {
            let entries = (0..=r.below(3))
                .map(|_| {
                    QuotaEntry::new(ContextKind::new(r.pick_or_string(KINDS))?, r.f64(), r.f64())
                })
                .collect::<Result<Vec<_>>>()?;
            Arc::new(QuotaSlice::new(entries, slicer(r, depth + 1)?)?)
        }
        3 if !leaf_only => Arc::new(CountQuotaSlice::new(
            count_entries(r)?,
            slicer(r, depth + 1)?,
            scarcity(r),
        )?),
        4 => Arc::new(CountConstrainedKnapsackSlice::new(
            count_entries(r)?,
            knapsack(r)?,
            scarcity(r),
        )?),
        _ => Arc::new(GreedySlice::new()),
    })
}

/// A knapsack with an arbitrary bucket size and a small memory guard.
fn knapsack(r: &mut ByteReader<'_>) -> Result<KnapsackSlice> {
    let bucket = r.i64();
    let limit = r.u64() % (MAX_FUZZ_TABLE_BYTES + 1);
    KnapsackSlice::with_table_limit(bucket, limit)
}

/// Count-quota entries with arbitrary counts (up to `usize::MAX`).
fn count_entries(r: &mut ByteReader<'_>) -> Result<Vec<CountQuotaEntry>> {
    (0..r.below(4))
        .map(|_| {
            let kind = ContextKind::new(r.pick_or_string(KINDS))?;
            CountQuotaEntry::new(kind, r.count(), r.count())
        })
        .collect()
}

/// A scarcity behaviour.
fn scarcity(r: &mut ByteReader<'_>) -> ScarcityBehavior {
    if r.bool() {
        ScarcityBehavior::Throw
    } else {
        ScarcityBehavior::Degrade
    }
}

/// A placer.
pub fn placer(r: &mut ByteReader<'_>) -> Arc<dyn Placer> {
    if r.bool() {
        Arc::new(UShapedPlacer::new())
    } else {
        Arc::new(ChronologicalPlacer::new())
    }
}

/// A fixed, hand-written item list touching every scorer input: a pinned system prompt,
/// timestamped messages, a relevance hint, tags, trust metadata, a duplicate, a zero-token
/// and a negative-token item.
pub fn sample_items() -> Vec<ContextItem> {
    let kind = |k: &str| ContextKind::new(k).expect("valid kind");
    let built = [
        ContextItem::builder("You are helpful.", 10)
            .kind(kind("SystemPrompt"))
            .pinned(true)
            .build(),
        ContextItem::builder("User: hi", 5)
            .kind(kind("Message"))
            .timestamp(1_000)
            .tags(["chat"])
            .build(),
        ContextItem::builder("Assistant: hello", 7)
            .kind(kind("Message"))
            .timestamp(2_000)
            .priority(3)
            .build(),
        ContextItem::builder("Doc: refunds take 5 days", 30)
            .kind(kind("Document"))
            .future_relevance_hint(0.9)
            .metadata_entry("cupel:trust", "0.8")
            .build(),
        ContextItem::builder("Doc: refunds take 5 days", 30)
            .kind(kind("Document"))
            .build(),
        ContextItem::builder("tool: ok", 0)
            .kind(kind("ToolOutput"))
            .tags(["tool", "chat"])
            .build(),
        ContextItem::builder("memory: likes tea", 12)
            .kind(kind("Memory"))
            .metadata_entry("source", "profile")
            .build(),
        ContextItem::builder("broken", -4).build(),
    ];
    built
        .into_iter()
        .map(|item| item.expect("valid sample item"))
        .collect()
}
