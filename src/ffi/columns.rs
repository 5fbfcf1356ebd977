//! The one-shot run's columnar path: the caller's descriptors read straight into the
//! columns of a columnar run (`pipeline/columnar.rs`), without building items, copying a
//! string or allocating per item. `ctxpack_pipeline_run_descs` tries it first and takes
//! the general path (items built as a push builds them) whenever it declines.

use crate::cancel;
use crate::ffi::items::{ctxpack_item_desc, ctxpack_metadata_entry, in_place};
use crate::ffi::strings::{array, ctxpack_str, to_str, to_str_hashed, to_str_with_head};
use crate::ffi::versioned::{flag, reserved};
use crate::model::{ContextKind, ContextSource};
use crate::pipeline::{
    ColumnPlan, Columns, KindName, PerItemField, TagSum, HAS_PRIORITY, HAS_TIMESTAMP, PINNED,
    SCORERS_MAX,
};

/// The descriptors read between two looks at the run's cancellation token (a cancelled
/// run declines: the general path reports it).
const CANCEL_CHECK_ITEMS: usize = 1 << 16;

/// Reads `count` descriptors into `columns` (emptied first): the columns `plan` reads.
/// `None` when some descriptor needs the general path:
///
/// * one the columnar run does not take: a group key, variants, or an encoding (the
///   library would count its tokens);
/// * one that is invalid: the general path then reports it with its own message;
/// * an array that is not read in place (another `struct_size`, or misaligned), columns
///   that cannot be allocated, or a run cancelled (the thread's cancellation token, seen
///   every 65 536 descriptors).
///
/// Every value read is the one the general path's items would hold, so the run over the
/// columns is the run over those items.
///
/// # Safety
/// `descs` is NULL or holds `count` descriptors (the caller's contract).
pub(super) unsafe fn read_columns(
    plan: &ColumnPlan<'_>,
    descs: *const ctxpack_item_desc,
    count: usize,
    columns: &mut Columns,
) -> Option<()> {
    let fields = plan.per_item();
    columns.clear();
    let (timestamps, priorities, contents) = (
        plan.reads_timestamps(),
        plan.reads_priorities(),
        plan.reads_contents(),
    );
    reserve(&mut columns.tokens, count)?;
    reserve(&mut columns.flags, count)?;
    reserve(&mut columns.field_scores, count.checked_mul(fields.len())?)?;
    if timestamps {
        reserve(&mut columns.timestamps, count)?;
    }
    if priorities {
        reserve(&mut columns.priorities, count)?;
    }
    if contents {
        reserve(&mut columns.hashes, count)?;
    }
    // A plan has at most `SCORERS_MAX` per-item scorers.
    let mut tag_sums = [TagSum::default(); SCORERS_MAX];
    let tag_sums = tag_sums.get_mut(..fields.len())?;
    for i in 0..count {
        if i % CANCEL_CHECK_ITEMS == 0 {
            cancel::check("").ok()?;
        }
        // SAFETY: `descs` holds `count` descriptors.
        let d = unsafe { in_place(descs, i) }?;
        if d.group.len != 0 || d.encoding.len != 0 || d.variant_count != 0 {
            return None;
        }
        // Errors are only detected here (the general path words them), hence no names.
        let pinned = flag(d.pinned, "").ok()?;
        let has_priority = flag(d.has_priority, "").ok()?;
        let has_timestamp = flag(d.has_timestamp, "").ok()?;
        let has_hint = flag(d.has_future_relevance_hint, "").ok()?;
        flag(d.has_original_tokens, "").ok()?;
        reserved(&d.reserved, "").ok()?;
        // SAFETY (the strings): valid for their lengths by the caller's contract. The hash
        // is only for Deduplicate.
        let content = match contents {
            true => {
                let (content, hash) = unsafe { to_str_hashed(&d.content, "content") }.ok()?;
                columns.hashes.push(hash);
                content
            }
            false => unsafe { to_str(&d.content, "content") }.ok()?,
        };
        if content.is_empty() {
            return None;
        }
        // SAFETY: as for the content.
        let kind_name = unsafe { to_str(&d.kind, "kind") }.ok()?;
        let known_kind = match kind_name {
            "" => Some(ContextKind::default()),
            name => ContextKind::well_known(name),
        };
        let kind = match &known_kind {
            Some(known) => KindName::Known(known),
            None if ContextKind::accepts(kind_name) => KindName::Custom(kind_name),
            None => return None,
        };
        // SAFETY: as for the content.
        match unsafe { to_str(&d.source, "source") }.ok()? {
            "" => {}
            name if ContextSource::well_known(name).is_some() || ContextSource::accepts(name) => {}
            _ => return None,
        }
        // SAFETY: the arrays and their strings are valid by the caller's contract.
        unsafe { sum_tags(fields, d.tags, d.tag_count, tag_sums) }?;
        // SAFETY: as for the tags.
        unsafe { check_metadata(d.metadata, d.metadata_count) }?;
        let hint = has_hint.then_some(d.future_relevance_hint);
        for (field, sum) in fields.iter().zip(tag_sums.iter()) {
            columns.field_scores.push(field.score(kind, hint, *sum));
        }
        columns.tokens.push(d.tokens);
        let bit = |on: bool, bit: u8| if on { bit } else { 0 };
        columns.flags.push(
            bit(pinned, PINNED)
                | bit(has_timestamp, HAS_TIMESTAMP)
                | bit(has_priority, HAS_PRIORITY),
        );
        if timestamps {
            columns.timestamps.push(d.timestamp_ns);
        }
        if priorities {
            columns.priorities.push(d.priority);
        }
    }
    Some(())
}

/// Checks the item's `count` tags at `tags` and sets `sums[k]` for each per-item scorer
/// `fields[k]` (`sums` as long as `fields`): the tag count and, for a Tag scorer, the sum
/// of the weights it gives the tags, added in tag order from 0.0 as `TagScorer` adds
/// them. `None` when the array or a tag is invalid.
///
/// # Safety
/// `tags` is NULL or holds `count` strings, each valid for its length.
#[inline]
unsafe fn sum_tags(
    fields: &[PerItemField<'_>],
    tags: *const ctxpack_str,
    count: usize,
    sums: &mut [TagSum],
) -> Option<()> {
    sums.fill(TagSum {
        count,
        matched: 0.0,
    });
    // SAFETY: forwarded from the caller.
    for t in unsafe { array(tags, count, "tags") }.ok()? {
        // SAFETY: forwarded from the caller.
        let (tag, head) = unsafe { to_str_with_head(t, "tag") }.ok()?;
        for (field, sum) in fields.iter().zip(sums.iter_mut()) {
            if let PerItemField::Tag(scorer) = field {
                if let Some(weight) = scorer.weight_with_head(tag.as_bytes(), head) {
                    sum.matched += weight;
                }
            }
        }
    }
    Some(())
}

/// Checks the item's `count` metadata entries at `metadata` (no scorer of a columnar run
/// reads them): `None` when the array or a key or value is invalid.
///
/// # Safety
/// `metadata` is NULL or holds `count` entries, their strings valid for their lengths.
#[inline]
unsafe fn check_metadata(metadata: *const ctxpack_metadata_entry, count: usize) -> Option<()> {
    // SAFETY: forwarded from the caller.
    for e in unsafe { array(metadata, count, "metadata") }.ok()? {
        // SAFETY: forwarded from the caller.
        unsafe { to_str(&e.key, "key").and(to_str(&e.value, "value")) }.ok()?;
    }
    Some(())
}

/// Reserves room for `n` more values (none is allocated when the vector already has
/// room), or `None` when it cannot be allocated.
fn reserve<T>(v: &mut Vec<T>, n: usize) -> Option<()> {
    v.try_reserve_exact(n).ok()
}

/// The content of descriptor `index`, which [`read_columns`] accepted: for the run's
/// content comparisons, which happen only between items whose hashes match. (Read again
/// rather than kept in a column; "" should the caller have changed it meanwhile.)
///
/// # Safety
/// As for [`read_columns`], and the descriptors are unchanged since it read them.
pub(super) unsafe fn content<'a>(descs: *const ctxpack_item_desc, index: usize) -> &'a str {
    // SAFETY: forwarded from the caller; `read_columns` read this descriptor in place.
    unsafe { in_place(descs, index).and_then(|d| to_str(&d.content, "content").ok()) }.unwrap_or("")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ffi::items::items_from_descs;
    use crate::model::{ContextBudget, OverflowStrategy};
    use crate::pipeline::{ColumnarScratch, Pipeline};
    use crate::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
    use crate::scorer::{
        CompositeScorer, FrequencyScorer, KindScorer, PriorityScorer, RecencyScorer,
        ReflexiveScorer, Scorer, TagScorer,
    };
    use crate::slicer::{GreedySlice, KnapsackSlice, Slicer};
    use crate::testutil::Rng;

    const TAGS: [&str; 6] = ["a", "b", "plan", "Plan", "a-tag-longer-than-16", "é"];
    const KINDS: [&str; 9] = [
        "",
        "Message",
        "ToolOutput",
        "Document",
        "Memory",
        "SystemPrompt",
        "message",
        "Custom",
        " ",
    ];
    const SOURCES: [&str; 6] = ["", "Chat", "Tool", "Rag", "web", "\t"];
    const WORDS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "é"];

    /// A generated input: descriptors and the strings they point to.
    struct Input {
        descs: Vec<ctxpack_item_desc>,
        _contents: Vec<String>,
        _tags: Vec<Vec<ctxpack_str>>,
        _metadata: Vec<Vec<ctxpack_metadata_entry>>,
    }

    fn s(text: &str) -> ctxpack_str {
        ctxpack_str {
            ptr: text.as_ptr().cast(),
            len: text.len(),
        }
    }

    /// `n` descriptors with every field the columnar run reads varied: duplicate and
    /// non-ASCII contents, negative, zero and huge token counts, pinned items, ties and
    /// gaps in timestamps and priorities, hints outside [0, 1] and not finite, custom and
    /// invalid kinds and sources, tags with case variants, metadata; now and then an
    /// invalid descriptor or one the columnar run declines (a group key).
    fn input(rng: &mut Rng, n: usize) -> Input {
        let mut contents: Vec<String> = Vec::with_capacity(n);
        for i in 0..n {
            let text = match rng.below(8) {
                0 if i > 0 => contents[rng.below(i)].clone(),
                1 if rng.chance(0.05) => String::new(),
                _ => (0..1 + rng.below(4))
                    .map(|_| *rng.pick(&WORDS))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            contents.push(text);
        }
        let tags: Vec<Vec<ctxpack_str>> = (0..n)
            .map(|_| {
                (0..rng.below(4))
                    .map(|_| s(TAGS[rng.below(TAGS.len())]))
                    .collect()
            })
            .collect();
        let metadata: Vec<Vec<ctxpack_metadata_entry>> = (0..n)
            .map(|_| match rng.chance(0.2) {
                true => vec![ctxpack_metadata_entry {
                    key: s("origin"),
                    value: s("test"),
                }],
                false => Vec::new(),
            })
            .collect();
        let odd = rng.chance(0.1);
        // A third of the inputs are a transcript: timestamps in input order (several items
        // to a timestamp), which the placer orders without sorting.
        let transcript = rng.chance(0.3);
        // Token counts that are powers of two make equal densities of different scores
        // (a score and its double over a count and its double), whose order the greedy
        // fill takes from Sort's.
        let coarse = rng.chance(0.3);
        let descs = (0..n)
            .map(|i| {
                // SAFETY: all-zero is a valid descriptor.
                let mut d: ctxpack_item_desc = unsafe { std::mem::zeroed() };
                d.struct_size = std::mem::size_of::<ctxpack_item_desc>();
                d.content = s(&contents[i]);
                d.tokens = match rng.below(20) {
                    0 => -rng.range(1, 5),
                    1 => 0,
                    2 if rng.chance(0.1) => i64::MAX / 2,
                    _ if coarse => 1 << rng.below(4),
                    _ => rng.range(1, 60),
                };
                d.kind = s(KINDS[rng.below(if odd { 9 } else { 8 })]);
                d.source = s(SOURCES[rng.below(if odd { 6 } else { 5 })]);
                d.tags = if tags[i].is_empty() {
                    std::ptr::null()
                } else {
                    tags[i].as_ptr()
                };
                d.tag_count = tags[i].len();
                d.metadata = if metadata[i].is_empty() {
                    std::ptr::null()
                } else {
                    metadata[i].as_ptr()
                };
                d.metadata_count = metadata[i].len();
                d.pinned = u8::from(rng.chance(0.1));
                d.has_priority = u8::from(rng.chance(0.8));
                d.priority = match rng.chance(0.1) {
                    true => rng.range(-1_000_000, 1_000_000),
                    false => rng.range(-2, 10),
                };
                d.has_timestamp = u8::from(rng.chance(0.85));
                d.timestamp_ns = match rng.chance(0.2) && !transcript {
                    true => rng.range(-100, 100),
                    false => i as i64 / 3,
                };
                d.has_future_relevance_hint = u8::from(rng.chance(0.8));
                d.future_relevance_hint = match rng.below(12) {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    2 => -0.5,
                    3 => 1.5,
                    _ => rng.unit(),
                };
                d.has_original_tokens = u8::from(rng.chance(0.1));
                if odd && rng.chance(0.05) {
                    d.has_priority = 2; // invalid: the general path reports it
                }
                if odd && rng.chance(0.05) {
                    d.group = s("call-1"); // declined: groups need the general path
                }
                d
            })
            .collect();
        Input {
            descs,
            _contents: contents,
            _tags: tags,
            _metadata: metadata,
        }
    }

    fn leaf(rng: &mut Rng) -> Arc<dyn Scorer> {
        match rng.below(7) {
            0 => Arc::new(RecencyScorer::new()),
            1 => Arc::new(PriorityScorer::new()),
            2 => Arc::new(KindScorer::new()),
            3 => {
                let kinds = ["Message", "custom", "Memory"];
                let weights = kinds
                    .iter()
                    .map(|k| (crate::ContextKind::new(*k).unwrap(), rng.unit() * 2.0))
                    .collect();
                Arc::new(KindScorer::with_weights(weights).unwrap())
            }
            4 => {
                let mut weights = Vec::new();
                for tag in ["a", "plan", "a-tag-longer-than-16", "é", "unused"] {
                    if rng.chance(0.7) {
                        let w = if rng.chance(0.2) { 0.0 } else { rng.unit() };
                        weights.push((tag.to_string(), w));
                    }
                }
                Arc::new(TagScorer::new(weights).unwrap())
            }
            5 => Arc::new(ReflexiveScorer::new()),
            _ if rng.chance(0.3) => Arc::new(FrequencyScorer::new()),
            _ => Arc::new(ReflexiveScorer::new()),
        }
    }

    fn pipeline(rng: &mut Rng) -> Pipeline {
        let scorer = match rng.chance(0.3) {
            true => leaf(rng),
            false => {
                let children = (0..1 + rng.below(6))
                    .map(|_| (leaf(rng), 0.1 + rng.unit() * 3.0))
                    .collect();
                Arc::new(CompositeScorer::new(children).unwrap())
            }
        };
        let slicer: Arc<dyn Slicer> = match rng.chance(0.05) {
            true => Arc::new(KnapsackSlice::new(5).unwrap()),
            false => Arc::new(GreedySlice::new()),
        };
        let placer: Arc<dyn Placer> = match rng.chance(0.5) {
            true => Arc::new(ChronologicalPlacer::new()),
            false => Arc::new(UShapedPlacer::new()),
        };
        let strategy = *rng.pick(&[
            OverflowStrategy::Throw,
            OverflowStrategy::Truncate,
            OverflowStrategy::Proceed,
        ]);
        Pipeline::builder()
            .scorer(scorer)
            .slicer(slicer)
            .placer(placer)
            .deduplication(rng.chance(0.8))
            .pinned_first(rng.chance(0.3))
            .overflow_strategy(strategy)
            .build()
            .unwrap()
    }

    fn budget(rng: &mut Rng, descs: &[ctxpack_item_desc]) -> ContextBudget {
        let total: i64 = descs.iter().map(|d| d.tokens.clamp(0, 1000)).sum();
        let max = rng.range(0, 2 * total + 1);
        let target = rng.range(0, max);
        let reserve = rng.range(0, max - target);
        let slots = match rng.chance(0.2) {
            true => {
                let kind = crate::ContextKind::new(*rng.pick(&["Memory", "Custom"])).unwrap();
                vec![(kind, rng.range(0, target.min(max - reserve).min(30)))]
            }
            false => Vec::new(),
        };
        let margin = if rng.chance(0.2) {
            rng.unit() * 30.0
        } else {
            0.0
        };
        ContextBudget::with_all(max, target, reserve, slots, margin).unwrap()
    }

    /// A cancelled token declines the columnar run (while the descriptors are read, and
    /// between the stages); a live one changes nothing.
    #[test]
    fn a_cancelled_run_declines() {
        let mut rng = Rng::new(7);
        let input = input(&mut rng, 40);
        let weights = vec![("a".to_string(), 1.0), ("plan".to_string(), 0.5)];
        let children: Vec<(Arc<dyn Scorer>, f64)> = vec![
            (Arc::new(RecencyScorer::new()), 2.0),
            (Arc::new(TagScorer::new(weights).unwrap()), 1.0),
        ];
        let pipeline = Pipeline::builder()
            .scorer(Arc::new(CompositeScorer::new(children).unwrap()))
            .slicer(Arc::new(GreedySlice::new()))
            .placer(Arc::new(ChronologicalPlacer::new()))
            .overflow_strategy(OverflowStrategy::Proceed)
            .build()
            .unwrap();
        let budget = ContextBudget::new(10_000, 10_000).unwrap();
        let plan = pipeline.column_plan().unwrap();
        let (descs, count) = (input.descs.as_ptr(), input.descs.len());
        let content_of = |i: usize| unsafe { content(descs, i) };
        let token = crate::CancelToken::new();
        let _scope = crate::cancel::Scope::enter(&token);
        // SAFETY: the descriptors and their strings live in `input`.
        let ColumnarScratch {
            mut columns,
            mut stages,
        } = ColumnarScratch::default();
        unsafe { read_columns(&plan, descs, count, &mut columns) }.unwrap();
        assert!(plan
            .run(&columns, content_of, &budget, &mut stages)
            .is_some());
        token.cancel();
        assert!(plan
            .run(&columns, content_of, &budget, &mut stages)
            .is_none());
        // SAFETY: as above.
        assert!(unsafe { read_columns(&plan, descs, count, &mut columns) }.is_none());
    }

    /// Runs `plan` over the descriptors in `scratch`: the selection, or `None` where the
    /// columnar path declines.
    ///
    /// # Safety
    /// `descs` holds `count` descriptors.
    unsafe fn run_columnar(
        plan: &ColumnPlan<'_>,
        descs: *const ctxpack_item_desc,
        count: usize,
        budget: &ContextBudget,
        scratch: &mut ColumnarScratch,
    ) -> Option<crate::pipeline::Selection> {
        // SAFETY: forwarded from the caller.
        unsafe { read_columns(plan, descs, count, &mut scratch.columns) }?;
        let content_of = |i: usize| unsafe { content(descs, i) };
        plan.run(&scratch.columns, content_of, budget, &mut scratch.stages)?;
        Some(scratch.stages.take_selection())
    }

    /// The one-shot run's columnar path gives exactly the general path's selection on
    /// every input it takes, declines only where it must, and takes most inputs; with
    /// fresh buffers, and with buffers every earlier case used (as a reused result's).
    #[test]
    fn columnar_runs_equal_the_general_path() {
        let (mut taken, mut declined_eligible) = (0, 0);
        let mut reused = ColumnarScratch::default();
        for seed in 0..3000u64 {
            let mut rng = Rng::new(seed);
            let n = match seed % 10 {
                0 => rng.below(3),
                9 => 300 + rng.below(300),
                _ => rng.below(60),
            };
            let input = input(&mut rng, n);
            let pipeline = pipeline(&mut rng);
            let budget = budget(&mut rng, &input.descs);
            let (descs, count) = (input.descs.as_ptr(), input.descs.len());
            // SAFETY: the descriptors and their strings live in `input`.
            let general = unsafe { items_from_descs(descs, count) }
                .map_err(|e| e.message)
                .and_then(|items| pipeline.run(&items, &budget).map_err(|e| e.to_string()));
            let Some(plan) = pipeline.column_plan() else {
                continue;
            };
            // SAFETY (both): as above.
            let fresh = &mut ColumnarScratch::for_one_run();
            let columnar = unsafe { run_columnar(&plan, descs, count, &budget, fresh) };
            let again = unsafe { run_columnar(&plan, descs, count, &budget, &mut reused) };
            assert_eq!(again, columnar, "seed {seed}: reused buffers");
            match (&columnar, &general) {
                (Some(c), Ok(g)) => {
                    taken += 1;
                    assert_eq!(c.indices, g.indices, "seed {seed}");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&c.scores), bits(&g.scores), "seed {seed}");
                    assert_eq!(c.reasons, g.reasons, "seed {seed}");
                    assert!(c.forms.is_empty() && g.forms.is_empty(), "seed {seed}");
                    assert!(c.overflow.is_none() && g.overflow.is_none(), "seed {seed}");
                }
                (Some(_), Err(e)) => {
                    panic!("seed {seed}: columnar ran, the general path failed: {e}")
                }
                (None, Ok(g)) => {
                    let group = input.descs.iter().any(|d| d.group.len != 0);
                    // Declining a run that succeeds is right only for an input it does not
                    // take, or a merged list over the target (Proceed's event, or
                    // Truncate's drops).
                    let over = g.overflow.is_some()
                        || pipeline.overflow_strategy() == OverflowStrategy::Truncate;
                    assert!(group || over, "seed {seed}: declined a run it could make");
                    declined_eligible += usize::from(!group);
                }
                (None, Err(_)) => {}
            }
        }
        // About half the pipelines or inputs are ones it does not take, or runs that fail.
        assert!(taken > 1200, "the columnar path ran {taken} times");
        assert!(
            declined_eligible < taken / 5,
            "declined {declined_eligible} times"
        );
    }
}
