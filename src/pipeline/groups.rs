//! The groups of one run (`docs/groups.md`): a dense id per input position, each group's
//! members in input order, its value once scored, and — for traced runs — what happened
//! to it. Built only when some item has a group key; every stage then works on ids and
//! positions, never on the keys again.

use crate::diagnostics::{Collector, ExclusionReason, GroupDecision, GroupReport, PipelineStage};
use crate::error::Result;
use crate::hash::FastMap;
use crate::model::{check_unit_count, Accumulator, ContextItem, GroupValue, Units};
use crate::pipeline::score::Candidate;

/// The id of "no group" in [`RunGroups::id_of`].
pub(super) const NO_GROUP: u32 = u32::MAX;

/// The groups of a run.
#[derive(Clone)]
pub(super) struct RunGroups<'a> {
    /// Group id of each input position, or [`NO_GROUP`].
    id_of: Vec<u32>,
    /// Key of each group.
    keys: Vec<&'a str>,
    /// Members of group `g`: `members[starts[g]..starts[g + 1]]`, input order.
    starts: Vec<u32>,
    members: Vec<u32>,
    /// Value of each group once scored ([`RunGroups::set_values`]); pinned and excluded
    /// groups keep `None`.
    values: Vec<Option<f64>>,
    /// How values are computed.
    mode: GroupValue,
    /// What happened to each group (recorded for traced runs only: empty until the
    /// first note, then one per group).
    outcomes: Vec<Outcome>,
}

/// What happened to one group.
#[derive(Debug, Clone, Copy, Default)]
struct Outcome {
    excluded: Option<(PipelineStage, usize)>,
    pinned_by: Option<usize>,
    partial_selection: bool,
}

/// Assigns group ids while Classify walks the input once: ids in order of first
/// appearance, with the first negative-token and the first pinned member of each group.
pub(super) struct GroupIds<'a> {
    n: usize,
    id_of: Vec<u32>,
    keys: Vec<&'a str>,
    sizes: Vec<u32>,
    first_negative: Vec<u32>,
    first_pinned: Vec<u32>,
    lookup: FastMap<&'a str, u32>,
    /// The last key seen and its id: members of a group usually follow one another.
    last: Option<(&'a str, u32)>,
}

impl<'a> GroupIds<'a> {
    /// Ready to number the groups of `n` items.
    pub(super) fn new(n: usize) -> Self {
        Self {
            n,
            id_of: Vec::new(),
            keys: Vec::new(),
            sizes: Vec::new(),
            first_negative: Vec::new(),
            first_pinned: Vec::new(),
            lookup: FastMap::default(),
            last: None,
        }
    }

    /// Notes item `index` with group key `key`.
    pub(super) fn add(&mut self, index: usize, key: &'a str, item: &ContextItem) {
        if self.id_of.is_empty() {
            self.id_of = vec![NO_GROUP; self.n];
        }
        let id = match self.last {
            Some((last, id)) if last == key => id,
            _ => {
                if self.keys.is_empty() {
                    // Room for every remaining item to start a group: no rehashing.
                    self.lookup.reserve(self.n - index);
                }
                let next = self.keys.len() as u32;
                let id = *self.lookup.entry(key).or_insert(next);
                if id == next {
                    self.keys.push(key);
                    self.sizes.push(0);
                    self.first_negative.push(NO_GROUP);
                    self.first_pinned.push(NO_GROUP);
                }
                self.last = Some((key, id));
                id
            }
        };
        let g = id as usize;
        self.id_of[index] = id;
        self.sizes[g] += 1;
        if item.tokens() < 0 && self.first_negative[g] == NO_GROUP {
            self.first_negative[g] = index as u32;
        }
        if item.pinned() && self.first_pinned[g] == NO_GROUP {
            self.first_pinned[g] = index as u32;
        }
    }

    /// True when no item had a group key.
    pub(super) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The first negative-token member of each group (`NO_GROUP` when none).
    pub(super) fn first_negative(&self) -> &[u32] {
        &self.first_negative
    }

    /// The first pinned member of each group (`NO_GROUP` when none).
    pub(super) fn first_pinned(&self) -> &[u32] {
        &self.first_pinned
    }

    /// The run's groups.
    pub(super) fn finish(self, mode: GroupValue) -> Result<RunGroups<'a>> {
        check_unit_count(self.n)?;
        let count = self.keys.len();
        let mut starts = Vec::with_capacity(count + 1);
        starts.push(0u32);
        for &size in &self.sizes {
            starts.push(starts[starts.len() - 1] + size);
        }
        let mut next: Vec<u32> = starts[..count].to_vec();
        let mut members = vec![0u32; starts[count] as usize];
        for (index, &g) in self.id_of.iter().enumerate() {
            if g != NO_GROUP {
                members[next[g as usize] as usize] = index as u32;
                next[g as usize] += 1;
            }
        }
        Ok(RunGroups {
            id_of: self.id_of,
            values: vec![None; count],
            outcomes: Vec::new(),
            keys: self.keys,
            starts,
            members,
            mode,
        })
    }
}

impl<'a> RunGroups<'a> {
    /// Number of groups.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The group of input position `index`, if any.
    pub(super) fn group_of(&self, index: usize) -> Option<usize> {
        let g = self.id_of[index];
        (g != NO_GROUP).then_some(g as usize)
    }

    /// The members of group `g`, in input order.
    pub(super) fn members(&self, g: usize) -> &[u32] {
        &self.members[self.starts[g] as usize..self.starts[g + 1] as usize]
    }

    /// The key of group `g`.
    pub(super) fn key(&self, g: usize) -> &'a str {
        self.keys[g]
    }

    /// The value mode.
    pub(super) fn mode(&self) -> GroupValue {
        self.mode
    }

    /// Records the value of every group with scored members (`scored` in input order).
    pub(super) fn set_values(&mut self, scored: &[Candidate]) {
        let mut acc = vec![Accumulator::default(); self.len()];
        for c in scored {
            if let Some(g) = self.group_of(c.index) {
                acc[g].add(c.score);
            }
        }
        for (value, acc) in self.values.iter_mut().zip(&acc) {
            *value = (!acc.is_empty()).then(|| acc.value(self.mode));
        }
    }

    /// Whether group `g` has scored members (it is neither pinned nor excluded at Classify).
    pub(super) fn has_value(&self, g: usize) -> bool {
        self.values[g].is_some()
    }

    /// The value of group `g` (0.0 when it has none).
    pub(super) fn value(&self, g: usize) -> f64 {
        self.values[g].unwrap_or(0.0)
    }

    /// The units of a candidate list (`index(p)` is the input position at list position
    /// `p`; `score(p)` its score there): each group's unit takes `group_value(g)`. Every
    /// group with a member in the list has all its members there.
    pub(super) fn units(
        &self,
        n: usize,
        index: impl Fn(usize) -> usize,
        score: impl Fn(usize) -> f64,
        group_value: impl Fn(usize) -> f64,
    ) -> Units {
        // List position of each input position (only those in the list are read).
        let mut position = vec![0u32; self.id_of.len()];
        for p in 0..n {
            position[index(p)] = p as u32;
        }
        let position = &position;
        Units::build(
            n,
            |p| self.id_of[index(p)],
            |g| {
                self.members(g as usize)
                    .iter()
                    .map(move |&m| position[m as usize])
            },
            |g| group_value(g as usize),
            score,
        )
    }

    /// The outcome of group `g`, for writing.
    fn outcome(&mut self, g: usize) -> &mut Outcome {
        if self.outcomes.is_empty() {
            self.outcomes = vec![Outcome::default(); self.keys.len()];
        }
        &mut self.outcomes[g]
    }

    /// Notes that group `g` is pinned whole because of its member `member`.
    pub(super) fn set_pinned_by(&mut self, g: usize, member: usize) {
        self.outcome(g).pinned_by = Some(member);
    }

    /// Notes that a slicer returned only part of group `g`.
    pub(super) fn set_partial(&mut self, g: usize) {
        self.outcome(g).partial_selection = true;
    }

    /// Notes that group `g` was excluded at `stage` because of its member `member`.
    pub(super) fn set_excluded(&mut self, g: usize, stage: PipelineStage, member: usize) {
        self.outcome(g).excluded = Some((stage, member));
    }

    /// The group listing of the report, groups in order of their first member.
    pub(super) fn report(&self, items: &[ContextItem]) -> Vec<GroupReport> {
        (0..self.len())
            .map(|g| {
                let members: Vec<usize> = self.members(g).iter().map(|&m| m as usize).collect();
                let tokens = members
                    .iter()
                    .fold(0i64, |acc, &m| acc.saturating_add(items[m].tokens()));
                let outcome = self.outcomes.get(g).copied().unwrap_or_default();
                GroupReport {
                    key: self.keys[g].to_owned(),
                    members,
                    tokens,
                    value: self.values[g],
                    decision: match outcome.excluded {
                        None => GroupDecision::Included,
                        Some((stage, member_index)) => GroupDecision::Excluded {
                            stage,
                            member_index,
                        },
                    },
                    pinned_by: outcome.pinned_by,
                    partial_selection: outcome.partial_selection,
                }
            })
            .collect()
    }
}

/// The reason of a member excluded because `lead`, a member of its group `g`, was excluded
/// for `lead_reason`.
pub(super) fn member_reason(
    table: &RunGroups<'_>,
    items: &[ContextItem],
    g: usize,
    lead: usize,
    lead_reason: &ExclusionReason,
) -> ExclusionReason {
    ExclusionReason::GroupExcluded {
        group: table.key(g).to_owned(),
        member_index: lead,
        member_content: items[lead].content().to_owned(),
        member_reason: lead_reason.name().to_owned(),
    }
}

/// Records the exclusion of input position `index` (score `score`) at `stage`: the lead
/// of its group (or an ungrouped item) gets `lead_reason`, every other member the
/// [`ExclusionReason::GroupExcluded`] naming the lead; the group's outcome is noted.
#[allow(clippy::too_many_arguments)]
pub(super) fn exclude_member<C: Collector>(
    collector: &mut C,
    table: &mut RunGroups<'_>,
    items: &[ContextItem],
    stage: PipelineStage,
    index: usize,
    score: f64,
    lead: usize,
    lead_reason: &ExclusionReason,
) {
    if !C::ENABLED {
        return;
    }
    let reason = match table.group_of(index) {
        Some(g) => {
            table.set_excluded(g, stage, lead);
            if index == lead {
                lead_reason.clone()
            } else {
                member_reason(table, items, g, lead, lead_reason)
            }
        }
        None => lead_reason.clone(),
    };
    collector.exclude(stage, index, score, reason);
}
