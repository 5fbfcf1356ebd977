//! A stable sort by an unsigned 64-bit key, for the engine's large sorts (Sort, the rank
//! scorers, GreedySlice's density order, the placers).
//!
//! Every one of those sorts orders by a key and breaks ties by position, and lists its
//! keys in position order; the *stable* order of the keys ([`stable_order`]: the indices
//! of the keys sorted by key, equal keys in index order) therefore gives exactly the
//! `(key, position)` order. Floating-point keys become integers through
//! [`f64_order_key`], which orders like `f64::total_cmp`; signed integers through
//! [`i64_order_key`]. Any correct sort gives the same result; this one is an LSD radix
//! sort of packed 64-bit words, described at [`stable_order`]. Input already in order is
//! detected in one pass and left alone. Fewer than [`UNSTABLE_MAX_LEN`] keys whose values
//! need more than two bytes are packed the same way and sorted with the standard library's
//! unstable sort.

/// Below this length, packed words whose values need more than two bytes are sorted with
/// the standard library's unstable sort (as fast there as the radix passes). From this
/// length on, every sort that is not already in order makes the same allocations.
const UNSTABLE_MAX_LEN: usize = 256;

/// The number of values of a radix digit when the values need more than two bytes (11
/// bits: fewer passes than bytes).
const WIDE_BUCKETS: usize = 1 << 11;

/// Values wider than two bytes keep only their highest bits: as many as the index has,
/// plus this many, rounded up to whole wide digits (two passes at 10 000 keys, three at
/// 100 000). Real scores and densities then tie in their upper bits only when they are
/// equal (already in order) or very close (reordered afterwards), so the radix sort does
/// two or three passes where the full 50-bit values would take five.
const SPREAD_BITS: u32 = 8;

/// The indices `0..n` ordered by `key(index)` ascending, equal keys in index order. `key`
/// is called once per index in order, and again for the few indices in tied runs of
/// truncated values (see below); it must give the same key every time.
///
/// The keys are first normalised: the bits below the lowest bit in which two keys differ
/// are dropped, and the smallest key is subtracted, which keeps the order and the
/// equalities. Each key then goes into one 64-bit word, its normalised value above its
/// index: `(value << index_bits) | index`. When the value does not fit in the
/// `64 - index_bits` upper bits, or is wider than the radix passes are worth (see
/// [`SPREAD_BITS`]), only its highest bits go in, and runs of words with equal upper bits
/// but different keys are reordered afterwards by `(key, index)`. Every
/// word is distinct and holds its index, so sorting the words by their upper bits with
/// an LSD radix sort (digits whose value is the same in every word skipped) leaves equal
/// keys in index order: the stable order.
pub(crate) fn stable_order(n: usize, key: impl Fn(usize) -> u64) -> Vec<usize> {
    if n < 2 || n > u32::MAX as usize {
        return order_by_std_sort(n, key);
    }
    let mut words = Vec::new();
    let index_mask = sort_words(n, key, NO_TIES, &mut words, &mut RadixBuffers::default());
    // The same allocation, read as indices.
    words
        .into_iter()
        .map(|word| (word & index_mask) as usize)
        .collect()
}

/// Buffers a sort reuses from one call to the next ([`stable_order_in`]): a run that keeps
/// them makes no allocation for its sorts once they have grown to its size.
#[derive(Debug, Default)]
pub(crate) struct SortBuffers {
    /// The packed words being sorted.
    words: Vec<u64>,
    radix: RadixBuffers,
    /// The last order computed.
    order: Vec<usize>,
}

/// The radix passes' working memory.
#[derive(Debug, Default)]
struct RadixBuffers {
    /// The second array of words, which each pass writes.
    spare: Vec<u64>,
    /// The digit counts, one row of buckets per digit.
    counts: Vec<u32>,
}

/// [`stable_order`] computed in `buffers`, which keep their memory for the next call:
/// the order is a view of them, valid until they are used again.
pub(crate) fn stable_order_in(
    n: usize,
    key: impl Fn(usize) -> u64,
    buffers: &mut SortBuffers,
) -> &[usize] {
    stable_order_with_ties_in(n, key, NO_TIES, buffers)
}

/// The indices `0..n` ordered by `(key(index), tie(index), index)`, computed in `buffers`
/// as [`stable_order_in`]: the stable order of the keys, with equal keys ordered by `tie`
/// before their indices ([`stable_order_in`]'s order without a `tie`: pass [`NO_TIES`]).
/// `tie` is called only for indices whose key another index shares (or whose packed words
/// tie, see [`stable_order`]), so a sort with few equal keys costs what
/// [`stable_order_in`] costs. This is a stable sort over a list that an earlier sort would
/// have ordered, without that sort or that list: the earlier sort's key is the `tie`.
pub(crate) fn stable_order_with_ties_in<T: Ord>(
    n: usize,
    key: impl Fn(usize) -> u64,
    tie: Option<impl Fn(usize) -> T>,
    buffers: &mut SortBuffers,
) -> &[usize] {
    let SortBuffers {
        words,
        radix,
        order,
    } = buffers;
    order.clear();
    if n < 2 {
        order.extend(0..n);
        return order;
    }
    if n > u32::MAX as usize {
        order.extend(0..n);
        match tie {
            Some(tie) => {
                order.sort_by(|&a, &b| (key(a).cmp(&key(b))).then_with(|| tie(a).cmp(&tie(b))))
            }
            None => order.sort_by_key(|&i| key(i)),
        }
        return order;
    }
    let index_mask = sort_words(n, key, tie, words, radix);
    order.extend(words.iter().map(|&word| (word & index_mask) as usize));
    order
}

/// No tie-breaking key ([`stable_order_with_ties_in`]): equal keys in index order.
pub(crate) const NO_TIES: Option<fn(usize)> = None;

/// The stable order of fewer than two keys, or of more than the packed words can index
/// (not reachable in practice), by the standard library's stable sort.
fn order_by_std_sort(n: usize, key: impl Fn(usize) -> u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| key(i));
    order
}

/// Fills `words` with the `n` (from 2 to `u32::MAX`) keys packed and sorted as described
/// at [`stable_order`], the radix passes working in `radix`, equal keys ordered by `tie`
/// (when given) before their indices; returns the mask of the words' index bits.
fn sort_words<T: Ord>(
    n: usize,
    key: impl Fn(usize) -> u64,
    tie: Option<impl Fn(usize) -> T>,
    words: &mut Vec<u64>,
    radix: &mut RadixBuffers,
) -> u64 {
    // One pass: the keys, their range, the bits in which some key differs from the first,
    // and whether they are already in order (a chronological chat ranked by recency).
    let first = key(0);
    let (mut min, mut max, mut differ, mut previous, mut sorted) = (first, first, 0, first, true);
    words.clear();
    words.extend((0..n).map(|i| {
        let k = key(i);
        min = min.min(k);
        max = max.max(k);
        differ |= k ^ first;
        sorted &= previous <= k;
        previous = k;
        k
    }));
    if !sorted {
        return pack_and_sort(words, min, max, differ, &key, tie, radix);
    }
    // Words that are their own index; runs of equal keys put in tie order.
    for (i, word) in words.iter_mut().enumerate() {
        *word = i as u64;
    }
    if let Some(tie) = tie {
        order_equal_key_runs(words, |word| word as usize, key, tie);
    }
    u64::MAX
}

/// In `order`, whose elements stand for indices (`index`) sorted by key, equal keys in
/// index order, puts each run of equal keys in `(tie, index)` order.
fn order_equal_key_runs<W: Copy + Ord, T: Ord>(
    order: &mut [W],
    index: impl Fn(W) -> usize,
    key: impl Fn(usize) -> u64,
    tie: impl Fn(usize) -> T,
) {
    let mut start = 0;
    for i in 1..=order.len() {
        if i == order.len() || key(index(order[i])) != key(index(order[start])) {
            order_run(&mut order[start..i], &index, &tie);
            start = i;
        }
    }
}

/// Orders a run of words whose keys are equal by `(tie, index)` (indices in the words'
/// `index_mask` bits; the run is in index order on entry).
fn order_run_by<T: Ord>(run: &mut [u64], index_mask: u64, tie: impl Fn(usize) -> T) {
    order_run(run, |word| (word & index_mask) as usize, tie);
}

/// Orders `run`, whose elements stand for indices (`index`) in index order and whose
/// order is that of their indices, by `(tie, index)`.
fn order_run<W: Copy + Ord, T: Ord>(
    run: &mut [W],
    index: impl Fn(W) -> usize,
    tie: impl Fn(usize) -> T,
) {
    match run.len() {
        0 | 1 => {}
        // The most common run (two items of one second): one comparison.
        2 => {
            if tie(index(run[1])) < tie(index(run[0])) {
                run.swap(0, 1);
            }
        }
        _ => run.sort_unstable_by(|&a, &b| tie(index(a)).cmp(&tie(index(b))).then(a.cmp(&b))),
    }
}

/// The stable order of `keys` that are already in order (every key at most the next),
/// with equal keys ordered by `tie` before their indices: [`stable_order_with_ties_in`]'s
/// order for such keys, written into `out` (cleared first) without a sort.
pub(crate) fn in_order_with_ties<T: Ord>(
    keys: &[u64],
    tie: Option<impl Fn(usize) -> T>,
    out: &mut Vec<usize>,
) {
    debug_assert!(keys.is_sorted());
    out.clear();
    out.extend(0..keys.len());
    if let Some(tie) = tie {
        order_equal_key_runs(out, |p| p, |p| keys[p], tie);
    }
}

/// Replaces the `keys` (not in order, smallest `min`, largest `max`, `differ` the bits in
/// which some key differs from the first) by their packed words in the stable order of the
/// keys, equal keys ordered by `tie` (when given) before their indices, as described at
/// [`stable_order`]; returns the mask of the words' index bits.
fn pack_and_sort<T: Ord>(
    words: &mut Vec<u64>,
    min: u64,
    max: u64,
    differ: u64,
    key: impl Fn(usize) -> u64,
    tie: Option<impl Fn(usize) -> T>,
    radix: &mut RadixBuffers,
) -> u64 {
    let n = words.len();
    // Every key has the same bits below `low` (so has the minimum: subtracting it leaves
    // them zero); `width` bits hold every normalised value.
    let low = differ.trailing_zeros();
    let width = u64::BITS - ((max - min) >> low).leading_zeros();
    // `n - 1 < 2^32`, so at least 32 bits are left for the value.
    let index_bits = usize::BITS - (n - 1).leading_zeros();
    let mut value_bits = width.min(u64::BITS - index_bits);
    if value_bits > 16 {
        // Whole wide digits covering `index_bits + SPREAD_BITS`: about 2^SPREAD_BITS times as
        // many distinct upper values as keys.
        let digits = (index_bits + SPREAD_BITS).div_ceil(WIDE_BUCKETS.trailing_zeros());
        value_bits = value_bits.min(digits * WIDE_BUCKETS.trailing_zeros());
    }
    let dropped = low + (width - value_bits);
    for (i, word) in words.iter_mut().enumerate() {
        *word = ((*word - min) >> dropped << index_bits) | i as u64;
    }
    if value_bits <= 16 {
        // One or two passes.
        radix_sort_bits::<256>(words, index_bits, index_bits + value_bits, radix);
    } else if n < UNSTABLE_MAX_LEN {
        // The words are distinct: any sort orders them like the radix sort.
        words.sort_unstable();
    } else {
        radix_sort_bits::<WIDE_BUCKETS>(words, index_bits, index_bits + value_bits, radix);
    }
    if value_bits < width || tie.is_some() {
        reorder_runs(words, index_bits, key, tie);
    }
    (1u64 << index_bits) - 1
}

/// Sorts distinct `words` by their bits `low..high` (ascending, ties in current order),
/// with LSD passes of `log2(BUCKETS)`-bit digits; digits equal in every word are skipped.
/// `words.len()` fits in `u32`. The passes work in `radix`.
fn radix_sort_bits<const BUCKETS: usize>(
    words: &mut Vec<u64>,
    low: u32,
    high: u32,
    radix: &mut RadixBuffers,
) {
    let n = words.len();
    let digit_bits = BUCKETS.trailing_zeros();
    let digits = (high - low).div_ceil(digit_bits) as usize;
    let mask = (BUCKETS - 1) as u64;
    let shift = |digit: usize| low + digit as u32 * digit_bits;
    let RadixBuffers { spare, counts } = radix;
    counts.clear();
    counts.resize(digits * BUCKETS, 0);
    for &word in words.iter() {
        for (digit, count) in counts.chunks_exact_mut(BUCKETS).enumerate() {
            count[((word >> shift(digit)) & mask) as usize] += 1;
        }
    }
    spare.clear();
    spare.resize(n, 0);
    for (digit, count) in counts.chunks_exact_mut(BUCKETS).enumerate() {
        let shift = shift(digit);
        // A digit shared by every word leaves the order as it is.
        if count[((words[0] >> shift) & mask) as usize] as usize == n {
            continue;
        }
        let mut offset = 0;
        for c in count.iter_mut() {
            let here = *c;
            *c = offset;
            offset += here;
        }
        for &word in words.iter() {
            let slot = &mut count[((word >> shift) & mask) as usize];
            spare[*slot as usize] = word;
            *slot += 1;
        }
        std::mem::swap(words, spare);
    }
}

/// In `words` sorted by their bits from `index_bits` up (ties by index), puts every run
/// of words with equal upper bits in `(key, tie, index)` order (`(key, index)` without a
/// `tie`), `key` and `tie` taking the index in the words' low `index_bits` bits.
fn reorder_runs<T: Ord>(
    words: &mut [u64],
    index_bits: u32,
    key: impl Fn(usize) -> u64,
    tie: Option<impl Fn(usize) -> T>,
) {
    let index_mask = (1u64 << index_bits) - 1;
    let key = |word: u64| key((word & index_mask) as usize);
    let mut start = 0;
    while start < words.len() {
        let upper = words[start] >> index_bits;
        let mut end = start + 1;
        let mut all_equal = true;
        while end < words.len() && words[end] >> index_bits == upper {
            all_equal &= key(words[end]) == key(words[start]);
            end += 1;
        }
        let run = &mut words[start..end];
        match (&tie, all_equal) {
            // Equal keys are already in index order.
            (None, true) => {}
            (Some(tie), true) => order_run_by(run, index_mask, tie),
            (None, false) => run.sort_unstable_by_key(|&word| (key(word), word)),
            (Some(tie), false) => run.sort_unstable_by(|&a, &b| {
                let tie = |word: u64| tie((word & index_mask) as usize);
                (key(a).cmp(&key(b)))
                    .then_with(|| tie(a).cmp(&tie(b)))
                    .then(a.cmp(&b))
            }),
        }
        start = end;
    }
}

/// Maps an f64 to a u64 whose unsigned order is the IEEE total order (`f64::total_cmp`):
/// negative values (including -0.0 and negative NaNs) reverse their magnitude order.
pub(crate) fn f64_order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Maps an i64 to a u64 with the same order.
pub(crate) fn i64_order_key(x: i64) -> u64 {
    (x as u64) ^ (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    /// The stable order by the standard library's stable sort.
    fn reference(keys: &[u64]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&i| keys[i]);
        order
    }

    thread_local! {
        /// Buffers every check of one test reuses, through sorts of every size and shape.
        static BUFFERS: std::cell::RefCell<SortBuffers> = Default::default();
    }

    /// Checks both forms of the stable order: a fresh one, and one in buffers that earlier
    /// sorts of the same test left behind.
    fn check(keys: &[u64], what: &str) {
        let want = reference(keys);
        let got = stable_order(keys.len(), |i| keys[i]);
        assert_eq!(got, want, "{what}, n = {}", keys.len());
        BUFFERS.with_borrow_mut(|buffers| {
            let reused = stable_order_in(keys.len(), |i| keys[i], buffers);
            assert_eq!(reused, want, "{what} in reused buffers, n = {}", keys.len());
        });
    }

    /// Checks the order with ties against the standard library's stable sort by
    /// `(key, tie)`, in buffers earlier checks left behind.
    fn check_ties(keys: &[u64], ties: &[u8], what: &str) {
        let mut want: Vec<usize> = (0..keys.len()).collect();
        want.sort_by_key(|&i| (keys[i], ties[i]));
        BUFFERS.with_borrow_mut(|buffers| {
            let got =
                stable_order_with_ties_in(keys.len(), |i| keys[i], Some(|i| ties[i]), buffers);
            assert_eq!(got, want, "{what} with ties, n = {}", keys.len());
        });
        if keys.is_sorted() {
            let mut got = vec![7; 3];
            in_order_with_ties(keys, Some(|i| ties[i]), &mut got);
            assert_eq!(got, want, "{what} in order with ties, n = {}", keys.len());
        }
    }

    /// Equal keys go in tie order, then index order: on keys already in order (every run of
    /// equal keys reordered without a sort), on random keys with few values (the radix
    /// passes' runs), and on clustered keys whose packed words tie while the keys differ.
    #[test]
    fn equal_keys_are_ordered_by_their_ties() {
        for seed in 0..600 {
            let mut rng = Rng::new(seed ^ 0x71e5);
            let n = match seed % 3 {
                0 => rng.below(40),
                1 => *rng.pick(&LENGTHS),
                _ => 300 + rng.below(5_000),
            };
            let spread = *rng.pick(&[1usize, 3, 50, 1 << 20]);
            let values = 1 + rng.below(spread);
            let ties: Vec<u8> = (0..n).map(|_| rng.below(4) as u8).collect();
            let mut keys: Vec<u64> = (0..n).map(|_| rng.below(values) as u64).collect();
            check_ties(&keys, &ties, &format!("seed {seed}, random"));
            keys.sort_unstable();
            check_ties(&keys, &ties, &format!("seed {seed}, in order"));
            let clustered: Vec<u64> = (0..n)
                .map(|i| match i % 97 {
                    0 => 0,
                    1 => u64::MAX,
                    _ => (1 << 62) + rng.below(values.min(1 << 14)) as u64,
                })
                .collect();
            check_ties(&clustered, &ties, &format!("seed {seed}, clustered"));
        }
    }

    /// The bits of the index part of the packed words for `n` keys.
    fn index_bits(n: usize) -> u32 {
        usize::BITS - (n - 1).leading_zeros()
    }

    /// Lengths around every switch: trivial, the unstable sort's limit, 8- and 11-bit
    /// digits, and index widths changing at powers of two.
    const LENGTHS: [usize; 15] = [
        0, 1, 2, 3, 17, 255, 256, 257, 1000, 4096, 4097, 8192, 8193, 20_000, 65_537,
    ];

    #[test]
    fn matches_a_stable_comparison_sort_on_random_keys() {
        for seed in 0..400 {
            let mut rng = Rng::new(seed);
            let n = match seed % 4 {
                0 => rng.below(300),
                1 => 200 + rng.below(6_000),
                2 => *rng.pick(&LENGTHS),
                _ => 20_000,
            };
            // Few distinct values (ties), one or two bytes, high bytes only, or anything.
            let spread = *rng.pick(&[1u64, 2, 50, 1 << 12, 1 << 16, 1 << 20, 1 << 40, u64::MAX]);
            let shift = rng.below(64) as u32;
            let base = rng.next_u64();
            let keys: Vec<u64> = (0..n)
                .map(|_| base.wrapping_add((rng.next_u64() % spread).rotate_left(shift)))
                .collect();
            check(&keys, &format!("seed {seed}"));
        }
    }

    #[test]
    fn matches_a_stable_comparison_sort_on_special_shapes() {
        let mut rng = Rng::new(7);
        for n in LENGTHS {
            let all_equal = vec![42u64; n];
            check(&all_equal, "all equal");
            let ascending: Vec<u64> = (0..n as u64).map(|i| i / 3).collect();
            check(&ascending, "ascending");
            let descending: Vec<u64> = ascending.iter().rev().copied().collect();
            check(&descending, "descending");
            // Only the top byte (or top bit) varies; the rest is shared.
            let top_byte: Vec<u64> = (0..n)
                .map(|_| (rng.next_u64() >> 56 << 56) | 0x55)
                .collect();
            check(&top_byte, "top byte");
            let top_bit: Vec<u64> = (0..n).map(|_| (rng.next_u64() >> 63 << 63) | 7).collect();
            check(&top_bit, "top bit");
            // Whole seconds in nanoseconds: the low bits are shared.
            let seconds: Vec<u64> = (0..n)
                .map(|_| {
                    i64_order_key(1_700_000_000_000_000_000 + rng.range(0, 1 << 20) * 1_000_000_000)
                })
                .collect();
            check(&seconds, "seconds");
            // Scores and their densities, descending, with ties.
            let scores: Vec<u64> = (0..n)
                .map(|_| {
                    let score = (rng.below(10) as f64 / 9.0 + rng.unit()) / 2.0;
                    if rng.chance(0.3) {
                        !f64_order_key(0.5)
                    } else {
                        !f64_order_key(score / (1 + rng.below(80)) as f64)
                    }
                })
                .collect();
            check(&scores, "densities");
        }
    }

    /// The value bits the words keep for `n` keys of wider values.
    fn kept_bits(n: usize) -> u32 {
        let digit = WIDE_BUCKETS.trailing_zeros();
        let spread = (index_bits(n) + SPREAD_BITS).div_ceil(digit) * digit;
        spread.min(u64::BITS - index_bits(n))
    }

    #[test]
    fn values_at_the_width_boundaries() {
        let mut rng = Rng::new(11);
        for n in [255, 256, 300, 4096, 4097, 5000, 70_000] {
            let spare = u64::BITS - index_bits(n);
            let kept = kept_bits(n);
            for width in [16, 17, kept - 1, kept, kept + 1, spare, spare + 1, 64] {
                for low in [0, 3, 64 - width] {
                    if width + low > 64 {
                        continue;
                    }
                    let top = 1u64 << (width - 1);
                    let keys: Vec<u64> = (0..n)
                        .map(|i| {
                            // The extremes set the width; the rest cluster in a few
                            // upper values, so truncated words tie while the keys differ.
                            let value = match i % 7 {
                                0 => 0,
                                1 => top | (top - 1),
                                2 => top | rng.below(4) as u64,
                                3 => top >> 1,
                                _ => (rng.next_u64() % (top | (top - 1))) >> 4 << 4,
                            };
                            value << low
                        })
                        .collect();
                    check(&keys, &format!("width {width}, low {low}"));
                    let shifted: Vec<u64> = keys.iter().map(|k| k.wrapping_add(1 << low)).collect();
                    check(&shifted, &format!("width {width}, low {low}, shifted"));
                }
            }
        }
    }

    #[test]
    fn clustered_full_width_keys_reorder_their_runs() {
        // Two far-apart extremes make the normalised values 64 bits wide; the keys in
        // between differ only in their low bits, so their truncated words tie and the runs
        // are put in key order afterwards.
        let mut rng = Rng::new(3);
        for n in [500, 5000, 30_000] {
            let mut keys: Vec<u64> = (0..n)
                .map(|_| (1 << 62) + rng.below(1 << 14) as u64)
                .collect();
            keys[n / 3] = 0;
            keys[n / 2] = u64::MAX;
            check(&keys, "clustered");
        }
    }

    #[test]
    fn keys_order_like_the_values() {
        let floats = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            5e-324,
            0.5,
            1.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        for a in floats {
            for b in floats {
                assert_eq!(
                    f64_order_key(a).cmp(&f64_order_key(b)),
                    a.total_cmp(&b),
                    "{a} {b}"
                );
            }
        }
        let ints = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for a in ints {
            for b in ints {
                assert_eq!(i64_order_key(a).cmp(&i64_order_key(b)), a.cmp(&b));
            }
        }
    }
}
