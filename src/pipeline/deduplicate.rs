//! Stage 3, Deduplicate (spec 02 §4): among byte-identical contents keep the highest score
//! (strictly greater wins, so ties keep the earliest); survivors keep their order.
//!
//! With groups (`docs/groups.md`), ungrouped items deduplicate among themselves exactly as
//! above, and a group is a duplicate only of another group whose members have the same
//! contents in the same order; the group with the strictly highest value survives (ties
//! keep the earliest). A grouped item is never a duplicate of an ungrouped one, and members
//! of one group are never duplicates of each other, so no duplicate can orphan a group.

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::hash::FastMap;
use crate::model::ContextItem;
use crate::pipeline::groups::{exclude_member, RunGroups};
use crate::pipeline::score::Candidate;

pub(super) fn deduplicate<C: Collector>(
    enabled: bool,
    items: &[ContextItem],
    scored: Vec<Candidate>,
    groups: Option<&mut RunGroups<'_>>,
    collector: &mut C,
) -> Vec<Candidate> {
    collector.begin_stage();
    let survivors = match groups {
        _ if !enabled || scored.len() <= 1 => scored,
        None => remove_duplicates(items, scored, collector),
        Some(table) => remove_duplicates_grouped(items, scored, table, collector),
    };
    collector.end_stage(PipelineStage::Deduplicate, survivors.len());
    survivors
}

fn remove_duplicates<C: Collector>(
    items: &[ContextItem],
    mut scored: Vec<Candidate>,
    collector: &mut C,
) -> Vec<Candidate> {
    let content = |pos: usize| items[scored[pos].index].content();
    let score = |pos: usize| scored[pos].score;
    let hash = |pos: usize| items[scored[pos].index].content_hash();
    let Some(keep) = best_of_each_content(scored.len(), content, score, hash) else {
        return scored;
    };
    // The survivors replace the candidates in place, in order.
    let mut flags = keep.iter();
    scored.retain(|candidate| {
        let kept = flags.next().copied().unwrap_or(true);
        if !kept && C::ENABLED {
            let content = items[candidate.index].content();
            let reason = ExclusionReason::Deduplicated {
                deduplicated_against: content.to_owned(),
            };
            collector.exclude(
                PipelineStage::Deduplicate,
                candidate.index,
                candidate.score,
                reason,
            );
        }
        kept
    });
    scored
}

/// [`remove_duplicates`] with groups: item-level among ungrouped candidates, group-level
/// among groups. A removed group's first member carries `Deduplicated`, the others
/// `GroupExcluded` naming it. Exclusions are recorded in candidate order.
fn remove_duplicates_grouped<C: Collector>(
    items: &[ContextItem],
    scored: Vec<Candidate>,
    table: &mut RunGroups<'_>,
    collector: &mut C,
) -> Vec<Candidate> {
    let ungrouped: Vec<usize> = (0..scored.len())
        .filter(|&p| table.group_of(scored[p].index).is_none())
        .collect();
    let at = |i: usize| scored[ungrouped[i]].index;
    let ungrouped_keep = best_of_each_content(
        ungrouped.len(),
        |i| items[at(i)].content(),
        |i| scored[ungrouped[i]].score,
        |i| items[at(i)].content_hash(),
    );
    let mut keep = vec![true; scored.len()];
    if let Some(flags) = ungrouped_keep {
        for (&p, kept) in ungrouped.iter().zip(flags) {
            keep[p] = kept;
        }
    }
    let group_keep = surviving_groups(items, table);
    for (p, c) in scored.iter().enumerate() {
        if let Some(g) = table.group_of(c.index) {
            keep[p] = group_keep[g];
        }
    }
    let mut survivors = Vec::with_capacity(scored.len());
    for (candidate, kept) in scored.iter().zip(keep) {
        if kept {
            survivors.push(*candidate);
            continue;
        }
        let lead = match table.group_of(candidate.index) {
            Some(g) => table.members(g)[0] as usize,
            None => candidate.index,
        };
        let lead_reason = ExclusionReason::Deduplicated {
            deduplicated_against: items[lead].content().to_owned(),
        };
        let stage = PipelineStage::Deduplicate;
        let (index, score) = (candidate.index, candidate.score);
        exclude_member(
            collector,
            table,
            items,
            stage,
            index,
            score,
            lead,
            &lead_reason,
        );
    }
    survivors
}

/// For every group, whether it survives group-level deduplication. Only scored groups
/// (those with a value) take part; among groups whose member contents are equal in input
/// order, the first with the strictly highest value survives.
///
/// Groups are classed by a hash of their member contents' hashes; equal hashes are
/// confirmed by comparing the contents. A class is named by its first group and keeps its
/// best group so far; classes with equal hashes (distinct contents) are chained.
fn surviving_groups(items: &[ContextItem], table: &RunGroups<'_>) -> Vec<bool> {
    const NONE: u32 = u32::MAX;
    let mut keep = vec![true; table.len()];
    let mut first_class: FastMap<u64, u32> = FastMap::default();
    first_class.reserve(table.len());
    let mut best = vec![NONE; table.len()]; // per class (indexed by its first group)
    let mut next_class = vec![NONE; table.len()]; // chain of classes with equal hashes
    for g in 0..table.len() {
        if !table.has_value(g) {
            continue;
        }
        let members = table.members(g);
        let hash = members.iter().fold(members.len() as u64, |h, &m| {
            crate::hash::combine(h, items[m as usize].content_hash())
        });
        let same = |other: usize| {
            let theirs = table.members(other);
            theirs.len() == members.len()
                && theirs
                    .iter()
                    .zip(members)
                    .all(|(&a, &b)| items[a as usize].content() == items[b as usize].content())
        };
        let mut class = match first_class.get(&hash) {
            None => {
                first_class.insert(hash, g as u32);
                best[g] = g as u32;
                continue;
            }
            Some(&c) => c as usize,
        };
        loop {
            if same(class) {
                let current = best[class] as usize;
                if table.value(g) > table.value(current) {
                    keep[current] = false;
                    best[class] = g as u32;
                } else {
                    keep[g] = false;
                }
                break;
            }
            if next_class[class] == NONE {
                next_class[class] = g as u32;
                best[g] = g as u32;
                break;
            }
            class = next_class[class] as usize;
        }
    }
    keep
}

/// Average number of candidates per partition (see [`best_of_each_content`]).
const PARTITION_TARGET: usize = 256;

/// Up to this many candidates, [`best_of_each_content`] first checks in one pass whether
/// any hash repeats ([`some_hash_repeats`]; its table, at most 1 MiB, stays in the
/// core's cache). Beyond, that table would miss the cache on most probes, and the
/// partitioned grouping is faster even when every content is distinct.
const QUICK_CHECK_MAX_LEN: usize = 1 << 17;

/// For `n` candidates, which ones survive: among the candidates with byte-identical
/// `content`, the first with the strictly highest `score` (each group's candidates are
/// compared in position order, exactly as a single left-to-right pass does). `None` when
/// every content is distinct.
///
/// `hash` must give equal contents equal hashes (the items carry their content's hash,
/// computed when they were built, so no content is read here unless two hashes match).
///
/// Up to [`QUICK_CHECK_MAX_LEN`] candidates, one pass over the hashes first settles the
/// common case of all-distinct contents ([`some_hash_repeats`]).
///
/// A single hash table over every content misses the cache on nearly every probe once it
/// outgrows the cache (about 100 ns a candidate at N = 100 000). So the positions are
/// split by the top bits of their hash into partitions of about
/// [`PARTITION_TARGET`] candidates (a stable counting sort: positions stay in order), and
/// each partition is grouped with a small table that stays in L1. Equal contents have
/// equal hashes, so they land in one partition; equal hashes are confirmed by comparing
/// the contents, so a hash collision cannot merge different contents.
pub(super) fn best_of_each_content<'a>(
    n: usize,
    content: impl Fn(usize) -> &'a str,
    score: impl Fn(usize) -> f64,
    hash: impl Fn(usize) -> u64,
) -> Option<Vec<bool>> {
    let mut buffers = DedupBuffers::default();
    let found = best_of_each_content_in(n, content, score, hash, &mut buffers).is_some();
    found.then(|| std::mem::take(&mut buffers.keep))
}

/// The memory [`best_of_each_content_in`] keeps from one call to the next: a call no
/// larger than an earlier one allocates nothing.
#[derive(Default)]
pub(crate) struct DedupBuffers {
    /// The first pass's table ([`some_hash_repeats`]).
    slots: Vec<u32>,
    /// Every candidate's hash.
    hashes: Vec<u64>,
    /// Where each partition starts, and the next free place in each.
    starts: Vec<u32>,
    next: Vec<u32>,
    /// The candidates, partition by partition.
    words: Vec<u64>,
    /// A partition's groups.
    table: GroupTable,
    /// Which candidates survive.
    keep: Vec<bool>,
}

/// [`best_of_each_content`] working in `buffers`: the survivor flags, a view of them, or
/// `None` when every content is distinct.
pub(super) fn best_of_each_content_in<'a, 'b>(
    n: usize,
    content: impl Fn(usize) -> &'a str,
    score: impl Fn(usize) -> f64,
    hash: impl Fn(usize) -> u64,
    buffers: &'b mut DedupBuffers,
) -> Option<&'b [bool]> {
    let DedupBuffers {
        slots,
        hashes,
        starts,
        next,
        words,
        table,
        keep,
    } = buffers;
    if n > u32::MAX as usize {
        *keep = single_pass(n, content, score)?;
        return Some(keep);
    }
    if n <= QUICK_CHECK_MAX_LEN && !some_hash_repeats(n, &hash, slots) {
        // Distinct hashes, distinct contents: the common case, settled in one pass.
        return None;
    }
    keep.clear();
    keep.resize(n, false);
    let bits = (n / PARTITION_TARGET).max(1).ilog2();
    if bits == 0 {
        // One partition: every position in order, keyed by its whole hash, without the
        // partitioning's vectors.
        table.prepare(n);
        let members = (0..n).map(|pos| (pos, hash(pos)));
        let groups = group_partition(table, members, &content, &score, keep);
        return (groups < n).then_some(keep);
    }
    hashes.clear();
    hashes.extend((0..n).map(hash));
    let partition_of = |hash: u64| (hash >> (64 - bits)) as usize;
    starts.clear();
    starts.resize((1 << bits) + 1, 0);
    for &h in hashes.iter() {
        starts[partition_of(h) + 1] += 1;
    }
    for p in 1..starts.len() {
        starts[p] += starts[p - 1];
    }
    // Partition by partition, each position (it fits in 32 bits, checked above) in the
    // low half of a word whose high half is the top half of its hash: the members of a
    // partition are then read in sequence, their keys with them. Within a partition the
    // 32-bit keys still tell nearly all distinct contents apart; equal keys are confirmed
    // by comparing the contents, so a collision only costs a comparison.
    const LOW: u64 = u32::MAX as u64;
    words.clear();
    words.resize(n, 0);
    next.clear();
    next.extend_from_slice(starts);
    for (pos, &h) in hashes.iter().enumerate() {
        let slot = &mut next[partition_of(h)];
        words[*slot as usize] = (h & !LOW) | pos as u64;
        *slot += 1;
    }
    let largest = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    table.prepare(largest as usize);
    let mut groups = 0;
    for part in starts.windows(2) {
        let members = words[part[0] as usize..part[1] as usize]
            .iter()
            .map(|&w| ((w & LOW) as usize, w >> 32));
        groups += group_partition(table, members, &content, &score, keep);
    }
    (groups < n).then_some(keep)
}

/// Whether two of the `n` hashes may be equal: one pass inserting every hash into an open
/// addressing table of about twice as many slots, which stops at the first slot holding
/// the same value. A hash's slot is chosen by its top bits and the slot holds its low 32
/// bits (their lowest bit set, to tell them from an empty slot), so a table of `2^k`
/// slots compares `k + 31` bits of each hash in half the memory of whole hashes, and
/// `true` may come from a collision of different contents (about once in ten thousand
/// runs of 100 000 distinct contents); `false` proves every content distinct.
///
/// Inputs whose contents are all distinct — most of them — skip the partitioning of
/// [`best_of_each_content`] and its tables: the probes of this pass are independent of
/// one another, so their cache misses overlap, and the table (`slots`, cleared first) is
/// a single allocation.
fn some_hash_repeats(n: usize, hash: &impl Fn(usize) -> u64, slots: &mut Vec<u32>) -> bool {
    const EMPTY_SLOT: u32 = 0;
    let size = (2 * n).next_power_of_two().max(2);
    let shift = u64::BITS - size.trailing_zeros();
    let mask = size - 1;
    slots.clear();
    slots.resize(size, EMPTY_SLOT);
    for pos in 0..n {
        let hash = hash(pos);
        let value = hash as u32 | 1;
        let mut i = (hash >> shift) as usize;
        loop {
            match slots[i] {
                EMPTY_SLOT => {
                    slots[i] = value;
                    break;
                }
                seen if seen == value => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }
    false
}

/// Groups the members of one partition, `(position, key)` in position order (equal
/// contents have equal keys), by content with `table`, marks in `keep` each group's first
/// member with the strictly highest score, and returns the number of groups.
fn group_partition<'a>(
    table: &mut GroupTable,
    members: impl Iterator<Item = (usize, u64)>,
    content: &impl Fn(usize) -> &'a str,
    score: &impl Fn(usize) -> f64,
    keep: &mut [bool],
) -> usize {
    table.clear();
    for (pos, key) in members {
        let group = table.find_or_insert(key, pos, |first| content(first) == content(pos));
        let best = &mut table.groups[group].best;
        // A new group's first member is its best so far; scores are read for repeats only.
        if *best as usize != pos && score(pos) > score(*best as usize) {
            *best = pos as u32;
        }
    }
    for group in &table.groups {
        keep[group.best as usize] = true;
    }
    table.groups.len()
}

/// Open addressing with linear probing over (key, group) slots, reused across
/// partitions by clearing only the slots in use. Groups are numbered from 0 in order of
/// first appearance. Positions and group numbers are u32 (the callers check that the
/// positions fit).
#[derive(Default)]
struct GroupTable {
    slots: Vec<(u64, u32)>,
    groups: Vec<Group>,
    mask: usize,
}

/// One group of a [`GroupTable`]: its first member, its member with the best score so far,
/// and the slot that names it.
#[derive(Clone, Copy)]
struct Group {
    first: u32,
    best: u32,
    slot: u32,
}

/// The group number of an empty slot.
const EMPTY: u32 = u32::MAX;

impl GroupTable {
    /// Empties the table and sizes it for `capacity` members, keeping its memory.
    fn prepare(&mut self, capacity: usize) {
        let size = (capacity * 2).next_power_of_two().max(2);
        self.slots.clear();
        self.slots.resize(size, (0, EMPTY));
        self.groups.clear();
        self.groups.reserve(capacity);
        self.mask = size - 1;
    }

    fn clear(&mut self) {
        for group in &self.groups {
            self.slots[group.slot as usize].1 = EMPTY;
        }
        self.groups.clear();
    }

    /// The group of member `pos` whose content has this key (from its hash): an existing
    /// group whose first member `same(first)` confirms (equal keys with different
    /// contents probe on), or a new group, numbered next, with `pos` as its first (and
    /// best) member.
    fn find_or_insert(&mut self, key: u64, pos: usize, same: impl Fn(usize) -> bool) -> usize {
        let mut i = key as usize & self.mask;
        loop {
            match self.slots[i] {
                (_, EMPTY) => {
                    let group = self.groups.len();
                    self.groups.push(Group {
                        first: pos as u32,
                        best: pos as u32,
                        slot: i as u32,
                    });
                    self.slots[i] = (key, group as u32);
                    return group;
                }
                (k, group) if k == key && same(self.groups[group as usize].first as usize) => {
                    return group as usize
                }
                _ => i = (i + 1) & self.mask,
            }
        }
    }
}

/// [`best_of_each_content`] for more positions than 32 bits hold (not reachable in
/// practice): the specification's single pass with a map from content to best position.
fn single_pass<'a>(
    n: usize,
    content: impl Fn(usize) -> &'a str,
    score: impl Fn(usize) -> f64,
) -> Option<Vec<bool>> {
    let mut best: FastMap<&'a str, usize> = FastMap::default();
    for pos in 0..n {
        let slot = best.entry(content(pos)).or_insert(pos);
        if score(pos) > score(*slot) {
            *slot = pos;
        }
    }
    let groups = best.len();
    let keep = (0..n).map(|pos| best[content(pos)] == pos).collect();
    (groups < n).then_some(keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    /// The single left-to-right pass of 02 §4 with a map from content to best position.
    fn naive(contents: &[String], scores: &[f64]) -> Vec<bool> {
        let mut best: Vec<(usize, usize)> = Vec::new(); // (first, best)
        let mut group_of = Vec::new();
        for pos in 0..contents.len() {
            match best.iter().position(|&(f, _)| contents[f] == contents[pos]) {
                Some(g) => {
                    if scores[pos] > scores[best[g].1] {
                        best[g].1 = pos;
                    }
                    group_of.push(g);
                }
                None => {
                    group_of.push(best.len());
                    best.push((pos, pos));
                }
            }
        }
        (0..contents.len())
            .map(|p| best[group_of[p]].1 == p)
            .collect()
    }

    fn content_hash(s: &str) -> u64 {
        crate::hash::hash_bytes(s.as_bytes())
    }

    thread_local! {
        /// Buffers every check of one test reuses, through inputs of every size.
        static BUFFERS: std::cell::RefCell<DedupBuffers> = Default::default();
    }

    fn check(contents: &[String], scores: &[f64], hash: &dyn Fn(&str) -> u64) {
        let by_pos = |p: usize| hash(&contents[p]);
        let got = best_of_each_content(contents.len(), |p| &contents[p], |p| scores[p], by_pos);
        BUFFERS.with_borrow_mut(|buffers| {
            let n = contents.len();
            let reused =
                best_of_each_content_in(n, |p| &contents[p], |p| scores[p], by_pos, buffers);
            assert_eq!(reused, got.as_deref(), "in reused buffers");
        });
        let want = naive(contents, scores);
        let single = single_pass(contents.len(), |p| &contents[p], |p| scores[p]);
        assert_eq!(single, want.iter().any(|&k| !k).then(|| want.clone()));
        match got {
            Some(keep) => assert_eq!(keep, want, "{contents:?} {scores:?}"),
            None => assert!(want.iter().all(|&k| k), "{contents:?}"),
        }
    }

    #[test]
    fn matches_the_single_pass_with_good_and_colliding_hashes() {
        let weak = |s: &str| (s.len() % 3) as u64; // every content collides with many
        let top = |s: &str| (s.len() as u64 % 4) << 62; // skewed partitions
        for seed in 0..400 {
            let mut rng = Rng::new(seed);
            let n = match seed % 4 {
                0 => rng.below(12),
                1 => rng.below(300),
                _ => 500 + rng.below(3000),
            };
            let distinct = 1 + rng.below(n.max(1) * 2);
            let contents: Vec<String> = (0..n)
                .map(|_| format!("c{}", rng.below(distinct)))
                .collect();
            let scores: Vec<f64> = (0..n)
                .map(|_| match rng.below(6) {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    _ => rng.below(4) as f64 / 4.0,
                })
                .collect();
            check(&contents, &scores, &content_hash);
            if n < 600 {
                check(&contents, &scores, &weak);
                check(&contents, &scores, &top);
            }
        }
    }

    #[test]
    fn the_quick_check_finds_repeats_and_proves_distinct_hashes() {
        let mut rng = Rng::new(5);
        // One table for every check, reused from larger sizes to smaller ones as well.
        let mut slots = Vec::new();
        for n in [0, 1, 2, 3, 100, 5000, 100, 3] {
            let distinct: Vec<u64> = (0..n).map(|_| rng.next_u64() & !1).collect();
            assert!(
                !some_hash_repeats(n, &|p| distinct[p], &mut slots),
                "n = {n}"
            );
            if n >= 2 {
                let mut repeated = distinct.clone();
                repeated[rng.below(n)] = distinct[rng.below(n - 1)];
                let same = (0..n).any(|a| (0..a).any(|b| repeated[a] == repeated[b]));
                let found = some_hash_repeats(n, &|p| repeated[p], &mut slots);
                assert_eq!(found, same, "n = {n}");
            }
        }
        // Hashes that differ in their lowest bit only look equal to the check; the full
        // grouping then tells the contents apart.
        let contents: Vec<String> = (0..600).map(|i| format!("item {i}")).collect();
        let scores = vec![0.5; 600];
        let hash = |p: usize| (p as u64 / 2) << 32 | (p as u64 % 2);
        assert!(some_hash_repeats(600, &hash, &mut slots));
        assert!(best_of_each_content(600, |p| &contents[p], |p| scores[p], hash).is_none());
    }

    #[test]
    fn past_the_quick_check_duplicates_are_still_found() {
        let n = QUICK_CHECK_MAX_LEN + 1000;
        let contents: Vec<String> = (0..n).map(|i| format!("item {}", i % (n - 3))).collect();
        let scores: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
        let hash = |p: usize| content_hash(&contents[p]);
        let keep = best_of_each_content(n, |p| &contents[p], |p| scores[p], hash).unwrap();
        let want: Vec<bool> = (0..n)
            .map(|p| {
                // Positions p and p + n - 3 (for p < 3) share a content.
                match p {
                    p if p < 3 => scores[p] >= scores[p + n - 3],
                    p if p >= n - 3 => scores[p] > scores[p - (n - 3)],
                    _ => true,
                }
            })
            .collect();
        assert_eq!(keep, want);
        let distinct = |p: usize| content_hash(&format!("other {p}"));
        let other: Vec<String> = (0..n).map(|p| format!("other {p}")).collect();
        assert!(best_of_each_content(n, |p| &other[p], |p| scores[p], distinct).is_none());
    }

    #[test]
    fn all_distinct_gives_none() {
        let contents: Vec<String> = (0..5000).map(|i| format!("item {i}")).collect();
        let scores = vec![0.5; 5000];
        let hash = |p: usize| content_hash(&contents[p]);
        assert!(best_of_each_content(5000, |p| &contents[p], |p| scores[p], hash).is_none());
    }
}
