//! FrequencyScorer: share of peers with a common tag (spec 03 §2.5, §5.2).

use crate::error::Result;
use crate::hash::FastMap;
use crate::model::ContextItem;
use crate::scorer::{check_one_slot_per_item, Scorer};
use std::borrow::Cow;

/// FrequencyScorer: the share of the *other* items that have at least one tag in common
/// with this item.
///
/// Tags compare after ASCII case folding only (`"É"` ≠ `"é"`, no trimming; `""` is a
/// tag). Each peer counts once however many tags it shares; the denominator is `N − 1`,
/// tagless peers included. An item without tags, or the only item, scores 0.0. No
/// configuration.
///
/// One pass builds an index from each folded tag to the items carrying it and groups the
/// items by their (folded, deduplicated) tag set; each distinct set's peers are then
/// counted once, by inclusion and exclusion over subset counts when the sets are small
/// (near-linear), otherwise by walking posting lists (at worst quadratic; the per-item
/// form is quadratic times the tag-list products), whichever visits fewer entries.
#[derive(Debug, Clone, Default)]
pub struct FrequencyScorer;

impl FrequencyScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for FrequencyScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        check_one_slot_per_item(items, out)?;
        out.fill(0.0);
        if items.len() <= 1 {
            return Ok(());
        }
        let index = TagIndex::build(items);
        let sets = distinct_tag_sets(&index.item_tag_sets);
        let unions = if subset_counting_pays(&sets, &index.postings) {
            unions_by_subset_counts(&sets)
        } else {
            unions_by_postings(&sets, &index.postings, items.len())
        };
        // Counts stay far below 2^53, so both conversions are exact.
        let peers = (items.len() - 1) as f64;
        for (slot, tag_set) in out.iter_mut().zip(index.item_tag_sets.iter()) {
            if !tag_set.is_empty() {
                // The union holds the scored item itself: every other member is a peer.
                *slot = (unions[tag_set] - 1) as f64 / peers;
            }
        }
        Ok(())
    }
}

/// The distinct non-empty tag sets and how many items carry each.
fn distinct_tag_sets(item_tag_sets: &Lists) -> FastMap<&[usize], usize> {
    let mut sets: FastMap<&[usize], usize> = FastMap::default();
    for set in item_tag_sets.iter().filter(|s| !s.is_empty()) {
        *sets.entry(set).or_insert(0) += 1;
    }
    sets
}

/// Lists of numbers stored back to back (two allocations however many lists): list `i`
/// is `values[starts[i]..starts[i + 1]]`.
struct Lists {
    starts: Vec<usize>,
    values: Vec<usize>,
}

impl Lists {
    fn get(&self, i: usize) -> &[usize] {
        &self.values[self.starts[i]..self.starts[i + 1]]
    }
    fn iter(&self) -> impl Iterator<Item = &[usize]> {
        self.starts.windows(2).map(|w| &self.values[w[0]..w[1]])
    }
    /// The lists `lists`, for tests.
    #[cfg(test)]
    fn from_vecs(lists: &[Vec<usize>]) -> Self {
        let mut starts = vec![0];
        let mut values = Vec::new();
        for list in lists {
            values.extend_from_slice(list);
            starts.push(values.len());
        }
        Self { starts, values }
    }
}

/// Sets of up to this many tags can use subset counting.
const SUBSET_MAX_TAGS: usize = 8;

/// Whether subset counting (spec 03 §5.2 (b)) is cheaper than walking posting lists
/// (§5.2 (a)): every set small enough, and fewer subset visits than posting visits.
fn subset_counting_pays(sets: &FastMap<&[usize], usize>, postings: &Lists) -> bool {
    let mut subset_visits: usize = 0;
    let mut posting_visits: usize = 0;
    for set in sets.keys() {
        if set.len() > SUBSET_MAX_TAGS {
            return false;
        }
        subset_visits += 2 << set.len(); // one insertion and one lookup per subset
        posting_visits += set.iter().map(|&t| postings.get(t).len()).sum::<usize>();
    }
    subset_visits <= posting_visits
}

/// For each distinct set F, the number of items whose set meets F, by walking the
/// posting lists of F's tags with visit stamps (spec 03 §5.2 (a)).
fn unions_by_postings<'a>(
    sets: &FastMap<&'a [usize], usize>,
    postings: &Lists,
    item_count: usize,
) -> FastMap<&'a [usize], usize> {
    let mut counter = UnionCounter::new(item_count);
    sets.keys()
        .map(|&set| (set, counter.union_size(set, postings)))
        .collect()
}

/// A subset of at most [`SUBSET_MAX_TAGS`] tag ids, ascending, padded with `u32::MAX`.
type SubsetKey = [u32; SUBSET_MAX_TAGS];

/// The subset of `set` (ascending ids) selected by the bits of `mask`.
fn subset_key(set: &[usize], mask: u32) -> SubsetKey {
    let mut key = [u32::MAX; SUBSET_MAX_TAGS];
    let mut len = 0;
    for (bit, &tag) in set.iter().enumerate() {
        if mask >> bit & 1 == 1 {
            key[len] = tag as u32;
            len += 1;
        }
    }
    key
}

/// For each distinct set F, the number of items whose set meets F, by inclusion and
/// exclusion over subset counts (spec 03 §5.2 (b)): with `cnt[S]` the number of items
/// whose set contains S, `|{ j : F_j ∩ F ≠ ∅ }| = Σ over non-empty S ⊆ F of
/// (−1)^(|S|+1) · cnt[S]`. Exact integer arithmetic; every set has at most
/// [`SUBSET_MAX_TAGS`] tags.
fn unions_by_subset_counts<'a>(sets: &FastMap<&'a [usize], usize>) -> FastMap<&'a [usize], usize> {
    let mut counts: FastMap<SubsetKey, i64> = FastMap::default();
    for (&set, &items) in sets {
        for mask in 1..1u32 << set.len() {
            *counts.entry(subset_key(set, mask)).or_insert(0) += items as i64;
        }
    }
    sets.keys()
        .map(|&set| {
            let mut union: i64 = 0;
            for mask in 1..1u32 << set.len() {
                let count = counts[&subset_key(set, mask)];
                if mask.count_ones() % 2 == 1 {
                    union += count;
                } else {
                    union -= count;
                }
            }
            (set, union as usize)
        })
        .collect()
}

/// The folded tags of every item as sorted, deduplicated tag ids, and for every tag id the
/// ascending positions of the items carrying it (each position at most once per tag).
/// A handful of allocations whatever the number of items.
struct TagIndex {
    item_tag_sets: Lists,
    postings: Lists,
}

impl TagIndex {
    fn build(items: &[&ContextItem]) -> Self {
        let mut ids: FastMap<Cow<'_, str>, usize> = FastMap::default();
        let total: usize = items.iter().map(|item| item.tags().len()).sum();
        let mut starts = Vec::with_capacity(items.len() + 1);
        let mut values = Vec::with_capacity(total);
        starts.push(0);
        // The folded form of a tag with upper-case letters, reused from tag to tag.
        let mut folded = String::new();
        for item in items {
            let start = values.len();
            for tag in item.tags() {
                let key = if tag.bytes().any(|b| b.is_ascii_uppercase()) {
                    folded.clear();
                    folded.push_str(tag);
                    folded.make_ascii_lowercase();
                    folded.as_str()
                } else {
                    tag
                };
                let id = match ids.get(key) {
                    Some(&id) => id,
                    None => {
                        let id = ids.len();
                        let key = if key.len() == tag.len() && key == tag {
                            Cow::Borrowed(tag)
                        } else {
                            Cow::Owned(key.to_owned())
                        };
                        ids.insert(key, id);
                        id
                    }
                };
                values.push(id);
            }
            let set = &mut values[start..];
            set.sort_unstable();
            let distinct = dedup_sorted(set);
            values.truncate(start + distinct);
            starts.push(values.len());
        }
        let item_tag_sets = Lists { starts, values };
        // Postings by counting: the number of items per tag, then each item's position
        // written into its tags' ranges, in ascending position order.
        let mut posting_starts = vec![0usize; ids.len() + 1];
        for &tag in &item_tag_sets.values {
            posting_starts[tag + 1] += 1;
        }
        for t in 0..ids.len() {
            posting_starts[t + 1] += posting_starts[t];
        }
        let mut next = posting_starts.clone();
        let mut positions = vec![0usize; item_tag_sets.values.len()];
        for (position, set) in item_tag_sets.iter().enumerate() {
            for &tag in set {
                positions[next[tag]] = position;
                next[tag] += 1;
            }
        }
        Self {
            item_tag_sets,
            postings: Lists {
                starts: posting_starts,
                values: positions,
            },
        }
    }
}

/// Moves the distinct values of the sorted `set` to its front; their number.
fn dedup_sorted(set: &mut [usize]) -> usize {
    let mut len = 0;
    for i in 0..set.len() {
        if len == 0 || set[i] != set[len - 1] {
            set[len] = set[i];
            len += 1;
        }
    }
    len
}

/// Counts the distinct items in a union of posting lists using visit stamps, so no set
/// is cleared between queries.
struct UnionCounter {
    stamps: Vec<usize>,
    query: usize,
}

impl UnionCounter {
    fn new(item_count: usize) -> Self {
        Self {
            stamps: vec![0; item_count],
            query: 0,
        }
    }

    /// The number of distinct items carrying at least one of `tags`.
    fn union_size(&mut self, tags: &[usize], postings: &Lists) -> usize {
        self.query += 1;
        let mut size = 0;
        for &tag in tags {
            for &position in postings.get(tag) {
                if self.stamps[position] != self.query {
                    self.stamps[position] = self.query;
                    size += 1;
                }
            }
        }
        size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{assert_bits_eq, items_from, random_items, run};
    use crate::testutil::Rng;

    /// The per-item FrequencyScorer of spec 03 §2.5.
    pub(crate) fn naive_frequency(i: usize, all: &[ContextItem]) -> f64 {
        let own = all[i].tags();
        if own.is_empty() || all.len() <= 1 {
            return 0.0;
        }
        let shares_a_tag = |peer: &ContextItem| {
            own.iter()
                .any(|a| peer.tags().iter().any(|b| a.eq_ignore_ascii_case(b)))
        };
        let count = all
            .iter()
            .enumerate()
            .filter(|(j, peer)| *j != i && !peer.tags().is_empty() && shares_a_tag(peer))
            .count();
        count as f64 / (all.len() - 1) as f64
    }

    fn tagged(tags: &[&[&str]]) -> Vec<ContextItem> {
        items_from(tags.len(), |i| {
            ContextItem::builder(format!("item{i}"), 1)
                .tags(tags[i].iter().copied())
                .build()
                .unwrap()
        })
    }

    fn score(tags: &[&[&str]]) -> Vec<f64> {
        run(&FrequencyScorer::new(), &tagged(tags))
    }

    #[test]
    fn counts_peers_sharing_a_folded_tag() {
        assert_eq!(
            score(&[&["a"], &["A"], &["b"], &[]]),
            [1.0 / 3.0, 1.0 / 3.0, 0.0, 0.0]
        );
        // Each peer counts once, however many tags it shares.
        assert_eq!(
            score(&[&["a", "b"], &["a", "b", "B"], &["c"]]),
            [0.5, 0.5, 0.0]
        );
        // Every peer matches.
        assert_eq!(score(&[&["x"], &["X", "y"], &["x"]]), [1.0, 1.0, 1.0]);
    }

    #[test]
    fn folding_is_ascii_only_and_untrimmed() {
        assert_eq!(score(&[&["É"], &["é"]]), [0.0, 0.0]);
        assert_eq!(score(&[&["x"], &[" x"], &["x "]]), [0.0, 0.0, 0.0]);
        assert_eq!(score(&[&[""], &[""], &["a"]]), [0.5, 0.5, 0.0]);
    }

    #[test]
    fn identity_is_position_not_content() {
        let items = vec![
            ContextItem::builder("same", 1).tags(["t"]).build().unwrap(),
            ContextItem::builder("same", 1).tags(["t"]).build().unwrap(),
        ];
        assert_eq!(run(&FrequencyScorer::new(), &items), [1.0, 1.0]);
    }

    #[test]
    fn degenerate_lists() {
        assert_eq!(score(&[]), Vec::<f64>::new());
        assert_eq!(score(&[&["a"]]), [0.0]);
        assert_eq!(score(&[&[], &[]]), [0.0, 0.0]);
        // Duplicate tags on one item never make it its own peer.
        assert_eq!(score(&[&["a", "a", "A"], &["b"]]), [0.0, 0.0]);
    }

    #[test]
    fn items_sharing_a_tag_set_are_counted_once_per_set() {
        // 20 000 items with one of two tag sets: linear, where the per-item form is quadratic.
        let items = items_from(20_000, |i| {
            let tags: &[&str] = if i % 4 == 0 { &["x", "Y"] } else { &["y"] };
            ContextItem::builder(format!("item{i}"), 1)
                .tags(tags.iter().copied())
                .build()
                .unwrap()
        });
        let got = run(&FrequencyScorer::new(), &items);
        assert!(
            got.iter().all(|s| *s == 1.0),
            "every item shares y or Y with all others"
        );
    }

    #[test]
    fn both_union_methods_agree() {
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let n = 1 + rng.below(200);
            let vocabulary = 1 + rng.below(12);
            let item_tag_sets: Vec<Vec<usize>> = (0..n)
                .map(|_| {
                    let mut set: Vec<usize> = (0..rng.below(SUBSET_MAX_TAGS + 1))
                        .map(|_| rng.below(vocabulary))
                        .collect();
                    set.sort_unstable();
                    set.dedup();
                    set
                })
                .collect();
            let mut postings = vec![Vec::new(); vocabulary];
            for (pos, set) in item_tag_sets.iter().enumerate() {
                for &t in set {
                    postings[t].push(pos);
                }
            }
            let item_tag_sets = Lists::from_vecs(&item_tag_sets);
            let postings = Lists::from_vecs(&postings);
            let sets = distinct_tag_sets(&item_tag_sets);
            let by_subsets = unions_by_subset_counts(&sets);
            let by_postings = unions_by_postings(&sets, &postings, n);
            assert_eq!(by_subsets, by_postings, "seed {seed}");
        }
    }

    #[test]
    fn large_tag_sets_walk_postings() {
        // 9 tags exceed the subset limit; the scores still match the per-item form.
        let nine: Vec<String> = (0..9).map(|t| format!("t{t}")).collect();
        let items = items_from(30, |i| {
            let tags: Vec<String> = if i % 3 == 0 {
                nine.clone()
            } else {
                vec![format!("t{}", i % 11)]
            };
            ContextItem::builder(format!("item{i}"), 1)
                .tags(tags)
                .build()
                .unwrap()
        });
        let want: Vec<f64> = (0..items.len())
            .map(|i| naive_frequency(i, &items))
            .collect();
        assert_bits_eq(0, &run(&FrequencyScorer::new(), &items), &want);
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit() {
        for seed in 20_000..25_000 {
            let mut rng = Rng::new(seed);
            let items = random_items(&mut rng, 40);
            let want: Vec<f64> = (0..items.len())
                .map(|i| naive_frequency(i, &items))
                .collect();
            assert_bits_eq(seed, &run(&FrequencyScorer::new(), &items), &want);
        }
    }
}
