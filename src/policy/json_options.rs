//! How policy and budget JSON is read: lenient (the default, as .NET reads) or strict, with
//! the warnings of a lenient read and the host's registered scorer types.

use std::fmt;

use crate::policy::ScorerRegistry;

/// Options for [`Policy::from_json_with`](crate::policy::Policy::from_json_with) and
/// [`ContextBudget::from_json_with`](crate::ContextBudget::from_json_with).
///
/// The default reads leniently, as the .NET serializer does: what it ignores or fills in
/// (unknown properties, a scorer entry without `type`, a kind repeated with other letter
/// case, a budget without `maxTokens`/`targetTokens`) is read the .NET way and reported as
/// a [`JsonWarning`]. With `strict`, each of those is an error instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonReadOptions<'a> {
    /// Reject every document that lenient reading would warn about.
    pub strict: bool,
    /// Scorer types the host registered; `None` means only the built-in types. Budgets
    /// ignore it.
    pub registry: Option<&'a ScorerRegistry>,
}

/// What a lenient read did that a strict read rejects.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonWarningKind {
    /// A property this version does not know (or a wrongly-cased name) was ignored.
    UnknownProperty,
    /// A scorer entry without `type` was read as `recency`, as .NET reads it.
    MissingScorerType,
    /// A `kindWeights` or `reservedSlots` key repeated an earlier kind with other letter
    /// case (kinds compare ASCII case-insensitively); the last value was kept, under the
    /// first spelling, as .NET keeps it.
    RepeatedKind,
    /// A budget without `maxTokens` or `targetTokens` had it read as 0, as .NET reads it.
    MissingBudgetField,
}

/// One warning of a lenient read: its kind, the JSON path it concerns (`$` for the
/// document) and what was done. Displays as `<path>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonWarning {
    /// What happened.
    pub kind: JsonWarningKind,
    /// The JSON path (`scorers[0].wieght`, `reservedSlots.message`).
    pub path: String,
    /// What the reader did (`unknown property; ignored`).
    pub message: String,
}

impl fmt::Display for JsonWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A value read from JSON, with the warnings of the read (in document order; empty for a
/// strict read).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonRead<T> {
    /// The value read.
    pub value: T,
    /// What lenient reading ignored or filled in.
    pub warnings: Vec<JsonWarning>,
}
