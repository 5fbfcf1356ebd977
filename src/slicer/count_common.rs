//! The parts CountQuotaSlice and CountConstrainedKnapsackSlice share (spec 04 §5–§7, decision D10
//! in docs/decisions.md): the validated entry set, Phase 1 (commit the required counts), the
//! residual hand-off of Phase 2 and Phase 3 (enforce the caps).

use std::collections::HashMap;

use crate::diagnostics::CountRequirementShortfall;
use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextKind, ScoredItem, Units};
use crate::slicer::shared::{append_mapped, reject_duplicate_kinds, score_desc};
use crate::slicer::{CountQuotaEntry, ScarcityBehavior, SliceOutcome};

/// A validated list of count quotas with distinct kinds and a kind → entry lookup.
#[derive(Debug, Clone)]
pub(crate) struct CountQuotas {
    entries: Vec<CountQuotaEntry>,
    caps: Vec<(ContextKind, usize)>,
    index: HashMap<ContextKind, usize>,
}

/// What Phase 1 produced.
struct Commits {
    /// Committed positions: entries in configuration order, each kind by score.
    selected: Vec<usize>,
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
        let mut commits = self.commit(slicer, scarcity, items, units, &counter)?;
        let inner = delegate(items, &commits.selected, target, phase2)?;
        let mut out = SliceOutcome {
            selected: std::mem::take(&mut commits.selected),
            shortfalls: std::mem::take(&mut commits.shortfalls),
            cap_excluded: inner.cap_excluded,
            partial_groups: inner.partial_groups,
        };
        out.shortfalls.extend(inner.shortfalls);
        counter.enforce_caps(units, &inner.selected, &mut commits.counts, &mut out);
        Ok(out)
    }

    /// Phase 1: walks the entries in configuration order; for each, commits the units
    /// holding members of its kind by value (ties in unit order) until the entry's count
    /// reaches its requirement, skipping a unit that would take a capped kind over its cap.
    fn commit<U: UnitSet>(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
        units: &U,
        counter: &Counter<'_>,
    ) -> Result<Commits> {
        let mut members = self.required_units(units, counter.entry_of);
        let mut commits = Commits {
            selected: Vec::new(),
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
                    units.for_members(u, |m| commits.selected.push(m));
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
        phase2: &[usize],
        counts: &mut [usize],
        out: &mut SliceOutcome,
    ) {
        let mut seen = vec![false; if U::SINGLE { 0 } else { units.count() }];
        for &pos in phase2 {
            let u = units.unit_of(pos);
            if !U::SINGLE {
                if seen[u] {
                    continue;
                }
                seen[u] = true;
            }
            let target = if self.admit(units, u, counts) {
                &mut out.selected
            } else {
                &mut out.cap_excluded
            };
            units.for_members(u, |m| target.push(m));
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
}

/// Phase 2: runs `phase2` on the items not `committed` (input order) with
/// `Budget(room, room)`, `room = max(0, target − committed tokens)`, unless the room is 0 or
/// nothing is left. The returned positions index `items`.
fn delegate<F>(
    items: &[ScoredItem<'_>],
    committed: &[usize],
    target: i64,
    phase2: F,
) -> Result<SliceOutcome>
where
    F: FnOnce(&[ScoredItem<'_>], &[usize], &ContextBudget) -> Result<SliceOutcome>,
{
    let committed_tokens = checked_token_sum(
        committed.iter().map(|&p| items[p].item.tokens()),
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
