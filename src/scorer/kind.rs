//! KindScorer: a weight per item kind (spec 03 §2.3).

use crate::error::Result;
use crate::model::{ContextItem, ContextKind};
use crate::scorer::str_table::StrTable;
use crate::scorer::{config_error, score_each, validate_table_weight, Scorer};

/// KindScorer: the weight configured for the item's kind, 0.0 for an unlisted kind.
///
/// Kinds match under ASCII case folding (`"message"` matches `Message`). Weights are
/// returned as configured, unclamped (a weight of 3.0 scores 3.0).
#[derive(Debug, Clone)]
pub struct KindScorer {
    weights: Vec<(ContextKind, f64)>,
    /// The weights by kind spelling, matched under ASCII case folding like [`ContextKind`].
    lookup: StrTable<f64>,
    /// `lookup`'s answer for each well-known spelling, by its position in
    /// `ContextKind::KNOWN`: most items' kinds are read without a lookup.
    known: [Option<f64>; KNOWN_KINDS],
}

/// How many well-known kind spellings there are.
const KNOWN_KINDS: usize = ContextKind::KNOWN.len();

impl KindScorer {
    /// The default table (SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6, Document 0.4, Message 0.2).
    pub fn new() -> Self {
        let defaults = [
            (ContextKind::SYSTEM_PROMPT, 1.0),
            (ContextKind::MEMORY, 0.8),
            (ContextKind::TOOL_OUTPUT, 0.6),
            (ContextKind::DOCUMENT, 0.4),
            (ContextKind::MESSAGE, 0.2),
        ];
        let weights = defaults
            .iter()
            .map(|&(kind, weight)| {
                (
                    ContextKind::new(kind).expect("well-known kinds are valid"),
                    weight,
                )
            })
            .collect();
        Self::with_weights(weights).expect("the default table is valid")
    }

    /// A custom table replacing the defaults (never merged with them); weights must be >= 0
    /// and finite. An empty table is legal and scores every item 0.0.
    ///
    /// Entries are checked in order, each for `w < 0`
    /// (`weight for kind '<k>' must be non-negative`, which also catches `-inf`), then for a
    /// non-finite `w` (`weight for kind '<k>' must be finite`). Two entries whose kinds are
    /// equal under ASCII case folding are rejected with `kind '<k>' appears more than once`
    /// (naming the later spelling): a kind-keyed table cannot hold both, and silently keeping
    /// one would make the result depend on the order of configuration.
    pub fn with_weights(weights: Vec<(ContextKind, f64)>) -> Result<Self> {
        let mut lookup = StrTable::new_ascii_folded();
        for (kind, weight) in &weights {
            validate_table_weight(&format!("weight for kind '{kind}'"), *weight)?;
            if !lookup.insert(kind.as_str(), *weight) {
                return Err(config_error(format!(
                    "kind '{kind}' appears more than once"
                )));
            }
        }
        let known = std::array::from_fn(|i| lookup.get(ContextKind::KNOWN[i]));
        Ok(Self {
            weights,
            lookup,
            known,
        })
    }

    /// The configured table, in configuration order.
    pub fn weights(&self) -> &[(ContextKind, f64)] {
        &self.weights
    }

    /// The item's score: its kind's weight, or 0.0.
    #[inline]
    pub(super) fn score_item(&self, item: &ContextItem) -> f64 {
        self.score_kind(item.kind())
    }

    /// The score of an item of kind `kind`: its weight, or 0.0.
    #[inline]
    pub(crate) fn score_kind(&self, kind: &ContextKind) -> f64 {
        match kind.known_index() {
            Some(i) => self.known[i],
            None => self.lookup.get(kind.as_str()),
        }
        .unwrap_or(0.0)
    }

    /// [`score_kind`](Self::score_kind) of the well-known kind at `index` of
    /// `ContextKind::KNOWN` (0.0 past its end).
    #[inline]
    pub(crate) fn score_known(&self, index: usize) -> f64 {
        self.known.get(index).copied().flatten().unwrap_or(0.0)
    }

    /// [`score_kind`](Self::score_kind) of a kind spelled `name`, which is not a
    /// well-known spelling.
    #[inline]
    pub(crate) fn score_custom_kind(&self, name: &str) -> f64 {
        self.lookup.get(name).unwrap_or(0.0)
    }
}

impl Default for KindScorer {
    fn default() -> Self {
        Self::new()
    }
}

impl Scorer for KindScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        score_each(items, out, |item| self.score_item(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{items_from, random_ascii_case, random_name, run};
    use crate::testutil::Rng;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn of_kinds(kinds: &[&str]) -> Vec<ContextItem> {
        items_from(kinds.len(), |i| {
            ContextItem::builder(format!("item{i}"), 1)
                .kind(kind(kinds[i]))
                .build()
                .unwrap()
        })
    }

    fn err(weights: Vec<(ContextKind, f64)>) -> String {
        KindScorer::with_weights(weights).unwrap_err().to_string()
    }

    #[test]
    fn vector_default_weights() {
        let items = of_kinds(&[
            "SystemPrompt",
            "Memory",
            "ToolOutput",
            "Document",
            "Message",
        ]);
        assert_eq!(run(&KindScorer::new(), &items), [1.0, 0.8, 0.6, 0.4, 0.2]);
        assert_eq!(
            run(&KindScorer::default(), &items),
            [1.0, 0.8, 0.6, 0.4, 0.2]
        );
    }

    #[test]
    fn default_table_has_exactly_five_entries_in_order() {
        let scorer = KindScorer::new();
        let table: Vec<(&str, f64)> = scorer
            .weights()
            .iter()
            .map(|(k, w)| (k.as_str(), *w))
            .collect();
        assert_eq!(
            table,
            [
                ("SystemPrompt", 1.0),
                ("Memory", 0.8),
                ("ToolOutput", 0.6),
                ("Document", 0.4),
                ("Message", 0.2)
            ]
        );
    }

    #[test]
    fn matching_folds_ascii_case_and_unknown_kinds_score_zero() {
        let items = of_kinds(&["message", "MESSAGE", "Other", "mémoire"]);
        assert_eq!(run(&KindScorer::new(), &items), [0.2, 0.2, 0.0, 0.0]);
    }

    #[test]
    fn custom_table_replaces_defaults_unclamped() {
        let s =
            KindScorer::with_weights(vec![(kind("custom"), 3.0), (kind("Memory"), -0.0)]).unwrap();
        let got = run(&s, &of_kinds(&["Custom", "Memory", "Message"]));
        assert_eq!(got, [3.0, 0.0, 0.0]);
        assert!(
            got[1].is_sign_negative(),
            "-0.0 is a legal weight and returned as is"
        );
        let empty = KindScorer::with_weights(vec![]).unwrap();
        assert_eq!(
            run(&empty, &of_kinds(&["Message", "SystemPrompt"])),
            [0.0, 0.0]
        );
    }

    #[test]
    fn validation_messages_and_order() {
        let cfg = |m: &str| format!("invalid scorer configuration: {m}");
        assert_eq!(
            err(vec![(kind("A"), -1.0)]),
            cfg("weight for kind 'A' must be non-negative")
        );
        assert_eq!(
            err(vec![(kind("A"), f64::NEG_INFINITY)]),
            cfg("weight for kind 'A' must be non-negative")
        );
        assert_eq!(
            err(vec![(kind("A"), f64::NAN)]),
            cfg("weight for kind 'A' must be finite")
        );
        assert_eq!(
            err(vec![(kind("A"), f64::INFINITY)]),
            cfg("weight for kind 'A' must be finite")
        );
        // The first bad entry in configuration order is reported.
        assert_eq!(
            err(vec![
                (kind("A"), 1.0),
                (kind("B"), f64::NAN),
                (kind("C"), -1.0)
            ]),
            cfg("weight for kind 'B' must be finite")
        );
        assert_eq!(
            err(vec![(kind("Memory"), 1.0), (kind("memory"), 2.0)]),
            cfg("kind 'memory' appears more than once")
        );
        assert!(KindScorer::with_weights(vec![(kind("A"), 0.0), (kind("B"), 1e300)]).is_ok());
    }

    /// The weight table matches like `ContextKind`'s equality (ASCII case folding, every
    /// other byte exact) on random tables of up to 100 kinds: long kinds differing only
    /// past their first 16 bytes or only in case, non-ASCII kinds, well-known names.
    #[test]
    fn lookup_agrees_with_kind_equality_on_random_tables() {
        let known = [
            "Message",
            "Document",
            "ToolOutput",
            "Memory",
            "SystemPrompt",
        ];
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let mut weights: Vec<(ContextKind, f64)> = Vec::new();
            for _ in 0..rng.below(100) {
                let name = if rng.chance(0.1) {
                    let name = *rng.pick(&known);
                    random_ascii_case(&mut rng, name)
                } else {
                    random_name(&mut rng)
                };
                let k = kind(&name);
                if weights.iter().all(|(other, _)| *other != k) {
                    weights.push((k, rng.unit() * 3.0));
                }
            }
            let scorer = KindScorer::with_weights(weights.clone()).unwrap();
            let mut probes: Vec<String> = known.iter().map(|k| k.to_string()).collect();
            for (k, _) in &weights {
                probes.push(random_ascii_case(&mut rng, k.as_str()));
                probes.push(format!("{}x", k.as_str()));
            }
            probes.extend((0..20).map(|_| random_name(&mut rng)));
            let items = items_from(probes.len(), |i| {
                ContextItem::builder(format!("item{i}"), 1)
                    .kind(kind(&probes[i]))
                    .build()
                    .unwrap()
            });
            let want: Vec<f64> = items
                .iter()
                .map(|item| {
                    weights
                        .iter()
                        .find(|(k, _)| k == item.kind())
                        .map_or(0.0, |(_, w)| *w)
                })
                .collect();
            assert_eq!(run(&scorer, &items), want, "seed {seed}");
        }
    }
}
