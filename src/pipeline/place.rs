//! Stage 6, Place (spec 02 §7, seed "Stage 6: Place"): merge pinned items (score 1.0) before the
//! sliced items, handle overflow (Throw / Truncate per decision D3 in docs/decisions.md / Proceed
//! per decision D7), and let the placer order the result.
//!
//! With groups (`docs/groups.md`), Truncate keeps or drops whole groups (a group is met
//! at its first member in the merged list), and the placer places each group as one unit
//! whose members then follow one another in input order. The pinned-first option moves the
//! pinned items (and pinned groups) to the front, in input order. With variants
//! (`docs/variants.md`), every token count is the chosen form's, Truncate moves a unit to a
//! cheaper level before it drops it, and an item placed below its full form is
//! `Downgraded`.

use crate::diagnostics::{
    Collector, DowngradeCause, ExclusionReason, InclusionReason, OverflowEvent, PipelineStage,
};
use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextItem, GroupValue, OverflowStrategy, Units};
use crate::pipeline::forms::RunForms;
use crate::pipeline::groups::{exclude_member, RunGroups};
use crate::pipeline::score::{scored_view, Candidate};
use crate::placer::{
    check_permutation, chronological_order, u_shaped_order, ChronologicalPlacer, Placer,
    UShapedPlacer,
};

/// The placed window: input positions with their scores, reasons and forms, plus any
/// overflow.
#[derive(Default)]
pub(super) struct Placed {
    pub indices: Vec<usize>,
    pub scores: Vec<f64>,
    pub reasons: Vec<InclusionReason>,
    /// The form of each placed item; empty when the run has no forms.
    pub forms: Vec<usize>,
    pub overflow: Option<OverflowEvent>,
}

impl Placed {
    /// Empties the window, keeping its memory.
    fn clear(&mut self) {
        self.indices.clear();
        self.scores.clear();
        self.reasons.clear();
        self.forms.clear();
        self.overflow = None;
    }

    /// The run's outcome: this window, with the report when the run was traced.
    pub(super) fn into_selection(
        self,
        report: Option<crate::diagnostics::SelectionReport>,
    ) -> crate::pipeline::Selection {
        crate::pipeline::Selection {
            indices: self.indices,
            scores: self.scores,
            reasons: self.reasons,
            forms: self.forms,
            overflow: self.overflow,
            report,
        }
    }
}

/// What Place takes from the pipeline and the run, besides the candidates.
#[derive(Clone, Copy)]
pub(super) struct PlaceContext<'a> {
    pub placer: &'a dyn Placer,
    pub strategy: OverflowStrategy,
    pub on_overflow: Option<&'a dyn Fn(&OverflowEvent)>,
    pub items: &'a [ContextItem],
    pub budget: &'a ContextBudget,
    pub pinned_first: bool,
    /// How group values (and group level values) are computed.
    pub mode: GroupValue,
    /// The prefix extension's kept prefix (input positions, in its previous order), placed
    /// first; the placer orders the rest after it. `None` outside Hold runs.
    pub held: Option<&'a [usize]>,
}

/// The merged list: pinned positions (score 1.0) first, then the sliced candidates.
struct Merged {
    list: Vec<Candidate>,
    /// How many leading entries of `list` are pinned.
    pinned: usize,
}

/// Merges the pinned positions (first) and the sliced candidates, applies the overflow
/// strategy and lets the placer order the result.
pub(super) fn place<C: Collector>(
    context: PlaceContext<'_>,
    pinned: &[usize],
    sliced: Vec<Candidate>,
    mut groups: Option<&mut RunGroups<'_>>,
    mut forms: Option<&mut RunForms>,
    collector: &mut C,
) -> Result<Placed> {
    let PlaceContext {
        strategy,
        on_overflow,
        items,
        budget,
        ..
    } = context;
    collector.begin_stage();
    // The sliced candidates' vector becomes the merged list, the pinned entries inserted
    // at its front (no new vector when nothing is pinned).
    let mut merged = Merged {
        list: sliced,
        pinned: pinned.len(),
    };
    if !pinned.is_empty() {
        let entries = pinned.iter().map(|&i| Candidate::of(items, i, 1.0));
        merged.list.splice(0..0, entries);
    }
    let mut units = groups.as_deref().map(|t| merged_units(t, &merged));

    let target = budget.target_tokens();
    let merged_tokens = match forms.as_deref() {
        None => checked_token_sum(merged.list.iter().map(|c| c.tokens), "merged tokens")?,
        Some(f) => checked_token_sum(
            merged.list.iter().map(|c| f.tokens(items, c.index)),
            "merged tokens",
        )?,
    };
    let mut overflow = None;
    if merged_tokens > target {
        match strategy {
            OverflowStrategy::Throw => {
                return Err(Error::Overflow {
                    merged_tokens,
                    target_tokens: target,
                })
            }
            OverflowStrategy::Truncate => match (&mut groups, &units) {
                (table, all) if forms.is_some() => {
                    let f = forms.as_deref_mut().expect("checked");
                    let walk = LevelWalk {
                        context: &context,
                        merged: &merged,
                        target,
                    };
                    let kept = walk.truncate(all.as_ref(), table.as_deref_mut(), f, collector)?;
                    units = all.as_ref().map(|all| all.subset(&kept));
                    merged.list = kept.iter().map(|&p| merged.list[p]).collect();
                }
                (Some(table), Some(all)) => {
                    let kept = truncate_units(items, &merged, all, target, table, collector);
                    units = Some(all.subset(&kept));
                    merged.list = kept.iter().map(|&p| merged.list[p]).collect();
                }
                _ => merged.list = truncate(merged.list, merged.pinned, target, collector),
            },
            OverflowStrategy::Proceed => {
                let event = OverflowEvent {
                    tokens_over_budget: merged_tokens - target,
                    overflowing_items: merged.list.iter().map(|c| c.index).collect(),
                    budget: budget.clone(),
                };
                if let Some(callback) = on_overflow {
                    callback(&event);
                }
                overflow = Some(event);
            }
        }
    }

    let order = placement(context, &merged, units.as_ref())?;
    let mut chosen_forms = match forms {
        Some(_) => Vec::with_capacity(order.len()),
        None => Vec::new(),
    };
    let mut placed = Placed::default();
    placed_in_order(
        &merged.list,
        merged.pinned,
        &order,
        &mut placed,
        |c, pinned| {
            let reason = match forms.as_deref() {
                None => inclusion_reason(c.tokens, pinned),
                Some(f) => {
                    chosen_forms.push(f.chosen(c.index));
                    form_reason(&items[c.index], pinned, f, c.index)
                }
            };
            collector.include(c.index, c.score, reason);
            reason
        },
    );
    placed.forms = chosen_forms;
    placed.overflow = overflow;
    collector.end_stage(PipelineStage::Place, placed.indices.len());
    Ok(placed)
}

/// The units of the merged list. A pinned group's members all score 1.0 there, so its
/// value is that of as many 1.0 scores; a sliced group keeps the value it was sliced with.
fn merged_units(table: &RunGroups<'_>, merged: &Merged) -> Units {
    let list = &merged.list;
    let pinned_group_value = |g: usize| table.mode().of(table.members(g).iter().map(|_| 1.0));
    // Which groups are pinned: their members are among the first `merged.pinned` entries.
    let mut pinned_groups = vec![false; table.len()];
    for c in &list[..merged.pinned] {
        if let Some(g) = table.group_of(c.index) {
            pinned_groups[g] = true;
        }
    }
    table.units(
        list.len(),
        |p| list[p].index,
        |p| list[p].score,
        |g| {
            if pinned_groups[g] {
                pinned_group_value(g)
            } else {
                table.value(g)
            }
        },
    )
}

/// The placement order (positions into `merged.list`): the placer's order, with groups
/// gathered, and the pinned entries moved to the front when the option asks for it.
fn placement(
    context: PlaceContext<'_>,
    merged: &Merged,
    units: Option<&Units>,
) -> Result<Vec<usize>> {
    let list = &merged.list;
    if list.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(held) = context.held.filter(|h| !h.is_empty()) {
        return held_placement(context, merged, units, held);
    }
    let builtin = match units {
        None => builtin_order(context.placer, context.items, list),
        Some(_) => None,
    };
    let order = match builtin {
        Some(order) => order,
        None => {
            let view = scored_view(context.items, list);
            let order = match units {
                None => context.placer.place(&view)?,
                Some(units) => context.placer.place_grouped(&view, units)?,
            };
            check_permutation(&order, list.len())?;
            order
        }
    };
    // Whatever the placer, each group's members end up together in input order.
    let order = match units {
        Some(units) if !units.all_single() => units.gather(&order),
        _ => order,
    };
    if !context.pinned_first || merged.pinned == 0 {
        return Ok(order);
    }
    // Truncate never drops pinned entries, so they are still the first `merged.pinned`.
    Ok(pinned_to_front(
        order,
        merged.pinned,
        |pinned| match units {
            Some(units) => units.gather(&pinned),
            None => pinned,
        },
    ))
}

/// The pinned-first option: the first `pinned` entries of the merged list (in the order
/// `gather` gives their positions), then the others in `order`.
fn pinned_to_front(
    order: Vec<usize>,
    pinned: usize,
    gather: impl FnOnce(Vec<usize>) -> Vec<usize>,
) -> Vec<usize> {
    let mut out = gather((0..pinned).collect());
    push_unpinned(&mut out, &order, pinned);
    out
}

/// Appends to `out` the positions of `order` past the first `pinned` (the unpinned
/// entries of the merged list), in order.
fn push_unpinned(out: &mut Vec<usize>, order: &[usize], pinned: usize) {
    out.extend(order.iter().copied().filter(|&p| p >= pinned));
}

/// Place for a run without groups, forms, a held prefix or a trace whose merged `list`
/// (its first `pinned` entries pinned) fits the target: the entries in the placer's
/// `order`, the pinned ones first when `pinned_first` asks for it, written into `out`
/// (cleared first; `front` holds the pinned-first order). The columnar run's Place
/// (`pipeline/columnar.rs`); [`place`] does the same for such a run.
pub(super) fn place_plain(
    list: &[Candidate],
    pinned: usize,
    order: &[usize],
    pinned_first: bool,
    front: &mut Vec<usize>,
    out: &mut Placed,
) {
    let order = match pinned_first && pinned > 0 {
        true => {
            front.clear();
            front.extend(0..pinned);
            push_unpinned(front, order, pinned);
            front
        }
        false => order,
    };
    placed_in_order(list, pinned, order, out, |c, pinned| {
        inclusion_reason(c.tokens, pinned)
    });
}

/// Writes into `out` (cleared first) the entries of the merged `list` (its first `pinned`
/// pinned) in `order`, with the reason `reason(candidate, is_pinned)` gives each, in that
/// order; no forms and no overflow event (the caller sets them).
fn placed_in_order(
    list: &[Candidate],
    pinned: usize,
    order: &[usize],
    out: &mut Placed,
    mut reason: impl FnMut(&Candidate, bool) -> InclusionReason,
) {
    out.clear();
    // One pass per vector: each is extended from an iterator of known length, without a
    // capacity check per entry.
    out.indices.extend(order.iter().map(|&pos| list[pos].index));
    out.scores.extend(order.iter().map(|&pos| list[pos].score));
    let reasons = order.iter().map(|&pos| reason(&list[pos], pos < pinned));
    out.reasons.extend(reasons);
}

/// The order a built-in placer gives `list` (without groups), computed directly from the
/// candidates' scores or their items' timestamps, without the placer's view of the items
/// or the permutation check: the same order, a permutation by construction. `None` for
/// any other placer.
fn builtin_order(
    placer: &dyn Placer,
    items: &[ContextItem],
    list: &[Candidate],
) -> Option<Vec<usize>> {
    let placer = placer.as_any();
    if placer.is::<ChronologicalPlacer>() {
        Some(chronological_order(list.len(), |p| {
            items[list[p].index].timestamp()
        }))
    } else if placer.is::<UShapedPlacer>() {
        Some(u_shaped_order(list.len(), |p| list[p].score))
    } else {
        None
    }
}

/// Hold's placement: the kept prefix first, in its previous order (what Truncate dropped
/// of it left out), then the rest as the placer (and the pinned-first option) orders it on
/// its own. Kept groups are whole, so the rest is a union of whole units.
fn held_placement(
    context: PlaceContext<'_>,
    merged: &Merged,
    units: Option<&Units>,
    held: &[usize],
) -> Result<Vec<usize>> {
    let list = &merged.list;
    let mut position = vec![usize::MAX; context.items.len()];
    for (p, c) in list.iter().enumerate() {
        position[c.index] = p;
    }
    let mut is_held = vec![false; list.len()];
    let mut order = Vec::with_capacity(list.len());
    for &index in held {
        if let Some(&p) = position.get(index).filter(|&&p| p != usize::MAX) {
            is_held[p] = true;
            order.push(p);
        }
    }
    let rest: Vec<usize> = (0..list.len()).filter(|&p| !is_held[p]).collect();
    if rest.is_empty() {
        return Ok(order);
    }
    // Pinned entries lead the merged list, so the rest's pinned entries lead the rest.
    let sub = Merged {
        list: rest.iter().map(|&p| list[p]).collect(),
        pinned: rest.iter().filter(|&&p| p < merged.pinned).count(),
    };
    let sub_units = units.map(|u| u.subset(&rest));
    let context = PlaceContext {
        held: None,
        ..context
    };
    let sub_order = placement(context, &sub, sub_units.as_ref())?;
    order.extend(sub_order.into_iter().map(|q| rest[q]));
    Ok(order)
}

/// Decision D3 in docs/decisions.md: walk the merged list as it stands; pinned items always stay, a
/// non-pinned item stays when it still fits under `target`, otherwise it is skipped and the walk
/// goes on.
fn truncate<C: Collector>(
    merged: Vec<Candidate>,
    pinned: usize,
    target: i64,
    collector: &mut C,
) -> Vec<Candidate> {
    let mut kept = Vec::with_capacity(merged.len());
    let mut dropped = Vec::new();
    let mut used: i64 = 0;
    for (pos, candidate) in merged.into_iter().enumerate() {
        // Every token count here is >= 0 and their total fits in i64 (checked by the caller).
        if pos < pinned || used + candidate.tokens <= target {
            used += candidate.tokens;
            kept.push(candidate);
        } else if C::ENABLED {
            dropped.push(candidate);
        }
    }
    let available_tokens = target - used;
    for c in dropped {
        let reason = ExclusionReason::BudgetExceeded {
            item_tokens: c.tokens,
            available_tokens,
        };
        collector.exclude(PipelineStage::Place, c.index, c.score, reason);
    }
    kept
}

/// Decision D3 (docs/decisions.md) over units: the walk meets each unit at its first position in the merged list; a
/// pinned unit stays, another stays when all its tokens still fit. Returns the kept
/// positions in merged order. A dropped group's first member (input order) carries
/// `BudgetExceeded` with the group's tokens, the others `GroupExcluded`.
fn truncate_units<C: Collector>(
    items: &[ContextItem],
    merged: &Merged,
    units: &Units,
    target: i64,
    table: &mut RunGroups<'_>,
    collector: &mut C,
) -> Vec<usize> {
    let list = &merged.list;
    let tokens = |u: usize| {
        let members = units.members(u).iter();
        members
            .map(|&m| items[list[m as usize].index].tokens())
            .sum::<i64>()
    };
    let mut keep: Vec<Option<bool>> = vec![None; units.len()];
    let mut used: i64 = 0;
    for p in 0..list.len() {
        let u = units.unit_of(p);
        if keep[u].is_none() {
            let t = tokens(u);
            let stays = p < merged.pinned || used + t <= target;
            if stays {
                used += t;
            }
            keep[u] = Some(stays);
        }
    }
    let kept: Vec<usize> = (0..list.len())
        .filter(|&p| keep[units.unit_of(p)] == Some(true))
        .collect();
    if C::ENABLED {
        let available_tokens = target - used;
        for (p, c) in list.iter().enumerate() {
            let u = units.unit_of(p);
            if keep[u] == Some(true) {
                continue;
            }
            let lead = list[units.members(u)[0] as usize].index;
            let reason = ExclusionReason::BudgetExceeded {
                item_tokens: tokens(u),
                available_tokens,
            };
            let stage = PipelineStage::Place;
            exclude_member(
                collector, table, items, stage, c.index, c.score, lead, &reason,
            );
        }
    }
    kept
}

/// What the Truncate walk over units with levels needs from Place.
struct LevelWalk<'w, 'a> {
    context: &'w PlaceContext<'a>,
    merged: &'w Merged,
    target: i64,
}

impl LevelWalk<'_, '_> {
    /// D3 over units with levels (`docs/variants.md`): the walk meets each unit at its
    /// first position in the merged list; a pinned unit stays in full; another stays at
    /// the richest level, from the one the slicer chose down, whose tokens still fit, or is
    /// dropped whole. Units that moved down record the cause `Truncated`; a dropped unit's
    /// first member (input order) carries `BudgetExceeded` with the tokens of the unit's
    /// cheapest level, the others `GroupExcluded`. `units` are the merged list's group
    /// units (`None` without groups). Returns the kept positions in merged order.
    fn truncate<C: Collector>(
        &self,
        units: Option<&Units>,
        mut table: Option<&mut RunGroups<'_>>,
        forms: &mut RunForms,
        collector: &mut C,
    ) -> Result<Vec<usize>> {
        let (items, list) = (self.context.items, &self.merged.list);
        let mut levels = match units {
            Some(units) => units.clone(),
            None => Units::singles(list.len(), |p| list[p].score),
        };
        let (index, score) = (|p: usize| list[p].index, |p: usize| list[p].score);
        forms.set_levels(&mut levels, index, score, self.context.mode)?;
        let tokens = |u: usize, l: usize| levels.level_tokens(u, l).expect("levels set above");
        // The level each unit keeps (`None`: dropped), and whether it moved down.
        let mut keep: Vec<Option<(usize, bool)>> = vec![None; levels.len()];
        let mut seen = vec![false; levels.len()];
        let mut used: i64 = 0;
        for (p, c) in list.iter().enumerate() {
            let u = levels.unit_of(p);
            if std::mem::replace(&mut seen[u], true) {
                continue;
            }
            let current = forms.level(c.index);
            // Every token count here is >= 0 and their total fits in i64 (checked by the
            // caller); lower levels only have fewer tokens.
            let fits = if p < self.merged.pinned {
                Some(current)
            } else {
                (current..levels.level_count(u)).find(|&l| used + tokens(u, l) <= self.target)
            };
            if let Some(l) = fits {
                used += tokens(u, l);
                keep[u] = Some((l, l != current));
            }
        }
        let available_tokens = self.target - used;
        forms.set_available(true, available_tokens);
        for (p, c) in list.iter().enumerate() {
            let u = levels.unit_of(p);
            match keep[u] {
                Some((level, true)) => {
                    let form = levels.form_at(p, level);
                    forms.choose(c.index, form, level);
                    if form != 0 {
                        forms.set_downgrade(c.index, DowngradeCause::Truncated);
                    }
                }
                Some((_, false)) => {}
                None if C::ENABLED => {
                    let lead = list[levels.members(u)[0] as usize].index;
                    let cheapest = levels.level_count(u) - 1;
                    let reason = ExclusionReason::BudgetExceeded {
                        item_tokens: tokens(u, cheapest),
                        available_tokens,
                    };
                    let stage = PipelineStage::Place;
                    match table.as_deref_mut() {
                        Some(table) => exclude_member(
                            collector, table, items, stage, c.index, c.score, lead, &reason,
                        ),
                        None => collector.exclude(stage, c.index, c.score, reason),
                    }
                }
                None => {}
            }
        }
        Ok((0..list.len())
            .filter(|&p| keep[levels.unit_of(p)].is_some())
            .collect())
    }
}

/// [`inclusion_reason`] in a run with forms: an item placed below its full form is
/// `Downgraded` (unless pinned, which never happens: pinned items stay in full).
fn form_reason(
    item: &ContextItem,
    pinned: bool,
    forms: &RunForms,
    index: usize,
) -> InclusionReason {
    let form = forms.chosen(index);
    match forms.downgrade(index) {
        Some((cause, available_tokens)) if form != 0 && !pinned => InclusionReason::Downgraded {
            form,
            full_tokens: item.tokens(),
            chosen_tokens: item.form_tokens(form),
            available_tokens,
            cause,
        },
        _ => inclusion_reason(item.tokens(), pinned),
    }
}

/// Pinned (the item, or its group), zero tokens (the item's `tokens`), scored — in that
/// order.
fn inclusion_reason(tokens: i64, pinned: bool) -> InclusionReason {
    if pinned {
        InclusionReason::Pinned
    } else if tokens == 0 {
        InclusionReason::ZeroToken
    } else {
        InclusionReason::Scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ScoredItem;
    use crate::testutil::Rng;

    #[test]
    fn builtin_orders_match_the_placers_on_their_views() {
        let scores = [0.0, -0.0, 0.2, 0.4, 1.0, f64::NAN, f64::INFINITY];
        for seed in 0..400u64 {
            let mut rng = Rng::new(seed);
            let n = match seed % 4 {
                0 => 300 + rng.below(2000), // past the radix sort's small-input path
                _ => rng.below(30),
            };
            let items: Vec<ContextItem> = (0..n)
                .map(|i| {
                    let item = ContextItem::builder(format!("i{i}"), rng.range(0, 50));
                    match rng.below(6) {
                        0 => item,
                        1 => item.timestamp(i64::MAX),
                        2 => item.timestamp(i64::MIN),
                        _ => item.timestamp(rng.range(-10, 10)), // many ties
                    }
                    .build()
                    .unwrap()
                })
                .collect();
            // A merged list: the items in a random order, with tied and special scores.
            let mut list: Vec<Candidate> = (0..n)
                .map(|i| Candidate::of(&items, i, *rng.pick(&scores)))
                .collect();
            for i in (1..n).rev() {
                list.swap(i, rng.below(i + 1));
            }
            let view = scored_view(&items, &list);
            let placers: [&dyn Placer; 2] = [&ChronologicalPlacer, &UShapedPlacer];
            for placer in placers {
                let want = placer.place(&view).unwrap();
                let got = builtin_order(placer, &items, &list);
                assert_eq!(got, Some(want), "seed {seed}, {placer:?}");
            }
        }
    }

    #[test]
    fn other_placers_get_no_builtin_order() {
        #[derive(Debug)]
        struct Reverse;
        impl Placer for Reverse {
            fn place(&self, items: &[ScoredItem<'_>]) -> Result<Vec<usize>> {
                Ok((0..items.len()).rev().collect())
            }
        }
        let items = [ContextItem::new("a", 1).unwrap()];
        let list = [Candidate::of(&items, 0, 0.5)];
        assert_eq!(builtin_order(&Reverse, &items, &list), None);
    }
}
