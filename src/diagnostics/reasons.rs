//! Why an item was included or excluded (spec 06 §7–§8).

/// Why an item is in the final window. Checked in this order: pinned, downgraded (the
/// variant extension), zero tokens, scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InclusionReason {
    /// Selected by score through slicing (or kept by truncation / proceed).
    Scored,
    /// The item was pinned.
    Pinned,
    /// The item has zero tokens and was selected.
    ZeroToken,
    /// The item is in the window as one of its cheaper variants instead of in full (the
    /// variant extension, `docs/variants.md`).
    Downgraded {
        /// The form placed: the index into the item's forms (>= 1; 0 is the item itself).
        form: usize,
        /// The item's own tokens (its full form).
        full_tokens: i64,
        /// The tokens of the form placed.
        chosen_tokens: i64,
        /// The tokens left unused when the form was chosen: at Slice the effective target
        /// minus the selected forms' tokens, at Place (Truncate) the target minus the kept
        /// tokens — one value per stage and run, as for `BudgetExceeded`.
        available_tokens: i64,
        /// Why the full form is not in the window.
        cause: DowngradeCause,
    },
}

/// Why an item is in the window as a cheaper form (`docs/variants.md`). Decided after the
/// fact from the tokens, as the exclusion reasons are; for a group member, from its group's
/// tokens at full and at the chosen level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DowngradeCause {
    /// The full form needs more tokens than the form placed plus everything left unused:
    /// it cannot be put back without removing something else.
    BudgetExceeded,
    /// The full form would fit in what is left unused, but the slicer's rule chose the
    /// cheaper form: the knapsack's optimum over bucketed weights, a quota's per-kind
    /// budget, a count quota's commitment, a group's shared level.
    SlicerChoice,
    /// The Truncate overflow strategy moved the item to a cheaper form so that the
    /// window fits the target.
    Truncated,
}

impl DowngradeCause {
    /// The wire name: `BudgetExceeded`, `SlicerChoice` or `Truncated`.
    pub fn name(self) -> &'static str {
        match self {
            DowngradeCause::BudgetExceeded => "BudgetExceeded",
            DowngradeCause::SlicerChoice => "SlicerChoice",
            DowngradeCause::Truncated => "Truncated",
        }
    }
}

impl InclusionReason {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            InclusionReason::Scored => "Scored",
            InclusionReason::Pinned => "Pinned",
            InclusionReason::ZeroToken => "ZeroToken",
            InclusionReason::Downgraded { .. } => "Downgraded",
        }
    }

    /// The form placed: the variant's form number for [`InclusionReason::Downgraded`],
    /// 0 (the item itself) otherwise.
    pub fn form(self) -> usize {
        match self {
            InclusionReason::Downgraded { form, .. } => form,
            _ => 0,
        }
    }
}

/// Why an item is not in the final window. The spec's eight variants, the reference's two
/// count-quota variants, ctxpack's group variant, and `Unknown` for names read from JSON
/// that this version does not know.
#[derive(Debug, Clone, PartialEq)]
pub enum ExclusionReason {
    /// Did not fit: `available_tokens` is one value per stage and run (decision D5 in
    /// docs/decisions.md).
    BudgetExceeded {
        /// The item's tokens.
        item_tokens: i64,
        /// Effective target minus selected tokens (Slice) or target minus placed tokens (Place).
        available_tokens: i64,
    },
    /// Reserved by the spec; never emitted by built-in stages.
    ScoredTooLow {
        /// The item's score.
        score: f64,
        /// The threshold it missed.
        threshold: f64,
    },
    /// Lost to a byte-identical content with a higher (or equal, earlier) score.
    Deduplicated {
        /// The content both items share.
        deduplicated_against: String,
    },
    /// Reserved by the spec; never emitted by built-in stages.
    QuotaCapExceeded {
        /// The kind.
        kind: String,
        /// The cap.
        cap: i64,
        /// The actual count.
        actual: i64,
    },
    /// Reserved by the spec; never emitted by built-in stages.
    QuotaRequireDisplaced {
        /// The kind that displaced the item.
        displaced_by_kind: String,
    },
    /// The item had negative tokens and was dropped at Classify.
    NegativeTokens {
        /// The item's token count (negative).
        tokens: i64,
    },
    /// The room was taken by pinned items (decision D4 in docs/decisions.md).
    PinnedOverride {
        /// Content of the first pinned item in input order.
        displaced_by: String,
    },
    /// Reserved by the spec; never emitted by built-in stages.
    Filtered {
        /// The filter's name.
        filter_name: String,
    },
    /// A count-quota cap was reached for the item's kind (decision D10 in docs/decisions.md).
    CountCapExceeded {
        /// The item's own kind spelling.
        kind: String,
        /// The configured cap.
        cap: u64,
        /// Selected items of that kind.
        count: u64,
    },
    /// Defined for wire compatibility; shortfalls carry this information instead.
    CountRequireCandidatesExhausted {
        /// The kind.
        kind: String,
    },
    /// The item's group was excluded because another member was (the group extension,
    /// `docs/groups.md`): a group is selected whole or not at all. The named member carries
    /// its own reason.
    GroupExcluded {
        /// The group key.
        group: String,
        /// Input position of the member whose exclusion took the group out.
        member_index: usize,
        /// That member's content.
        member_content: String,
        /// That member's own exclusion reason (its wire name).
        member_reason: String,
    },
    /// A reason name this version does not know, kept as read.
    Unknown {
        /// The name as read.
        name: String,
    },
}

impl ExclusionReason {
    /// The wire name of the variant.
    pub fn name(&self) -> &str {
        match self {
            ExclusionReason::BudgetExceeded { .. } => "BudgetExceeded",
            ExclusionReason::ScoredTooLow { .. } => "ScoredTooLow",
            ExclusionReason::Deduplicated { .. } => "Deduplicated",
            ExclusionReason::QuotaCapExceeded { .. } => "QuotaCapExceeded",
            ExclusionReason::QuotaRequireDisplaced { .. } => "QuotaRequireDisplaced",
            ExclusionReason::NegativeTokens { .. } => "NegativeTokens",
            ExclusionReason::PinnedOverride { .. } => "PinnedOverride",
            ExclusionReason::Filtered { .. } => "Filtered",
            ExclusionReason::CountCapExceeded { .. } => "CountCapExceeded",
            ExclusionReason::CountRequireCandidatesExhausted { .. } => {
                "CountRequireCandidatesExhausted"
            }
            ExclusionReason::GroupExcluded { .. } => "GroupExcluded",
            ExclusionReason::Unknown { name } => name,
        }
    }
}
