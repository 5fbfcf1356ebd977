//! The seven presets of spec 07 §2.
//!
//! All share deduplication on, overflow Throw, no quotas, no stream batch size, KindScorer
//! defaults, and a name equal to the preset identifier.

use crate::error::{Error, Result};
use crate::model::{GroupValue, OverflowStrategy};
use crate::policy::{KnapsackSpec, PlacerType, Policy, ScorerEntry, ScorerSpec, SlicerSpec};

/// A ready-made policy for a common workload (spec 07 §2, .NET CUPEL001–CUPEL007).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// Conversation: recency first.
    Chat,
    /// Code review: kind and priority first.
    CodeReview,
    /// Retrieval-augmented generation: relevance hints, U-shaped placement.
    Rag,
    /// Document question answering: knapsack packing, U-shaped placement.
    DocumentQa,
    /// Tool use: kind and recency first.
    ToolUse,
    /// Long-running sessions: recency with recurring topics.
    LongRunning,
    /// Debugging: priority first.
    Debugging,
}

impl Preset {
    /// Every preset, in the order of spec 07 §2.
    pub const ALL: [Preset; 7] = [
        Preset::Chat,
        Preset::CodeReview,
        Preset::Rag,
        Preset::DocumentQa,
        Preset::ToolUse,
        Preset::LongRunning,
        Preset::Debugging,
    ];

    /// The identifier, which is also the policy's `name` (`"Chat"`, `"CodeReview"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Preset::Chat => "Chat",
            Preset::CodeReview => "CodeReview",
            Preset::Rag => "Rag",
            Preset::DocumentQa => "DocumentQa",
            Preset::ToolUse => "ToolUse",
            Preset::LongRunning => "LongRunning",
            Preset::Debugging => "Debugging",
        }
    }

    /// ctxpack's one-line description of the preset.
    pub fn description(self) -> &'static str {
        match self {
            Preset::Chat => "Conversation: the most recent turns first, weighted by kind.",
            Preset::CodeReview => {
                "Code review: files and high-priority notes first, then recent activity."
            }
            Preset::Rag => "Retrieval: relevance hints first, strongest passages at both edges.",
            Preset::DocumentQa => {
                "Document Q&A: pack the most relevant documents tightly, strongest at both edges."
            }
            Preset::ToolUse => "Tool use: kinds and recent tool results first, then priority.",
            Preset::LongRunning => "Long sessions: recent items and recurring topics first.",
            Preset::Debugging => "Debugging: high-priority evidence first, then kind and recency.",
        }
    }

    /// Looks a preset up by name. Accepted spellings: the identifier in any ASCII case, with
    /// or without `-`, `_` or space between words — `Chat`, `chat`, `CodeReview`,
    /// `code-review`, `code_review`, `DOCUMENT_QA`, `document qa`, `tool-use`,
    /// `long_running`, … An unknown name fails with [`Error::InvalidArgument`] listing the
    /// presets.
    pub fn from_name(name: &str) -> Result<Preset> {
        let folded: String = name
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(&folded))
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|p| p.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown preset '{name}'; known presets: {}",
                    known.join(", ")
                ))
            })
    }

    /// The preset's policy, with exactly the values of spec 07 §2.
    pub fn policy(self) -> Policy {
        use ScorerSpec::{Frequency, Priority, Recency, Reflexive};
        let kind = || ScorerSpec::Kind { weights: None };
        let (scorers, slicer, placer) = match self {
            Preset::Chat => (
                vec![(Recency, 3.0), (kind(), 1.0)],
                SlicerSpec::Greedy,
                PlacerType::Chronological,
            ),
            Preset::CodeReview => (
                vec![(kind(), 2.0), (Priority, 2.0), (Recency, 1.0)],
                SlicerSpec::Greedy,
                PlacerType::Chronological,
            ),
            Preset::Rag => (
                vec![(Reflexive, 3.0), (kind(), 1.0)],
                SlicerSpec::Greedy,
                PlacerType::UShaped,
            ),
            Preset::DocumentQa => (
                vec![(kind(), 2.0), (Reflexive, 2.0), (Priority, 1.0)],
                SlicerSpec::Knapsack(KnapsackSpec {
                    bucket_size: Some(100),
                    table_limit_bytes: None,
                }),
                PlacerType::UShaped,
            ),
            Preset::ToolUse => (
                vec![(kind(), 2.0), (Recency, 2.0), (Priority, 1.0)],
                SlicerSpec::Greedy,
                PlacerType::Chronological,
            ),
            Preset::LongRunning => (
                vec![(Recency, 3.0), (Frequency, 1.0), (kind(), 1.0)],
                SlicerSpec::Greedy,
                PlacerType::Chronological,
            ),
            Preset::Debugging => (
                vec![(Priority, 3.0), (kind(), 2.0), (Recency, 1.0)],
                SlicerSpec::Greedy,
                PlacerType::Chronological,
            ),
        };
        Policy {
            scorers: scorers
                .into_iter()
                .map(|(s, w)| ScorerEntry::new(w, s))
                .collect(),
            slicer,
            placer,
            deduplication: true,
            overflow_strategy: OverflowStrategy::Throw,
            group_value: GroupValue::Sum,
            pinned_first: false,
            use_variants: true,
            name: Some(self.name().to_string()),
            description: Some(self.description().to_string()),
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Preset::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec 07 §2, row by row: scorers (type, weight) in order, slicer, bucket, placer.
    fn expected(
        p: Preset,
    ) -> (
        Vec<(&'static str, f64)>,
        &'static str,
        Option<i64>,
        PlacerType,
    ) {
        use PlacerType::{Chronological as C, UShaped as U};
        match p {
            Preset::Chat => (vec![("recency", 3.0), ("kind", 1.0)], "greedy", None, C),
            Preset::CodeReview => (
                vec![("kind", 2.0), ("priority", 2.0), ("recency", 1.0)],
                "greedy",
                None,
                C,
            ),
            Preset::Rag => (vec![("reflexive", 3.0), ("kind", 1.0)], "greedy", None, U),
            Preset::DocumentQa => (
                vec![("kind", 2.0), ("reflexive", 2.0), ("priority", 1.0)],
                "knapsack",
                Some(100),
                U,
            ),
            Preset::ToolUse => (
                vec![("kind", 2.0), ("recency", 2.0), ("priority", 1.0)],
                "greedy",
                None,
                C,
            ),
            Preset::LongRunning => (
                vec![("recency", 3.0), ("frequency", 1.0), ("kind", 1.0)],
                "greedy",
                None,
                C,
            ),
            Preset::Debugging => (
                vec![("priority", 3.0), ("kind", 2.0), ("recency", 1.0)],
                "greedy",
                None,
                C,
            ),
        }
    }

    fn type_name(s: &ScorerSpec) -> &'static str {
        match s {
            ScorerSpec::Recency => "recency",
            ScorerSpec::Priority => "priority",
            ScorerSpec::Kind { weights: None } => "kind",
            ScorerSpec::Reflexive => "reflexive",
            ScorerSpec::Frequency => "frequency",
            other => panic!("unexpected scorer in a preset: {other:?}"),
        }
    }

    #[test]
    fn presets_match_the_spec_value_by_value() {
        for preset in Preset::ALL {
            let p = preset.policy();
            let (scorers, slicer, bucket, placer) = expected(preset);
            let got: Vec<(&str, f64)> = p
                .scorers
                .iter()
                .map(|e| (type_name(&e.scorer), e.weight))
                .collect();
            assert_eq!(got, scorers, "{preset:?} scorers");
            match (&p.slicer, slicer) {
                (SlicerSpec::Greedy, "greedy") => assert_eq!(bucket, None),
                (SlicerSpec::Knapsack(k), "knapsack") => {
                    assert_eq!(k.bucket_size, bucket, "{preset:?} bucket");
                    assert_eq!(k.table_limit_bytes, None);
                }
                (s, want) => panic!("{preset:?}: slicer {s:?}, expected {want}"),
            }
            assert_eq!(p.placer, placer, "{preset:?} placer");
            assert!(p.deduplication, "{preset:?} dedup");
            assert_eq!(
                p.overflow_strategy,
                OverflowStrategy::Throw,
                "{preset:?} overflow"
            );
            assert_eq!(p.name.as_deref(), Some(preset.name()));
            assert!(!p.description.as_deref().unwrap_or("").is_empty());
            assert_eq!(p.validate(), Ok(()));
        }
    }

    #[test]
    fn names_are_the_identifiers_in_spec_order() {
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(
            names,
            [
                "Chat",
                "CodeReview",
                "Rag",
                "DocumentQa",
                "ToolUse",
                "LongRunning",
                "Debugging"
            ]
        );
    }

    #[test]
    fn lookup_accepts_the_documented_spellings() {
        for preset in Preset::ALL {
            assert_eq!(Preset::from_name(preset.name()), Ok(preset));
            assert_eq!(
                Preset::from_name(&preset.name().to_ascii_lowercase()),
                Ok(preset)
            );
            assert_eq!(
                Preset::from_name(&preset.name().to_ascii_uppercase()),
                Ok(preset)
            );
        }
        assert_eq!(Preset::from_name("code-review"), Ok(Preset::CodeReview));
        assert_eq!(Preset::from_name("code_review"), Ok(Preset::CodeReview));
        assert_eq!(Preset::from_name("DOCUMENT_QA"), Ok(Preset::DocumentQa));
        assert_eq!(Preset::from_name("DocumentQA"), Ok(Preset::DocumentQa));
        assert_eq!(Preset::from_name("document qa"), Ok(Preset::DocumentQa));
        assert_eq!(Preset::from_name("tool-use"), Ok(Preset::ToolUse));
        assert_eq!(Preset::from_name("long_running"), Ok(Preset::LongRunning));
        assert_eq!("rag".parse::<Preset>(), Ok(Preset::Rag));
        assert_eq!(
            Policy::preset("debugging").unwrap(),
            Preset::Debugging.policy()
        );
    }

    #[test]
    fn unknown_names_list_the_presets() {
        let err = Preset::from_name("chatty").unwrap_err();
        assert_eq!(
            err,
            Error::InvalidArgument(
                "unknown preset 'chatty'; known presets: Chat, CodeReview, Rag, DocumentQa, ToolUse, LongRunning, Debugging"
                    .into()
            )
        );
        assert!(Preset::from_name("").is_err());
    }
}
