//! QuotaSlice (spec 04 §4): per-kind percentage budgets around an inner slicer.

use std::sync::Arc;

use crate::error::{checked_token_sum, Error, Result};
use crate::hash::FastMap;
use crate::model::{fold_ascii, ContextBudget, ContextKind, ScoredItem, Units};
use crate::slicer::shared::{append_mapped, reject_duplicate_kinds};
use crate::slicer::{SliceOutcome, Slicer};

/// One percentage quota: `require` and `cap` in percent of the slicer's target.
///
/// A kind without an entry behaves as require 0 %, cap 100 %.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaEntry {
    kind: ContextKind,
    require: f64,
    cap: f64,
}

impl QuotaEntry {
    /// Validates, in this order: `require` in [0, 100], `cap` in [0, 100] (NaN fails both),
    /// `require <= cap`. Messages (numbers printed with Rust `{}`):
    /// `require (<v>) must be in [0.0, 100.0]`, `cap (<v>) must be in [0.0, 100.0]`,
    /// `require (<r>) must be <= cap (<c>)`, each as an `invalid slicer configuration`.
    pub fn new(kind: ContextKind, require: f64, cap: f64) -> Result<Self> {
        let percent = 0.0..=100.0;
        if !percent.contains(&require) {
            return Err(config(format!(
                "require ({require}) must be in [0.0, 100.0]"
            )));
        }
        if !percent.contains(&cap) {
            return Err(config(format!("cap ({cap}) must be in [0.0, 100.0]")));
        }
        if require > cap {
            return Err(config(format!(
                "require ({require}) must be <= cap ({cap})"
            )));
        }
        Ok(Self { kind, require, cap })
    }

    /// The kind (compared with ASCII case folding).
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }

    /// Required percentage of the target, in [0, 100].
    pub fn require(&self) -> f64 {
        self.require
    }

    /// Cap percentage of the target, in [require, 100].
    pub fn cap(&self) -> f64 {
        self.cap
    }
}

fn config(msg: String) -> Error {
    Error::SlicerConfig(msg)
}

/// QuotaSlice: per-kind percentage budgets around an inner slicer (spec 04 §4).
///
/// The items are partitioned by kind (ASCII case-insensitive). Each kind gets its required share
/// `floor((require / 100.0) * target)`, plus a share of the unassigned budget proportional to its
/// token mass when its cap exceeds its requirement, limited by its cap `floor((cap / 100.0) *
/// target)`; all arithmetic is f64 in that operand order (decision D12 in docs/decisions.md). The
/// inner slicer then runs on each kind's items (input order) with `Budget(max = cap tokens, target
/// = min(kind budget, cap tokens))`, and is not called for a kind whose budget is `<= 0`.
///
/// Output order: the inner outputs concatenated, kinds in ascending ASCII-lowercased name order
/// (byte-wise). Side outputs of a count-quota inner slicer (shortfalls, cap exclusions) are passed
/// on in the same order, mapped to this slicer's input positions.
#[derive(Debug, Clone)]
pub struct QuotaSlice {
    entries: Vec<QuotaEntry>,
    index: FastMap<ContextKind, usize>,
    inner: Arc<dyn Slicer>,
}

impl QuotaSlice {
    /// Builds the slicer. The sum of the requires (f64, entry order) must not exceed 100 (`sum of
    /// require percentages (<s>) must not exceed 100.0`), then kinds must be distinct under ASCII
    /// case folding (`duplicate entry for kind "<k>"`, naming the later entry's spelling) (decision
    /// D10 in docs/decisions.md). Both are `invalid slicer configuration` errors; an empty entry
    /// list is valid.
    pub fn new(entries: Vec<QuotaEntry>, inner: Arc<dyn Slicer>) -> Result<Self> {
        let require_sum: f64 = entries.iter().map(QuotaEntry::require).sum();
        if require_sum > 100.0 {
            return Err(config(format!(
                "sum of require percentages ({require_sum}) must not exceed 100.0"
            )));
        }
        reject_duplicate_kinds(entries.iter().map(QuotaEntry::kind))?;
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.kind.clone(), i))
            .collect();
        Ok(Self {
            entries,
            index,
            inner,
        })
    }

    /// The entries, in configuration order.
    pub fn entries(&self) -> &[QuotaEntry] {
        &self.entries
    }

    /// The inner slicer run on each kind's partition.
    pub fn inner(&self) -> &Arc<dyn Slicer> {
        &self.inner
    }

    /// The entry for `kind`, if any.
    fn entry(&self, kind: &ContextKind) -> Option<&QuotaEntry> {
        self.index.get(kind).map(|&i| &self.entries[i])
    }
}

/// The items of one kind: positions in input order and the kind's budget arithmetic.
struct Partition<'k> {
    kind: &'k ContextKind,
    members: Vec<usize>,
    mass: i64,
}

/// `floor((pct / 100.0) * target)` in f64 (spec 04 §4.3 rule 3), `as` conversion.
fn percent_of(pct: f64, target: i64) -> i64 {
    ((pct / 100.0) * target as f64).floor() as i64
}

/// Up to this many kinds, partitions are found by a linear scan.
const LINEAR_SCAN_MAX: usize = 8;

/// Groups positions by kind (first-seen spelling), sorted by folded name, with token mass.
///
/// A few kinds are found by scanning the partitions (comparing under ASCII case folding);
/// past [`LINEAR_SCAN_MAX`] kinds a hash map on the folded kind takes over.
fn partition<'k>(items: &[ScoredItem<'k>]) -> Result<Vec<Partition<'k>>> {
    let mut index: FastMap<&ContextKind, usize> = FastMap::default();
    let mut parts: Vec<Partition<'k>> = Vec::new();
    for (pos, scored) in items.iter().enumerate() {
        let kind = scored.item.kind();
        let found = if parts.len() <= LINEAR_SCAN_MAX {
            parts.iter().position(|p| p.kind == kind)
        } else {
            index.get(kind).copied()
        };
        let slot = match found {
            Some(slot) => slot,
            None => {
                parts.push(Partition {
                    kind,
                    members: Vec::new(),
                    mass: 0,
                });
                if parts.len() == LINEAR_SCAN_MAX + 1 {
                    index.extend(parts.iter().enumerate().map(|(i, p)| (p.kind, i)));
                } else if parts.len() > LINEAR_SCAN_MAX {
                    index.insert(kind, parts.len() - 1);
                }
                parts.len() - 1
            }
        };
        // The running mass of each kind, summed in position order as a separate pass
        // over the kind's members would, in the same pass (one visit per item).
        let part = &mut parts[slot];
        part.members.push(pos);
        part.mass = checked_token_sum(
            [part.mass, scored.item.tokens()],
            "QuotaSlice kind token mass",
        )?;
    }
    // Ascending ASCII-lowercased name, byte-wise (decision D12 in docs/decisions.md); folded names
    // are distinct.
    parts.sort_by_cached_key(|part| fold_ascii(part.kind.as_str()));
    Ok(parts)
}

impl QuotaSlice {
    /// Require and cap in tokens for `kind`: configured percentages of `target`, else 0 and
    /// `target`.
    fn limits(&self, kind: &ContextKind, target: i64) -> (i64, i64) {
        match self.entry(kind) {
            Some(e) => (percent_of(e.require, target), percent_of(e.cap, target)),
            None => (0, target),
        }
    }

    /// `(budget, cap)` in tokens for each partition (spec 04 §4.2 Phase 3), in partition
    /// order.
    fn distribute(&self, parts: &[Partition<'_>], target: i64) -> Result<Vec<(i64, i64)>> {
        // Configured kinds without items still take their require out of the pool.
        let required = self.entries.iter().fold(0i64, |acc, e| {
            acc.saturating_add(percent_of(e.require, target))
        });
        let unassigned = target.saturating_sub(required).max(0);
        let limits: Vec<(i64, i64)> = parts.iter().map(|p| self.limits(p.kind, target)).collect();
        let growable = |&(require, cap): &(i64, i64)| cap > require;
        let pool_mass = checked_token_sum(
            parts
                .iter()
                .zip(&limits)
                .filter(|(_, limit)| growable(limit))
                .map(|(part, _)| part.mass),
            "QuotaSlice pool token mass",
        )?;
        let allocation = parts
            .iter()
            .zip(&limits)
            .map(|(part, limit)| {
                let (require, cap) = *limit;
                let share = if pool_mass > 0 && growable(limit) {
                    ((unassigned as f64 * part.mass as f64) / pool_mass as f64).floor() as i64
                } else {
                    0
                };
                (require.saturating_add(share).min(cap), cap)
            })
            .collect();
        Ok(allocation)
    }
}

impl Slicer for QuotaSlice {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        let target = budget.target_tokens();
        if items.is_empty() || target <= 0 {
            return Ok(SliceOutcome::default());
        }
        let parts = partition(items)?;
        let allocation = self.distribute(&parts, target)?;
        let mut out = SliceOutcome::default();
        for (part, &(kind_budget, cap_tokens)) in parts.iter().zip(&allocation) {
            if kind_budget <= 0 {
                continue; // the inner slicer is not called (spec 04 §9.3)
            }
            let sub = ContextBudget::new(cap_tokens, kind_budget.min(cap_tokens))?;
            let view: Vec<ScoredItem<'_>> = part.members.iter().map(|&p| items[p]).collect();
            let inner = self.inner.slice(&view, &sub)?;
            append_mapped(&mut out, inner, &part.members);
        }
        Ok(out)
    }

    /// Kind budgets as without groups (every member's tokens count toward its own kind's
    /// mass). Each unit is offered in one partition: its members' kind when they share
    /// one, otherwise the first of its kinds in partition order, at its full token count.
    /// A mixed-kind unit the inner slicer selects is kept only when, for every later kind
    /// it has members of, those members' tokens fit what is left of that kind's budget,
    /// which they then use up; later partitions run with what is left. So no kind's
    /// selected tokens exceed its budget, and no cap is exceeded for any member's kind.
    /// With variants, the inner slicer chooses the levels within the kind's budget, and a
    /// mixed unit charges the later kinds its members' chosen forms' tokens; the kind
    /// masses are the items' full tokens.
    fn slice_grouped(
        &self,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
    ) -> Result<SliceOutcome> {
        let target = budget.target_tokens();
        if items.is_empty() || target <= 0 {
            return Ok(SliceOutcome::default());
        }
        let parts = partition(items)?;
        let allocation = self.distribute(&parts, target)?;
        let homes = Homes::new(items.len(), &parts, units);
        let mut left: Vec<i64> = allocation.iter().map(|&(b, _)| b).collect();
        let mut out = SliceOutcome::default();
        for (k, &(_, cap_tokens)) in allocation.iter().enumerate() {
            let offered = homes.offered_in(k, units);
            if left[k] <= 0 || offered.is_empty() {
                continue;
            }
            let sub = ContextBudget::new(cap_tokens, left[k].min(cap_tokens))?;
            let view: Vec<ScoredItem<'_>> = offered.iter().map(|&p| items[p]).collect();
            let sub_units = units.subset(&offered);
            let mut inner = self.inner.slice_grouped(&view, &sub_units, &sub)?;
            homes.charge_later_kinds(k, items, &sub_units, &offered, &mut inner, &mut left)?;
            append_mapped(&mut out, inner, &offered);
        }
        Ok(out)
    }

    fn monotonic_in_budget(&self) -> bool {
        false
    }
}

/// Where each unit is offered in a grouped quota slice, and which partition each position
/// belongs to.
struct Homes {
    /// Partition (index in partition order) of each position's kind.
    part_of: Vec<usize>,
    /// Partition each unit is offered in: the first of its members' partitions.
    home: Vec<usize>,
}

impl Homes {
    fn new(n: usize, parts: &[Partition<'_>], units: &Units) -> Self {
        let mut part_of = vec![0usize; n];
        for (k, part) in parts.iter().enumerate() {
            for &p in &part.members {
                part_of[p] = k;
            }
        }
        let home = (0..units.len())
            .map(|u| {
                let members = units.members(u).iter();
                members.map(|&m| part_of[m as usize]).min().unwrap_or(0)
            })
            .collect();
        Self { part_of, home }
    }

    /// The positions of the units offered in partition `k`, ascending.
    fn offered_in(&self, k: usize, units: &Units) -> Vec<usize> {
        (0..self.part_of.len())
            .filter(|&p| self.home[units.unit_of(p)] == k)
            .collect()
    }

    /// Walks the inner selection of partition `home` (positions into `offered`) unit by
    /// unit, in output order: a unit with members of later kinds is kept only when each of
    /// those kinds has room for its members' tokens, which are then taken from `left`; a
    /// unit that does not fit leaves the selection.
    fn charge_later_kinds(
        &self,
        home: usize,
        items: &[ScoredItem<'_>],
        sub_units: &Units,
        offered: &[usize],
        inner: &mut SliceOutcome,
        left: &mut [i64],
    ) -> Result<()> {
        let mut verdict: Vec<Option<bool>> = vec![None; sub_units.len()];
        let mut charges: Vec<(usize, i64)> = Vec::new();
        // The form the inner slicer chose for each of its positions (variants).
        let mut form_of = vec![
            0usize;
            if inner.forms.is_empty() {
                0
            } else {
                offered.len()
            }
        ];
        for (&p, &f) in inner.selected.iter().zip(&inner.forms) {
            form_of[p] = f;
        }
        for &p in &inner.selected {
            let u = sub_units.unit_of(p);
            if verdict[u].is_some() {
                continue;
            }
            charges.clear();
            for &m in sub_units.members(u) {
                let outer = offered[m as usize];
                let k = self.part_of[outer];
                if k == home {
                    continue;
                }
                let form = form_of.get(m as usize).copied().unwrap_or(0);
                let tokens = items[outer].item.form_tokens(form);
                match charges.iter_mut().find(|(kind, _)| *kind == k) {
                    Some((_, sum)) => {
                        *sum = checked_token_sum([*sum, tokens], "QuotaSlice group tokens")?
                    }
                    None => charges.push((k, tokens)),
                }
            }
            let fits = charges.iter().all(|&(k, t)| t <= left[k]);
            if fits {
                for &(k, t) in &charges {
                    left[k] -= t;
                }
            }
            verdict[u] = Some(fits);
        }
        let keep = |p: usize| verdict[sub_units.unit_of(p)] != Some(false);
        if !inner.forms.is_empty() {
            let forms = inner.selected.iter().zip(&inner.forms);
            inner.forms = forms.filter(|(&p, _)| keep(p)).map(|(_, &f)| f).collect();
        }
        inner.selected.retain(|&p| keep(p));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slicer::test_support::{budget, contents, run, Fixture, Recorder};
    use crate::slicer::{
        CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice, ScarcityBehavior,
    };
    use crate::testutil::Rng;
    use crate::ErrorCode;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn entry(k: &str, r: f64, c: f64) -> QuotaEntry {
        QuotaEntry::new(kind(k), r, c).unwrap()
    }

    fn greedy() -> Arc<dyn Slicer> {
        Arc::new(GreedySlice::new())
    }

    fn err_text(r: Result<QuotaEntry>) -> String {
        r.unwrap_err().to_string()
    }

    fn recorded(
        entries: Vec<QuotaEntry>,
        fx: &Fixture,
        target: i64,
    ) -> Vec<(Vec<String>, i64, i64)> {
        let rec = Arc::new(Recorder::default());
        let slicer = QuotaSlice::new(entries, rec.clone()).unwrap();
        slicer.slice(&fx.scored(), &budget(target)).unwrap();
        rec.calls()
    }

    #[test]
    fn entry_validation_in_order_with_messages() {
        let p = "invalid slicer configuration: ";
        assert_eq!(
            err_text(QuotaEntry::new(kind("a"), -1.0, 50.0)),
            format!("{p}require (-1) must be in [0.0, 100.0]")
        );
        assert_eq!(
            err_text(QuotaEntry::new(kind("a"), 150.0, 200.0)),
            format!("{p}require (150) must be in [0.0, 100.0]")
        );
        assert_eq!(
            err_text(QuotaEntry::new(kind("a"), f64::NAN, 50.0)),
            format!("{p}require (NaN) must be in [0.0, 100.0]")
        );
        assert_eq!(
            err_text(QuotaEntry::new(kind("a"), 10.0, 100.5)),
            format!("{p}cap (100.5) must be in [0.0, 100.0]")
        );
        assert_eq!(
            err_text(QuotaEntry::new(kind("a"), 10.0, f64::NAN)),
            format!("{p}cap (NaN) must be in [0.0, 100.0]")
        );
        assert_eq!(
            err_text(QuotaEntry::new(kind("a"), 60.0, 40.5)),
            format!("{p}require (60) must be <= cap (40.5)")
        );
        let e = entry("Doc", 0.0, 100.0);
        assert_eq!(
            (e.kind().as_str(), e.require(), e.cap()),
            ("Doc", 0.0, 100.0)
        );
        assert!(QuotaEntry::new(kind("a"), 0.0, 0.0).is_ok());
        assert!(QuotaEntry::new(kind("a"), -0.0, 100.0).is_ok());
    }

    #[test]
    fn slicer_validation_sum_then_duplicates() {
        let err = QuotaSlice::new(
            vec![entry("a", 60.0, 100.0), entry("b", 40.5, 100.0)],
            greedy(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid slicer configuration: sum of require percentages (100.5) must not exceed 100.0"
        );
        assert_eq!(err.code(), ErrorCode::SlicerConfig);
        // both wrong: the sum message wins
        let err = QuotaSlice::new(
            vec![entry("a", 60.0, 100.0), entry("A", 60.0, 100.0)],
            greedy(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("sum of require"));
        let err = QuotaSlice::new(
            vec![entry("Memory", 10.0, 100.0), entry("mEMORY", 10.0, 50.0)],
            greedy(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid slicer configuration: duplicate entry for kind \"mEMORY\""
        );
        let ok = QuotaSlice::new(
            vec![entry("a", 60.0, 100.0), entry("b", 40.0, 100.0)],
            greedy(),
        )
        .unwrap();
        assert_eq!(ok.entries().len(), 2);
        assert!(!ok.monotonic_in_budget() && ok.count_caps().is_empty());
        assert!(ok.inner().as_any().is::<GreedySlice>());
        assert!(QuotaSlice::new(vec![], greedy()).is_ok());
    }

    #[test]
    fn empty_or_no_target_does_not_call_inner() {
        let fx = Fixture::new(&[("a", 10, "x", 0.5)]);
        assert!(recorded(vec![], &fx, 0).is_empty());
        assert!(recorded(vec![], &Fixture::new(&[]), 100).is_empty());
    }

    #[test]
    fn no_entries_share_by_mass_in_folded_kind_order() {
        let fx = Fixture::new(&[
            ("m1", 300, "message", 0.5),
            ("d1", 100, "Document", 0.5),
            ("m2", 0, "Message", 0.5),
            ("b1", 200, "beta", 0.5),
        ]);
        // mass: document 100, message 300, beta 200; M = 600; T = 100
        let calls = recorded(vec![], &fx, 100);
        let want = vec![
            (vec!["b1".to_string()], 100, 33),
            (vec!["d1".to_string()], 100, 16),
            (vec!["m1".to_string(), "m2".to_string()], 100, 50),
        ];
        assert_eq!(calls, want);
    }

    #[test]
    fn require_cap_and_proportional_pool() {
        let fx = Fixture::new(&[
            ("a1", 100, "A", 0.5),
            ("b1", 100, "B", 0.5),
            ("c1", 300, "C", 0.5),
            ("d1", 100, "D", 0.5),
        ]);
        // T = 1000. A: req 20 cap 20 (fixed, not in pool). B: req 10 cap 15.
        // C, D: unconfigured. Ghost: req 30, no items. R = 200+100+300 = 600, U = 400.
        // Pool M = mass(B)+mass(C)+mass(D) = 500.
        // B: 100 + floor(400*100/500)=80 → 180 min cap 150 → 150.
        // C: 0 + floor(400*300/500)=240; D: 80.
        let entries = vec![
            entry("A", 20.0, 20.0),
            entry("B", 10.0, 15.0),
            entry("Ghost", 30.0, 100.0),
        ];
        let calls = recorded(entries, &fx, 1000);
        let summary: Vec<(String, i64, i64)> =
            calls.iter().map(|c| (c.0[0].clone(), c.1, c.2)).collect();
        assert_eq!(
            summary,
            vec![
                ("a1".into(), 200, 200),
                ("b1".into(), 150, 150),
                ("c1".into(), 1000, 240),
                ("d1".into(), 1000, 80)
            ]
        );
    }

    #[test]
    fn f64_operand_order_floors_like_the_crate() {
        assert_eq!(percent_of(29.0, 100), 28);
        assert_eq!(percent_of(57.0, 300), 170);
        assert_eq!(percent_of(100.0, 1000), 1000);
        let fx = Fixture::new(&[("a", 10, "a", 0.5), ("b", 10, "b", 0.5)]);
        let calls = recorded(vec![entry("a", 29.0, 29.0)], &fx, 100);
        assert_eq!(calls[0], (vec!["a".into()], 28, 28));
        // U = 72, b alone in the pool
        assert_eq!(calls[1], (vec!["b".into()], 100, 72));
    }

    #[test]
    fn require_100_and_cap_0_and_zero_mass() {
        let fx = Fixture::new(&[("a", 10, "a", 0.5), ("b", 10, "b", 0.5), ("z", 0, "z", 0.5)]);
        // a requires everything: others get nothing (U = 0)
        let calls = recorded(vec![entry("a", 100.0, 100.0)], &fx, 100);
        assert_eq!(calls, vec![(vec!["a".into()], 100, 100)]);
        // cap 0 skips the kind, its zero-token items included
        let calls = recorded(vec![entry("z", 0.0, 0.0)], &fx, 100);
        assert_eq!(
            calls.iter().map(|c| c.0[0].as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        // a kind with mass 0 gets only its require
        let calls = recorded(vec![entry("z", 5.0, 100.0)], &fx, 100);
        assert_eq!(calls[2], (vec!["z".into()], 100, 5));
        // small T floors a kind's budget to zero: inner not called for it
        let fx = Fixture::new(&[("a", 1, "a", 0.5), ("b", 99, "b", 0.5)]);
        let calls = recorded(vec![], &fx, 50);
        assert_eq!(calls, vec![(vec!["b".into()], 50, 49)]);
    }

    #[test]
    fn output_maps_inner_positions_back_to_the_input() {
        let fx = Fixture::new(&[
            ("m1", 40, "Message", 0.9),
            ("d1", 30, "Document", 0.8),
            ("m2", 40, "message", 0.7),
            ("d2", 30, "Document", 0.95),
        ]);
        let slicer = QuotaSlice::new(vec![entry("Document", 50.0, 50.0)], greedy()).unwrap();
        let items = fx.scored();
        let out = run(&slicer, &items, 100);
        // Document: 50 tokens, greedy takes d2 (density .0317) then nothing else fits.
        // Message: U = 50 → takes m1 only.
        assert_eq!(contents(&items, &out.selected), ["d2", "m1"]);
        assert_eq!(out.selected, vec![3, 0]);
    }

    #[test]
    fn inner_errors_propagate_and_only_for_called_kinds() {
        let fx = Fixture::new(&[("a", 10, "a", 0.5), ("b", 10, "b", 0.5)]);
        let tiny: Arc<dyn Slicer> = Arc::new(KnapsackSlice::with_table_limit(1, 1).unwrap());
        let slicer = QuotaSlice::new(vec![entry("b", 0.0, 0.0)], tiny.clone()).unwrap();
        let err = slicer.slice(&fx.scored(), &budget(100)).unwrap_err();
        assert!(matches!(
            err,
            Error::TableTooLarge {
                candidates: 1,
                capacity: 100,
                ..
            }
        ));
        // If no kind gets a budget, the inner slicer is never called: no error.
        let slicer =
            QuotaSlice::new(vec![entry("a", 0.0, 0.0), entry("b", 0.0, 0.0)], tiny).unwrap();
        assert!(run(&slicer, &fx.scored(), 100).selected.is_empty());
    }

    #[test]
    fn count_quota_inner_side_outputs_are_passed_on() {
        let fx = Fixture::new(&[
            ("x1", 10, "x", 0.9),
            ("y1", 10, "y", 0.9),
            ("x2", 10, "x", 0.8),
            ("x3", 10, "x", 0.7),
        ]);
        let inner = CountQuotaSlice::new(
            vec![
                CountQuotaEntry::new(kind("x"), 1, 1).unwrap(),
                CountQuotaEntry::new(kind("q"), 1, 1).unwrap(),
            ],
            greedy(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let slicer = QuotaSlice::new(vec![], Arc::new(inner)).unwrap();
        let out = run(&slicer, &fx.scored(), 100);
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(out.cap_excluded, vec![2, 3]);
        // partition x: q is missing; partition y: x and q are missing
        let short: Vec<&str> = out.shortfalls.iter().map(|s| s.kind.as_str()).collect();
        assert_eq!(short, ["q", "x", "q"]);
    }

    #[test]
    fn random_cases_respect_kind_budgets() {
        const KINDS: [&str; 5] = ["a", "A", "b", "c", "Doc"];
        for seed in 0..800u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(20);
            let specs: Vec<(String, i64, String, f64)> = (0..n)
                .map(|i| {
                    (
                        format!("i{i}"),
                        rng.range(0, 80),
                        rng.pick(&KINDS).to_string(),
                        rng.unit(),
                    )
                })
                .collect();
            let fx = Fixture::from_owned(&specs);
            let items = fx.scored();
            let mut entries = Vec::new();
            let mut left = 100.0;
            for k in ["a", "b", "ghost"] {
                if rng.chance(0.5) {
                    let r = (rng.unit() * left).floor();
                    let c = r + (rng.unit() * (100.0 - r)).floor();
                    left -= r;
                    entries.push(entry(k, r, c));
                }
            }
            let target = rng.range(0, 500);
            let slicer = QuotaSlice::new(entries, greedy()).unwrap();
            let out = run(&slicer, &items, target);
            let mut seen = vec![false; n];
            for &p in &out.selected {
                assert!(!seen[p], "seed {seed}: duplicate position");
                seen[p] = true;
            }
            let total: i64 = out.selected.iter().map(|&p| items[p].item.tokens()).sum();
            assert!(total <= target, "seed {seed}: {total} > {target}");
            let parts = partition(&items).unwrap();
            let allocation = slicer.distribute(&parts, target).unwrap();
            for (part, (b, _)) in parts.iter().zip(allocation) {
                let used: i64 = out
                    .selected
                    .iter()
                    .filter(|&&p| items[p].item.kind() == part.kind)
                    .map(|&p| items[p].item.tokens())
                    .sum();
                assert!(
                    used <= b.max(0),
                    "seed {seed}: kind {} used {used} > {b}",
                    part.kind
                );
            }
        }
    }
}
