//! The parts CountQuotaSlice and CountConstrainedKnapsackSlice share (spec 04 §5–§7, decision D10
//! in docs/decisions.md): the validated entry set, Phase 1 (commit the required counts), the
//! residual hand-off of Phase 2 and Phase 3 (enforce the caps).

use crate::diagnostics::CountRequirementShortfall;
use crate::error::{checked_token_sum, Error, Result};
use crate::hash::FastMap;
use crate::model::{ContextBudget, ContextKind, Levels, ScoredItem, Units};
use crate::slicer::shared::{append_mapped, reject_duplicate_kinds, score_desc};
use crate::slicer::{CountQuotaEntry, ScarcityBehavior, SliceOutcome};

/// A validated list of count quotas with distinct kinds and a kind → entry lookup.
#[derive(Debug, Clone)]
pub(crate) struct CountQuotas {
    entries: Vec<CountQuotaEntry>,
    caps: Vec<(ContextKind, usize)>,
    index: FastMap<ContextKind, usize>,
}

/// What Phase 1 produced.
struct Commits {
    /// Committed positions: entries in configuration order, each kind by score.
    selected: Vec<usize>,
    /// Their forms (units with levels only; otherwise empty: every item in full).
    forms: Vec<usize>,
    /// Tokens of the committed forms so far (units with levels only).
    tokens: i64,
    /// Items of each entry's kind in the result so far; seeds Phase 3 (spec 04 §7.1).
    counts: Vec<usize>,
    /// Requirements not met (Degrade).
    shortfalls: Vec<CountRequirementShortfall>,
}

impl CountQuotas {
    /// Validates that the kinds are distinct under ASCII case folding (decision D10 in
    /// docs/decisions.md).
    pub(crate) fn new(entries: Vec<CountQuotaEntry>) -> Result<Self> {
        reject_duplicate_kinds(entries.iter().map(CountQuotaEntry::kind))?;
        let caps = entries
            .iter()
            .map(|e| (e.kind().clone(), e.cap_count()))
            .collect();
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.kind().clone(), i))
            .collect();
        Ok(Self {
            entries,
            caps,
            index,
        })
    }

    /// The entries in configuration order.
    pub(crate) fn entries(&self) -> &[CountQuotaEntry] {
        &self.entries
    }

    /// `(kind, cap_count)` for every entry, in configuration order.
    pub(crate) fn caps(&self) -> &[(ContextKind, usize)] {
        &self.caps
    }

    /// Runs the three phases over single items. `phase2` selects from the residual items
    /// (input order) under `Budget(room, room)`; it is not called when the room is 0 or
    /// nothing is left. `slicer` names the slicer in the Throw error.
    pub(crate) fn slice<F>(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
        budget: &ContextBudget,
        phase2: F,
    ) -> Result<SliceOutcome>
    where
        F: FnOnce(&[ScoredItem<'_>], &ContextBudget) -> Result<SliceOutcome>,
    {
        let singles = Singles(items.len());
        self.slice_units(
            slicer,
            scarcity,
            items,
            &singles,
            budget,
            |rest, _, room| phase2(rest, room),
        )
    }

    /// Runs the three phases over units (`docs/groups.md`): a unit counts toward every
    /// entry with one per member of that entry's kind, is committed or kept only when no
    /// capped kind would exceed its cap, and is taken or left whole. `phase2` receives the
    /// residual items, their units (renumbered) and the room.
    pub(crate) fn slice_grouped<F>(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
        phase2: F,
    ) -> Result<SliceOutcome>
    where
        F: FnOnce(&[ScoredItem<'_>], &Units, &ContextBudget) -> Result<SliceOutcome>,
    {
        self.slice_units(
            slicer,
            scarcity,
            items,
            units,
            budget,
            |rest, positions, room| phase2(rest, &units.subset(positions), room),
        )
    }

    /// The three phases over any [`UnitSet`]; `phase2` gets the residual view, the
    /// residual positions (into `items`) and the room.
    fn slice_units<U, F>(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
        units: &U,
        budget: &ContextBudget,
        phase2: F,
    ) -> Result<SliceOutcome>
    where
        U: UnitSet,
        F: FnOnce(&[ScoredItem<'_>], &[usize], &ContextBudget) -> Result<SliceOutcome>,
    {
        let target = budget.target_tokens();
        if items.is_empty() || target <= 0 {
            return Ok(SliceOutcome::default());
        }
        let entry_of: Vec<Option<usize>> = items
            .iter()
            .map(|s| self.index.get(s.item.kind()).copied())
            .collect();
        let counter = Counter {
            quotas: self,
            entry_of: &entry_of,
        };
        let mut commits = self.commit(slicer, scarcity, items, units, &counter, target)?;
        let inner = delegate(items, &commits.selected, &commits.forms, target, phase2)?;
        let mut out = SliceOutcome {
            selected: std::mem::take(&mut commits.selected),
            shortfalls: std::mem::take(&mut commits.shortfalls),
            cap_excluded: inner.cap_excluded,
            partial_groups: inner.partial_groups,
            forms: std::mem::take(&mut commits.forms),
        };
        out.shortfalls.extend(inner.shortfalls);
        let phase2 = Phase2 {
            selected: &inner.selected,
            forms: &inner.forms,
        };
        counter.enforce_caps(units, phase2, items.len(), &mut commits.counts, &mut out);
        if out.forms.iter().all(|&f| f == 0) {
            out.forms.clear();
        }
        Ok(out)
    }

    /// Phase 1: walks the entries in configuration order; for each, commits the units
    /// holding members of its kind by value (ties in unit order) until the entry's count
    /// reaches its requirement, skipping a unit that would take a capped kind over its cap.
    /// A unit with levels is committed at its richest level that fits what is left of
    /// `target` after the commits so far, or at its cheapest level when none does (Phase 1
    /// commits regardless of the budget).
    fn commit<U: UnitSet>(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
        units: &U,
        counter: &Counter<'_>,
        target: i64,
    ) -> Result<Commits> {
        let mut members = self.required_units(units, counter.entry_of);
        let mut commits = Commits {
            selected: Vec::new(),
            forms: Vec::new(),
            tokens: 0,
            counts: vec![0; self.entries.len()],
            shortfalls: Vec::new(),
        };
        let mut committed = vec![false; if U::SINGLE { 0 } else { units.count() }];
        for (e, entry) in self.entries.iter().enumerate() {
            let required = entry.require_count();
            if required == 0 || commits.counts[e] >= required {
                continue;
            }
            let wanted = required - commits.counts[e];
            // Single items never skip and each counts one: the top `wanted` suffice.
            let limit = if U::SINGLE { wanted } else { usize::MAX };
            for &u in top_by_value(|u| units.value(u, items), &mut members[e], limit) {
                if commits.counts[e] >= required {
                    break;
                }
                if !U::SINGLE && committed[u] {
                    continue; // committed for an earlier entry
                }
                if counter.admit(units, u, &mut commits.counts) {
                    match units.levels() {
                        None => units.for_members(u, |m| commits.selected.push(m)),
                        Some(levels) => commits.push_at_fitting_level(units, levels, u, target)?,
                    }
                    if !U::SINGLE {
                        committed[u] = true;
                    }
                }
            }
            if commits.counts[e] < required {
                let kind = entry.kind().as_str().to_string();
                let (satisfied, required) = (commits.counts[e] as u64, required as u64);
                if scarcity == ScarcityBehavior::Throw {
                    return Err(Error::CountRequirementUnmet {
                        slicer,
                        kind,
                        satisfied,
                        required,
                    });
                }
                commits.shortfalls.push(CountRequirementShortfall {
                    kind,
                    required_count: required,
                    satisfied_count: satisfied,
                });
            }
        }
        Ok(commits)
    }

    /// For each entry with `require_count > 0`, the units holding a member of its kind, in
    /// unit order (each unit once).
    fn required_units<U: UnitSet>(&self, units: &U, entry_of: &[Option<usize>]) -> Vec<Vec<usize>> {
        let mut lists = vec![Vec::new(); self.entries.len()];
        let mut listed: Vec<usize> = Vec::new(); // entries the current unit is listed for
        for u in 0..units.count() {
            listed.clear();
            units.for_members(u, |m| {
                if let Some(e) = entry_of[m] {
                    if self.entries[e].require_count() > 0 && !listed.contains(&e) {
                        listed.push(e);
                        lists[e].push(u);
                    }
                }
            });
        }
        lists
    }
}

impl Commits {
    /// Commits unit `u` at its richest level whose tokens fit `target` minus the tokens
    /// committed so far, or at its cheapest level.
    fn push_at_fitting_level<U: UnitSet>(
        &mut self,
        units: &U,
        levels: &Levels,
        u: usize,
        target: i64,
    ) -> Result<()> {
        let room = target.saturating_sub(self.tokens);
        let count = levels.count(u);
        let level = (0..count)
            .find(|&l| levels.tokens(u, l) <= room)
            .unwrap_or(count - 1);
        self.tokens = checked_token_sum(
            [self.tokens, levels.tokens(u, level)],
            "count-quota committed tokens",
        )?;
        units.for_members(u, |m| {
            self.selected.push(m);
            self.forms.push(levels.form_at(m, level));
        });
        Ok(())
    }
}

/// The inner slicer's selection in Phase 3: positions and their forms (empty or parallel).
struct Phase2<'a> {
    selected: &'a [usize],
    forms: &'a [usize],
}

/// Counts members per entry kind and applies the caps.
struct Counter<'a> {
    quotas: &'a CountQuotas,
    /// The entry (index) of each position's kind, if it has one.
    entry_of: &'a [Option<usize>],
}

impl Counter<'_> {
    /// Adds unit `u`'s members to `counts` and returns true, unless that would take some
    /// entry's count over its cap; then `counts` is left as it was and false returned.
    fn admit<U: UnitSet>(&self, units: &U, u: usize, counts: &mut [usize]) -> bool {
        let entries = &self.quotas.entries;
        let mut fits = true;
        units.for_members(u, |m| {
            if let Some(e) = self.entry_of[m] {
                counts[e] += 1;
                fits &= counts[e] <= entries[e].cap_count();
            }
        });
        if !fits {
            units.for_members(u, |m| {
                if let Some(e) = self.entry_of[m] {
                    counts[e] -= 1;
                }
            });
        }
        fits
    }

    /// Phase 3: walks `phase2` (inner output order) unit by unit (a unit at its first
    /// member); appends the unit's members to `out.selected`, or to `out.cap_excluded` when
    /// admitting it would exceed a cap (Phase 1 commits count too).
    fn enforce_caps<U: UnitSet>(
        &self,
        units: &U,
        phase2: Phase2<'_>,
        n: usize,
        counts: &mut [usize],
        out: &mut SliceOutcome,
    ) {
        let mut seen = vec![false; if U::SINGLE { 0 } else { units.count() }];
        // The form of each position the inner slicer chose (when it chose any but full).
        let mut form_of = Vec::new();
        if !phase2.forms.is_empty() {
            form_of = vec![0; n];
            for (&p, &f) in phase2.selected.iter().zip(phase2.forms) {
                form_of[p] = f;
            }
            if out.forms.is_empty() {
                out.forms.resize(out.selected.len(), 0);
            }
        }
        for &pos in phase2.selected {
            let u = units.unit_of(pos);
            if !U::SINGLE {
                if seen[u] {
                    continue;
                }
                seen[u] = true;
            }
            if self.admit(units, u, counts) {
                units.for_members(u, |m| {
                    out.selected.push(m);
                    if !form_of.is_empty() {
                        out.forms.push(form_of[m]);
                    } else if !out.forms.is_empty() {
                        out.forms.push(0);
                    }
                });
            } else {
                units.for_members(u, |m| out.cap_excluded.push(m));
            }
        }
    }
}

/// The first `limit` of `candidates` (units, in unit order) by value descending, ties by
/// unit order: a stable top-k selection. Reorders `candidates` and returns its prefix.
fn top_by_value(value: impl Fn(usize) -> f64, candidates: &mut [usize], limit: usize) -> &[usize] {
    // Unit numbers are distinct, so this order is total and an unstable sort is
    // deterministic.
    let order = |a: &usize, b: &usize| score_desc(value(*a), value(*b)).then(a.cmp(b));
    let keep = limit.min(candidates.len());
    if keep < candidates.len() {
        candidates.select_nth_unstable_by(keep, order);
    }
    let top = &mut candidates[..keep];
    top.sort_unstable_by(order);
    top
}

/// What the count-quota phases need to know about the units of their input.
pub(crate) trait UnitSet {
    /// True when every position is its own unit (no allocation, no bookkeeping).
    const SINGLE: bool;
    /// Number of units.
    fn count(&self) -> usize;
    /// The unit of position `pos`.
    fn unit_of(&self, pos: usize) -> usize;
    /// Calls `f` with each member of `unit`, in input order.
    fn for_members(&self, unit: usize, f: impl FnMut(usize));
    /// The unit's value: the item's score, or its group's value.
    fn value(&self, unit: usize, items: &[ScoredItem<'_>]) -> f64;
    /// The levels of the units, when items have variants.
    fn levels(&self) -> Option<&Levels> {
        None
    }
}

/// Every position its own unit.
pub(crate) struct Singles(pub usize);

impl UnitSet for Singles {
    const SINGLE: bool = true;
    fn count(&self) -> usize {
        self.0
    }
    fn unit_of(&self, pos: usize) -> usize {
        pos
    }
    fn for_members(&self, unit: usize, mut f: impl FnMut(usize)) {
        f(unit)
    }
    fn value(&self, unit: usize, items: &[ScoredItem<'_>]) -> f64 {
        items[unit].score
    }
}

impl UnitSet for Units {
    const SINGLE: bool = false;
    fn count(&self) -> usize {
        self.len()
    }
    fn unit_of(&self, pos: usize) -> usize {
        Units::unit_of(self, pos)
    }
    fn for_members(&self, unit: usize, mut f: impl FnMut(usize)) {
        for &m in self.members(unit) {
            f(m as usize)
        }
    }
    fn value(&self, unit: usize, _: &[ScoredItem<'_>]) -> f64 {
        Units::value(self, unit)
    }
    fn levels(&self) -> Option<&Levels> {
        Units::levels(self)
    }
}

/// Phase 2: runs `phase2` on the items not `committed` (input order) with
/// `Budget(room, room)`, `room = max(0, target − committed tokens)` (the tokens of the
/// committed forms: `forms` is empty or parallel to `committed`), unless the room is 0 or
/// nothing is left. The returned positions index `items`.
fn delegate<F>(
    items: &[ScoredItem<'_>],
    committed: &[usize],
    forms: &[usize],
    target: i64,
    phase2: F,
) -> Result<SliceOutcome>
where
    F: FnOnce(&[ScoredItem<'_>], &[usize], &ContextBudget) -> Result<SliceOutcome>,
{
    let form = |i: usize| forms.get(i).copied().unwrap_or(0);
    let committed_tokens = checked_token_sum(
        committed
            .iter()
            .enumerate()
            .map(|(i, &p)| items[p].item.form_tokens(form(i))),
        "count-quota committed tokens",
    )?;
    let room = target
        .checked_sub(committed_tokens)
        .ok_or_else(|| {
            Error::TokenOverflow("count-quota remaining budget does not fit in 64 bits".into())
        })?
        .max(0);
    let rest = residual(items.len(), committed);
    let mut mapped = SliceOutcome::default();
    if room > 0 && !rest.is_empty() {
        let view: Vec<ScoredItem<'_>> = rest.iter().map(|&p| items[p]).collect();
        let outcome = phase2(&view, &rest, &ContextBudget::new(room, room)?)?;
        append_mapped(&mut mapped, outcome, &rest);
    }
    Ok(mapped)
}

/// Positions `0..len` not in `used`, in input order.
fn residual(len: usize, used: &[usize]) -> Vec<usize> {
    let mut taken = vec![false; len];
    for &p in used {
        taken[p] = true;
    }
    (0..len).filter(|&p| !taken[p]).collect()
}
