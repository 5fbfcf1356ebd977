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
//! Deduplicate's content grouping, the greedy fill, the placement orders), with one
//! difference: Sort's order (score descending, then input order) is never made. It only
//! breaks ties, of density in the greedy fill and of timestamps in the merged list, and
//! both are broken by the score directly (`stable_order_with_ties_in`), so a run sorts
//! its candidates once (by density) instead of twice, and a transcript whose timestamps
//! come in input order is placed without a sort.
//! A run that would fail or overflow its target is not finished here: [`ColumnPlan::run`]
//! returns `None` and the caller takes the general path, which reports the error or
//! applies the overflow strategy. The tests of `ffi/columns.rs` compare both paths on
//! generated inputs and pipelines.

use crate::cancel::check as check_cancelled;
use crate::diagnostics::InclusionReason;
use crate::error::checked_token_sum;
use crate::model::{ContextBudget, ContextKind};
use crate::pipeline::deduplicate::{best_of_each_content_in, DedupBuffers};
use crate::pipeline::place::{place_plain, Placed};
use crate::pipeline::score::Candidate;
use crate::pipeline::{Pipeline, Selection};
use crate::placer::{
    chronological_order_with_ties_into, u_shaped_order_into, ChronologicalPlacer, UShapedPlacer,
};
use crate::radix::{f64_order_key, SortBuffers};
use crate::scorer::{
    clamped_hint, count_below, rank_sorted_in, ranked_by_counting, Below, CompositeScorer,
    KindScorer, PriorityScorer, RanksInOrder, RecencyScorer, ReflexiveScorer, Scorer, TagScorer,
};
use crate::slicer::{greedy_select_columns_in, GreedySlice};

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
    /// The flag of the key a rank scorer ranks by ([`HAS_TIMESTAMP`] for Recency,
    /// [`HAS_PRIORITY`] for Priority); `None` for a per-item scorer.
    fn key_flag(self) -> Option<u8> {
        match self {
            Self::Recency => Some(HAS_TIMESTAMP),
            Self::Priority => Some(HAS_PRIORITY),
            Self::PerItem(_) => None,
        }
    }

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

/// Up to [`SCORERS_MAX`] values, held in place: a plan allocates nothing.
#[derive(Clone, Copy)]
struct Bounded<T: Copy> {
    values: [T; SCORERS_MAX],
    len: usize,
}

impl<T: Copy> Bounded<T> {
    /// An empty list (`filler` fills the unused slots).
    fn new(filler: T) -> Self {
        Self {
            values: [filler; SCORERS_MAX],
            len: 0,
        }
    }

    /// Appends `value`; `None` when the list is full.
    fn push(&mut self, value: T) -> Option<()> {
        *self.values.get_mut(self.len)? = value;
        self.len += 1;
        Some(())
    }
}

impl<T: Copy> std::ops::Deref for Bounded<T> {
    type Target = [T];

    /// The values appended, in order.
    fn deref(&self) -> &[T] {
        &self.values[..self.len]
    }
}

/// How a pipeline runs over columns: its scorers and their weights, which columns they
/// read, and its placer. Made by [`Pipeline::column_plan`].
pub(crate) struct ColumnPlan<'p> {
    pipeline: &'p Pipeline,
    /// The scorers in composite order, with their normalised weights (1.0 for a lone
    /// scorer, whose scores are taken as they are).
    scorers: Bounded<(FieldScorer<'p>, f64)>,
    composite: bool,
    /// The per-item scorers, in order: the columns of [`Columns::field_scores`].
    per_item: Bounded<PerItemField<'p>>,
    /// The positions of the Tag scorers in `per_item`.
    tag_positions: Bounded<usize>,
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
        let mut scorers = Bounded::new((FieldScorer::Recency, 0.0));
        let composite = match scorer.as_any().downcast_ref::<CompositeScorer>() {
            Some(composite) => {
                let children = composite.children();
                for ((child, _), &weight) in children.iter().zip(composite.normalized_weights()) {
                    scorers.push((FieldScorer::of(child.as_ref())?, weight))?;
                }
                true
            }
            None => {
                scorers.push((FieldScorer::of(scorer)?, 1.0))?;
                false
            }
        };
        let mut per_item = Bounded::new(PerItemField::Reflexive);
        let mut tag_positions = Bounded::new(0);
        for (s, _) in scorers.iter() {
            if let FieldScorer::PerItem(field) = s {
                if let PerItemField::Tag(_) = field {
                    tag_positions.push(per_item.len)?;
                }
                per_item.push(*field)?;
            }
        }
        Some(ColumnPlan {
            pipeline: self,
            scorers,
            composite,
            per_item,
            tag_positions,
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
    /// Empties every column, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.tokens.clear();
        self.flags.clear();
        self.timestamps.clear();
        self.priorities.clear();
        self.field_scores.clear();
        self.hashes.clear();
    }

    /// The key columns, in [`KEY_FLAGS`]' order.
    fn key_columns(&self) -> [&Vec<i64>; 2] {
        [&self.timestamps, &self.priorities]
    }

    fn timestamp(&self, index: usize) -> Option<i64> {
        (self.flags[index] & HAS_TIMESTAMP != 0).then(|| self.timestamps[index])
    }
}

impl<'p> ColumnPlan<'p> {
    /// The per-item scorers, in order: [`Columns::field_scores`] has one column for each.
    pub(crate) fn per_item(&self) -> &[PerItemField<'p>] {
        &self.per_item
    }

    /// The positions of the Tag scorers in [`per_item`](Self::per_item).
    pub(crate) fn tag_positions(&self) -> &[usize] {
        &self.tag_positions
    }

    /// Whether the run reads [`Columns::timestamps`].
    pub(crate) fn reads_timestamps(&self) -> bool {
        self.chronological || self.ranks_by(HAS_TIMESTAMP)
    }

    /// Whether the run reads [`Columns::priorities`].
    pub(crate) fn reads_priorities(&self) -> bool {
        self.ranks_by(HAS_PRIORITY)
    }

    /// Whether a rank scorer ranks by the key whose flag is `has`
    /// ([`FieldScorer::key_flag`]).
    fn ranks_by(&self, has: u8) -> bool {
        self.scorers.iter().any(|(s, _)| s.key_flag() == Some(has))
    }

    /// Whether the run reads [`Columns::hashes`] (and contents).
    pub(crate) fn reads_contents(&self) -> bool {
        self.pipeline.deduplication
    }

    /// The window [`Pipeline::run`] places for items with these fields (no groups, no
    /// variants, untraced) and contents (`content(i)` is item `i`'s), written into
    /// `buffers.placed`; `None` when that run fails, its merged items exceed the target,
    /// or the thread's cancellation token is cancelled (seen between the stages, as a run
    /// sees it): the general path then gives the error, or applies the overflow strategy.
    /// Every stage works in `buffers`, which keep their memory for the next run.
    pub(crate) fn run<'a>(
        &self,
        columns: &Columns,
        content: impl Fn(usize) -> &'a str,
        budget: &ContextBudget,
        buffers: &mut StageBuffers,
    ) -> Option<()> {
        let tokens = &columns.tokens;
        // Classify: the scoreable items become candidates (scored below), in input order.
        let StageBuffers {
            pinned, candidates, ..
        } = buffers;
        pinned.clear();
        candidates.clear();
        candidates.reserve(tokens.len());
        // The statistics of the candidates' timestamps and priorities, for the rank
        // scorers that rank by them (gathered here rather than by a pass of their own).
        let mut stats = [KeyStats::NONE; 2];
        let ranked = KEY_FLAGS.map(|has| self.ranks_by(has));
        let key_columns = columns.key_columns();
        for (index, (&own, &flags)) in tokens.iter().zip(&columns.flags).enumerate() {
            match (own < 0, flags & PINNED != 0) {
                (true, _) => {}
                (false, true) => pinned.push(index),
                (false, false) => {
                    candidates.push(Candidate {
                        index,
                        score: 0.0,
                        tokens: own,
                    });
                    for k in 0..2 {
                        if ranked[k] && flags & KEY_FLAGS[k] != 0 {
                            stats[k].add(key_columns[k].get(index).copied().unwrap_or(0));
                        }
                    }
                }
            }
        }
        let pinned_tokens =
            checked_token_sum(pinned.iter().map(|&i| tokens[i]), "pinned tokens").ok()?;
        if pinned_tokens > budget.max_tokens() - budget.output_reserve() {
            return None;
        }
        check_cancelled("").ok()?;
        self.score(columns, &stats, buffers);
        check_cancelled("").ok()?;
        let StageBuffers {
            sort,
            pinned,
            candidates,
            merged,
            dedup,
            selected,
            keys,
            timed,
            order,
            front,
            placed,
            ranks,
            keyed,
            counts,
            single_run,
        } = buffers;
        // A single run frees each stage's buffers when the stage is done.
        if *single_run {
            (*ranks, *keyed, *counts) = Default::default();
        }
        // Deduplicate.
        if self.pipeline.deduplication && candidates.len() > 1 {
            let hashes = &columns.hashes;
            let keep = best_of_each_content_in(
                candidates.len(),
                |p| content(candidates[p].index),
                |p| candidates[p].score,
                |p| hashes[candidates[p].index],
                dedup,
            );
            if let Some(keep) = keep {
                let mut flags = keep.iter();
                candidates.retain(|_| flags.next().copied().unwrap_or(true));
            }
        }
        if *single_run {
            *dedup = DedupBuffers::default();
        }
        check_cancelled("").ok()?;
        // Sort and Slice. Sort's order (score descending, then input order) is never made:
        // the greedy fill breaks ties in density by it, and Place ties in its own order.
        let effective = budget.effective(pinned_tokens);
        selected.clear();
        selected.resize(candidates.len(), false);
        let (tokens_of, score_of) = (
            |p: usize| candidates[p].tokens,
            |p: usize| candidates[p].score,
        );
        let count = greedy_select_columns_in(
            candidates.len(),
            tokens_of,
            score_of,
            &effective,
            selected,
            sort,
        )
        .ok()?;
        check_cancelled("").ok()?;
        // Place. The merged list is the pinned entries (score 1.0, input order), then the
        // sliced ones in Sort's order; `merged` holds the same entries with the sliced
        // ones in input order, and the placers are given the merged list's order as
        // their tie-breaking key ([`merged_rank`]).
        merged.clear();
        merged.reserve(pinned.len() + count);
        merged.extend(pinned.iter().map(|&index| Candidate {
            index,
            score: 1.0,
            tokens: tokens[index],
        }));
        let kept = candidates
            .iter()
            .zip(selected.iter())
            .filter(|(_, &keep)| keep);
        merged.extend(kept.map(|(c, _)| *c));
        if *single_run {
            (*candidates, *selected) = Default::default();
        }
        let merged_tokens = checked_token_sum(merged.iter().map(|c| c.tokens), "merged").ok()?;
        if merged_tokens > budget.target_tokens() {
            return None;
        }
        let list = &*merged;
        if self.chronological {
            let timestamp = |p: usize| columns.timestamp(list[p].index);
            let rank = |p: usize| merged_rank(list, pinned.len(), p);
            chronological_order_with_ties_into(
                list.len(),
                timestamp,
                Some(rank),
                sort,
                keys,
                timed,
                order,
            );
        } else {
            // U-shaped ranks by score, ties by position, which orders the entries of equal
            // scores as the merged list does: pinned ones first, then by input position.
            u_shaped_order_into(list.len(), |p| list[p].score, sort, order);
        }
        place_plain(
            list,
            pinned.len(),
            order,
            self.pipeline.pinned_first,
            front,
            placed,
        );
        Some(())
    }

    /// Scores the candidates of `buffers` (input order) as the pipeline's scorer scores
    /// them: a lone scorer's own score, or the composite's `acc + score × weight` over its
    /// children in order, from 0.0 (the same operations in the same order as its passes).
    ///
    /// Not inlined into [`run`](Self::run): inlined, its loop was compiled into code that
    /// made the whole run 7 % slower at N = 10 000 (the agent benchmark, alternating).
    #[inline(never)]
    fn score(&self, columns: &Columns, stats: &[KeyStats; 2], buffers: &mut StageBuffers) {
        let StageBuffers {
            sort,
            candidates,
            ranks,
            keyed,
            counts,
            ..
        } = buffers;
        let n = candidates.len();
        if n == 0 {
            return;
        }
        // Each rank scorer's keys and how it finds its scores (`None` for the per-item
        // scorers), in scorer order; a sorted rank pass writes a row of `ranks`.
        let mut methods = Bounded::new(None);
        counts.clear();
        let mut rows = 0;
        for &(scorer, _) in self.scorers.iter() {
            let method = RankKeys::of(scorer, columns).map(|keys| {
                let stats = stats[key_slot(keys.has)];
                (
                    keys,
                    RankMethod::choose(keys, stats, candidates, counts, &mut rows),
                )
            });
            // As many as the scorers, so the push fits.
            let _ = methods.push(method);
        }
        // The rank rows, then one row of [`SCORE_BLOCK`] scores per term.
        let block = n.min(SCORE_BLOCK);
        ranks.clear();
        ranks.resize(rows * n + self.scorers.len() * block, 0.0);
        let (rank_rows, term_rows) = ranks.split_at_mut(rows * n);
        // Every scorer's term, in scorer order.
        let mut terms = Bounded::new(Term::Field(0));
        let (mut rows, mut field) = (rank_rows.chunks_exact_mut(n), 0);
        for &method in methods.iter() {
            let term = match method {
                Some((keys, method)) => {
                    let scores = match method {
                        RankMethod::Lone => RankScores::Lone,
                        RankMethod::InOrder(ranks) => RankScores::InOrder(ranks),
                        RankMethod::Counted {
                            start,
                            len,
                            lowest,
                            denominator,
                        } => {
                            let table = counts.get(start..start + len).unwrap_or_default();
                            RankScores::Counted(Below::new(table, lowest), denominator)
                        }
                        RankMethod::Row => {
                            let row = rows.next().unwrap_or_default();
                            fill_keyed(keyed, candidates, keys);
                            rank_sorted_in(keyed, row, sort);
                            RankScores::Row(row)
                        }
                    };
                    Term::Rank(keys, scores)
                }
                None => {
                    field += 1;
                    Term::Field(field - 1)
                }
            };
            let _ = terms.push(term);
        }
        let fields = Fields {
            scores: &columns.field_scores,
            width: self.per_item.len(),
        };
        for (b, chunk) in candidates.chunks_mut(SCORE_BLOCK).enumerate() {
            let first = b * SCORE_BLOCK;
            let mut outs = term_rows.chunks_exact_mut(block);
            for term in terms.values[..terms.len].iter_mut() {
                let out = &mut outs.next().unwrap_or_default()[..chunk.len()];
                term.write_scores(chunk, first, fields, out);
            }
            if self.composite {
                let mut acc = [0.0; SCORE_BLOCK];
                let acc = &mut acc[..chunk.len()];
                for (scores, &(_, weight)) in term_rows.chunks_exact(block).zip(&*self.scorers) {
                    for (a, &score) in acc.iter_mut().zip(scores) {
                        *a += score * weight;
                    }
                }
                for (c, &a) in chunk.iter_mut().zip(&*acc) {
                    c.score = a;
                }
            } else {
                for (c, &score) in chunk.iter_mut().zip(&*term_rows) {
                    c.score = score;
                }
            }
        }
    }
}

/// Candidates scored together by [`ColumnPlan::score`]: each scorer's scores of a block
/// are found by a loop of its own, then added up term by term, in rows that stay in the
/// core's first-level cache. (One candidate at a time, with a match on every term, the
/// terms' state went through memory: the loop took 1.5 ms at N = 100 000, the whole
/// scoring stage now 0.8 ms; docs/performance.md, "Scoring in blocks".)
const SCORE_BLOCK: usize = 256;

/// The per-item scores of [`Columns::field_scores`]: row-major, `width` per item.
#[derive(Clone, Copy)]
struct Fields<'c> {
    scores: &'c [f64],
    width: usize,
}

impl Term<'_> {
    /// Writes this scorer's score of each candidate of `chunk` (which starts at candidate
    /// position `first`) into `out`, in order.
    #[inline]
    fn write_scores(
        &mut self,
        chunk: &[Candidate],
        first: usize,
        fields: Fields<'_>,
        out: &mut [f64],
    ) {
        let pairs = out.iter_mut().zip(chunk);
        match self {
            Term::Field(k) => {
                for (o, c) in pairs {
                    *o = fields
                        .scores
                        .get(c.index * fields.width + *k)
                        .copied()
                        .unwrap_or(0.0);
                }
            }
            Term::Rank(_, RankScores::Row(row)) => {
                let row = row.get(first..first + out.len()).unwrap_or_default();
                for (o, &score) in out.iter_mut().zip(row) {
                    *o = score;
                }
            }
            Term::Rank(keys, RankScores::Lone) => {
                for (o, c) in pairs {
                    *o = match keys.key(c.index) {
                        Some(_) => 1.0,
                        None => 0.0,
                    };
                }
            }
            Term::Rank(keys, RankScores::InOrder(ranks)) => {
                for (o, c) in pairs {
                    *o = match keys.key(c.index) {
                        Some(key) => ranks.next(key),
                        None => 0.0,
                    };
                }
            }
            Term::Rank(keys, RankScores::Counted(below, denominator)) => {
                for (o, c) in pairs {
                    *o = match keys.key(c.index) {
                        Some(key) => below.rank(key) as f64 / *denominator,
                        None => 0.0,
                    };
                }
            }
        }
    }
}

/// One scorer's part of a candidate's score.
#[derive(Clone, Copy)]
enum Term<'c> {
    /// A per-item scorer: column `k` of the item's row of [`Columns::field_scores`].
    Field(usize),
    /// A rank scorer: its keys and its scores.
    Rank(RankKeys<'c>, RankScores<'c>),
}

/// A rank scorer's scores for the candidates, as [`RankMethod`] finds them.
#[derive(Clone, Copy)]
enum RankScores<'c> {
    /// [`RankMethod::Lone`].
    Lone,
    /// [`RankMethod::InOrder`].
    InOrder(RanksInOrder),
    /// [`RankMethod::Counted`]: the counts below each key, and `m − 1`.
    Counted(Below<'c>, f64),
    /// [`RankMethod::Row`]: the scores by candidate position.
    Row(&'c [f64]),
}

/// The keys a rank scorer ranks by: the items' timestamps (Recency) or priorities
/// (Priority), each present when its flag is set.
#[derive(Clone, Copy)]
struct RankKeys<'c> {
    flags: &'c [u8],
    has: u8,
    values: &'c [i64],
}

impl<'c> RankKeys<'c> {
    /// The keys of `scorer`, `None` for a per-item scorer.
    #[inline]
    fn of(scorer: FieldScorer<'_>, columns: &'c Columns) -> Option<Self> {
        let has = scorer.key_flag()?;
        let values = columns.key_columns()[key_slot(has)];
        Some(Self {
            flags: &columns.flags,
            has,
            values,
        })
    }

    /// Item `index`'s key, if it has one.
    #[inline]
    fn key(&self, index: usize) -> Option<i64> {
        (self.flags[index] & self.has != 0).then(|| self.values[index])
    }
}

/// How the columnar run finds one rank scorer's scores (every way gives each keyed
/// candidate `#(keys strictly smaller) / (m − 1)`, the rank pass's score, bit for bit).
#[derive(Clone, Copy)]
enum RankMethod {
    /// At most one candidate has a key: it scores 1.0 (the others 0.0).
    Lone,
    /// The keys come in non-decreasing candidate order: ranked while the candidates are
    /// scored in order, without a pass of their own.
    InOrder(RanksInOrder),
    /// Keys of a small span: `counts[start..start + len]` counts the keys below each
    /// value from `lowest` on.
    Counted {
        start: usize,
        len: usize,
        lowest: i64,
        denominator: f64,
    },
    /// Sorted by the rank pass into the next row of the rank rows.
    Row,
}

impl RankMethod {
    /// The method for `keys` over `candidates`, whose keys have the statistics `stats`: a
    /// counting table is appended to `counts`; a sorted pass is counted in `rows` (each
    /// takes the next row).
    fn choose(
        keys: RankKeys<'_>,
        stats: KeyStats,
        candidates: &[Candidate],
        counts: &mut Vec<usize>,
        rows: &mut usize,
    ) -> Self {
        let KeyStats {
            m,
            lowest,
            highest,
            in_order,
            ..
        } = stats;
        if m < 2 {
            Self::Lone
        } else if in_order {
            Self::InOrder(RanksInOrder::new(m))
        } else if ranked_by_counting(m, lowest, highest) {
            let start = counts.len();
            let keyed = candidates.iter().filter_map(|c| keys.key(c.index));
            count_below(keyed, lowest, highest, counts);
            Self::Counted {
                start,
                len: counts.len() - start,
                lowest,
                denominator: (m - 1) as f64,
            }
        } else {
            *rows += 1;
            Self::Row
        }
    }
}

/// The flags of the two key columns a rank scorer ranks by, in the order of
/// [`Columns::key_columns`] and of the statistics [`ColumnPlan::run`] gathers: timestamps,
/// then priorities.
const KEY_FLAGS: [u8; 2] = [HAS_TIMESTAMP, HAS_PRIORITY];

/// The place of the key column whose flag is `has` in [`KEY_FLAGS`]' order.
fn key_slot(has: u8) -> usize {
    usize::from(has == HAS_PRIORITY)
}

/// What decides how the candidates' keys of one column are ranked ([`RankMethod`]): how
/// many there are, their range, and whether they come in non-decreasing candidate order.
#[derive(Clone, Copy)]
struct KeyStats {
    m: usize,
    lowest: i64,
    highest: i64,
    in_order: bool,
    /// The last key added.
    previous: i64,
}

impl KeyStats {
    /// The statistics of no key.
    const NONE: Self = Self {
        m: 0,
        lowest: i64::MAX,
        highest: i64::MIN,
        in_order: true,
        previous: i64::MIN,
    };

    /// Adds the next candidate's key.
    #[inline]
    fn add(&mut self, key: i64) {
        self.m += 1;
        self.lowest = self.lowest.min(key);
        self.highest = self.highest.max(key);
        self.in_order &= self.previous <= key;
        self.previous = key;
    }
}

/// Fills `keyed` (cleared first) with the (key, candidate position) pairs of the
/// candidates that have a key: the pairs the rank pass ranks.
fn fill_keyed(keyed: &mut Vec<(i64, usize)>, candidates: &[Candidate], keys: RankKeys<'_>) {
    keyed.clear();
    keyed.reserve(candidates.len());
    for (position, c) in candidates.iter().enumerate() {
        if let Some(key) = keys.key(c.index) {
            keyed.push((key, position));
        }
    }
}

/// The place of entry `p` of `list` (its first `pinned` entries pinned, in input order;
/// the others in input order) in the merged list of the specification, up to position:
/// pinned entries first, then the others by score descending under the total order. Two
/// entries compare like their merged positions when their ranks, then their positions in
/// `list`, are compared.
fn merged_rank(list: &[Candidate], pinned: usize, p: usize) -> (bool, u64) {
    match p < pinned {
        true => (false, 0),
        false => (true, !f64_order_key(list[p].score)),
    }
}

/// The memory of a columnar run: its columns and its stages' buffers, kept between runs
/// by a reused result (`ctxpack_pipeline_run_descs_into`).
#[derive(Default)]
pub(crate) struct ColumnarScratch {
    /// The columns read from the descriptors.
    pub columns: Columns,
    /// The stages' buffers, with the run's window.
    pub stages: StageBuffers,
}

impl ColumnarScratch {
    /// Memory for a single run, which frees each stage's buffers as soon as the stage is
    /// done (the one-shot run's peak memory stays that of one stage, not of all).
    pub(crate) fn for_one_run() -> Self {
        let mut scratch = Self::default();
        scratch.stages.single_run = true;
        scratch
    }
}

impl StageBuffers {
    /// The window of the last run as an untraced selection, its memory moved out.
    pub(crate) fn take_selection(&mut self) -> Selection {
        std::mem::take(&mut self.placed).into_selection(None)
    }

    /// The window of the last run as an untraced selection without its reasons, which
    /// stay in the buffers ([`StageBuffers::reasons`]), their memory kept for the next run.
    pub(crate) fn take_selection_but_reasons(&mut self) -> Selection {
        let placed = &mut self.placed;
        Selection {
            indices: std::mem::take(&mut placed.indices),
            scores: std::mem::take(&mut placed.scores),
            reasons: Vec::new(),
            forms: std::mem::take(&mut placed.forms),
            overflow: placed.overflow.take(),
            report: None,
        }
    }

    /// The placed items' reasons in the window of the last run.
    pub(crate) fn reasons(&self) -> &[InclusionReason] {
        &self.placed.reasons
    }

    /// Makes `selection` the window of the last run, untraced, by swapping memory with it:
    /// the buffers get the selection's old vectors for the next run.
    pub(crate) fn swap_into(&mut self, selection: &mut Selection) {
        let placed = &mut self.placed;
        std::mem::swap(&mut selection.indices, &mut placed.indices);
        std::mem::swap(&mut selection.scores, &mut placed.scores);
        std::mem::swap(&mut selection.reasons, &mut placed.reasons);
        std::mem::swap(&mut selection.forms, &mut placed.forms);
        selection.overflow = placed.overflow.take();
        selection.report = None;
    }
}

/// The memory of a columnar run's stages, kept between runs (a reused result keeps it:
/// `ctxpack_pipeline_run_descs_into`), so that a run no larger than an earlier one makes
/// no allocation. Every buffer is cleared before it is used.
#[derive(Default)]
pub(crate) struct StageBuffers {
    /// The sorts' buffers.
    sort: SortBuffers,
    /// The pinned items' input positions.
    pinned: Vec<usize>,
    /// The scored candidates, in input order.
    candidates: Vec<Candidate>,
    /// The pinned entries, then the selected candidates in input order.
    merged: Vec<Candidate>,
    /// The scores of the rank scorers ranked by a sorted pass, one row each.
    ranks: Vec<f64>,
    /// The (key, position) pairs a sorted rank pass ranks.
    keyed: Vec<(i64, usize)>,
    /// The counted rank scorers' tables of counts.
    counts: Vec<usize>,
    /// Deduplicate's tables.
    dedup: DedupBuffers,
    /// Slice's choice, per candidate.
    selected: Vec<bool>,
    /// The chronological placer's keys.
    keys: Vec<u64>,
    /// The chronological placer's timestamped positions, when some have none.
    timed: Vec<usize>,
    /// The placer's order.
    order: Vec<usize>,
    /// The pinned-first order.
    front: Vec<usize>,
    /// The run's window.
    placed: Placed,
    /// The buffers serve one run only: each stage's are freed when it is done
    /// ([`ColumnarScratch::for_one_run`]).
    single_run: bool,
}

/// An item's kind as the columnar run reads it.
#[derive(Clone, Copy)]
pub(crate) enum KindName<'a> {
    /// A well-known spelling, by its position in `ContextKind::KNOWN`.
    Known(usize),
    /// Any other spelling (one `ContextKind::new` accepts).
    Custom(&'a str),
}

impl Default for KindName<'_> {
    /// The default kind.
    fn default() -> Self {
        Self::Known(ContextKind::default().known_index().unwrap_or(0))
    }
}

impl PerItemField<'_> {
    /// The score of an item of kind `kind` with hint `hint` whose tags, for a Tag scorer,
    /// are summed up in `tags` (by [`TagSum`]'s rule, with that scorer's weights).
    #[inline]
    pub(crate) fn score(self, kind: KindName<'_>, hint: Option<f64>, tags: TagSum) -> f64 {
        match self {
            Self::Kind(scorer) => match kind {
                KindName::Known(index) => scorer.score_known(index),
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
