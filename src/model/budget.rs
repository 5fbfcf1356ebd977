//! ContextBudget: validation (seven rules) and the effective budget (spec 01 §2, 02 §6.1, decision
//! D1 in docs/decisions.md).

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::model::ContextKind;

/// A budget rule (the seven of spec 01 §2, then ctxpack's two slot rules, decision D20 in
/// docs/decisions.md) that a set of values breaks; reported in terms of the Rust
/// field names by [`ContextBudget::with_all`] and of the JSON names by the budget JSON
/// reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BudgetRule {
    /// `max_tokens < 0`.
    MaxNegative,
    /// `target_tokens < 0`.
    TargetNegative,
    /// `target_tokens > max_tokens`.
    TargetAboveMax,
    /// `output_reserve < 0`.
    ReserveNegative,
    /// `output_reserve > max_tokens`.
    ReserveAboveMax,
    /// The safety margin is outside [0, 100] (or NaN).
    MarginOutOfRange,
    /// Reserved slot `i` has a negative count.
    SlotNegative(usize),
    /// Reserved slot `i` repeats an earlier kind.
    SlotRepeated(usize),
    /// The reserved slots add up to more than `target_tokens` (ctxpack's own rule).
    SlotsAboveTarget,
    /// `output_reserve` plus the reserved slots exceed `max_tokens` (ctxpack's own rule).
    SlotsAboveMax,
}

/// Token budget of one run. Always valid once built.
#[derive(Debug, PartialEq)]
pub struct ContextBudget {
    max_tokens: i64,
    target_tokens: i64,
    output_reserve: i64,
    reserved_slots: Vec<(ContextKind, i64)>,
    estimation_safety_margin_percent: f64,
}

impl Clone for ContextBudget {
    fn clone(&self) -> Self {
        Self {
            reserved_slots: self.reserved_slots.clone(),
            ..*self
        }
    }

    /// Copies `source` into this budget, reusing the memory of its reserved slots (a run
    /// into a kept result copies its budget without allocating).
    fn clone_from(&mut self, source: &Self) {
        self.max_tokens = source.max_tokens;
        self.target_tokens = source.target_tokens;
        self.output_reserve = source.output_reserve;
        self.reserved_slots.clone_from(&source.reserved_slots);
        self.estimation_safety_margin_percent = source.estimation_safety_margin_percent;
    }
}

impl ContextBudget {
    /// Builds a budget with no output reserve, no reserved slots and no safety margin.
    pub fn new(max_tokens: i64, target_tokens: i64) -> Result<Self> {
        Self::with_all(max_tokens, target_tokens, 0, Vec::new(), 0.0)
    }

    /// Builds a budget from every field, checking the seven rules in the spec's order, then two of
    /// ctxpack's own.
    ///
    /// Reserved slots are (kind, count) pairs; two kinds equal under ASCII case folding are
    /// rejected because a kind-keyed map cannot hold both. By the specification's rule a reserved
    /// slot shrinks the budget of every kind, its own included (decision D1 in docs/decisions.md),
    /// so slots that do not fit can never be honoured and would leave nothing to select: the sum of
    /// the slots must not exceed `target_tokens`, and `output_reserve` plus that sum must not
    /// exceed `max_tokens` (the specification accepts both and clamps the effective budget to zero;
    /// ctxpack rejects them, naming the values: decision D20 in docs/decisions.md).
    pub fn with_all(
        max_tokens: i64,
        target_tokens: i64,
        output_reserve: i64,
        reserved_slots: Vec<(ContextKind, i64)>,
        estimation_safety_margin_percent: f64,
    ) -> Result<Self> {
        let budget = Self::unvalidated(
            max_tokens,
            target_tokens,
            output_reserve,
            reserved_slots,
            estimation_safety_margin_percent,
        );
        match budget.broken_rule() {
            None => Ok(budget),
            Some(rule) => Err(Error::InvalidBudget(budget.describe(rule))),
        }
    }

    /// A budget holding these values as given; callers check [`Self::broken_rule`] before
    /// handing it out.
    pub(crate) fn unvalidated(
        max_tokens: i64,
        target_tokens: i64,
        output_reserve: i64,
        reserved_slots: Vec<(ContextKind, i64)>,
        estimation_safety_margin_percent: f64,
    ) -> Self {
        Self {
            max_tokens,
            target_tokens,
            output_reserve,
            reserved_slots,
            estimation_safety_margin_percent,
        }
    }

    /// The first of the seven rules (in the spec's order) these values break, if any.
    pub(crate) fn broken_rule(&self) -> Option<BudgetRule> {
        let (max, target, reserve) = (self.max_tokens, self.target_tokens, self.output_reserve);
        let checks = [
            (max < 0, BudgetRule::MaxNegative),
            (target < 0, BudgetRule::TargetNegative),
            (target > max, BudgetRule::TargetAboveMax),
            (reserve < 0, BudgetRule::ReserveNegative),
            (reserve > max, BudgetRule::ReserveAboveMax),
            (
                !(0.0..=100.0).contains(&self.estimation_safety_margin_percent),
                BudgetRule::MarginOutOfRange,
            ),
        ];
        if let Some((_, rule)) = checks.into_iter().find(|(broken, _)| *broken) {
            return Some(rule);
        }
        let mut seen: HashMap<&ContextKind, ()> = HashMap::new();
        let slot_rule = self
            .reserved_slots
            .iter()
            .enumerate()
            .find_map(|(i, (kind, count))| {
                if *count < 0 {
                    Some(BudgetRule::SlotNegative(i))
                } else if seen.insert(kind, ()).is_some() {
                    Some(BudgetRule::SlotRepeated(i))
                } else {
                    None
                }
            });
        if slot_rule.is_some() {
            return slot_rule;
        }
        let slots = self.slot_total();
        if slots > i128::from(target) {
            Some(BudgetRule::SlotsAboveTarget)
        } else if slots + i128::from(reserve) > i128::from(max) {
            Some(BudgetRule::SlotsAboveMax)
        } else {
            None
        }
    }

    /// The sum of the reserved slots, in `i128`: any number of `i64` slots fits.
    pub(crate) fn slot_total(&self) -> i128 {
        self.reserved_slots
            .iter()
            .map(|(_, n)| i128::from(*n))
            .sum()
    }

    /// The message of `rule` in terms of the Rust field names and this budget's values.
    fn describe(&self, rule: BudgetRule) -> String {
        let (max, target, reserve) = (self.max_tokens, self.target_tokens, self.output_reserve);
        match rule {
            BudgetRule::MaxNegative => format!("max_tokens ({max}) must be >= 0"),
            BudgetRule::TargetNegative => format!("target_tokens ({target}) must be >= 0"),
            BudgetRule::TargetAboveMax => {
                format!("target_tokens ({target}) must be <= max_tokens ({max})")
            }
            BudgetRule::ReserveNegative => format!("output_reserve ({reserve}) must be >= 0"),
            BudgetRule::ReserveAboveMax => {
                format!("output_reserve ({reserve}) must be <= max_tokens ({max})")
            }
            BudgetRule::MarginOutOfRange => format!(
                "estimation_safety_margin_percent ({}) must be in [0.0, 100.0]",
                self.estimation_safety_margin_percent
            ),
            BudgetRule::SlotNegative(i) => format!(
                "reserved slot count for kind '{}' must be >= 0",
                self.reserved_slots[i].0
            ),
            BudgetRule::SlotRepeated(i) => format!(
                "reserved slot kind '{}' appears more than once",
                self.reserved_slots[i].0
            ),
            BudgetRule::SlotsAboveTarget => format!(
                "reserved slots ({} tokens in total) must be <= target_tokens ({target})",
                self.slot_total()
            ),
            BudgetRule::SlotsAboveMax => format!(
                "output_reserve ({reserve}) plus reserved slots ({} tokens in total) \
                 must be <= max_tokens ({max})",
                self.slot_total()
            ),
        }
    }

    /// Hard ceiling: the model's context window.
    pub fn max_tokens(&self) -> i64 {
        self.max_tokens
    }
    /// Soft goal the slicer aims for; overflow is judged against it.
    pub fn target_tokens(&self) -> i64 {
        self.target_tokens
    }
    /// Tokens kept free for the model's output.
    pub fn output_reserve(&self) -> i64 {
        self.output_reserve
    }
    /// Reserved slots per kind, in the order given.
    pub fn reserved_slots(&self) -> &[(ContextKind, i64)] {
        &self.reserved_slots
    }
    /// Safety margin in percent, in [0, 100].
    pub fn estimation_safety_margin_percent(&self) -> f64 {
        self.estimation_safety_margin_percent
    }

    /// The budget handed to the slicer once `pinned_tokens` are committed (spec 02 §6.1, Decision
    /// D1 in docs/decisions.md): subtracts the reserve, the pinned tokens and the reserved slots,
    /// then applies the safety margin with floor. The result has no reserve, slots or margin.
    pub fn effective(&self, pinned_tokens: i64) -> ContextBudget {
        let slots = self.slot_total();
        let pinned = pinned_tokens as i128;
        let mut hi =
            (self.max_tokens as i128 - self.output_reserve as i128 - pinned - slots).max(0);
        let mut lo = (self.target_tokens as i128 - pinned - slots).max(0).min(hi);
        let margin = self.estimation_safety_margin_percent;
        if margin > 0.0 {
            let factor = 1.0 - margin / 100.0;
            hi = (hi as i64 as f64 * factor).floor() as i128;
            lo = ((lo as i64 as f64 * factor).floor() as i128).min(hi);
        }
        // 0 <= lo <= hi <= max_tokens, so both fit in i64.
        ContextBudget {
            max_tokens: hi as i64,
            target_tokens: lo as i64,
            output_reserve: 0,
            reserved_slots: Vec::new(),
            estimation_safety_margin_percent: 0.0,
        }
    }

    /// The same budget with the target `target` (clamped to `[0, max_tokens]`): the lower
    /// selections of the prefix extension (an anchor to the low watermark).
    pub(crate) fn with_target(&self, target: i64) -> ContextBudget {
        ContextBudget {
            target_tokens: target.clamp(0, self.max_tokens),
            ..self.clone()
        }
    }

    /// An effective budget (the result of [`ContextBudget::effective`]) of which `used`
    /// tokens are already taken: both limits lowered by them, not below 0.
    pub(crate) fn minus(&self, used: i64) -> ContextBudget {
        ContextBudget {
            max_tokens: self.max_tokens.saturating_sub(used).max(0),
            target_tokens: self.target_tokens.saturating_sub(used).max(0),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn err(r: Result<ContextBudget>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn clone_from_copies_every_field() {
        let budgets = [
            ContextBudget::with_all(500, 400, 20, vec![(kind("Memory"), 30)], 5.0).unwrap(),
            ContextBudget::new(100, 50).unwrap(),
            ContextBudget::with_all(900, 700, 0, vec![(kind("a"), 1), (kind("b"), 2)], 0.0)
                .unwrap(),
        ];
        let mut copy = budgets[0].clone();
        for source in budgets.iter().chain(budgets.iter().rev()) {
            copy.clone_from(source);
            assert_eq!(&copy, source);
            assert_eq!(&source.clone(), source);
        }
    }

    #[test]
    fn seven_rules_in_order() {
        assert_eq!(
            err(ContextBudget::with_all(-1, -1, 0, vec![], 0.0)),
            "invalid budget: max_tokens (-1) must be >= 0"
        );
        assert_eq!(
            err(ContextBudget::with_all(10, -1, 0, vec![], 0.0)),
            "invalid budget: target_tokens (-1) must be >= 0"
        );
        assert_eq!(
            err(ContextBudget::with_all(10, 11, 0, vec![], 0.0)),
            "invalid budget: target_tokens (11) must be <= max_tokens (10)"
        );
        assert_eq!(
            err(ContextBudget::with_all(10, 5, -1, vec![], 0.0)),
            "invalid budget: output_reserve (-1) must be >= 0"
        );
        assert_eq!(
            err(ContextBudget::with_all(10, 5, 11, vec![], 0.0)),
            "invalid budget: output_reserve (11) must be <= max_tokens (10)"
        );
        for bad in [f64::NAN, f64::INFINITY, -0.5, 100.5] {
            assert!(err(ContextBudget::with_all(10, 5, 0, vec![], bad))
                .contains("estimation_safety_margin_percent"));
        }
        assert_eq!(
            err(ContextBudget::with_all(
                10,
                5,
                0,
                vec![(kind("Memory"), -1)],
                0.0
            )),
            "invalid budget: reserved slot count for kind 'Memory' must be >= 0"
        );
        assert!(err(ContextBudget::with_all(
            10,
            5,
            0,
            vec![(kind("Memory"), 1), (kind("memory"), 2)],
            0.0
        ))
        .contains("more than once"));
        assert!(ContextBudget::with_all(10, 10, 10, vec![], -0.0).is_ok());
        assert!(ContextBudget::with_all(10, 10, 10, vec![], 100.0).is_ok());
    }

    #[test]
    fn effective_budget_follows_the_spec_formula() {
        let b = ContextBudget::with_all(1000, 150, 0, vec![], 0.0).unwrap();
        let e = b.effective(120);
        assert_eq!((e.max_tokens(), e.target_tokens()), (880, 30));

        let b = ContextBudget::with_all(1000, 800, 100, vec![(kind("Memory"), 50)], 10.0).unwrap();
        let e = b.effective(100);
        // hi = 1000-100-100-50 = 750 -> floor(750*0.9) = 675; lo = 800-100-50 = 650 -> 585
        assert_eq!((e.max_tokens(), e.target_tokens()), (675, 585));

        let b = ContextBudget::with_all(100, 100, 0, vec![], 100.0).unwrap();
        let e = b.effective(0);
        assert_eq!((e.max_tokens(), e.target_tokens()), (0, 0));

        // Slots that fill the target exactly leave nothing for the slicer.
        let b = ContextBudget::with_all(100, 60, 40, vec![(kind("x"), 60)], 0.0).unwrap();
        let e = b.effective(0);
        assert_eq!((e.max_tokens(), e.target_tokens()), (0, 0));
    }

    #[test]
    fn slots_that_can_never_be_honoured_are_rejected() {
        let huge = vec![(kind("a"), i64::MAX), (kind("b"), i64::MAX)];
        assert_eq!(
            err(ContextBudget::with_all(50, 50, 0, huge, 0.0)),
            "invalid budget: reserved slots (18446744073709551614 tokens in total) must be \
             <= target_tokens (50)"
        );
        let slots = vec![(kind("a"), 30), (kind("b"), 20)];
        assert_eq!(
            err(ContextBudget::with_all(100, 40, 0, slots.clone(), 0.0)),
            "invalid budget: reserved slots (50 tokens in total) must be <= target_tokens (40)"
        );
        assert_eq!(
            err(ContextBudget::with_all(100, 90, 60, slots.clone(), 0.0)),
            "invalid budget: output_reserve (60) plus reserved slots (50 tokens in total) \
             must be <= max_tokens (100)"
        );
        assert!(ContextBudget::with_all(100, 50, 50, slots, 0.0).is_ok());
    }
}
