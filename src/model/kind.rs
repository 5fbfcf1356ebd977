//! ContextKind and ContextSource: open string enumerations compared with ASCII case
//! folding (spec 01 §3).

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::error::{Error, Result};

/// Maps ASCII `A`–`Z` to `a`–`z`; every other byte is unchanged.
pub(crate) fn fold_ascii(s: &str) -> String {
    s.to_ascii_lowercase()
}

fn hash_folded<H: Hasher>(s: &str, state: &mut H) {
    let mut buf = [0u8; 64];
    for chunk in s.as_bytes().chunks(buf.len()) {
        let folded = &mut buf[..chunk.len()];
        folded.copy_from_slice(chunk);
        folded.make_ascii_lowercase();
        state.write(folded);
    }
    state.write_u8(0xff);
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// The static copy of `s` when it is spelled exactly like one of `known`.
fn well_known(s: &str, known: &[&'static str]) -> Option<&'static str> {
    known.iter().copied().find(|k| *k == s)
}

macro_rules! folded_string_type {
    ($(#[$doc:meta])* $name:ident, $err:expr, $default:expr, $known:expr) => {
        $(#[$doc])*
        ///
        /// A value spelled exactly like one of the well-known names points to a static
        /// string instead of allocating one.
        #[derive(Clone)]
        pub struct $name(Cow<'static, str>);

        impl $name {
            /// Builds a value; empty or whitespace-only strings (Unicode White_Space) are rejected.
            pub fn new(value: impl AsRef<str> + Into<String>) -> Result<Self> {
                if let Some(known) = well_known(value.as_ref(), &$known) {
                    return Ok(Self(Cow::Borrowed(known)));
                }
                let value = value.into();
                if is_blank(&value) {
                    return Err($err);
                }
                Ok(Self(Cow::Owned(value)))
            }

            /// The original spelling, as given.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// True when `other` names the same value under ASCII case folding.
            pub fn matches(&self, other: &str) -> bool {
                self.0.eq_ignore_ascii_case(other)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self(Cow::Borrowed($default))
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.eq_ignore_ascii_case(&other.0)
            }
        }

        impl Eq for $name {}

        impl Hash for $name {
            fn hash<H: Hasher>(&self, state: &mut H) {
                hash_folded(&self.0, state);
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

folded_string_type!(
    /// What an item is (`Message`, `Document`, `ToolOutput`, `Memory`, `SystemPrompt`, or any
    /// other non-blank string). Equality and hashing fold ASCII case; the spelling is kept.
    ContextKind,
    Error::EmptyKind,
    ContextKind::MESSAGE,
    [
        ContextKind::MESSAGE,
        ContextKind::DOCUMENT,
        ContextKind::TOOL_OUTPUT,
        ContextKind::MEMORY,
        ContextKind::SYSTEM_PROMPT,
    ]
);

folded_string_type!(
    /// Where an item came from (`Chat`, `Tool`, `Rag`, or any other non-blank string).
    /// Equality and hashing fold ASCII case; the spelling is kept.
    ContextSource,
    Error::EmptySource,
    ContextSource::CHAT,
    [ContextSource::CHAT, ContextSource::TOOL, ContextSource::RAG]
);

impl ContextKind {
    /// A conversational message (the default kind).
    pub const MESSAGE: &'static str = "Message";
    /// A document or file content.
    pub const DOCUMENT: &'static str = "Document";
    /// Output of a tool invocation.
    pub const TOOL_OUTPUT: &'static str = "ToolOutput";
    /// A stored memory or fact.
    pub const MEMORY: &'static str = "Memory";
    /// A system-level instruction.
    pub const SYSTEM_PROMPT: &'static str = "SystemPrompt";
}

impl ContextSource {
    /// From a chat interaction (the default source).
    pub const CHAT: &'static str = "Chat";
    /// From a tool or function call.
    pub const TOOL: &'static str = "Tool";
    /// From retrieval-augmented generation.
    pub const RAG: &'static str = "Rag";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ascii_case_folds_but_unicode_does_not() {
        let a = ContextKind::new("Message").unwrap();
        let b = ContextKind::new("mEsSaGe").unwrap();
        assert_eq!(a, b);
        let set: HashSet<_> = [a.clone(), b].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_ne!(
            ContextKind::new("É").unwrap(),
            ContextKind::new("é").unwrap()
        );
        assert_eq!(a.as_str(), "Message");
    }

    #[test]
    fn blank_values_are_rejected() {
        assert_eq!(ContextKind::new("").unwrap_err(), Error::EmptyKind);
        assert_eq!(ContextKind::new(" \t").unwrap_err(), Error::EmptyKind);
        assert_eq!(
            ContextKind::new("\u{00a0}\u{3000}").unwrap_err(),
            Error::EmptyKind
        );
        assert_eq!(ContextSource::new("  ").unwrap_err(), Error::EmptySource);
        assert!(ContextSource::new(" x ").is_ok());
    }

    #[test]
    fn well_known_spellings_are_static_and_behave_like_others() {
        let known = ContextKind::new("Memory").unwrap();
        let owned = ContextKind::new(String::from("memory")).unwrap();
        assert!(matches!(known.0, Cow::Borrowed(_)));
        assert!(matches!(owned.0, Cow::Owned(_)));
        assert_eq!(known, owned);
        assert_eq!((known.as_str(), owned.as_str()), ("Memory", "memory"));
        let set: HashSet<_> = [known, owned].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert!(matches!(
            ContextSource::new("Rag").unwrap().0,
            Cow::Borrowed("Rag")
        ));
        assert!(matches!(ContextKind::default().0, Cow::Borrowed("Message")));
    }

    #[test]
    fn defaults() {
        assert_eq!(ContextKind::default().as_str(), "Message");
        assert_eq!(ContextSource::default().as_str(), "Chat");
    }
}
