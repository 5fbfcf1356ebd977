//! The columnar run: a plain run over the items' fields laid out as columns rather than
//! as [`ContextItem`](crate::ContextItem)s, for the one-shot C ABI run
//! (`ctxpack_pipeline_run_descs`), which reads the fields straight from the caller's
//! descriptors without building items (docs/performance.md, "The columnar one-shot run").
//!
//! It takes a pipeline whose every stage can be computed from a few columns: the scorer is
//! a Recency, Priority, Kind, Tag or Reflexive scorer, or a composite of them; the slicer
//! is GreedySlice; the placer is chronological or U-shaped. It computes exactly what
//! [`Pipeline::run`] computes for such a pipeline over items without groups or variants,
//! untraced, with the same functions for every step (the rank passes, the per-item scores,
//! Deduplicate's content grouping, the score sort, the greedy fill, the placement orders).
//! A run that would fail or overflow its target is not finished here: [`ColumnPlan::run`]
//! returns `None` and the caller takes the general path, which reports the error or
//! applies the overflow strategy. The tests of `ffi/columns.rs` compare both paths on
//! generated inputs and pipelines.

use crate::cancel::check as check_cancelled;
use crate::error::checked_token_sum;
use crate::model::{ContextBudget, ContextKind};
use crate::pipeline::deduplicate::best_of_each_content;
use crate::pipeline::place::place_plain;
use crate::pipeline::score::Candidate;
use crate::pipeline::slice::kept;
use crate::pipeline::sort::sort_by_score;
use crate::pipeline::{Pipeline, Selection};
use crate::placer::{chronological_order, u_shaped_order, ChronologicalPlacer, UShapedPlacer};
use crate::scorer::{
    clamped_hint, rank_keyed_by_counting, rank_sorted, CompositeScorer, KindScorer, PriorityScorer,
    RecencyScorer, ReflexiveScorer, Scorer, TagScorer,
};
use crate::slicer::{greedy_select_columns, GreedySlice};

/// A scorer the columnar run computes from the columns.
#[derive(Clone, Copy)]
enum FieldScorer<'p> {
    /// Ranks by timestamp.
    Recency,
    /// Ranks by priority.
    Priority,
    /// An item's score depends on that item's fields alone: its column of
    /// [`Columns::field_scores`] holds it.
    PerItem(PerItemField<'p>),
}

/// A scorer whose score of an item depends on that item alone, computed while the item's
/// fields are read.
#[derive(Clone, Copy)]
pub(crate) enum PerItemField<'p> {
    /// KindScorer: the weight of the item's kind.
    Kind(&'p KindScorer),
    /// TagScorer: the matched weights of the item's tags.
    Tag(&'p TagScorer),
    /// ReflexiveScorer: the item's hint, clamped.
    Reflexive,
}

impl<'p> FieldScorer<'p> {
    fn of(scorer: &'p dyn Scorer) -> Option<Self> {
        let any = scorer.as_any();
        Some(if any.is::<RecencyScorer>() {
            Self::Recency
        } else if any.is::<PriorityScorer>() {
            Self::Priority
        } else if let Some(kind) = any.downcast_ref::<KindScorer>() {
            Self::PerItem(PerItemField::Kind(kind))
        } else if let Some(tag) = any.downcast_ref::<TagScorer>() {
            Self::PerItem(PerItemField::Tag(tag))
        } else if any.is::<ReflexiveScorer>() {
            Self::PerItem(PerItemField::Reflexive)
        } else {
            return None;
        })
    }
}

/// At most this many scorers (composite children) in a columnar run, so at most this
/// many per-item scorers.
pub(crate) const SCORERS_MAX: usize = 16;

/// How a pipeline runs over columns: its scorers and their weights, which columns they
/// read, and its placer. Made by [`Pipeline::column_plan`].
pub(crate) struct ColumnPlan<'p> {
    pipeline: &'p Pipeline,
    /// The scorers in composite order, with their normalised weights (1.0 for a lone
    /// scorer, whose scores are taken as they are).
    scorers: Vec<(FieldScorer<'p>, f64)>,
    composite: bool,
    /// The per-item scorers, in order: the columns of [`Columns::field_scores`].
    per_item: Vec<PerItemField<'p>>,
    chronological: bool,
}

impl Pipeline {
    /// The plan of this pipeline's columnar run, or `None` when one of its stages needs
    /// the items themselves (any scorer, slicer or placer other than those the module
    /// documentation lists).
    pub(crate) fn column_plan(&self) -> Option<ColumnPlan<'_>> {
        if !self.slicer.as_any().is::<GreedySlice>() {
            return None;
        }
        let placer = self.placer.as_any();
        let chronological = placer.is::<ChronologicalPlacer>();
        if !chronological && !placer.is::<UShapedPlacer>() {
            return None;
        }
        let scorer = self.scorer.as_ref();
        let (scorers, composite) = match scorer.as_any().downcast_ref::<CompositeScorer>() {
            Some(composite) => {
                let children = composite.children();
                if children.len() > SCORERS_MAX {
                    return None;
                }
                let mut scorers = Vec::with_capacity(children.len());
                for ((child, _), &weight) in children.iter().zip(composite.normalized_weights()) {
                    scorers.push((FieldScorer::of(child.as_ref())?, weight));
                }
                (scorers, true)
            }
            None => (vec![(FieldScorer::of(scorer)?, 1.0)], false),
        };
        let per_item = scorers
            .iter()
            .filter_map(|(s, _)| match s {
                FieldScorer::PerItem(field) => Some(*field),
                _ => None,
            })
            .collect();
        Some(ColumnPlan {
            pipeline: self,
            scorers,
            composite,
            per_item,
            chronological,
        })
    }
}

/// The fields of the items, column by column, in input order; the columns a plan does
/// not read stay empty ([`ColumnPlan::reads_timestamps`] and its siblings say which). The
/// contents are not a column: a run reads one only when two hashes match, through the
/// function it is given.
#[derive(Default)]
pub(crate) struct Columns {
    /// Every item's token count.
    pub tokens: Vec<i64>,
    /// Every item's [`PINNED`], [`HAS_TIMESTAMP`] and [`HAS_PRIORITY`] bits.
    pub flags: Vec<u8>,
    /// Every item's timestamp (any value without [`HAS_TIMESTAMP`]), when the plan reads
    /// them.
    pub timestamps: Vec<i64>,
    /// Every item's priority (any value without [`HAS_PRIORITY`]), when the plan reads
    /// them.
    pub priorities: Vec<i64>,
    /// Row-major, one row per item: the score each of the plan's per-item scorers
    /// ([`ColumnPlan::per_item`]) gives the item.
    pub field_scores: Vec<f64>,
    /// Every item's content hash (`ContextItem::content_hash`), when the pipeline
    /// deduplicates.
    pub hashes: Vec<u64>,
}

/// [`Columns::flags`]: the item is pinned.
pub(crate) const PINNED: u8 = 1;
/// [`Columns::flags`]: the item has a timestamp.
pub(crate) const HAS_TIMESTAMP: u8 = 2;
/// [`Columns::flags`]: the item has a priority.
pub(crate) const HAS_PRIORITY: u8 = 4;

impl Columns {
    fn timestamp(&self, index: usize) -> Option<i64> {
        (self.flags[index] & HAS_TIMESTAMP != 0).then(|| self.timestamps[index])
    }
}

impl<'p> ColumnPlan<'p> {
    /// The per-item scorers, in order: [`Columns::field_scores`] has one column for each.
    pub(crate) fn per_item(&self) -> &[PerItemField<'p>] {
        &self.per_item
    }

    /// Whether the run reads [`Columns::timestamps`].
    pub(crate) fn reads_timestamps(&self) -> bool {
        self.chronological
            || self
                .scorers
                .iter()
                .any(|(s, _)| matches!(s, FieldScorer::Recency))
    }

    /// Whether the run reads [`Columns::priorities`].
    pub(crate) fn reads_priorities(&self) -> bool {
        self.scorers
            .iter()
            .any(|(s, _)| matches!(s, FieldScorer::Priority))
    }

    /// Whether the run reads [`Columns::hashes`] (and contents).
    pub(crate) fn reads_contents(&self) -> bool {
        self.pipeline.deduplication
    }

    /// The selection [`Pipeline::run`] makes over items with these fields (no groups, no
    /// variants, untraced) and contents (`content(i)` is item `i`'s), or `None` when that
    /// run fails, its merged items exceed the target, or the thread's cancellation token
    /// is cancelled (seen between the stages, as a run sees it): the general path then
    /// gives the error, or applies the overflow strategy.
    pub(crate) fn run<'a>(
        &self,
        columns: &Columns,
        content: impl Fn(usize) -> &'a str,
        budget: &ContextBudget,
    ) -> Option<Selection> {
        let tokens = &columns.tokens;
        // Classify: the scoreable items become candidates (scored below), in input order.
        let mut pinned_positions = Vec::new();
        let mut candidates = Vec::with_capacity(tokens.len());
        for (index, (&own, &flags)) in tokens.iter().zip(&columns.flags).enumerate() {
            match (own < 0, flags & PINNED != 0) {
                (true, _) => {}
                (false, true) => pinned_positions.push(index),
                (false, false) => candidates.push(Candidate {
                    index,
                    score: 0.0,
                    tokens: own,
                }),
            }
        }
        let pinned_tokens =
            checked_token_sum(pinned_positions.iter().map(|&i| tokens[i]), "pinned tokens").ok()?;
        if pinned_tokens > budget.max_tokens() - budget.output_reserve() {
            return None;
        }
        check_cancelled("").ok()?;
        self.score(columns, &mut candidates);
        check_cancelled("").ok()?;
        // Deduplicate.
        if self.pipeline.deduplication && candidates.len() > 1 {
            let hashes = &columns.hashes;
            let keep = best_of_each_content(
                candidates.len(),
                |p| content(candidates[p].index),
                |p| candidates[p].score,
                |p| hashes[candidates[p].index],
            );
            if let Some(keep) = keep {
                let mut flags = keep.iter();
                candidates.retain(|_| flags.next().copied().unwrap_or(true));
            }
        }
        check_cancelled("").ok()?;
        // Sort and Slice.
        let sorted = sort_by_score(candidates);
        let effective = budget.effective(pinned_tokens);
        let mut selected = vec![false; sorted.len()];
        let (tokens_of, score_of) = (|p: usize| sorted[p].tokens, |p: usize| sorted[p].score);
        let count =
            greedy_select_columns(sorted.len(), tokens_of, score_of, &effective, &mut selected)
                .ok()?;
        let sliced = kept(&sorted, &selected, count);
        drop(sorted);
        check_cancelled("").ok()?;
        // Place: the pinned entries (score 1.0) first, then the sliced ones.
        let mut list = Vec::with_capacity(pinned_positions.len() + sliced.len());
        list.extend(pinned_positions.iter().map(|&index| Candidate {
            index,
            score: 1.0,
            tokens: tokens[index],
        }));
        list.extend(sliced);
        let merged_tokens = checked_token_sum(list.iter().map(|c| c.tokens), "merged").ok()?;
        if merged_tokens > budget.target_tokens() {
            return None;
        }
        let order = if self.chronological {
            chronological_order(list.len(), |p| columns.timestamp(list[p].index))
        } else {
            u_shaped_order(list.len(), |p| list[p].score)
        };
        let placed = place_plain(
            &list,
            pinned_positions.len(),
            order,
            self.pipeline.pinned_first,
        );
        Some(placed.into_selection(None))
    }

    /// Scores the `candidates` (input order) as the pipeline's scorer scores them: a lone
    /// scorer's own score, or the composite's `acc + score × weight` over its children in
    /// order, from 0.0 (the same operations in the same order as its passes).
    fn score(&self, columns: &Columns, candidates: &mut [Candidate]) {
        // The rank scorers' passes, in scorer order.
        let ranks: Vec<Vec<f64>> = self
            .scorers
            .iter()
            .filter_map(|&(scorer, _)| {
                let mut out = vec![0.0; candidates.len()];
                match scorer {
                    FieldScorer::Recency => {
                        let keyed = keyed(candidates, columns, HAS_TIMESTAMP, &columns.timestamps);
                        rank_sorted(&keyed, &mut out);
                    }
                    FieldScorer::Priority => {
                        let keyed = keyed(candidates, columns, HAS_PRIORITY, &columns.priorities);
                        rank_keyed_by_counting(&keyed, &mut out);
                    }
                    FieldScorer::PerItem(_) => return None,
                }
                Some(out)
            })
            .collect();
        let width = self.per_item.len();
        for (p, candidate) in candidates.iter_mut().enumerate() {
            let fields = &columns.field_scores[candidate.index * width..][..width];
            let (mut rank, mut column) = (ranks.iter(), fields.iter());
            let mut acc = 0.0;
            for &(scorer, weight) in &self.scorers {
                let score = match scorer {
                    FieldScorer::PerItem(_) => column.next(),
                    _ => rank.next().map(|r| &r[p]),
                }
                .copied()
                .unwrap_or(0.0);
                acc = match self.composite {
                    true => acc + score * weight,
                    false => score,
                };
            }
            candidate.score = acc;
        }
    }
}

/// The (key, candidate position) pairs of the candidates whose items have the flag `has`,
/// the key read from `values`: the pairs RecencyScorer and PriorityScorer rank.
fn keyed(
    candidates: &[Candidate],
    columns: &Columns,
    has: u8,
    values: &[i64],
) -> Vec<(i64, usize)> {
    let mut keyed = Vec::with_capacity(candidates.len());
    for (position, c) in candidates.iter().enumerate() {
        if columns.flags[c.index] & has != 0 {
            keyed.push((values[c.index], position));
        }
    }
    keyed
}

/// An item's kind as the columnar run reads it.
#[derive(Clone, Copy)]
pub(crate) enum KindName<'a> {
    /// A well-known spelling.
    Known(&'a ContextKind),
    /// Any other spelling (one `ContextKind::new` accepts).
    Custom(&'a str),
}

impl PerItemField<'_> {
    /// The score of an item of kind `kind` with hint `hint` whose tags, for a Tag scorer,
    /// are summed up in `tags` (by [`TagSum`]'s rule, with that scorer's weights).
    #[inline]
    pub(crate) fn score(self, kind: KindName<'_>, hint: Option<f64>, tags: TagSum) -> f64 {
        match self {
            Self::Kind(scorer) => match kind {
                KindName::Known(kind) => scorer.score_kind(kind),
                KindName::Custom(name) => scorer.score_custom_kind(name),
            },
            Self::Tag(scorer) => scorer.score_of_matched(tags.matched, tags.count),
            Self::Reflexive => clamped_hint(hint),
        }
    }
}

/// One Tag scorer's view of an item's tags: how many there are and the sum of the
/// weights it gives them, added left to right from 0.0 in the item's tag order.
#[derive(Clone, Copy, Default)]
pub(crate) struct TagSum {
    /// The item's tag count.
    pub count: usize,
    /// The matched weights' sum.
    pub matched: f64,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::placer::{Placer, UShapedPlacer};
    use crate::scorer::{FrequencyScorer, ScaledScorer};
    use crate::slicer::{KnapsackSlice, Slicer};

    fn pipeline(
        scorer: Arc<dyn Scorer>,
        slicer: Arc<dyn Slicer>,
        placer: Arc<dyn Placer>,
    ) -> Pipeline {
        Pipeline::builder()
            .scorer(scorer)
            .slicer(slicer)
            .placer(placer)
            .build()
            .unwrap()
    }

    /// Which pipelines have a columnar plan: the listed scorers (alone or as a composite's
    /// children), GreedySlice, and the chronological or U-shaped placer; nothing else.
    #[test]
    fn plans_only_for_column_ready_stages() {
        let greedy: Arc<dyn Slicer> = Arc::new(GreedySlice::new());
        let chrono: Arc<dyn Placer> = Arc::new(ChronologicalPlacer::new());
        let leaves: Vec<Arc<dyn Scorer>> = vec![
            Arc::new(RecencyScorer::new()),
            Arc::new(PriorityScorer::new()),
            Arc::new(KindScorer::new()),
            Arc::new(TagScorer::new(vec![("a".into(), 1.0)]).unwrap()),
            Arc::new(ReflexiveScorer::new()),
        ];
        for leaf in &leaves {
            let p = pipeline(leaf.clone(), greedy.clone(), chrono.clone());
            assert!(p.column_plan().is_some());
        }
        let children = leaves.iter().map(|l| (l.clone(), 1.0)).collect();
        let composite: Arc<dyn Scorer> = Arc::new(CompositeScorer::new(children).unwrap());
        let p = pipeline(composite.clone(), greedy.clone(), chrono.clone());
        let plan = p.column_plan().unwrap();
        assert_eq!(plan.per_item().len(), 3);
        assert!(plan.reads_timestamps() && plan.reads_priorities() && plan.reads_contents());
        let u_shaped: Arc<dyn Placer> = Arc::new(UShapedPlacer::new());
        let p = pipeline(leaves[4].clone(), greedy.clone(), u_shaped);
        let plan = p.column_plan().unwrap();
        assert!(!plan.reads_timestamps() && !plan.reads_priorities());

        let frequency: Arc<dyn Scorer> = Arc::new(FrequencyScorer::new());
        let scaled: Arc<dyn Scorer> = Arc::new(ScaledScorer::new(leaves[0].clone()));
        let nested: Arc<dyn Scorer> =
            Arc::new(CompositeScorer::new(vec![(composite.clone(), 1.0)]).unwrap());
        let mixed: Arc<dyn Scorer> = Arc::new(
            CompositeScorer::new(vec![(leaves[0].clone(), 1.0), (frequency.clone(), 1.0)]).unwrap(),
        );
        for scorer in [frequency, scaled, nested, mixed] {
            assert!(pipeline(scorer, greedy.clone(), chrono.clone())
                .column_plan()
                .is_none());
        }
        let knapsack: Arc<dyn Slicer> = Arc::new(KnapsackSlice::new(10).unwrap());
        assert!(pipeline(composite, knapsack, chrono)
            .column_plan()
            .is_none());
    }
}
