//! Host-registered scorer types: a policy JSON entry `{"type": "<name>", "weight": w}`
//! names a scorer the host registered under `<name>` (the counterpart of .NET's
//! `CupelJsonOptions.RegisterScorer`).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::policy::json_names::{JsonEnum, ScorerType};
use crate::scorer::Scorer;

/// A scorer registered under a type name, as a policy holds it once read.
///
/// Two registered scorers are equal when they have the same name and are the same scorer
/// object (`Arc` identity).
#[derive(Clone)]
pub struct RegisteredScorer {
    name: String,
    scorer: Arc<dyn Scorer>,
}

impl RegisteredScorer {
    /// The type name (the registry's spelling), written as the entry's `type`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The scorer a pipeline built from the policy runs.
    pub fn scorer(&self) -> &Arc<dyn Scorer> {
        &self.scorer
    }
}

impl fmt::Debug for RegisteredScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredScorer")
            .field("name", &self.name)
            .field("scorer", &self.scorer)
            .finish()
    }
}

impl PartialEq for RegisteredScorer {
    fn eq(&self, other: &Self) -> bool {
        let same_object = std::ptr::addr_eq(Arc::as_ptr(&self.scorer), Arc::as_ptr(&other.scorer));
        self.name == other.name && same_object
    }
}

/// Scorer types a host adds to the policy JSON. Pass it to reading through
/// [`JsonReadOptions::registry`](crate::policy::JsonReadOptions): a scorer entry whose
/// `type` is a registered name becomes that scorer (one term of the pipeline's composite,
/// with the entry's `weight`), and the "unknown scorer type" error lists the registered
/// names after the built-in ones.
///
/// Names compare ASCII case-insensitively, like the built-in type names; registering a
/// name again replaces the earlier scorer (as .NET does).
///
/// ```
/// use std::sync::Arc;
/// use ctxpack::policy::{JsonReadOptions, Policy, ScorerRegistry};
/// use ctxpack::scorer::{PriorityScorer, Scorer};
///
/// let mut registry = ScorerRegistry::new();
/// let urgency: Arc<dyn Scorer> = Arc::new(PriorityScorer::new());
/// registry.register("urgency", urgency)?;
/// let options = JsonReadOptions { registry: Some(&registry), ..Default::default() };
/// let read = Policy::from_json_with(
///     r#"{"scorers":[{"type":"urgency","weight":2},{"type":"recency","weight":1}]}"#,
///     &options,
/// )?;
/// let pipeline = read.value.build_pipeline()?;
/// # let _ = pipeline;
/// # Ok::<(), ctxpack::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScorerRegistry {
    entries: Vec<RegisteredScorer>,
}

impl ScorerRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `scorer` under `name`, replacing a scorer registered under the same name
    /// (ASCII case-insensitively). A blank name, or the name of a built-in scorer type
    /// (`recency`, …, `metadataKey`), fails with [`Error::InvalidArgument`].
    pub fn register(&mut self, name: &str, scorer: Arc<dyn Scorer>) -> Result<()> {
        if name.trim().is_empty() {
            return Err(Error::InvalidArgument(
                "a scorer type name must not be blank".into(),
            ));
        }
        if let Some(built_in) = ScorerType::from_name(name) {
            return Err(Error::InvalidArgument(format!(
                "\"{name}\" is the built-in scorer type {}; register custom scorers under other names",
                built_in.name()
            )));
        }
        let entry = RegisteredScorer {
            name: name.to_string(),
            scorer,
        };
        match self
            .entries
            .iter_mut()
            .find(|e| e.name.eq_ignore_ascii_case(name))
        {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
        Ok(())
    }

    /// The scorer registered under `name` (ASCII case-insensitively).
    pub fn get(&self, name: &str) -> Option<&RegisteredScorer> {
        self.entries
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// The number of registered scorers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::{PriorityScorer, RecencyScorer};

    #[test]
    fn names_are_checked_and_replaced_case_insensitively() {
        let mut r = ScorerRegistry::new();
        let a: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
        let b: Arc<dyn Scorer> = Arc::new(PriorityScorer::new());
        assert!(r.is_empty());
        r.register("semantic", a.clone()).unwrap();
        r.register("other", a.clone()).unwrap();
        r.register("Semantic", b.clone()).unwrap();
        assert_eq!(r.names().collect::<Vec<_>>(), ["Semantic", "other"]);
        assert_eq!(r.len(), 2);
        let got = r.get("SEMANTIC").unwrap();
        assert!(Arc::ptr_eq(got.scorer(), &b));
        assert!(r.get("missing").is_none());
        for bad in ["", "  ", "Recency", "metadatakey"] {
            let err = r.register(bad, a.clone()).unwrap_err();
            assert_eq!(err.code(), crate::ErrorCode::InvalidArgument, "{bad:?}");
        }
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn equality_is_name_and_identity() {
        let a: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
        let b: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
        let mut r = ScorerRegistry::new();
        r.register("x", a.clone()).unwrap();
        r.register("y", a).unwrap();
        r.register("z", b).unwrap();
        let (x, y, z) = (
            r.get("x").unwrap(),
            r.get("y").unwrap(),
            r.get("z").unwrap(),
        );
        assert_eq!(x, &x.clone());
        assert_ne!(x, y);
        let renamed = RegisteredScorer {
            name: "x".into(),
            scorer: z.scorer().clone(),
        };
        assert_ne!(x, &renamed);
    }
}
