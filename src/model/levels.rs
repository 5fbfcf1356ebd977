//! The levels of units whose items have variants (`docs/variants.md`): what a slicer may
//! choose for each unit besides leaving it out.
//!
//! An item's **kept forms** are its forms that no other form dominates, richest first
//! ([`crate::model::kept_forms`]). A unit at **level** `l` uses, for each member, that
//! member's kept form number `min(l, its kept forms − 1)`: level 0 is every member in full,
//! and each further level moves every member that still has a cheaper kept form one step
//! down. So a group degrades as one — the members without variants stay whole — and a
//! unit's levels have strictly decreasing tokens. A unit has as many levels as its member
//! with the most kept forms.
//!
//! A level's tokens are its members' form tokens added up; its value folds the members'
//! `score × quality` with the run's group value (for an ungrouped item: its score times the
//! form's quality). Level 0's value is the unit's value bit for bit (`score × 1.0` is the
//! score).

use crate::error::{checked_token_sum, Error, Result};
use crate::model::{Accumulator, GroupValue};

/// Levels and kept forms, in flat index-based arrays.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Levels {
    /// Kept forms of position `p`: `forms[form_starts[p]..form_starts[p + 1]]`.
    form_starts: Vec<u32>,
    forms: Vec<u32>,
    /// Levels of unit `u`: `level_starts[u]..level_starts[u + 1]` into `tokens`/`values`.
    level_starts: Vec<u32>,
    tokens: Vec<i64>,
    values: Vec<f64>,
}

/// What [`Levels::build`] reads about position `p` of the list the units partition: its
/// kept forms, their tokens and qualities by index among them, and its score.
pub(crate) trait LevelSource {
    /// The kept forms of position `p` (at least one; the first is 0), richest first.
    fn kept(&self, p: usize) -> &[u32];
    /// Tokens of the `k`-th kept form of position `p`.
    fn tokens(&self, p: usize, k: usize) -> i64;
    /// Quality of the `k`-th kept form of position `p`.
    fn quality(&self, p: usize, k: usize) -> f64;
    /// The score of position `p`.
    fn score(&self, p: usize) -> f64;
}

impl Levels {
    /// The levels of `unit_count` units over `n` positions; `members(u)` lists unit `u`'s
    /// positions in input order; a group's level value folds its members' values with
    /// `mode`. Fails with `TokenOverflow` when a level's tokens do not fit in 64 bits, and
    /// with `InvalidArgument` past `u32::MAX - 1` kept forms or levels.
    pub(crate) fn build<'m>(
        n: usize,
        unit_count: usize,
        members: impl Fn(usize) -> &'m [u32],
        source: &impl LevelSource,
        mode: GroupValue,
    ) -> Result<Levels> {
        let mut form_starts = Vec::with_capacity(n + 1);
        let mut forms = Vec::with_capacity(n);
        form_starts.push(0u32);
        for p in 0..n {
            forms.extend_from_slice(source.kept(p));
            form_starts.push(index_u32(forms.len(), "kept forms")?);
        }
        let mut levels = Levels {
            form_starts,
            forms,
            level_starts: Vec::with_capacity(unit_count + 1),
            tokens: Vec::with_capacity(unit_count),
            values: Vec::with_capacity(unit_count),
        };
        levels.level_starts.push(0);
        for u in 0..unit_count {
            let members = members(u);
            if let [only] = members {
                // An ungrouped item (the common case): its kept forms are its levels.
                let p = *only as usize;
                let score = source.score(p);
                for k in 0..source.kept(p).len() {
                    levels.tokens.push(source.tokens(p, k));
                    levels.values.push(score * source.quality(p, k));
                }
            } else {
                let count = members
                    .iter()
                    .map(|&m| source.kept(m as usize).len())
                    .max()
                    .unwrap_or(1);
                for level in 0..count {
                    // Member m's kept index at this level.
                    let at = |m: u32| level.min(source.kept(m as usize).len() - 1);
                    let tokens = checked_token_sum(
                        members.iter().map(|&m| source.tokens(m as usize, at(m))),
                        "unit tokens",
                    )?;
                    let mut acc = Accumulator::default();
                    for &m in members {
                        acc.add(source.score(m as usize) * source.quality(m as usize, at(m)));
                    }
                    levels.tokens.push(tokens);
                    levels.values.push(acc.value(mode));
                }
            }
            let end = index_u32(levels.tokens.len(), "levels")?;
            levels.level_starts.push(end);
        }
        Ok(levels)
    }

    /// The levels of a sub-list: sub-list position `i` is position `positions[i]` here,
    /// and sub-list unit `v` is unit `parent(v)` here (units are wholly inside or outside).
    pub(crate) fn subset(
        &self,
        positions: &[usize],
        unit_count: usize,
        parent: impl Fn(usize) -> usize,
    ) -> Levels {
        let mut out = Levels {
            form_starts: Vec::with_capacity(positions.len() + 1),
            forms: Vec::with_capacity(positions.len()),
            level_starts: Vec::with_capacity(unit_count + 1),
            tokens: Vec::new(),
            values: Vec::new(),
        };
        out.form_starts.push(0);
        for &p in positions {
            out.forms.extend_from_slice(self.kept(p));
            out.form_starts.push(out.forms.len() as u32);
        }
        out.level_starts.push(0);
        for v in 0..unit_count {
            let range = self.range(parent(v));
            out.tokens.extend_from_slice(&self.tokens[range.clone()]);
            out.values.extend_from_slice(&self.values[range]);
            out.level_starts.push(out.tokens.len() as u32);
        }
        out
    }

    /// The kept forms of position `p`, richest first.
    pub(crate) fn kept(&self, p: usize) -> &[u32] {
        &self.forms[self.form_starts[p] as usize..self.form_starts[p + 1] as usize]
    }

    /// The form position `p` uses when its unit is at `level`.
    pub(crate) fn form_at(&self, p: usize, level: usize) -> usize {
        let kept = self.kept(p);
        kept[level.min(kept.len() - 1)] as usize
    }

    /// The level range of unit `u` in `tokens` / `values`.
    fn range(&self, u: usize) -> std::ops::Range<usize> {
        self.level_starts[u] as usize..self.level_starts[u + 1] as usize
    }

    /// Number of levels of unit `u` (at least 1).
    pub(crate) fn count(&self, u: usize) -> usize {
        self.range(u).len()
    }

    /// Tokens of unit `u` at `level`.
    pub(crate) fn tokens(&self, u: usize, level: usize) -> i64 {
        self.tokens[self.level_starts[u] as usize + level]
    }

    /// Value of unit `u` at `level`.
    pub(crate) fn value(&self, u: usize, level: usize) -> f64 {
        self.values[self.level_starts[u] as usize + level]
    }

    /// The level of unit `u` at which position `p` (one of its members) uses `form`, if
    /// `form` is one of `p`'s kept forms: the index of `form` among them (for a member with
    /// fewer kept forms than the unit has levels, its last kept form stands for every
    /// level from its index on; the lowest is returned).
    pub(crate) fn level_of(&self, p: usize, form: usize) -> Option<usize> {
        self.kept(p).iter().position(|&f| f as usize == form)
    }
}

/// `len` as a u32 offset, or an error naming `what`.
fn index_u32(len: usize, what: &str) -> Result<u32> {
    u32::try_from(len)
        .ok()
        .filter(|&v| v < u32::MAX)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "variants support at most {} {what} in one run",
                u32::MAX - 1
            ))
        })
}
