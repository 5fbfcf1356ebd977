//! Item groups (an extension of the specification, `docs/groups.md`): how a group's value
//! is computed, and [`Units`], the partition of a slicer's or placer's input into what it
//! must take or leave whole.
//!
//! A unit is one ungrouped item or every member of one group. Everything here works on
//! positions in the list a slicer or placer receives; nothing reads an item's content.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::model::levels::{LevelSource, Levels};
use crate::model::{kept_forms, ScoredItem};

/// How the value of a group is computed from its members' scores. A group's value is what
/// the slicers weigh (greedy density, knapsack value, count-quota ranking), what U-shaped
/// placement ranks and what picks the survivor among duplicate groups. An ungrouped item's
/// value is its score, whatever the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GroupValue {
    /// The sum of the members' scores, added in input order (the default): a group is
    /// worth what its members are worth together.
    #[default]
    Sum,
    /// The highest member score (IEEE total order).
    Max,
    /// The sum divided by the number of members.
    Mean,
}

impl GroupValue {
    /// Every mode, in the order of the C ABI's numbering (0, 1, 2).
    pub const ALL: [GroupValue; 3] = [GroupValue::Sum, GroupValue::Max, GroupValue::Mean];

    /// The name used in policy JSON and on the command line: `sum`, `max`, `mean`.
    pub fn name(self) -> &'static str {
        match self {
            GroupValue::Sum => "sum",
            GroupValue::Max => "max",
            GroupValue::Mean => "mean",
        }
    }

    /// The mode named `name` (ASCII case-insensitive); anything else fails with
    /// [`Error::InvalidArgument`] listing the names.
    pub fn from_name(name: &str) -> Result<GroupValue> {
        Self::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown group value '{name}'; known values: sum, max, mean"
                ))
            })
    }

    /// Folds `scores` (the members' scores in input order, at least one) into the group's
    /// value. One score gives that score back bit for bit (a sum starts from the first
    /// score, not from 0.0, so a lone `-0.0` stays `-0.0`).
    pub fn of(self, scores: impl IntoIterator<Item = f64>) -> f64 {
        let mut acc = Accumulator::default();
        for score in scores {
            acc.add(score);
        }
        acc.value(self)
    }
}

/// A running group value: what [`GroupValue::of`] folds, one score at a time.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Accumulator {
    sum: f64,
    max: f64,
    count: u32,
}

impl Accumulator {
    /// Adds the next member's score (members in input order).
    pub(crate) fn add(&mut self, score: f64) {
        if self.count == 0 {
            (self.sum, self.max) = (score, score);
        } else {
            self.sum += score;
            if score.total_cmp(&self.max) == Ordering::Greater {
                self.max = score;
            }
        }
        self.count = self.count.saturating_add(1);
    }

    /// True when no score was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The value under `mode`; 0.0 when nothing was added.
    pub(crate) fn value(&self, mode: GroupValue) -> f64 {
        match (mode, self.count) {
            (_, 0) => 0.0,
            (GroupValue::Sum, _) => self.sum,
            (GroupValue::Max, _) => self.max,
            (GroupValue::Mean, 1) => self.sum,
            (GroupValue::Mean, n) => self.sum / f64::from(n),
        }
    }
}

/// Marks "no unit yet" in the unit-numbering scratch arrays.
const NONE: u32 = u32::MAX;

/// The positions of a slicer's (or placer's) input grouped into units: each unit is one
/// ungrouped item or all the members of one group, and must be taken or left whole.
///
/// Units are numbered in the order of their earliest position (so unit order breaks ties
/// the way position order does for items); [`Units::members`] lists a unit's positions in
/// the caller's input order. Each unit has a value: the item's score, or the group's value
/// ([`GroupValue`]).
///
/// When items have variants (`docs/variants.md`), each unit also has **levels**: level 0
/// is every member in full, and each further level moves the members that still have a
/// cheaper form one step down ([`Units::level_count`], [`Units::level_tokens`],
/// [`Units::level_value`], [`Units::form_at`]). A slicer chooses at most one level per
/// unit.
///
/// ```
/// use ctxpack::model::{GroupValue, Units};
/// use ctxpack::{ContextItem, ScoredItem};
///
/// let items = [
///     ContextItem::builder("call", 10).group("c1").build()?,
///     ContextItem::new("note", 5)?,
///     ContextItem::builder("result", 90).group("c1").build()?,
/// ];
/// let scored: Vec<ScoredItem> = items
///     .iter()
///     .zip([0.5, 0.9, 0.25])
///     .map(|(item, score)| ScoredItem { item, score })
///     .collect();
/// let units = Units::new(&scored, GroupValue::Sum)?;
/// assert_eq!(units.len(), 2);
/// assert_eq!(units.members(0), [0, 2]); // the group, first in order of earliest position
/// assert_eq!(units.value(0), 0.75);
/// assert_eq!(units.members(1), [1]);
/// assert_eq!(units.unit_of(2), 0);
/// # Ok::<(), ctxpack::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Units {
    /// The unit of each position.
    unit_of: Vec<u32>,
    /// Members of unit `u`: `members[starts[u]..starts[u + 1]]`.
    starts: Vec<u32>,
    members: Vec<u32>,
    /// The value of each unit.
    values: Vec<f64>,
    /// Kept forms and levels, when some item has variants.
    levels: Option<Box<Levels>>,
}

impl Units {
    /// The units of `items` from their group keys (equal keys, compared byte for byte,
    /// form one unit); a group's value folds its members' scores in the order of `items`.
    /// When some item has variants, the units get their levels, from each item's kept
    /// (undominated) forms. Fails with [`Error::InvalidArgument`] beyond `u32::MAX - 1`
    /// items, and with [`Error::TokenOverflow`] when a level's tokens do not fit in 64 bits.
    pub fn new(items: &[ScoredItem<'_>], value: GroupValue) -> Result<Units> {
        let mut units = Self::grouped(items, value)?;
        if items.iter().any(|s| s.item.has_variants()) {
            let mut source = ItemForms {
                items,
                starts: vec![0],
                kept: Vec::with_capacity(items.len()),
            };
            for s in items {
                kept_forms(s.item, &mut source.kept, |_, _| {});
                source.starts.push(source.kept.len());
            }
            units.set_levels(&source, value)?;
        }
        Ok(units)
    }

    /// [`Units::new`] without levels.
    fn grouped(items: &[ScoredItem<'_>], value: GroupValue) -> Result<Units> {
        check_len(items.len())?;
        let mut ids: FastMap<&str, u32> = FastMap::default();
        let mut accumulators: Vec<Accumulator> = Vec::new();
        let mut members: Vec<Vec<u32>> = Vec::new();
        let group_of: Vec<u32> = items
            .iter()
            .enumerate()
            .map(|(p, s)| match s.item.group() {
                None => NONE,
                Some(key) => {
                    let next = accumulators.len() as u32;
                    let id = *ids.entry(key).or_insert(next);
                    if id == next {
                        accumulators.push(Accumulator::default());
                        members.push(Vec::new());
                    }
                    accumulators[id as usize].add(s.score);
                    members[id as usize].push(p as u32);
                    id
                }
            })
            .collect();
        Ok(Self::build(
            items.len(),
            |p| group_of[p],
            |g| members[g as usize].iter().copied(),
            |g| accumulators[g as usize].value(value),
            |p| items[p].score,
        ))
    }

    /// Builds the units of `n` positions in one pass. `group(p)` is the group id of
    /// position `p`, or `u32::MAX` for an ungrouped item; `members(g)` lists the positions
    /// of group `g` in input order (every one of them below `n`); a group's unit takes
    /// `group_value(g)`, an ungrouped item's unit `item_value(p)`. The caller has checked
    /// `n < u32::MAX`.
    pub(crate) fn build<M: Iterator<Item = u32>>(
        n: usize,
        group: impl Fn(usize) -> u32,
        members_of: impl Fn(u32) -> M,
        group_value: impl Fn(u32) -> f64,
        item_value: impl Fn(usize) -> f64,
    ) -> Units {
        debug_assert!(n < NONE as usize);
        let mut unit_of = vec![NONE; n];
        let mut starts = Vec::with_capacity(n + 1);
        let mut members = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        starts.push(0u32);
        for p in 0..n {
            if unit_of[p] != NONE {
                continue; // a member of a group met earlier
            }
            let u = values.len() as u32;
            let g = group(p);
            if g == NONE {
                unit_of[p] = u;
                members.push(p as u32);
                values.push(item_value(p));
            } else {
                for m in members_of(g) {
                    unit_of[m as usize] = u;
                    members.push(m);
                }
                values.push(group_value(g));
            }
            starts.push(members.len() as u32);
        }
        Units {
            unit_of,
            starts,
            members,
            values,
            levels: None,
        }
    }

    /// `n` positions, each its own unit, position `p` worth `value(p)`. The caller has
    /// checked `n < u32::MAX`.
    pub(crate) fn singles(n: usize, value: impl Fn(usize) -> f64) -> Units {
        Self::build(n, |_| NONE, |_| std::iter::empty(), |_| 0.0, value)
    }

    /// Gives the units their levels, from what `source` says about each position; a
    /// group's level value folds its members' values with `mode`.
    pub(crate) fn set_levels(&mut self, source: &impl LevelSource, mode: GroupValue) -> Result<()> {
        let members = |u| self.members(u);
        let levels = Levels::build(self.position_count(), self.len(), members, source, mode)?;
        self.levels = Some(Box::new(levels));
        Ok(())
    }

    /// The units of a sub-list: `positions[i]` is the position (in this list) of the
    /// sub-list's position `i`. Every unit must be wholly inside or wholly outside the
    /// sub-list. Units keep their values and their members' relative order, and are
    /// renumbered by earliest sub-list position.
    pub(crate) fn subset(&self, positions: &[usize]) -> Units {
        let mut sub_of = vec![NONE; self.unit_of.len()];
        for (i, &p) in positions.iter().enumerate() {
            sub_of[p] = i as u32;
        }
        let unit = |i: usize| self.unit_of[positions[i]];
        let mut sub = Self::build(
            positions.len(),
            unit,
            |u| {
                // A member outside the sub-list (a caller's mistake) is left out.
                let inside = self.members(u as usize).iter().map(|&m| sub_of[m as usize]);
                inside.filter(|&i| i != NONE)
            },
            |u| self.values[u as usize],
            |i| self.values[unit(i) as usize],
        );
        if let Some(levels) = &self.levels {
            let parent = |v: usize| self.unit_of(positions[sub.members(v)[0] as usize]);
            let subset = levels.subset(positions, sub.len(), parent);
            sub.levels = Some(Box::new(subset));
        }
        sub
    }

    /// Number of units.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when there are no positions.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Number of positions (the length of the list the units partition).
    pub fn position_count(&self) -> usize {
        self.unit_of.len()
    }

    /// True when every unit is a single position (no group has two members here).
    pub fn all_single(&self) -> bool {
        self.len() == self.position_count()
    }

    /// The positions of unit `unit`, in the caller's input order.
    pub fn members(&self, unit: usize) -> &[u32] {
        &self.members[self.starts[unit] as usize..self.starts[unit + 1] as usize]
    }

    /// The unit that position `pos` belongs to.
    pub fn unit_of(&self, pos: usize) -> usize {
        self.unit_of[pos] as usize
    }

    /// The value of unit `unit`: the item's score, or the group's value.
    pub fn value(&self, unit: usize) -> f64 {
        self.values[unit]
    }

    /// True when the units have levels (some item has variants).
    pub fn has_levels(&self) -> bool {
        self.levels.is_some()
    }

    /// The levels, when some item has variants.
    pub(crate) fn levels(&self) -> Option<&Levels> {
        self.levels.as_deref()
    }

    /// Number of levels of unit `unit`: 1 (everything in full) without variants.
    pub fn level_count(&self, unit: usize) -> usize {
        self.levels.as_ref().map_or(1, |l| l.count(unit))
    }

    /// Tokens of unit `unit` at `level` (`level < level_count(unit)`), when the units have
    /// levels; `None` otherwise (the slicer adds its members' tokens itself).
    pub fn level_tokens(&self, unit: usize, level: usize) -> Option<i64> {
        self.levels.as_ref().map(|l| l.tokens(unit, level))
    }

    /// Value of unit `unit` at `level` (`level < level_count(unit)`): at level 0 the unit's
    /// [`value`](Units::value).
    pub fn level_value(&self, unit: usize, level: usize) -> f64 {
        match &self.levels {
            Some(l) => l.value(unit, level),
            None => self.values[unit],
        }
    }

    /// The form (0 = the item itself) position `pos` uses when its unit is at `level`: 0
    /// without variants.
    pub fn form_at(&self, pos: usize, level: usize) -> usize {
        self.levels.as_ref().map_or(0, |l| l.form_at(pos, level))
    }

    /// The positions and forms of `picks` (unit, level) in order, each unit's members in
    /// input order.
    pub(crate) fn expand_levels(
        &self,
        picks: impl IntoIterator<Item = (usize, usize)>,
    ) -> (Vec<usize>, Vec<usize>) {
        let mut positions = Vec::with_capacity(self.position_count());
        let mut forms = Vec::with_capacity(self.position_count());
        for (u, level) in picks {
            for &m in self.members(u) {
                positions.push(m as usize);
                forms.push(self.form_at(m as usize, level));
            }
        }
        (positions, forms)
    }

    /// Removes from `selected` every position whose unit is not wholly selected (a custom
    /// slicer may return part of a group) and returns the removed positions, in their
    /// order in `selected`. Positions out of range or repeated are left for the caller to
    /// reject. `forms` (empty, or parallel to `selected`) loses the entries of the removed
    /// positions.
    pub(crate) fn keep_whole(
        &self,
        selected: &mut Vec<usize>,
        forms: &mut Vec<usize>,
    ) -> Vec<usize> {
        let n = self.position_count();
        if self.all_single() || selected.iter().any(|&p| p >= n) {
            return Vec::new();
        }
        let mut count = vec![0u32; self.len()];
        for &p in selected.iter() {
            count[self.unit_of(p)] += 1;
        }
        let whole = |p: usize| {
            let u = self.unit_of(p);
            count[u] as usize >= self.members(u).len()
        };
        if selected.iter().all(|&p| whole(p)) {
            return Vec::new();
        }
        let mut dropped = Vec::new();
        let parallel = forms.len() == selected.len();
        let mut kept_forms = Vec::with_capacity(if parallel { forms.len() } else { 0 });
        let mut i = 0;
        selected.retain(|&p| {
            let keep = whole(p);
            if !keep {
                dropped.push(p);
            } else if parallel {
                kept_forms.push(forms[i]);
            }
            i += 1;
            keep
        });
        if parallel {
            *forms = kept_forms;
        }
        dropped
    }

    /// The placement `order` (a permutation of the positions) with every unit moved to
    /// where its first member appears: each unit's members follow one another there, in
    /// input order.
    pub(crate) fn gather(&self, order: &[usize]) -> Vec<usize> {
        let mut placed = vec![false; self.len()];
        let mut out = Vec::with_capacity(order.len());
        for &p in order {
            let u = self.unit_of(p);
            if !placed[u] {
                placed[u] = true;
                out.extend(self.members(u).iter().map(|&m| m as usize));
            }
        }
        out
    }

    /// The positions of `units` (unit numbers, in placement order), each unit's members
    /// in input order.
    pub(crate) fn expand(&self, units: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.position_count());
        for u in units {
            out.extend(self.members(u).iter().map(|&m| m as usize));
        }
        out
    }
}

/// Scored items with their kept forms, read straight from the items.
struct ItemForms<'s, 'a> {
    items: &'s [ScoredItem<'a>],
    /// Kept forms of position `p`: `kept[starts[p]..starts[p + 1]]`.
    starts: Vec<usize>,
    kept: Vec<u32>,
}

impl LevelSource for ItemForms<'_, '_> {
    fn kept(&self, p: usize) -> &[u32] {
        &self.kept[self.starts[p]..self.starts[p + 1]]
    }
    fn tokens(&self, p: usize, k: usize) -> i64 {
        self.items[p].item.form_tokens(self.kept(p)[k] as usize)
    }
    fn quality(&self, p: usize, k: usize) -> f64 {
        self.items[p].item.form_quality(self.kept(p)[k] as usize)
    }
    fn score(&self, p: usize) -> f64 {
        self.items[p].score
    }
}

/// Fails when `n` positions cannot be numbered in 32 bits (with one value kept free).
pub(crate) fn check_len(n: usize) -> Result<()> {
    if n >= NONE as usize {
        return Err(Error::InvalidArgument(format!(
            "item groups support at most {} items, got {n}",
            NONE - 1
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContextItem;

    fn items(groups: &[Option<&str>]) -> Vec<ContextItem> {
        groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let b = ContextItem::builder(format!("i{i}"), 1);
                match g {
                    Some(g) => b.group(*g).build().unwrap(),
                    None => b.build().unwrap(),
                }
            })
            .collect()
    }

    fn scored<'a>(items: &'a [ContextItem], scores: &[f64]) -> Vec<ScoredItem<'a>> {
        items
            .iter()
            .zip(scores)
            .map(|(item, &score)| ScoredItem { item, score })
            .collect()
    }

    #[test]
    fn values_fold_in_input_order() {
        assert_eq!(GroupValue::Sum.of([0.5, 0.25, 1.0]), 1.75);
        assert_eq!(
            GroupValue::Max.of([0.5, f64::NAN, 1.0]).to_bits(),
            f64::NAN.to_bits()
        );
        assert_eq!(GroupValue::Max.of([-0.0, 0.0]).to_bits(), 0.0f64.to_bits());
        assert_eq!(GroupValue::Mean.of([0.5, 0.25]), 0.375);
        for mode in GroupValue::ALL {
            assert_eq!(mode.of([-0.0]).to_bits(), (-0.0f64).to_bits(), "{mode:?}");
            assert_eq!(mode.of([0.3]), 0.3);
            assert_eq!(mode.of([]), 0.0);
            assert_eq!(
                GroupValue::from_name(&mode.name().to_uppercase()).unwrap(),
                mode
            );
        }
        let err = GroupValue::from_name("median").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument: unknown group value 'median'; known values: sum, max, mean"
        );
        assert_eq!(GroupValue::default(), GroupValue::Sum);
    }

    #[test]
    fn units_are_numbered_by_earliest_position() {
        let it = items(&[Some("b"), None, Some("a"), Some("b"), Some("a"), None]);
        let units = Units::new(
            &scored(&it, &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
            GroupValue::Max,
        )
        .unwrap();
        assert_eq!(units.len(), 4);
        assert_eq!(units.position_count(), 6);
        assert!(!units.all_single());
        let members: Vec<&[u32]> = (0..4).map(|u| units.members(u)).collect();
        assert_eq!(members, [&[0, 3][..], &[1], &[2, 4], &[5]]);
        let values: Vec<f64> = (0..4).map(|u| units.value(u)).collect();
        assert_eq!(values, [0.4, 0.2, 0.5, 0.6]);
        assert_eq!(units.unit_of(3), 0);
        assert_eq!(units.unit_of(4), 2);
    }

    #[test]
    fn members_follow_the_given_input_order_not_position_order() {
        // Positions 0..4 in score order; the group's members listed in input order.
        let members = [3u32, 2, 0];
        let units = Units::build(
            4,
            |p| [0, NONE, 0, 0][p],
            |_| members.iter().copied(),
            |_| 9.0,
            |p| p as f64,
        );
        assert_eq!(units.members(0), [3, 2, 0]);
        assert_eq!(units.members(1), [1]);
        assert_eq!((units.value(0), units.value(1)), (9.0, 1.0));
        assert_eq!((units.unit_of(2), units.unit_of(1)), (0, 1));
    }

    #[test]
    fn subsets_renumber_and_keep_member_order() {
        let lists = [vec![3u32, 0], vec![4, 2]];
        let units = Units::build(
            6,
            |p| [0, NONE, 1, 0, 1, NONE][p],
            |g| lists[g as usize].iter().copied(),
            |g| [7.0, 8.0][g as usize],
            |p| p as f64,
        );
        assert_eq!(units.members(0), [3, 0]);
        let sub = units.subset(&[1, 2, 4, 5]);
        assert_eq!(sub.len(), 3);
        assert_eq!(sub.members(0), [0]);
        assert_eq!(sub.members(1), [2, 1]); // input order kept: 4 before 2
        assert_eq!(sub.value(1), 8.0);
        assert_eq!((sub.value(0), sub.value(2)), (1.0, 5.0));
        let sub = units.subset(&[3, 0]);
        assert_eq!((sub.len(), sub.members(0)), (1, &[0u32, 1][..]));
    }

    #[test]
    fn keep_whole_drops_partial_units_only() {
        let it = items(&[Some("g"), None, Some("g"), Some("h"), Some("h")]);
        let units = Units::new(&scored(&it, &[0.0; 5]), GroupValue::Sum).unwrap();
        let mut selected = vec![4, 0, 1, 3];
        assert_eq!(units.keep_whole(&mut selected, &mut Vec::new()), vec![0]);
        assert_eq!(selected, vec![4, 1, 3]);
        let mut whole = vec![2, 0, 1];
        assert!(units.keep_whole(&mut whole, &mut Vec::new()).is_empty());
        assert_eq!(whole, vec![2, 0, 1]);
        let mut out_of_range = vec![0, 9];
        assert!(units
            .keep_whole(&mut out_of_range, &mut Vec::new())
            .is_empty());
    }

    #[test]
    fn gather_moves_units_to_their_first_member() {
        let it = items(&[Some("g"), None, Some("g"), None]);
        let units = Units::new(&scored(&it, &[0.0; 4]), GroupValue::Sum).unwrap();
        assert_eq!(units.gather(&[3, 2, 1, 0]), vec![3, 0, 2, 1]);
        assert_eq!(units.expand([2, 0, 1]), vec![3, 0, 2, 1]);
        assert!(check_len(10).is_ok());
    }
}
