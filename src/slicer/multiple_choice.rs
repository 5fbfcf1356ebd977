//! KnapsackSlice over units with levels (`docs/variants.md`): the multiple-choice knapsack
//! — at most one level per unit — solved exactly by dynamic programming over the same
//! discretised capacity as the 0/1 knapsack, under the same memory guard.
//!
//! A level weighs `ceil(tokens / bucket_size)` and is worth `max(0, floor(value × 10000))`,
//! as an item is. Each DP row is a unit; a cell of the choice table holds 0 (the unit left
//! out) or `level + 1`, in `bit_width(levels)` bits, so a unit without variants takes one
//! bit per cell, exactly as in the 0/1 knapsack.
//!
//! Tie rules, extending the 0/1 knapsack's: a cell's options are tried richest level first
//! and an option replaces the best so far only when strictly better — except that a
//! zero-weight level replaces "left out" when it ties (a zero-token form is always taken,
//! as a zero-token item is). Backtracking starts at the full capacity from the last row.

use crate::alloc;
use crate::error::Result;
use crate::model::Levels;
use crate::slicer::knapsack::{value, KnapsackSlice};

/// The selection among `n` units with levels, `target > 0`: zero-token units (at level 0)
/// in unit order, then the DP picks in reverse unit order, as (unit, level).
///
/// Check order, as for the 0/1 knapsack: no unit with positive tokens, or capacity 0, then
/// the guard — computed from the level counts without allocating anything — then the DP.
pub(super) fn select(
    knapsack: &KnapsackSlice,
    levels: &Levels,
    n: usize,
    target: i64,
) -> Result<Vec<(usize, usize)>> {
    let cap = target / knapsack.bucket_size();
    let rows = || (0..n).filter(|&u| levels.tokens(u, 0) > 0);
    let row_count = rows().count();
    if row_count > 0 && cap > 0 {
        let bits: u128 = rows().map(|u| u128::from(bit_width(levels.count(u)))).sum();
        knapsack.check_choice_table(row_count, bits, cap)?;
    }
    let mut picks: Vec<(usize, usize)> = (0..n)
        .filter(|&u| levels.tokens(u, 0) == 0)
        .map(|u| (u, 0))
        .collect();
    if row_count == 0 {
        return Ok(picks);
    }
    if cap == 0 {
        // Nothing with tokens fits; a zero-token level (always the last) still does.
        picks.extend(rows().filter_map(|u| {
            let last = levels.count(u) - 1;
            (levels.tokens(u, last) == 0).then_some((u, last))
        }));
        return Ok(picks);
    }
    let cap = usize::try_from(cap).expect("the guard keeps the table within usize");
    let options = Options::build(knapsack, levels, rows(), cap);
    picks.extend(options.solve(cap)?);
    Ok(picks)
}

/// Bits that hold `0..=levels`.
fn bit_width(levels: usize) -> u32 {
    usize::BITS - levels.leading_zeros()
}

/// The choices of the DP rows in flat arrays: each row is a unit with at least one option
/// worth trying, its options richest first with strictly decreasing weights and values.
struct Options {
    /// The unit of each row.
    unit: Vec<u32>,
    /// Bits per cell of each row (`bit_width(levels)`), and the row's first bit.
    width: Vec<u32>,
    offset: Vec<usize>,
    /// Options of row `r`: `start[r]..start[r + 1]`.
    start: Vec<u32>,
    level: Vec<u32>,
    weight: Vec<usize>,
    value: Vec<i64>,
}

impl Options {
    /// The options of each unit of `rows` (units with positive full tokens), in unit order.
    ///
    /// A level can never be chosen when it weighs more than `cap`, or when it has no value
    /// and some weight (it never strictly improves a cell). Among the rest, a level is
    /// dropped when another weighs no more and is worth at least as much — on a tie in
    /// both, the richer level stays. What remains has strictly decreasing weights and
    /// values. Rows left without options take no part (they never set a choice).
    fn build(
        knapsack: &KnapsackSlice,
        levels: &Levels,
        rows: impl Iterator<Item = usize>,
        cap: usize,
    ) -> Options {
        let mut o = Options {
            unit: Vec::new(),
            width: Vec::new(),
            offset: Vec::new(),
            start: vec![0],
            level: Vec::new(),
            weight: Vec::new(),
            value: Vec::new(),
        };
        let mut next_bit = 0usize;
        let mut row: Vec<(u32, usize, i64)> = Vec::new(); // (level, weight, value)
        let mut kept: Vec<(u32, usize, i64)> = Vec::new();
        for u in rows {
            row.clear();
            for l in 0..levels.count(u) {
                let w = knapsack.weight(levels.tokens(u, l));
                let v = value(levels.value(u, l));
                if w as u64 > cap as u64 || (v == 0 && w > 0) {
                    continue;
                }
                // Weights do not increase along the levels: equal weights are adjacent.
                match row.last_mut() {
                    Some(last) if last.1 == w as usize => {
                        if v > last.2 {
                            *last = (l as u32, w as usize, v);
                        }
                    }
                    _ => row.push((l as u32, w as usize, v)),
                }
            }
            // Keep a level only when it is worth more than every cheaper one.
            let mut best_cheaper = i64::MIN;
            kept.clear();
            for &option in row.iter().rev() {
                if option.2 > best_cheaper {
                    best_cheaper = option.2;
                    kept.push(option);
                }
            }
            kept.reverse();
            if kept.is_empty() {
                continue;
            }
            let width = bit_width(levels.count(u));
            o.unit.push(u as u32);
            o.width.push(width);
            o.offset.push(next_bit);
            next_bit += width as usize * (cap + 1);
            for &(l, w, v) in &kept {
                o.level.push(l);
                o.weight.push(w);
                o.value.push(v);
            }
            o.start.push(o.level.len() as u32);
        }
        o
    }

    fn options(&self, r: usize) -> std::ops::Range<usize> {
        self.start[r] as usize..self.start[r + 1] as usize
    }

    /// The DP picks in backtracking order (reverse row order) as (unit, level). Both
    /// allocations are fallible (their sizes come from the caller's budget).
    fn solve(&self, cap: usize) -> Result<Vec<(usize, usize)>> {
        let rows = self.unit.len();
        if let Some(all) = self.fits_all(cap) {
            return Ok(all);
        }
        let total_bits = self.offset.last().map_or(0, |&o| o)
            + self.width.last().map_or(0, |&w| w as usize) * (cap + 1);
        let mut best = alloc::filled(cap + 1, 0i64, "the knapsack DP row")?;
        let mut table = ChoiceTable::new(total_bits)?;
        for r in 0..rows {
            let opts = self.options(r);
            let lightest = self.weight[opts.end - 1];
            let (offset, width) = (self.offset[r], self.width[r]);
            for c in (lightest..=cap).rev() {
                let mut current = best[c];
                let mut choice = 0u32;
                for o in opts.clone() {
                    let w = self.weight[o];
                    if w > c {
                        continue;
                    }
                    // Saturating: values near i64::MAX (huge or +inf scores) must not wrap.
                    let with = best[c - w].saturating_add(self.value[o]);
                    if with > current || (choice == 0 && w == 0 && with == current) {
                        current = with;
                        choice = self.level[o] + 1;
                    }
                }
                if choice != 0 {
                    best[c] = current;
                    table.set(offset + c * width as usize, width, choice);
                }
            }
        }
        let mut c = cap;
        let mut picks = Vec::new();
        for r in (0..rows).rev() {
            let choice = table.get(self.offset[r] + c * self.width[r] as usize, self.width[r]);
            if choice != 0 {
                let level = choice - 1;
                let o = self
                    .options(r)
                    .find(|&o| self.level[o] == level)
                    .expect("a chosen level is one of the row's options");
                picks.push((self.unit[r] as usize, level as usize));
                c -= self.weight[o];
            }
        }
        Ok(picks)
    }

    /// When every row's richest option fits at once (and the values add up without
    /// overflow), the DP takes every row at that option — it is each row's best value and
    /// it strictly improves every cell it reaches (or, weighing nothing, ties "left out"
    /// and wins) — so the answer is known without a table.
    fn fits_all(&self, cap: usize) -> Option<Vec<(usize, usize)>> {
        let mut weight = 0usize;
        let mut total = 0i64;
        for r in 0..self.unit.len() {
            let first = self.start[r] as usize;
            weight = weight.checked_add(self.weight[first])?;
            total = total.checked_add(self.value[first])?;
            if weight > cap {
                return None;
            }
        }
        let picks = (0..self.unit.len()).rev().map(|r| {
            let first = self.start[r] as usize;
            (self.unit[r] as usize, self.level[first] as usize)
        });
        Some(picks.collect())
    }
}

/// Cells of varying bit widths (up to 32) packed into 64-bit words.
struct ChoiceTable {
    words: Vec<u64>,
}

impl ChoiceTable {
    fn new(bits: usize) -> Result<Self> {
        // One spare word: a cell read or written across a word boundary touches the next.
        Ok(Self {
            words: alloc::filled(bits.div_ceil(64) + 1, 0, "the knapsack choice table")?,
        })
    }

    fn set(&mut self, bit: usize, width: u32, value: u32) {
        let (word, shift) = (bit / 64, (bit % 64) as u32);
        let value = u128::from(value) << shift;
        self.words[word] |= value as u64;
        if shift + width > 64 {
            self.words[word + 1] |= (value >> 64) as u64;
        }
    }

    fn get(&self, bit: usize, width: u32) -> u32 {
        let (word, shift) = (bit / 64, (bit % 64) as u32);
        let pair = u128::from(self.words[word]) | (u128::from(self.words[word + 1]) << 64);
        ((pair >> shift) & ((1u128 << width) - 1)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_widths_hold_every_level_number() {
        assert_eq!(
            [1, 2, 3, 4, 7, 8].map(bit_width),
            [1, 2, 2, 3, 3, 4],
            "levels + 1 values: 0 = left out"
        );
    }

    #[test]
    fn choice_table_round_trips_across_words() {
        let mut t = ChoiceTable::new(200).unwrap();
        t.set(62, 3, 0b101);
        t.set(65, 2, 0b11);
        t.set(0, 1, 1);
        t.set(127, 20, 0xABCDE);
        assert_eq!(t.get(62, 3), 0b101);
        assert_eq!(t.get(65, 2), 0b11);
        assert_eq!(t.get(0, 1), 1);
        assert_eq!(t.get(1, 1), 0);
        assert_eq!(t.get(127, 20), 0xABCDE);
        assert_eq!(t.get(147, 5), 0);
    }
}
