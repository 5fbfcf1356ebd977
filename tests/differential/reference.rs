//! The reference pipeline: the crate's own scorer, slicer and placer, driven through the six stages
//! the way ctxpack's decisions require, with items named by input position.
//!
//! The crate's `Pipeline` cannot serve as the oracle: it ignores reserved slots and the safety
//! margin (decision D1 in docs/decisions.md), keeps the slicer's output order and re-associates
//! scores by content (decision D2), re-sorts before truncating (decision D3), never builds an
//! overflow event (decision D7), and skips count requirements without candidates (decision D10).
//! This driver performs:
//!
//! classify → score (crate scorer, one pass over the scoreable list) → dedup (strict `>`) → stable
//! sort by `total_cmp` descending → effective budget (decision D1) → crate slicer → re-associate by
//! identity in Sort order (decision D2) → pinned (score 1.0) first → overflow (Throw / Truncate
//! walk of decision D3 / Proceed with an event, decision D7) → crate placer,
//!
//! and records the report the way 02 §6.4 and 06 §7.2 describe, with decisions D4, D5, D6, D10 and
//! decision D18 applied.

use std::collections::HashMap;

use ctxpack::diagnostics::{
    CountRequirementShortfall, ExclusionReason, InclusionReason, PipelineStage,
};
use ctxpack::{ErrorCode, OverflowStrategy};

use crate::both::{cupel_error_code, id_of, theirs_all, Both};
use crate::gen::{BudgetSpec, ItemSpec, PipelineSpec, PlacerSpec, SlicerSpec};
use crate::report::{Entry, ReportView};

/// An item with its score: (input position, score).
type Scored = (usize, f64);

/// What a count-quota slicer is expected to report or raise (decision D10 in docs/decisions.md).
#[derive(Debug, Clone, Default)]
pub struct CountExpectation {
    /// Shortfalls in configuration order (Degrade).
    pub shortfalls: Vec<CountRequirementShortfall>,
    /// The first short entry in configuration order, when the slicer must fail (Throw).
    pub throws: Option<CountRequirementShortfall>,
    /// Under Throw: every short kind has no candidate at all, so the crate (which only
    /// walks kinds present in the input) would not fail.
    pub crate_silent: bool,
}

/// Decision D10 in docs/decisions.md: a count-quota slicer walks its entries in configuration
/// order; a required kind with fewer candidates than required is a shortfall (Degrade) or an error
/// (Throw). An empty input or a target `<= 0` returns before Phase 1.
pub fn count_expectation(slicer: &SlicerSpec, kinds: &[&str], target: i64) -> CountExpectation {
    let Some((entries, throw)) = slicer.count_entries() else {
        return CountExpectation::default();
    };
    if kinds.is_empty() || target <= 0 {
        return CountExpectation::default();
    }
    let short: Vec<CountRequirementShortfall> = entries
        .iter()
        .filter_map(|&(kind, required, _)| {
            let found = kinds
                .iter()
                .filter(|k| k.eq_ignore_ascii_case(kind))
                .count();
            (found < required).then(|| CountRequirementShortfall {
                kind: kind.to_string(),
                required_count: required as u64,
                satisfied_count: found as u64,
            })
        })
        .collect();
    if throw {
        CountExpectation {
            crate_silent: short.iter().all(|s| s.satisfied_count == 0),
            throws: short.into_iter().next(),
            shortfalls: Vec::new(),
        }
    } else {
        CountExpectation {
            shortfalls: short,
            ..CountExpectation::default()
        }
    }
}

/// A run the reference expects to fail.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The error kind.
    pub code: ErrorCode,
    /// The crate's own pipeline would not fail here (decision D10 in docs/decisions.md).
    pub crate_silent: bool,
}

/// Everything a successful run is expected to produce.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expected {
    /// Placed input positions.
    pub indices: Vec<usize>,
    /// Score of each placed item.
    pub scores: Vec<f64>,
    /// Inclusion reason of each placed item.
    pub reasons: Vec<InclusionReason>,
    /// Proceed over target: (tokens over budget, merged positions).
    pub overflow: Option<(i64, Vec<usize>)>,
    /// The report.
    pub report: ReportView,
    /// Count shortfalls (decision D10 in docs/decisions.md).
    pub shortfalls: Vec<CountRequirementShortfall>,
    /// Item events per stage (input positions, recording order), for Item detail (decision D8 in
    /// docs/decisions.md).
    pub item_events: Vec<(PipelineStage, Vec<usize>)>,
    /// Two sliced items tie for the placer, so the crate's slicer-order merge may place them
    /// differently (decision D2 in docs/decisions.md).
    pub placement_tie: bool,
    /// Truncate dropped items and two merged non-pinned items tie in score, so the crate's re-sort
    /// may keep a different set (decision D3 in docs/decisions.md).
    pub truncation_tie: bool,
}

/// Runs the reference pipeline on a spec.
pub fn run(spec: &PipelineSpec) -> Result<Expected, Failure> {
    Driver::new(spec).run()
}

/// The state of one reference run.
struct Driver<'a> {
    spec: &'a PipelineSpec,
    items: Vec<cupel::ContextItem>,
    report: ReportView,
    item_events: Vec<(PipelineStage, Vec<usize>)>,
    /// Exclusions in recording order, sorted into the report at the end.
    recorded: Vec<Entry<ExclusionReason>>,
}

fn fail(code: ErrorCode) -> Failure {
    Failure {
        code,
        crate_silent: false,
    }
}

impl<'a> Driver<'a> {
    fn new(spec: &'a PipelineSpec) -> Self {
        Self {
            spec,
            items: theirs_all(&spec.items),
            report: ReportView::default(),
            item_events: Vec::new(),
            recorded: Vec::new(),
        }
    }

    fn tokens(&self, pos: usize) -> i64 {
        self.spec.items[pos].tokens
    }

    fn item(&self, pos: usize) -> &ItemSpec {
        &self.spec.items[pos]
    }

    /// Records one stage: its exclusions (in order), its item events and its stage event.
    fn stage(&mut self, stage: PipelineStage, excluded: Vec<Entry<ExclusionReason>>, count: usize) {
        self.item_events
            .push((stage, excluded.iter().map(|e| e.0).collect()));
        self.recorded.extend(excluded);
        self.report.stage_counts.push((stage, count));
    }

    fn run(mut self) -> Result<Expected, Failure> {
        let n = self.spec.items.len();
        self.report.total_candidates = n;
        self.report.total_tokens = self.spec.items.iter().map(|i| i128::from(i.tokens)).sum();
        let (pinned, scoreable) = self.classify()?;
        let scored = self.score(&scoreable);
        let deduped = self.deduplicate(scored);
        let sorted = sort_desc(deduped);
        let pinned_tokens: i64 = pinned.iter().map(|&p| self.tokens(p)).sum();
        let (hi, lo) = effective_budget(&self.spec.budget, pinned_tokens);
        let (sliced, shortfalls) = self.slice(&sorted, &pinned, pinned_tokens, hi, lo)?;
        let mut expected = self.place(&pinned, &sliced)?;
        expected.shortfalls = shortfalls;
        Ok(expected)
    }

    /// Stage 1: negative tokens out (before the pinned test), pinned apart, budget check.
    fn classify(&mut self) -> Result<(Vec<usize>, Vec<usize>), Failure> {
        let all = 0..self.spec.items.len();
        let negative: Vec<usize> = all.clone().filter(|&p| self.tokens(p) < 0).collect();
        let pinned: Vec<usize> = all
            .clone()
            .filter(|&p| self.tokens(p) >= 0 && self.item(p).pinned)
            .collect();
        let scoreable: Vec<usize> = all
            .filter(|&p| self.tokens(p) >= 0 && !self.item(p).pinned)
            .collect();
        let pinned_tokens: i64 = pinned.iter().map(|&p| self.tokens(p)).sum();
        let budget = &self.spec.budget;
        if pinned_tokens > budget.max - budget.reserve {
            return Err(fail(ErrorCode::PinnedExceedsBudget));
        }
        let excluded = negative
            .iter()
            .map(|&p| {
                (
                    p,
                    0.0,
                    ExclusionReason::NegativeTokens {
                        tokens: self.tokens(p),
                    },
                )
            })
            .collect();
        self.stage(
            PipelineStage::Classify,
            excluded,
            pinned.len() + scoreable.len(),
        );
        Ok((pinned, scoreable))
    }

    /// Stage 2: the crate scorer, each item borrowed from the scoreable list itself.
    fn score(&mut self, scoreable: &[usize]) -> Vec<Scored> {
        let scorer = self.spec.scorer.theirs();
        let pool: Vec<cupel::ContextItem> =
            scoreable.iter().map(|&p| self.items[p].clone()).collect();
        let scored: Vec<Scored> = scoreable
            .iter()
            .zip(&pool)
            .map(|(&p, item)| (p, scorer.score(item, &pool)))
            .collect();
        self.stage(PipelineStage::Score, Vec::new(), scored.len());
        scored
    }

    /// Stage 3: per content, the first strictly highest score survives.
    fn deduplicate(&mut self, scored: Vec<Scored>) -> Vec<Scored> {
        if !self.spec.dedup {
            let count = scored.len();
            self.stage(PipelineStage::Deduplicate, Vec::new(), count);
            return scored;
        }
        let mut best: HashMap<&str, usize> = HashMap::new();
        for (k, &(p, score)) in scored.iter().enumerate() {
            let winner = best.entry(self.item(p).content.as_str()).or_insert(k);
            if score > scored[*winner].1 {
                *winner = k;
            }
        }
        let survives = |k: usize| best[self.item(scored[k].0).content.as_str()] == k;
        let (kept, removed): (Vec<usize>, Vec<usize>) =
            (0..scored.len()).partition(|&k| survives(k));
        let excluded: Vec<Entry<ExclusionReason>> = removed
            .iter()
            .map(|&k| {
                let (p, score) = scored[k];
                let content = self.item(p).content.clone();
                (
                    p,
                    score,
                    ExclusionReason::Deduplicated {
                        deduplicated_against: content,
                    },
                )
            })
            .collect();
        let kept: Vec<Scored> = kept.into_iter().map(|k| scored[k]).collect();
        self.stage(PipelineStage::Deduplicate, excluded, kept.len());
        kept
    }

    /// Stage 5: the crate slicer on the sorted list and the effective budget; the result
    /// re-associated by identity, in Sort order (decision D2 in docs/decisions.md).
    fn slice(
        &mut self,
        sorted: &[Scored],
        pinned: &[usize],
        pinned_tokens: i64,
        hi: i64,
        lo: i64,
    ) -> Result<(Vec<Scored>, Vec<CountRequirementShortfall>), Failure> {
        let kinds: Vec<&str> = sorted
            .iter()
            .map(|&(p, _)| self.item(p).kind_str())
            .collect();
        let expect = count_expectation(&self.spec.slicer, &kinds, lo);
        if expect.throws.is_some() {
            return Err(Failure {
                code: ErrorCode::CountRequirementUnmet,
                crate_silent: expect.crate_silent,
            });
        }
        let input: Vec<cupel::ScoredItem> = sorted
            .iter()
            .map(|&(p, score)| cupel::ScoredItem {
                item: self.items[p].clone(),
                score,
            })
            .collect();
        let budget = cupel::ContextBudget::new(hi, lo, 0, HashMap::new(), 0.0)
            .expect("effective budget is valid");
        let picked = self
            .spec
            .slicer
            .theirs()
            .slice(&input, &budget)
            .map_err(|e| fail(cupel_error_code(&e)))?;
        let mut chosen = vec![false; self.spec.items.len()];
        for item in &picked {
            chosen[id_of(item)] = true;
        }
        let sliced: Vec<Scored> = sorted.iter().copied().filter(|&(p, _)| chosen[p]).collect();
        let excluded = self.slice_exclusions(sorted, &sliced, &chosen, pinned, pinned_tokens, lo);
        self.stage(PipelineStage::Slice, excluded, sliced.len());
        Ok((sliced, expect.shortfalls))
    }

    /// The reason of every sorted item the slicer left out (02 §6.4 with decisions D4, D5, D10 in
    /// docs/decisions.md).
    fn slice_exclusions(
        &self,
        sorted: &[Scored],
        sliced: &[Scored],
        chosen: &[bool],
        pinned: &[usize],
        pinned_tokens: i64,
        lo: i64,
    ) -> Vec<Entry<ExclusionReason>> {
        let budget = &self.spec.budget;
        let available = lo - sliced.iter().map(|&(p, _)| self.tokens(p)).sum::<i64>();
        let caps: HashMap<String, usize> = self
            .spec
            .slicer
            .count_entries()
            .map(|(entries, _)| {
                entries
                    .iter()
                    .map(|&(k, _, cap)| (k.to_ascii_lowercase(), cap))
                    .collect()
            })
            .unwrap_or_default();
        let mut kind_count: HashMap<String, usize> = HashMap::new();
        for &(p, _) in sliced {
            *kind_count
                .entry(self.item(p).kind_str().to_ascii_lowercase())
                .or_default() += 1;
        }
        let reason = |p: usize| {
            let (tokens, kind) = (self.tokens(p), self.item(p).kind_str());
            let folded = kind.to_ascii_lowercase();
            let count = kind_count.get(&folded).copied().unwrap_or(0);
            if pinned_tokens > 0 && tokens > lo && tokens <= budget.target - budget.reserve {
                ExclusionReason::PinnedOverride {
                    displaced_by: self.item(pinned[0]).content.clone(),
                }
            } else if let Some(&cap) = caps
                .get(&folded)
                .filter(|&&cap| count >= cap && tokens <= lo)
            {
                ExclusionReason::CountCapExceeded {
                    kind: kind.to_string(),
                    cap: cap as u64,
                    count: count as u64,
                }
            } else {
                ExclusionReason::BudgetExceeded {
                    item_tokens: tokens,
                    available_tokens: available,
                }
            }
        };
        sorted
            .iter()
            .filter(|&&(p, _)| !chosen[p])
            .map(|&(p, score)| (p, score, reason(p)))
            .collect()
    }

    /// Stage 6: merge, overflow, crate placer; then the inclusions and the final report.
    fn place(mut self, pinned: &[usize], sliced: &[Scored]) -> Result<Expected, Failure> {
        let merged: Vec<Scored> = pinned
            .iter()
            .map(|&p| (p, 1.0))
            .chain(sliced.iter().copied())
            .collect();
        let target = self.spec.budget.target;
        let merged_tokens: i64 = merged.iter().map(|&(p, _)| self.tokens(p)).sum();
        let over = merged_tokens > target;
        let (kept, dropped) = match (over, self.spec.overflow) {
            (true, OverflowStrategy::Throw) => return Err(fail(ErrorCode::Overflow)),
            (true, OverflowStrategy::Truncate) => self.truncate(&merged, target),
            _ => (merged.clone(), Vec::new()),
        };
        let input: Vec<cupel::ScoredItem> = kept
            .iter()
            .map(|&(p, score)| cupel::ScoredItem {
                item: self.items[p].clone(),
                score,
            })
            .collect();
        let placed: Vec<usize> = self
            .spec
            .placer
            .theirs()
            .place(&input)
            .iter()
            .map(id_of)
            .collect();
        let score_of: HashMap<usize, f64> = kept.iter().copied().collect();
        let included: Vec<Entry<InclusionReason>> = placed
            .iter()
            .map(|&p| (p, score_of[&p], self.inclusion(p)))
            .collect();
        let available = target - placed.iter().map(|&p| self.tokens(p)).sum::<i64>();
        let excluded = dropped
            .iter()
            .map(|&(p, score)| {
                (
                    p,
                    score,
                    ExclusionReason::BudgetExceeded {
                        item_tokens: self.tokens(p),
                        available_tokens: available,
                    },
                )
            })
            .collect();
        self.stage(PipelineStage::Place, excluded, placed.len());
        self.item_events
            .last_mut()
            .expect("Place was recorded")
            .1
            .extend(placed.iter().copied());
        let mut report_excluded = std::mem::take(&mut self.recorded);
        report_excluded.sort_by(|a, b| b.1.total_cmp(&a.1));
        self.report.excluded = report_excluded;
        self.report.included = included.clone();
        Ok(Expected {
            indices: placed,
            scores: included.iter().map(|e| e.1).collect(),
            reasons: included.iter().map(|e| e.2).collect(),
            overflow: (over && self.spec.overflow == OverflowStrategy::Proceed)
                .then(|| (merged_tokens - target, merged.iter().map(|e| e.0).collect())),
            placement_tie: self.placement_tie(&kept, sliced),
            truncation_tie: !dropped.is_empty()
                && has_tie(merged.iter().filter(|e| !self.item(e.0).pinned)),
            report: self.report,
            shortfalls: Vec::new(),
            item_events: self.item_events,
        })
    }

    /// Decision D3 in docs/decisions.md: walk the merged list as it stands; pinned items always
    /// stay, any other item stays when it still fits.
    fn truncate(&self, merged: &[Scored], target: i64) -> (Vec<Scored>, Vec<Scored>) {
        let mut used = 0i64;
        merged.iter().partition(|&&(p, _)| {
            let keep = self.item(p).pinned || used + self.tokens(p) <= target;
            if keep {
                used += self.tokens(p);
            }
            keep
        })
    }

    /// Decision D6 in docs/decisions.md: pinned first, then zero tokens, else scored.
    fn inclusion(&self, p: usize) -> InclusionReason {
        if self.item(p).pinned {
            InclusionReason::Pinned
        } else if self.tokens(p) == 0 {
            InclusionReason::ZeroToken
        } else {
            InclusionReason::Scored
        }
    }

    /// True when two kept sliced items tie under the placer's key.
    fn placement_tie(&self, kept: &[Scored], sliced: &[Scored]) -> bool {
        let kept_sliced: Vec<&Scored> = sliced.iter().filter(|s| kept.contains(s)).collect();
        match self.spec.placer {
            PlacerSpec::UShaped => has_tie(kept_sliced.into_iter()),
            PlacerSpec::Chronological => {
                let mut times: Vec<Option<i64>> = kept_sliced
                    .iter()
                    .map(|e| self.item(e.0).timestamp_ms)
                    .collect();
                times.sort_unstable();
                times.windows(2).any(|w| w[0] == w[1])
            }
        }
    }
}

/// True when two of the scores are equal under the total order.
fn has_tie<'s>(scored: impl Iterator<Item = &'s Scored>) -> bool {
    let mut bits: Vec<u64> = scored.map(|e| e.1.to_bits()).collect();
    bits.sort_unstable();
    bits.windows(2).any(|w| w[0] == w[1])
}

/// Stage 4: stable sort by score descending under the total order.
fn sort_desc(mut scored: Vec<Scored>) -> Vec<Scored> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

/// Decision D1 in docs/decisions.md: the spec formula, with reserved slots and the safety margin.
pub fn effective_budget(budget: &BudgetSpec, pinned_tokens: i64) -> (i64, i64) {
    let slots: i64 = budget.slots.iter().map(|s| s.1).sum();
    let mut hi = (budget.max - budget.reserve - pinned_tokens - slots).max(0);
    let mut lo = (budget.target - pinned_tokens - slots).max(0).min(hi);
    if budget.margin > 0.0 {
        let factor = 1.0 - budget.margin / 100.0;
        hi = (hi as f64 * factor).floor() as i64;
        lo = ((lo as f64 * factor).floor() as i64).min(hi);
    }
    (hi, lo)
}
