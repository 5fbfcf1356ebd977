//! ContextKind and ContextSource: open string enumerations compared with ASCII case
//! folding (spec 01 §3).

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::error::{Error, Result};

/// Maps ASCII `A`–`Z` to `a`–`z`; every other byte is unchanged.
pub fn fold_ascii(s: &str) -> String {
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

macro_rules! folded_string_type {
    ($(#[$doc:meta])* $name:ident, $err:expr, $default:expr) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(String);

        impl $name {
            /// Builds a value; empty or whitespace-only strings (Unicode White_Space) are rejected.
            pub fn new(value: impl Into<String>) -> Result<Self> {
                let value = value.into();
                if is_blank(&value) {
                    return Err($err);
                }
                Ok(Self(value))
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
                Self($default.to_string())
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
    ContextKind::MESSAGE
);

folded_string_type!(
    /// Where an item came from (`Chat`, `Tool`, `Rag`, or any other non-blank string).
    /// Equality and hashing fold ASCII case; the spelling is kept.
    ContextSource,
    Error::EmptySource,
    ContextSource::CHAT
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
    fn defaults() {
        assert_eq!(ContextKind::default().as_str(), "Message");
        assert_eq!(ContextSource::default().as_str(), "Chat");
    }
}
