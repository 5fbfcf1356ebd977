//! KnapsackSlice (spec 04 §3): 0/1 knapsack by dynamic programming over a discretised capacity,
//! with the memory guard of decision D11 in docs/decisions.md and the exact shortcuts of 04 §9.2.

use std::cell::Cell;

use crate::alloc;
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ScoredItem, Units};
use crate::slicer::multiple_choice;
use crate::slicer::shared::select_units;
use crate::slicer::{SliceOutcome, Slicer};

/// Default bucket size: tokens per discretised capacity unit.
pub const DEFAULT_BUCKET_SIZE: i64 = 100;
/// Default memory guard for the keep table (decision D11 in docs/decisions.md): 256 MiB.
pub const DEFAULT_TABLE_LIMIT_BYTES: u64 = 256 * 1024 * 1024;

/// Scale from scores to integer knapsack values (spec 04 §3.2 rule 1).
const VALUE_SCALE: f64 = 10000.0;

/// KnapsackSlice: 0/1 knapsack over a discretised capacity (spec 04 §3).
///
/// Capacity is `target / bucket_size` (floor); each positive-token item weighs `ceil(tokens /
/// bucket_size)` and is worth `max(0, floor(score * 10000))`. The selection maximises the total
/// value; among equally valued choices the specification's tie rules (strict improvement, reverse
/// capacity loop, backtracking from the last candidate) decide. Zero-token items are always
/// selected when the target is positive; negative-token items are ignored.
///
/// Output order: zero-token items in input order, then the picks in reverse input order.
///
/// With groups, the candidates are units (a group weighs its members' summed tokens and is
/// worth its group value) and the optimum is exact over units. With variants
/// (`docs/variants.md`), each unit may be taken at one of its levels: the selection solves
/// the multiple-choice knapsack exactly (at most one level per unit), with the same guard
/// counting the bits of a level number per cell.
///
/// Memory guard (decision D11 in docs/decisions.md): the keep table is a bitset of `candidates ×
/// (capacity + 1)` bits, where `candidates` counts every positive-token item, and the DP keeps one
/// row of `capacity + 1` values. When the two together (`ceil(cells / 64) × 8 + 8 × (capacity + 1)`
/// bytes) would exceed the configured limit, the slice fails with [`Error::TableTooLarge`] before
/// any allocation. The check comes after the "no candidates" and "capacity 0" exits and before
/// every shortcut. Under the limit (or with a limit of `u64::MAX`, no limit at all) the
/// allocations are fallible: memory the system cannot give is [`Error::OutOfMemory`], never an
/// abort. When the candidates' values sum within 32 bits (scores in [0, 1] and up to 214 748
/// candidates), the DP runs on two rows of 32-bit values — the 8 bytes per capacity the guard
/// counts — plus one bound per candidate row; otherwise on one row of 64-bit values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnapsackSlice {
    bucket_size: i64,
    table_limit_bytes: u64,
}

impl KnapsackSlice {
    /// Builds with `bucket_size > 0` and the default memory guard
    /// ([`DEFAULT_TABLE_LIMIT_BYTES`]).
    ///
    /// Fails with `invalid slicer configuration: bucket_size must be > 0` otherwise.
    pub fn new(bucket_size: i64) -> Result<Self> {
        Self::with_table_limit(bucket_size, DEFAULT_TABLE_LIMIT_BYTES)
    }

    /// Builds with `bucket_size > 0` and a keep-table limit in bytes (> 0).
    ///
    /// Fails with `invalid slicer configuration: bucket_size must be > 0` or
    /// `invalid slicer configuration: table_limit_bytes must be > 0`, checked in that order.
    pub fn with_table_limit(bucket_size: i64, limit_bytes: u64) -> Result<Self> {
        if bucket_size <= 0 {
            return Err(Error::SlicerConfig("bucket_size must be > 0".into()));
        }
        if limit_bytes == 0 {
            return Err(Error::SlicerConfig("table_limit_bytes must be > 0".into()));
        }
        Ok(Self {
            bucket_size,
            table_limit_bytes: limit_bytes,
        })
    }

    /// The bucket size (tokens per capacity unit).
    pub fn bucket_size(&self) -> i64 {
        self.bucket_size
    }

    /// The keep-table limit in bytes.
    pub fn table_limit_bytes(&self) -> u64 {
        self.table_limit_bytes
    }

    /// Fails with [`Error::TableTooLarge`] when the keep table for `candidates` items and
    /// capacity `cap`, plus the DP row, would need more bytes than the limit, or more bits
    /// than the address space can index (reachable only with a limit near `u64::MAX`).
    fn check_table_size(&self, candidates: usize, cap: i64) -> Result<()> {
        self.check_choice_table(candidates, candidates as u128, cap)
    }

    /// The guard for a table of `candidates` rows whose cells take `row_bits` bits in all
    /// (one per row for the 0/1 knapsack; the multiple-choice knapsack's rows store a level
    /// number in each cell): `row_bits × (cap + 1)` bits plus the DP row, against the limit.
    /// `cells` in the error is `candidates × (cap + 1)`.
    pub(super) fn check_choice_table(
        &self,
        candidates: usize,
        row_bits: u128,
        cap: i64,
    ) -> Result<()> {
        let cells = candidates as u128 * (cap as u128 + 1);
        let bits = row_bits.saturating_mul(cap as u128 + 1);
        let bytes = dp_bytes(bits, cap);
        if bytes <= u128::from(self.table_limit_bytes) && bits <= usize::MAX as u128 {
            return Ok(());
        }
        let saturate = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
        Err(Error::TableTooLarge {
            candidates: candidates as u64,
            capacity: cap as u64,
            cells: saturate(cells),
            bytes: saturate(bytes),
            limit: self.table_limit_bytes,
        })
    }

    /// Discretised weight: `ceil(tokens / bucket_size)` for `tokens > 0`, without overflow.
    pub(super) fn weight(&self, tokens: i64) -> i64 {
        tokens / self.bucket_size + i64::from(tokens % self.bucket_size != 0)
    }
}

impl Default for KnapsackSlice {
    /// Bucket size [`DEFAULT_BUCKET_SIZE`] and limit [`DEFAULT_TABLE_LIMIT_BYTES`].
    fn default() -> Self {
        Self {
            bucket_size: DEFAULT_BUCKET_SIZE,
            table_limit_bytes: DEFAULT_TABLE_LIMIT_BYTES,
        }
    }
}

impl Slicer for KnapsackSlice {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        let target = budget.target_tokens();
        if items.is_empty() || target <= 0 {
            return Ok(SliceOutcome::default());
        }
        let tokens = |p: usize| items[p].item.tokens();
        let selected = self.select(items.len(), tokens, |p| items[p].score, target)?;
        Ok(SliceOutcome {
            selected,
            ..SliceOutcome::default()
        })
    }

    /// The same knapsack over units: a unit weighs `ceil(unit tokens / bucket_size)` and is
    /// worth `max(0, floor(unit value * 10000))`; zero-token units are always selected; the
    /// guard counts positive-token units. Each selected unit contributes all its members.
    fn slice_grouped(
        &self,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
    ) -> Result<SliceOutcome> {
        select_units(
            items,
            units,
            budget,
            |tokens, target| self.select(units.len(), |u| tokens[u], |u| units.value(u), target),
            |levels, target| multiple_choice::select(self, levels, units.len(), target),
        )
    }
}

impl KnapsackSlice {
    /// The selection among `n` candidates (items or units) with `target > 0`: zero-token
    /// candidates in index order, then the DP picks in reverse index order.
    fn select(
        &self,
        n: usize,
        tokens: impl Fn(usize) -> i64,
        score: impl Fn(usize) -> f64,
        target: i64,
    ) -> Result<Vec<usize>> {
        let mut selected: Vec<usize> = (0..n).filter(|&i| tokens(i) == 0).collect();
        let candidates: Vec<usize> = (0..n).filter(|&i| tokens(i) > 0).collect();
        let cap = target / self.bucket_size;
        // Check order of 04 §9.2: no candidates, then cap = 0, then the guard.
        if !candidates.is_empty() && cap > 0 {
            self.check_table_size(candidates.len(), cap)?;
            let active = self.dp_candidates(&candidates, tokens, score, cap);
            selected.extend(solve(&active, cap)?);
        }
        Ok(selected)
    }
}

/// Knapsack value of a score: `max(0, floor(score * 10000))` in f64, converted with `as`
/// semantics (NaN becomes 0, +inf saturates to `i64::MAX`).
pub(super) fn value(score: f64) -> i64 {
    ((score * VALUE_SCALE).floor() as i64).max(0)
}

/// A candidate that can take part in the DP: positive value and weight within capacity.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    pos: usize,
    weight: i64,
    value: i64,
}

impl KnapsackSlice {
    /// The candidates that can ever set a keep bit, in index order. Zero-value and
    /// oversized candidates never improve `best` (04 §3.2 rules 3–4), so leaving them out
    /// is exact.
    fn dp_candidates(
        &self,
        candidates: &[usize],
        tokens: impl Fn(usize) -> i64,
        score: impl Fn(usize) -> f64,
        cap: i64,
    ) -> Vec<Candidate> {
        candidates
            .iter()
            .map(|&pos| Candidate {
                pos,
                weight: self.weight(tokens(pos)),
                value: value(score(pos)),
            })
            .filter(|c| c.value > 0 && c.weight <= cap)
            .collect()
    }
}

/// The DP picks in backtracking order (reverse input order).
///
/// When every active candidate fits at once, the DP would take all of them (each row keeps
/// the item at `c = cap` because its value is positive), so the result is known without a
/// table (04 §9.2 "early exit").
fn solve(active: &[Candidate], cap: i64) -> Result<Vec<usize>> {
    if fits_all(active, cap) {
        return Ok(active.iter().rev().map(|c| c.pos).collect());
    }
    let cap = usize::try_from(cap).expect("the guard keeps candidates × (cap + 1) within usize");
    let table = if narrow_values_fit(active) {
        fill_table_narrow(active, cap)?
    } else {
        fill_table(active, cap)?
    };
    Ok(backtrack(active, &table, cap))
}

/// True when the values of all `active` candidates sum to at most `i32::MAX`: then no DP
/// sum can overflow a 32-bit value and the narrow DP is exact. Scores in [0, 1] give values
/// of at most 10 000, so this holds for up to 214 748 candidates.
fn narrow_values_fit(active: &[Candidate]) -> bool {
    active
        .iter()
        .try_fold(0i64, |sum, c| {
            sum.checked_add(c.value)
                .filter(|&s| s <= i64::from(i32::MAX))
        })
        .is_some()
}

/// True when the summed weights of `active` do not exceed `cap` and the summed values do
/// not overflow. Without overflow no DP sum saturates and the DP takes every candidate;
/// with it the saturated DP stops improving, so only the DP itself gives the answer.
fn fits_all(active: &[Candidate], cap: i64) -> bool {
    let mut weight: i64 = 0;
    let mut value: i64 = 0;
    active.iter().all(|c| {
        match (weight.checked_add(c.weight), value.checked_add(c.value)) {
            (Some(w), Some(v)) => (weight, value) = (w, v),
            _ => return false, // a weight sum past i64::MAX exceeds cap as well
        }
        weight <= cap
    })
}

/// The keep bits of a DP run. The narrow DP records the top of each row as one number
/// instead of bits: `keep(row, c)` is true for every `c >= full_from[row]` (an empty
/// `full_from` means every bit is in `bits`).
struct KeepTable {
    bits: BitTable,
    full_from: Vec<usize>,
}

impl KeepTable {
    fn get(&self, row: usize, c: usize) -> bool {
        self.full_from.get(row).is_some_and(|&from| c >= from) || self.bits.get(row, c)
    }
}

/// The same DP as [`fill_table`], on 32-bit values (the caller checked that no sum can
/// overflow them) and two rows instead of one updated in place: row `i` is computed from
/// row `i - 1` alone, which is what the reverse capacity loop of the in-place DP reads, so
/// the values and keep bits are identical. Two 32-bit rows take the bytes of one 64-bit row,
/// so the memory guard's count still holds.
///
/// Without the in-place dependency the loop over capacities has no branch and no carried
/// state, and it runs 64 capacities at a time, vectorised: each block yields one mask of
/// keep bits.
///
/// Capacities that cannot matter are skipped: after row `i`, every capacity at or above
/// the summed weight `W` of rows `0..=i` holds the summed value of those rows (they all
/// fit), and the row keeps its item at every capacity above `W` (the value is positive, so
/// taking it strictly improves). The loop covers `c <= min(cap, W)`, and the rest of the
/// row is recorded as one number, `full_from[i] = W + 1`.
fn fill_table_narrow(active: &[Candidate], cap: usize) -> Result<KeepTable> {
    let mut prev = alloc::filled(cap + 1, 0i32, "the knapsack DP row")?;
    let mut cur = alloc::filled(cap + 1, 0i32, "the knapsack DP row")?;
    let mut bits = BitTable::new(active.len(), cap + 1)?;
    let mut full_from = alloc::filled(active.len(), usize::MAX, "the knapsack row bounds")?;
    // `prev` is valid on `0..=reach`; above it, every value is `total`.
    let mut reach = 0usize;
    let mut total = 0i32;
    for (row, cand) in active.iter().enumerate() {
        crate::cancel::check("while slicing (knapsack)")?;
        let w = cand.weight as usize;
        let v = cand.value as i32;
        let summed = reach + w; // at most 2 × cap: no overflow
        let top = summed.min(cap);
        prev[reach + 1..=top].fill(total);
        cur[..w].copy_from_slice(&prev[..w]);
        improve_row(&prev[..=top], &mut cur[..=top], w, v, |c, mask, n| {
            bits.or_bits(row, c, mask, n)
        });
        if summed < cap {
            full_from[row] = summed + 1;
        }
        total += v;
        reach = top;
        std::mem::swap(&mut prev, &mut cur);
    }
    Ok(KeepTable { bits, full_from })
}

/// `cur[c] = max(prev[c], prev[c - w] + v)` for `c` in `w..prev.len()`, reporting the
/// capacities where taking the item strictly improves as masks of up to 64 bits
/// (`emit(first capacity, mask, count)`, bit `j` for capacity `first + j`).
fn improve_row(
    prev: &[i32],
    cur: &mut [i32],
    w: usize,
    v: i32,
    mut emit: impl FnMut(usize, u64, usize),
) {
    let end = prev.len();
    let mut c = w;
    while c + 64 <= end {
        let without: &[i32; 64] = prev[c..c + 64].try_into().expect("64 values");
        let with: &[i32; 64] = prev[c - w..c - w + 64].try_into().expect("64 values");
        let out: &mut [i32; 64] = (&mut cur[c..c + 64]).try_into().expect("64 values");
        emit(c, improve_block(without, with, v, out), 64);
        c += 64;
    }
    if c < end {
        let mut mask = 0u64;
        for (j, cc) in (c..end).enumerate() {
            let taken = prev[cc - w] + v;
            let better = taken > prev[cc];
            cur[cc] = if better { taken } else { prev[cc] };
            mask |= u64::from(better) << j;
        }
        emit(c, mask, end - c);
    }
}

/// One block of 64 capacities of [`improve_row`], written so that the compiler vectorises
/// it: fixed length, no branch, and the keep flags gathered as bytes, eight at a time into
/// eight bits by one multiplication (byte `k`, 0 or 1, lands on bit `k` of the top byte;
/// the partial products never overlap, so nothing carries).
#[inline(always)]
fn improve_block(without: &[i32; 64], with: &[i32; 64], v: i32, out: &mut [i32; 64]) -> u64 {
    let mut flags = [0u8; 64];
    for j in 0..64 {
        let taken = with[j] + v;
        let better = taken > without[j];
        out[j] = if better { taken } else { without[j] };
        flags[j] = u8::from(better);
    }
    let mut mask = 0u64;
    for (k, eight) in flags.chunks_exact(8).enumerate() {
        let bytes = u64::from_le_bytes(eight.try_into().expect("8 flags"));
        mask |= (bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    mask
}

/// Runs the 1-D DP (reverse capacity loop, strict improvement) and returns the keep bits.
/// Both allocations are fallible (their sizes come from the caller's budget). Values
/// saturate, so this is exact for any scores, including huge and infinite ones.
fn fill_table(active: &[Candidate], cap: usize) -> Result<KeepTable> {
    let mut best = alloc::filled(cap + 1, 0i64, "the knapsack DP row")?;
    let mut keep = BitTable::new(active.len(), cap + 1)?;
    // Two overlapping views of one row: `best[c]` is written while `best[c - w]` is read.
    // Walking c downwards means every read still sees the previous row's value.
    let best = Cell::from_mut(&mut best[..]).as_slice_of_cells();
    for (row, cand) in active.iter().enumerate() {
        crate::cancel::check("while slicing (knapsack)")?;
        let w = cand.weight as usize;
        let pairs = best[w..].iter().zip(&best[..=cap - w]);
        for (offset, (dst, src)) in pairs.enumerate().rev() {
            // Saturating: values near i64::MAX (huge or +inf scores) must not wrap.
            let with_item = src.get().saturating_add(cand.value);
            if with_item > dst.get() {
                dst.set(with_item);
                keep.set(row, w + offset);
            }
        }
    }
    Ok(KeepTable {
        bits: keep,
        full_from: Vec::new(),
    })
}

/// Walks the keep bits from `c = cap`, last candidate first.
fn backtrack(active: &[Candidate], keep: &KeepTable, cap: usize) -> Vec<usize> {
    let mut c = cap;
    let mut picks = Vec::new();
    for (row, cand) in active.iter().enumerate().rev() {
        if keep.get(row, c) {
            picks.push(cand.pos);
            c -= cand.weight as usize;
        }
    }
    picks
}

/// Bytes a DP run needs: the keep table of `bits` bits plus one row of `capacity + 1` i64
/// values.
fn dp_bytes(bits: u128, cap: i64) -> u128 {
    BitTable::bytes_for(bits) + 8 * (cap as u128 + 1)
}

/// Row-major bitset of `rows × width` keep bits, packed into 64-bit words.
struct BitTable {
    width: usize,
    words: Vec<u64>,
}

impl BitTable {
    /// Bytes a table of `cells` bits occupies (whole 64-bit words).
    fn bytes_for(cells: u128) -> u128 {
        cells.div_ceil(64) * 8
    }

    fn new(rows: usize, width: usize) -> Result<Self> {
        let words = (rows * width).div_ceil(64);
        Ok(Self {
            width,
            words: alloc::filled(words, 0, "the knapsack keep table")?,
        })
    }

    fn set(&mut self, row: usize, col: usize) {
        let bit = row * self.width + col;
        self.words[bit / 64] |= 1 << (bit % 64);
    }

    fn get(&self, row: usize, col: usize) -> bool {
        let bit = row * self.width + col;
        self.words[bit / 64] >> (bit % 64) & 1 == 1
    }

    /// Sets the bits of `mask` (its low `n` bits, `n <= 64`) at `row`, columns `col..col + n`.
    fn or_bits(&mut self, row: usize, col: usize, mask: u64, n: usize) {
        if mask == 0 {
            return;
        }
        let bit = row * self.width + col;
        let (word, shift) = (bit / 64, bit % 64);
        self.words[word] |= mask << shift;
        if shift != 0 && shift + n > 64 {
            self.words[word + 1] |= mask >> (64 - shift);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slicer::test_support::{budget, naive_knapsack, run, Fixture};
    use crate::testutil::Rng;
    use crate::ErrorCode;

    fn knap(q: i64) -> KnapsackSlice {
        KnapsackSlice::new(q).unwrap()
    }

    #[test]
    fn construction_validates_bucket_size_then_limit() {
        for bad in [0, -1, i64::MIN] {
            let err = KnapsackSlice::new(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                "invalid slicer configuration: bucket_size must be > 0"
            );
            assert_eq!(err.code(), ErrorCode::SlicerConfig);
        }
        let err = KnapsackSlice::with_table_limit(1, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid slicer configuration: table_limit_bytes must be > 0"
        );
        let err = KnapsackSlice::with_table_limit(0, 0).unwrap_err();
        assert!(err.to_string().contains("bucket_size"));
        let k = KnapsackSlice::with_table_limit(7, 99).unwrap();
        assert_eq!((k.bucket_size(), k.table_limit_bytes()), (7, 99));
        let d = KnapsackSlice::default();
        assert_eq!(d, knap(DEFAULT_BUCKET_SIZE));
        assert_eq!(d.table_limit_bytes(), 256 * 1024 * 1024);
        assert!(d.monotonic_in_budget() && d.count_caps().is_empty());
    }

    #[test]
    fn empty_or_no_target_selects_nothing() {
        let fx = Fixture::new(&[("z", 0, "x", 0.5), ("a", 100, "x", 0.5)]);
        assert!(run(&knap(100), &Fixture::new(&[]).scored(), 500)
            .selected
            .is_empty());
        assert!(run(&knap(100), &fx.scored(), 0).selected.is_empty());
    }

    #[test]
    fn zero_token_items_alone_or_when_cap_is_zero() {
        let fx = Fixture::new(&[
            ("z1", 0, "x", 0.1),
            ("a", 50, "x", 0.9),
            ("z2", 0, "x", 0.9),
        ]);
        // 0 < target < q: cap = 0, zero-token items only, in input order
        assert_eq!(run(&knap(100), &fx.scored(), 99).selected, vec![0, 2]);
        let fx = Fixture::new(&[
            ("z1", 0, "x", 0.1),
            ("n", -5, "x", 0.9),
            ("z2", 0, "x", 0.9),
        ]);
        assert_eq!(run(&knap(100), &fx.scored(), 1000).selected, vec![0, 2]);
    }

    #[test]
    fn no_fit_or_zero_values_give_only_zero_token_items() {
        let fx = Fixture::new(&[
            ("big", 500, "x", 0.9),
            ("z", 0, "x", 0.0),
            ("low", 10, "x", 0.00009),
        ]);
        assert_eq!(run(&knap(100), &fx.scored(), 400).selected, vec![1]);
    }

    #[test]
    fn picks_come_in_reverse_candidate_order_after_zero_token_items() {
        let fx = Fixture::new(&[
            ("a", 100, "x", 0.9),
            ("z", 0, "x", 0.1),
            ("b", 100, "x", 0.8),
            ("c", 100, "x", 0.1),
            ("d", 100, "x", 0.7),
        ]);
        assert_eq!(
            run(&knap(100), &fx.scored(), 300).selected,
            vec![1, 4, 2, 0]
        );
        // everything fits: early exit gives the same order as the DP
        assert_eq!(
            run(&knap(100), &fx.scored(), 1000).selected,
            vec![1, 4, 3, 2, 0]
        );
    }

    #[test]
    fn optimises_value_not_density() {
        // Greedy by density would take a+b (value 0.6+0.5); the optimum is c alone (1.5).
        let fx = Fixture::new(&[
            ("a", 100, "x", 0.6),
            ("b", 100, "x", 0.5),
            ("c", 200, "x", 1.5),
        ]);
        assert_eq!(run(&knap(100), &fx.scored(), 200).selected, vec![2]);
    }

    #[test]
    fn weights_ceil_and_capacity_floors() {
        // q = 100: 101 tokens weigh 2, target 299 gives cap 2 → only one of them fits.
        let fx = Fixture::new(&[("a", 101, "x", 0.5), ("b", 101, "x", 0.6)]);
        assert_eq!(run(&knap(100), &fx.scored(), 299).selected, vec![1]);
        // bucket 1 is exact on tokens
        assert_eq!(run(&knap(1), &fx.scored(), 202).selected, vec![1, 0]);
        let k = knap(100);
        assert_eq!(
            (
                k.weight(1),
                k.weight(100),
                k.weight(101),
                k.weight(i64::MAX)
            ),
            (1, 1, 2, 92233720368547759)
        );
    }

    #[test]
    fn value_scaling_is_f64_floor() {
        assert_eq!(value(0.57), 5699);
        assert_eq!(value(0.5), 5000);
        assert_eq!(value(0.00009), 0);
        assert_eq!(value(-1.0), 0);
        assert_eq!(value(f64::NAN), 0);
        assert_eq!(value(f64::INFINITY), i64::MAX);
        assert_eq!(value(f64::NEG_INFINITY), 0);
        assert_eq!(value(f64::MAX), i64::MAX);
    }

    #[test]
    fn saturating_values_do_not_overflow() {
        let fx = Fixture::new(&[
            ("a", 100, "x", f64::INFINITY),
            ("b", 100, "x", f64::MAX),
            ("c", 100, "x", 1e300),
        ]);
        // best saturates at i64::MAX after the first item: later items never improve it.
        assert_eq!(run(&knap(100), &fx.scored(), 200).selected, vec![0]);
    }

    #[test]
    fn guard_fires_with_every_field() {
        // 3 candidates (one zero-value, one oversized: both count), cap = 10 → 33 cells:
        // one 8-byte word of keep bits plus an 11-value DP row = 96 bytes.
        let fx = Fixture::new(&[
            ("a", 1, "x", 0.5),
            ("zero-value", 1, "x", 0.0),
            ("huge", 1000, "x", 0.9),
            ("z", 0, "x", 0.9),
        ]);
        let k = KnapsackSlice::with_table_limit(1, 95).unwrap();
        let err = k.slice(&fx.scored(), &budget(10)).unwrap_err();
        assert_eq!(
            err,
            Error::TableTooLarge {
                candidates: 3,
                capacity: 10,
                cells: 33,
                bytes: 96,
                limit: 95
            }
        );
        assert_eq!(err.code(), ErrorCode::TableTooLarge);
        // at the limit it passes
        let k = KnapsackSlice::with_table_limit(1, 96).unwrap();
        assert_eq!(
            k.slice(&fx.scored(), &budget(10)).unwrap().selected,
            vec![3, 0]
        );
    }

    #[test]
    fn guard_is_checked_after_the_cap_zero_exit_and_before_shortcuts() {
        let fx = Fixture::new(&[("a", 1, "x", 0.5), ("z", 0, "x", 0.9)]);
        let tiny = KnapsackSlice::with_table_limit(100, 1).unwrap();
        // cap = 0: no guard
        assert_eq!(
            tiny.slice(&fx.scored(), &budget(99)).unwrap().selected,
            vec![1]
        );
        // cap = 1000: the guard fires even though everything fits
        let err = tiny.slice(&fx.scored(), &budget(100_000)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TableTooLarge);
        // only zero-token items: no guard
        let fx = Fixture::new(&[("z", 0, "x", 0.9)]);
        assert_eq!(
            tiny.slice(&fx.scored(), &budget(100_000)).unwrap().selected,
            vec![0]
        );
    }

    #[test]
    fn default_guard_allows_the_crate_limit_and_rejects_huge_tables() {
        // 2 candidates at cap = i64::MAX / 1: the byte count overflows u64 and saturates.
        let fx = Fixture::new(&[("a", 5, "x", 0.5), ("b", 7, "x", 0.5)]);
        let err = knap(1).slice(&fx.scored(), &budget(i64::MAX)).unwrap_err();
        match err {
            Error::TableTooLarge {
                candidates,
                capacity,
                cells,
                bytes,
                limit,
            } => {
                assert_eq!((candidates, capacity), (2, i64::MAX as u64));
                assert_eq!(cells, u64::MAX);
                assert_eq!(bytes, u64::MAX);
                assert_eq!(limit, DEFAULT_TABLE_LIMIT_BYTES);
            }
            other => panic!("unexpected {other:?}"),
        }
        // Even an unbounded limit cannot make an unaddressable table.
        let unbounded = KnapsackSlice::with_table_limit(1, u64::MAX).unwrap();
        let err = unbounded
            .slice(&fx.scored(), &budget(i64::MAX))
            .unwrap_err();
        assert!(matches!(
            err,
            Error::TableTooLarge {
                cells: u64::MAX,
                limit: u64::MAX,
                ..
            }
        ));
        // The crate's own limit (50 M cells) is about 6 MB of bits: well inside 256 MiB.
        assert!(knap(1).check_table_size(1000, 50_000 - 1).is_ok());
    }

    #[test]
    fn without_a_limit_an_impossible_table_is_an_error_not_an_abort() {
        // A budget of 10^12 tokens in buckets of 1: one DP row of 32-bit values (the values
        // 9000 and 8000 sum within 32 bits) alone needs 4 TB.
        let k = KnapsackSlice::with_table_limit(1, u64::MAX).unwrap();
        let fx = Fixture::new(&[
            ("a", 600_000_000_000, "x", 0.9),
            ("b", 600_000_000_000, "x", 0.8),
        ]);
        let err = k
            .slice(&fx.scored(), &budget(1_000_000_000_000))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::OutOfMemory);
        assert_eq!(
            err.to_string(),
            "out of memory: the knapsack DP row needs 4000000000004 bytes"
        );
    }

    #[test]
    fn bit_table_round_trips() {
        let mut t = BitTable::new(3, 70).unwrap();
        t.set(0, 0);
        t.set(1, 69);
        t.set(2, 5);
        assert!(t.get(0, 0) && t.get(1, 69) && t.get(2, 5));
        assert!(!t.get(0, 1) && !t.get(1, 68) && !t.get(2, 69));
        assert_eq!(BitTable::bytes_for(0), 0);
        assert_eq!(BitTable::bytes_for(1), 8);
        assert_eq!(BitTable::bytes_for(64), 8);
        assert_eq!(BitTable::bytes_for(65), 16);
    }

    /// The narrow DP (32-bit values, two rows, 64 capacities a block, skipped tops) sets the
    /// same keep bits as the in-place 64-bit DP at every row and capacity, for capacities
    /// that end inside and on block edges.
    #[test]
    fn the_narrow_dp_keeps_the_same_bits_as_the_in_place_dp() {
        let mut cells = 0usize;
        for seed in 0..600u64 {
            let mut rng = Rng::new(seed);
            let n = rng.range(1, 40) as usize;
            // `range` is inclusive at both ends.
            let cap = match seed % 4 {
                0 => 64 * rng.range(1, 5) as usize - 1,
                1 => 64 * rng.range(1, 5) as usize,
                _ => rng.range(1, 400) as usize,
            };
            let heavy = rng.chance(0.3);
            let active: Vec<Candidate> = (0..n)
                .map(|pos| Candidate {
                    pos,
                    weight: if heavy {
                        rng.range(1, cap as i64)
                    } else {
                        rng.range(1, 12).min(cap as i64)
                    },
                    value: if rng.chance(0.3) {
                        5000
                    } else {
                        rng.range(1, 10_000)
                    },
                })
                .collect();
            assert!(narrow_values_fit(&active));
            let narrow = fill_table_narrow(&active, cap).unwrap();
            let wide = fill_table(&active, cap).unwrap();
            for row in 0..n {
                for c in 0..=cap {
                    assert_eq!(
                        narrow.get(row, c),
                        wide.get(row, c),
                        "seed {seed}, row {row}, capacity {c}"
                    );
                    cells += 1;
                }
            }
            assert_eq!(
                backtrack(&active, &narrow, cap),
                backtrack(&active, &wide, cap)
            );
        }
        assert!(cells > 1_000_000, "{cells} cells compared");
    }

    #[test]
    fn values_past_32_bits_take_the_saturating_dp() {
        let c = |value| Candidate {
            pos: 0,
            weight: 1,
            value,
        };
        assert!(narrow_values_fit(&[c(i64::from(i32::MAX))]));
        assert!(!narrow_values_fit(&[c(i64::from(i32::MAX)), c(1)]));
        assert!(!narrow_values_fit(&[c(i64::MAX), c(i64::MAX)]));
    }

    #[test]
    fn random_cases_match_the_naive_table() {
        const SCORES: [f64; 8] = [0.0, 0.1, 0.25, 0.5, 0.57, 1.0, -0.2, 0.00005];
        const EXTREME: [f64; 4] = [f64::INFINITY, f64::NAN, 1e300, f64::NEG_INFINITY];
        const BUCKETS: [i64; 6] = [1, 2, 3, 7, 10, 100];
        let (mut dp_runs, mut early_exits) = (0, 0);
        for seed in 0..4000u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(16);
            let q = *rng.pick(&BUCKETS);
            let extreme = rng.chance(0.05);
            let specs: Vec<(i64, f64)> = (0..n)
                .map(|_| {
                    let tokens = match rng.below(8) {
                        0 => 0,
                        1 => -rng.range(1, 50),
                        _ => rng.range(1, 3 * q + 40),
                    };
                    let score = match rng.below(10) {
                        0 if extreme => *rng.pick(&EXTREME),
                        0..=5 => *rng.pick(&SCORES),
                        _ => rng.unit(),
                    };
                    (tokens, score)
                })
                .collect();
            let fx = Fixture::from_tokens_scores(&specs);
            let items = fx.scored();
            let target = if rng.chance(0.2) {
                rng.range(0, q)
            } else {
                rng.range(0, 8 * q + 60)
            };
            let slicer = knap(q);
            let got = slicer.slice(&items, &budget(target)).unwrap().selected;
            assert_eq!(
                got,
                naive_knapsack(&items, target, q),
                "seed {seed} q {q} target {target}"
            );
            let cap = target / q;
            let cands: Vec<usize> = (0..n).filter(|&p| specs[p].0 > 0).collect();
            let active = slicer.dp_candidates(&cands, |p| specs[p].0, |p| items[p].score, cap);
            if cap > 0 && !active.is_empty() {
                if fits_all(&active, cap) {
                    early_exits += 1;
                } else {
                    dp_runs += 1;
                }
            }
        }
        assert!(
            dp_runs > 1000 && early_exits > 500,
            "{dp_runs} DP runs, {early_exits} early exits"
        );
    }

    #[test]
    fn random_guard_matches_the_formula() {
        for seed in 0..1000u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(12);
            let specs: Vec<(i64, f64)> = (0..n).map(|_| (rng.range(-2, 30), rng.unit())).collect();
            let fx = Fixture::from_tokens_scores(&specs);
            let items = fx.scored();
            let target = rng.range(0, 400);
            let limit = rng.range(1, 4000) as u64;
            let slicer = KnapsackSlice::with_table_limit(1, limit).unwrap();
            let cands = specs.iter().filter(|s| s.0 > 0).count() as u64;
            let cells = cands * (target as u64 + 1);
            let bytes = cells.div_ceil(64) * 8 + 8 * (target as u64 + 1);
            let expect_err = target > 0 && cands > 0 && bytes > limit;
            match slicer.slice(&items, &budget(target)) {
                Err(e) => {
                    assert!(expect_err, "seed {seed}: unexpected {e:?}");
                    let want = Error::TableTooLarge {
                        candidates: cands,
                        capacity: target as u64,
                        cells,
                        bytes,
                        limit,
                    };
                    assert_eq!(e, want, "seed {seed}");
                }
                Ok(out) => {
                    assert!(!expect_err, "seed {seed}: guard did not fire");
                    assert_eq!(
                        out.selected,
                        naive_knapsack(&items, target, 1),
                        "seed {seed}"
                    );
                }
            }
        }
    }
}
