//! Runs with a prefix state (`docs/prefix-cache.md`): Measure selects as usual and
//! compares the window with the previous one; Hold keeps the previous prefix, selects the
//! rest after it, and re-anchors to a low watermark when holding gives up too much value.
//!
//! Classify, Score, Deduplicate and Sort run once, exactly as in a plain run. Slice runs
//! several times on their output without recording anything (the fresh selection the value
//! is measured against, the anchor-level selection that admits what may be appended, the
//! tail after the prefix, the watermark search); the chosen plan's Slice is then recorded
//! (when traced) and Place runs once.
//!
//! Variants (`docs/variants.md`) are not supported with a prefix state yet, in either mode:
//! the state records each item by its full form, so a window carrying cheaper forms would be
//! recorded and compared wrongly. A run with a prefix state whose items carry variants fails
//! with `InvalidArgument` unless the pipeline does not use variants.

use crate::cancel::check as check_cancelled;
use crate::diagnostics::TraceDetail;
use crate::diagnostics::{Collector, ExclusionReason, NullCollector, PipelineStage, Recorder};
use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::groups::{exclude_member, RunGroups};
use crate::pipeline::place::{place, PlaceContext, Placed};
use crate::pipeline::run::rank;
use crate::pipeline::score::Candidate;
use crate::pipeline::slice::{slice, slice_within, Extensions, PinnedContext};
use crate::pipeline::{Pipeline, RunOptions};
use crate::prefix::{
    check_conversation, check_not_foreign, compare, hash_bytes, Catalog, EntryKey, PrefixMode,
    PrefixOptions, PrefixOrder, PrefixRun, PrefixState, ReuseReport, StateEntry, TurnOutcome,
};

pub(super) fn run_prefix(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    options: &RunOptions<'_>,
    prefix: &PrefixOptions<'_>,
) -> Result<PrefixRun> {
    check_cancelled("before it started")?;
    prefix.validate(items.len())?;
    reject_variants(pipeline, items)?;
    let conversation = prefix.conversation_hash();
    if let Some(previous) = prefix.previous {
        check_conversation(previous, conversation)?;
    }
    let turn = Turn {
        pipeline,
        items,
        budget,
        options,
        prefix,
        conversation,
    };
    if options.trace == TraceDetail::None {
        let (placed, reuse, state) = turn.stages(&mut NullCollector)?;
        return Ok(PrefixRun {
            selection: placed.into_selection(None),
            reuse,
            state,
        });
    }
    let mut recorder = Recorder::new(options.trace);
    let (placed, reuse, state) = turn.stages(&mut recorder)?;
    // In i128, exactly, as in a plain run: the report never fails a run that succeeds.
    let total_tokens: i128 = items.iter().map(|i| i128::from(i.tokens())).sum();
    let report = recorder.into_report(items.len(), total_tokens, placed.overflow.clone());
    Ok(PrefixRun {
        selection: placed.into_selection(Some(report)),
        reuse,
        state,
    })
}

/// Fails when the pipeline uses variants and an item carries some (see the module docs).
fn reject_variants(pipeline: &Pipeline, items: &[ContextItem]) -> Result<()> {
    match items.iter().position(ContextItem::has_variants) {
        Some(index) if pipeline.use_variants => Err(Error::InvalidArgument(format!(
            "variants are not supported with a prefix state (Hold or Measure) yet: item {index} \
             carries variants; switch variants off or run without the prefix state"
        ))),
        _ => Ok(()),
    }
}

/// One run's inputs.
struct Turn<'r, 'a> {
    pipeline: &'r Pipeline,
    items: &'a [ContextItem],
    budget: &'r ContextBudget,
    options: &'r RunOptions<'r>,
    prefix: &'r PrefixOptions<'r>,
    conversation: Option<u64>,
}

/// What the turn selects.
enum Plan {
    /// The usual selection (Measure).
    Fresh(Vec<Candidate>),
    /// A fresh selection to a lower target (Hold without a usable prefix, or re-anchoring).
    Anchor {
        target: i64,
        sliced: Vec<Candidate>,
        outcome: TurnOutcome,
    },
    /// The kept prefix and the tail after it.
    Held(Kept, Hold),
}

/// The part of the previous window a turn keeps.
struct Kept {
    /// Input positions of the kept prefix, in the previous window's order.
    order: Vec<usize>,
    /// Which input positions are kept.
    held: Vec<bool>,
    /// Tokens of the kept items that are not pinned.
    tokens: i64,
    /// The largest kept input position.
    last: Option<usize>,
}

/// What Hold appends after the kept prefix.
struct Hold {
    /// The value of the kept prefix and the tail together.
    value: f64,
    /// The candidates the tail is sliced from (Sort order).
    candidates: Vec<Candidate>,
    /// The effective budget of the tail.
    budget: ContextBudget,
    /// The tail the slicer chose (Sort order).
    tail: Vec<Candidate>,
}

/// The shared stages' results every plan works from.
struct Ranked<'a> {
    sorted: Vec<Candidate>,
    pinned: Vec<usize>,
    pinned_tokens: i64,
    groups: Option<RunGroups<'a>>,
    is_pinned: Vec<bool>,
}

impl<'a> Turn<'_, 'a> {
    fn stages<C: Collector>(
        &self,
        collector: &mut C,
    ) -> Result<(Placed, ReuseReport, PrefixState)> {
        let (pipeline, items, budget) = (self.pipeline, self.items, self.budget);
        let (classified, sorted) = rank(pipeline, items, budget, collector)?;
        check_cancelled("before slicing")?;
        let mut is_pinned = vec![false; items.len()];
        for &i in &classified.pinned {
            is_pinned[i] = true;
        }
        let mut ranked = Ranked {
            sorted,
            pinned: classified.pinned,
            pinned_tokens: classified.pinned_tokens,
            groups: classified.groups,
            is_pinned,
        };

        let previous = self.prefix.previous;
        let catalog = Catalog::new(self.keys(&ranked), previous);
        if let (Some(prev), None) = (previous, self.conversation) {
            check_not_foreign(prev, &catalog)?;
        }

        let effective = budget.effective(ranked.pinned_tokens);
        // Measure slices once, recorded, as a plain run does; Hold compares plans first.
        let fresh = match self.prefix.mode {
            PrefixMode::Measure => self.recorded_slice(&mut ranked, budget, collector)?,
            PrefixMode::Hold => self.side_slice(&ranked, &ranked.sorted, &effective)?,
        };
        let fresh_value = value(&ranked, &mask(items.len(), [&fresh]));
        let floor = fresh_value - self.prefix.max_value_loss * fresh_value.abs();
        let mut plan = match (self.prefix.mode, previous) {
            (PrefixMode::Measure, _) => Plan::Fresh(fresh),
            (PrefixMode::Hold, Some(prev)) if !prev.entries.is_empty() => {
                // First the tail an anchor-level selection admits (the headroom is kept for
                // what comes next); if that gives up too much, the best tail there is; if
                // even that does, re-anchor.
                let kept = self.kept(&ranked, prev, &catalog, &effective);
                let level = prev.anchor_target.min(budget.target_tokens());
                let admitted = mask(items.len(), [&self.slice_at(&ranked, level)?]);
                let narrow = self.hold(&ranked, &kept, Some(&admitted), &effective)?;
                if narrow.value >= floor {
                    Plan::Held(kept, narrow)
                } else {
                    let wide = self.hold(&ranked, &kept, None, &effective)?;
                    if wide.value >= floor {
                        Plan::Held(kept, wide)
                    } else {
                        self.anchor(&ranked, fresh, floor, TurnOutcome::Reanchored)?
                    }
                }
            }
            (PrefixMode::Hold, _) => self.anchor(&ranked, fresh, floor, TurnOutcome::Anchored)?,
        };

        let sliced = self.record_slice(&mut ranked, &mut plan, collector)?;
        // The plan's value, before Place's overflow handling (the fresh value is counted
        // the same way, so the share given up is what the plan chose to give up).
        let plan_value = value(&ranked, &mask(items.len(), [&sliced]));
        let context = PlaceContext {
            placer: pipeline.placer.as_ref(),
            strategy: pipeline.overflow_strategy,
            on_overflow: self.options.on_overflow,
            items,
            budget,
            pinned_first: pipeline.pinned_first,
            mode: pipeline.group_value,
            held: match (&plan, self.prefix.order) {
                (Plan::Held(kept, _), PrefixOrder::Placed) => Some(&kept.order),
                _ => None,
            },
        };
        let placed = place(
            context,
            &ranked.pinned,
            sliced,
            ranked.groups.as_mut(),
            None,
            collector,
        )?;
        if C::ENABLED {
            if let Some(table) = &ranked.groups {
                collector.groups(table.report(items));
            }
        }

        let (outcome, anchor) = match &plan {
            Plan::Fresh(_) => (TurnOutcome::Measured, None),
            Plan::Anchor {
                target, outcome, ..
            } => (*outcome, Some(*target)),
            Plan::Held(..) => (TurnOutcome::Held, None),
        };
        let (reuse, state) = self.report(
            &ranked,
            &catalog,
            &placed,
            outcome,
            anchor,
            fresh_value,
            plan_value,
        )?;
        Ok((placed, reuse, state))
    }

    /// Each item's key: identity (content hash or the caller's), group key hash (one hash
    /// per group), tokens.
    fn keys(&self, ranked: &Ranked<'_>) -> Vec<EntryKey> {
        let table = ranked.groups.as_ref();
        let group_hashes: Vec<u64> = table.map_or_else(Vec::new, |t| {
            (0..t.len())
                .map(|g| hash_bytes(t.key(g).as_bytes()))
                .collect()
        });
        self.items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let id = match self.prefix.identities {
                    Some(ids) => ids[i],
                    None => item.content_hash(),
                };
                let group = table.and_then(|t| t.group_of(i)).map(|g| group_hashes[g]);
                (id, group, item.tokens())
            })
            .collect()
    }

    /// What Slice receives: the groups only (a run with a prefix state has no forms).
    fn extensions<'r, 'g>(&self, groups: Option<&'r mut RunGroups<'g>>) -> Extensions<'r, 'g> {
        Extensions {
            groups,
            forms: None,
            mode: self.pipeline.group_value,
        }
    }

    /// A Slice run that records nothing, over `candidates` (Sort order, whole units).
    fn side_slice(
        &self,
        ranked: &Ranked<'_>,
        candidates: &[Candidate],
        effective: &ContextBudget,
    ) -> Result<Vec<Candidate>> {
        let pinned = PinnedContext {
            tokens: ranked.pinned_tokens,
            first_content: None,
        };
        // A side run must not leave notes in the run's group table.
        let mut groups = ranked.groups.clone();
        slice_within(
            self.pipeline.slicer.as_ref(),
            self.items,
            candidates,
            self.budget,
            effective,
            &pinned,
            self.extensions(groups.as_mut()),
            &mut NullCollector,
        )
    }

    /// The selection at target `target` (same budget otherwise), recording nothing.
    fn slice_at(&self, ranked: &Ranked<'_>, target: i64) -> Result<Vec<Candidate>> {
        let effective = self
            .budget
            .with_target(target)
            .effective(ranked.pinned_tokens);
        self.side_slice(ranked, &ranked.sorted, &effective)
    }

    /// The plan of an anchor: the lowest target from the watermark up whose selection gives
    /// up no more than the allowed share (found by bisection to 1/64 of the range; the
    /// full target gives up nothing, so one always qualifies).
    fn anchor(
        &self,
        ranked: &Ranked<'_>,
        fresh: Vec<Candidate>,
        floor: f64,
        outcome: TurnOutcome,
    ) -> Result<Plan> {
        let target = self.budget.target_tokens();
        let low = ((target as f64) * self.prefix.low_watermark).ceil() as i64;
        let low = low.clamp(0, target);
        let mut good = (target, fresh);
        if low < target {
            let at_low = self.slice_at(ranked, low)?;
            if value(ranked, &mask(self.items.len(), [&at_low])) >= floor {
                good = (low, at_low);
            } else {
                let step = ((target - low) / 64).max(1);
                let mut bad = low;
                while good.0 - bad > step {
                    let mid = bad + (good.0 - bad) / 2;
                    let at_mid = self.slice_at(ranked, mid)?;
                    if value(ranked, &mask(self.items.len(), [&at_mid])) >= floor {
                        good = (mid, at_mid);
                    } else {
                        bad = mid;
                    }
                }
            }
        }
        Ok(Plan::Anchor {
            target: good.0,
            sliced: good.1,
            outcome,
        })
    }

    /// The kept prefix of `prev` in this input.
    fn kept(
        &self,
        ranked: &Ranked<'_>,
        prev: &PrefixState,
        catalog: &Catalog,
        effective: &ContextBudget,
    ) -> Kept {
        let mut eligible = ranked.is_pinned.clone();
        for c in &ranked.sorted {
            eligible[c.index] = true;
        }
        let (order, tokens) = self.match_prefix(ranked, prev, catalog, &eligible, effective);
        let mut held = vec![false; self.items.len()];
        for &i in &order {
            held[i] = true;
        }
        Kept {
            last: order.iter().copied().max(),
            order,
            held,
            tokens,
        }
    }

    /// Hold's selection: the kept prefix, then the tail sliced, within what the prefix
    /// leaves of the effective budget, from the candidates that are not kept, that come
    /// after the prefix in input order (when the host sends input order) and, when
    /// `admitted` is given, that it admits.
    fn hold(
        &self,
        ranked: &Ranked<'_>,
        kept: &Kept,
        admitted: Option<&[bool]>,
        effective: &ContextBudget,
    ) -> Result<Hold> {
        let after_prefix = |i: usize| match (self.prefix.order, kept.last) {
            (PrefixOrder::Input, Some(last)) => self.first_member(ranked, i) > last,
            _ => true,
        };
        let candidates: Vec<Candidate> = ranked
            .sorted
            .iter()
            .filter(|c| {
                !kept.held[c.index] && admitted.is_none_or(|a| a[c.index]) && after_prefix(c.index)
            })
            .copied()
            .collect();
        let budget = effective.minus(kept.tokens);
        let tail = self.side_slice(ranked, &candidates, &budget)?;
        let mut chosen = mask(self.items.len(), [&tail]);
        for (k, &h) in chosen.iter_mut().zip(&kept.held) {
            *k |= h;
        }
        Ok(Hold {
            value: value(ranked, &chosen),
            candidates,
            budget,
            tail,
        })
    }

    /// The first member (input order) of the unit holding input position `i`.
    fn first_member(&self, ranked: &Ranked<'_>, i: usize) -> usize {
        match ranked
            .groups
            .as_ref()
            .and_then(|t| t.group_of(i).map(|g| (t, g)))
        {
            Some((t, g)) => t.members(g)[0] as usize,
            None => i,
        }
    }

    /// The longest prefix of the previous window that is still present (each entry matched
    /// to an eligible item with its key, in order), made of whole units and fitting the
    /// effective target. Placed order: each unit's members are consecutive entries in
    /// input order. Input order: matched positions increase. Returns the kept positions in
    /// the previous window's order and their unpinned tokens.
    fn match_prefix(
        &self,
        ranked: &Ranked<'_>,
        prev: &PrefixState,
        catalog: &Catalog,
        eligible: &[bool],
        effective: &ContextBudget,
    ) -> (Vec<usize>, i64) {
        let input_order = self.prefix.order == PrefixOrder::Input;
        let groups = ranked.groups.as_ref();
        let mut used = vec![false; self.items.len()];
        let mut cursor: FastMap<EntryKey, usize> = FastMap::default();
        let mut matched: Vec<usize> = Vec::new();
        let mut last: Option<usize> = None;
        // Open units: Placed order tracks the one open group and its next member; Input
        // order counts the members still missing per group.
        let mut open: Option<(usize, usize)> = None;
        let mut missing: FastMap<usize, usize> = FastMap::default();
        let mut tokens: i64 = 0;
        let mut best = (0usize, 0i64);
        for entry in &prev.entries {
            let k = crate::prefix::key(entry);
            let positions = catalog.positions(&k);
            let at = cursor.entry(k).or_insert(0);
            let found = loop {
                let Some(&p) = positions.get(*at) else {
                    break None;
                };
                let p = p as usize;
                let usable =
                    eligible[p] && !used[p] && (!input_order || last.is_none_or(|l| p > l));
                if usable {
                    break Some(p);
                }
                *at += 1;
            };
            let Some(i) = found else { break };
            *at += 1;
            let group = groups.and_then(|t| t.group_of(i).map(|g| (t, g)));
            match (group, input_order) {
                (None, _) => {
                    if open.is_some() {
                        break;
                    }
                }
                (Some((t, g)), false) => {
                    let members = t.members(g);
                    let next = match open {
                        None => 0,
                        Some((og, n)) if og == g => n,
                        Some(_) => break,
                    };
                    if members.get(next).map(|&m| m as usize) != Some(i) {
                        break;
                    }
                    open = (next + 1 < members.len()).then_some((g, next + 1));
                }
                (Some((t, g)), true) => {
                    let left = missing.entry(g).or_insert(t.members(g).len());
                    *left -= 1;
                    if *left == 0 {
                        missing.remove(&g);
                    }
                }
            }
            used[i] = true;
            last = Some(i);
            matched.push(i);
            if !ranked.is_pinned[i] {
                tokens = tokens.saturating_add(self.items[i].tokens());
                if tokens > effective.target_tokens() {
                    break;
                }
            }
            if open.is_none() && missing.is_empty() {
                best = (matched.len(), tokens);
            }
        }
        matched.truncate(best.0);
        (matched, best.1)
    }

    /// The Slice stage within `budget`, recorded by the collector.
    fn recorded_slice<C: Collector>(
        &self,
        ranked: &mut Ranked<'a>,
        budget: &ContextBudget,
        collector: &mut C,
    ) -> Result<Vec<Candidate>> {
        let items = self.items;
        let pinned = PinnedContext::of(items, &ranked.pinned, ranked.pinned_tokens);
        slice(
            self.pipeline.slicer.as_ref(),
            items,
            &ranked.sorted,
            budget,
            &pinned,
            self.extensions(ranked.groups.as_mut()),
            collector,
        )
    }

    /// The chosen plan's sliced candidates (Sort order): Measure's, recorded already; an
    /// anchor's or a hold's, recorded now when the collector records (the side runs
    /// recorded nothing), else taken as the side run left them.
    fn record_slice<C: Collector>(
        &self,
        ranked: &mut Ranked<'a>,
        plan: &mut Plan,
        collector: &mut C,
    ) -> Result<Vec<Candidate>> {
        let items = self.items;
        let pinned = PinnedContext::of(items, &ranked.pinned, ranked.pinned_tokens);
        let slicer = self.pipeline.slicer.as_ref();
        match plan {
            Plan::Fresh(sliced) => Ok(std::mem::take(sliced)),
            Plan::Anchor { sliced, .. } if !C::ENABLED => Ok(std::mem::take(sliced)),
            Plan::Anchor { target, .. } => {
                let budget = self.budget.with_target(*target);
                self.recorded_slice(ranked, &budget, collector)
            }
            Plan::Held(kept, hold) => {
                collector.begin_stage();
                let tail = if C::ENABLED {
                    self.explain_left_out(ranked, kept, hold, collector);
                    slice_within(
                        slicer,
                        items,
                        &hold.candidates,
                        self.budget,
                        &hold.budget,
                        &pinned,
                        self.extensions(ranked.groups.as_mut()),
                        collector,
                    )?
                } else {
                    hold.tail.clone()
                };
                let chosen = mask(items.len(), [&tail]);
                let sliced: Vec<Candidate> = ranked
                    .sorted
                    .iter()
                    .filter(|c| kept.held[c.index] || chosen[c.index])
                    .copied()
                    .collect();
                collector.end_stage(PipelineStage::Slice, sliced.len());
                Ok(sliced)
            }
        }
    }

    /// Records the exclusion of every candidate Hold neither kept nor offered to the tail's
    /// slicer (not admitted by the anchor-level selection, or before the prefix's end in
    /// input order): `BudgetExceeded` with its unit's tokens and what the tail budget
    /// leaves after the tail.
    fn explain_left_out<C: Collector>(
        &self,
        ranked: &mut Ranked<'a>,
        kept: &Kept,
        hold: &Hold,
        collector: &mut C,
    ) {
        let items = self.items;
        let mut offered = vec![false; items.len()];
        for c in &hold.candidates {
            offered[c.index] = true;
        }
        let tail_tokens = hold
            .tail
            .iter()
            .fold(0i64, |t, c| t.saturating_add(items[c.index].tokens()));
        let available_tokens = hold.budget.target_tokens() - tail_tokens;
        // Each group's lead and tokens, computed once.
        let mut units: Vec<Option<(usize, i64)>> =
            vec![None; ranked.groups.as_ref().map_or(0, |t| t.len())];
        for c in &ranked.sorted {
            if kept.held[c.index] || offered[c.index] {
                continue;
            }
            let group = ranked.groups.as_ref().and_then(|t| t.group_of(c.index));
            let (lead, item_tokens) = match (group, ranked.groups.as_ref()) {
                (Some(g), Some(t)) => *units[g].get_or_insert_with(|| {
                    let members = t.members(g);
                    let tokens = members
                        .iter()
                        .fold(0i64, |s, &m| s.saturating_add(items[m as usize].tokens()));
                    (members[0] as usize, tokens)
                }),
                _ => (c.index, items[c.index].tokens()),
            };
            let reason = ExclusionReason::BudgetExceeded {
                item_tokens,
                available_tokens,
            };
            match ranked.groups.as_mut() {
                Some(table) => exclude_member(
                    collector,
                    table,
                    items,
                    PipelineStage::Slice,
                    c.index,
                    c.score,
                    lead,
                    &reason,
                ),
                None => collector.exclude(PipelineStage::Slice, c.index, c.score, reason),
            }
        }
    }

    /// The reuse report and the new state of the placed window.
    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        ranked: &Ranked<'_>,
        catalog: &Catalog,
        placed: &Placed,
        outcome: TurnOutcome,
        anchor: Option<i64>,
        fresh_value: f64,
        window_value: f64,
    ) -> Result<(ReuseReport, PrefixState)> {
        let mut window = placed.indices.clone();
        if self.prefix.order == PrefixOrder::Input {
            window.sort_unstable();
        }
        let entries: Vec<StateEntry> = window
            .iter()
            .map(|&i| {
                let (hash, group, tokens) = catalog.key_of(i);
                StateEntry {
                    hash,
                    group,
                    tokens,
                    pinned: ranked.is_pinned[i],
                    position: u32::try_from(i).unwrap_or(u32::MAX),
                }
            })
            .collect();
        let previous = self.prefix.previous;
        let input_order = self.prefix.order == PrefixOrder::Input;
        let comparison = compare(previous, &entries, catalog, input_order);
        let turn = previous.map_or(1, |p| p.turn.saturating_add(1));
        let target = self.budget.target_tokens();
        let (anchor_turn, anchor_target) = match (self.prefix.mode, anchor, previous) {
            (PrefixMode::Measure, _, _) => (turn, target),
            (PrefixMode::Hold, Some(t), _) => (turn, t),
            (PrefixMode::Hold, None, Some(p)) => (p.anchor_turn, p.anchor_target),
            (PrefixMode::Hold, None, None) => (turn, target),
        };
        let window_tokens = entries.iter().fold(0i64, |t, e| t.saturating_add(e.tokens));
        let reuse = ReuseReport {
            mode: self.prefix.mode,
            outcome,
            turn,
            turns_since_anchor: turn - anchor_turn,
            previous_entries: previous.map_or(0, |p| p.entries.len()),
            previous_tokens: previous.map_or(0, PrefixState::tokens),
            window_entries: entries.len(),
            window_tokens,
            kept_entries: comparison.kept_entries,
            kept_tokens: comparison.kept_tokens,
            cached_tokens: self.prefix.cache.cached_tokens(
                comparison.kept_tokens,
                comparison.kept_entries,
                entries.len(),
            ),
            cache_rule: self.prefix.cache,
            first_difference: comparison.first_difference,
            anchor_target,
            fresh_value,
            value: window_value,
            value_given_up: fresh_value - window_value,
        };
        let state = PrefixState::new(self.conversation, turn, anchor_turn, anchor_target, entries)?;
        Ok((reuse, state))
    }
}

/// A membership mask over `n` input positions of the candidates in `lists`.
fn mask<'l>(n: usize, lists: impl IntoIterator<Item = &'l Vec<Candidate>>) -> Vec<bool> {
    let mut m = vec![false; n];
    for list in lists {
        for c in list {
            m[c.index] = true;
        }
    }
    m
}

/// The value of the unpinned selected candidates (`chosen` by input position): each
/// ungrouped item's score and each group's value once, added in Sort order so that equal
/// selections give equal values bit for bit.
fn value(ranked: &Ranked<'_>, chosen: &[bool]) -> f64 {
    let mut seen = ranked.groups.as_ref().map(|t| vec![false; t.len()]);
    let mut total = 0.0;
    for c in &ranked.sorted {
        if !chosen[c.index] {
            continue;
        }
        match (ranked.groups.as_ref(), seen.as_mut()) {
            (Some(t), Some(seen)) => match t.group_of(c.index) {
                Some(g) if !seen[g] => {
                    seen[g] = true;
                    total += t.value(g);
                }
                Some(_) => {}
                None => total += c.score,
            },
            _ => total += c.score,
        }
    }
    total
}
