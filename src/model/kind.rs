//! ContextKind and ContextSource: open string enumerations compared with ASCII case
//! folding (spec 01 §3).

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

/// The position of `s` in `known` when it is spelled exactly like one of them.
///
/// Every well-known name is at most 16 bytes, so two of them are equal exactly when
/// their lengths and [`short_words`] are: inlined with a constant `known`, each name's
/// words are constants and a comparison is two integer compares, not a `memcmp` call.
#[inline(always)]
fn well_known(s: &str, known: &[&'static str]) -> Option<u8> {
    let s = s.as_bytes();
    if s.len() > SHORT_MAX {
        return None;
    }
    let words = short_words(s);
    // A loop rather than `Iterator::position`, which was not inlined.
    for (i, k) in known.iter().enumerate() {
        if k.len() == s.len() && short_words(k.as_bytes()) == words {
            return Some(i as u8);
        }
    }
    None
}

/// A bound on the well-known names' lengths (a test checks that every name fits it).
const SHORT_MAX: usize = 16;

/// Two words that, with the length, identify a string of at most [`SHORT_MAX`] bytes: its
/// first and last 8 bytes (overlapping below 16), or its bytes and 0 below 8.
#[inline(always)]
fn short_words(b: &[u8]) -> (u64, u64) {
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    match b.len() {
        8.. => (word(0), word(b.len() - 8)),
        _ => (b.iter().rev().fold(0, |w, &c| (w << 8) | u64::from(c)), 0),
    }
}

/// How a kind or source is spelled: one of its type's well-known names (by position in
/// the type's table), or any other spelling, owned. 16 bytes: the position fits in the
/// owned string's unused pointer value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Spelling {
    Known(u8),
    Custom(Box<str>),
}

macro_rules! folded_string_type {
    ($(#[$doc:meta])* $name:ident, $err:expr, $default:expr, $known:expr) => {
        $(#[$doc])*
        ///
        /// A value spelled exactly like one of the well-known names is stored as that
        /// name's number instead of allocating a string, and two such values compare by
        /// number.
        #[derive(Clone)]
        pub struct $name(Spelling);

        impl $name {
            /// The well-known spellings, numbered by position.
            pub(crate) const KNOWN: &'static [&'static str] = &$known;

            /// The value spelled exactly like one of the well-known names, without
            /// allocating; `None` for any other spelling (build those with `new`).
            /// Inlined: returned from a call, the value came back through memory and
            /// reading it stalled on the stores just made.
            #[inline(always)]
            pub(crate) fn well_known(value: &str) -> Option<Self> {
                well_known(value, Self::KNOWN).map(|known| Self(Spelling::Known(known)))
            }

            /// Whether [`new`](Self::new) accepts `value`, checked without building it.
            #[inline]
            pub(crate) fn accepts(value: &str) -> bool {
                !is_blank(value)
            }

            /// Builds a value; empty or whitespace-only strings (Unicode White_Space) are rejected.
            pub fn new(value: impl AsRef<str> + Into<String>) -> Result<Self> {
                if let Some(known) = well_known(value.as_ref(), Self::KNOWN) {
                    return Ok(Self(Spelling::Known(known)));
                }
                let value = value.into();
                if is_blank(&value) {
                    return Err($err);
                }
                Ok(Self(Spelling::Custom(value.into_boxed_str())))
            }

            /// The original spelling, as given.
            #[inline]
            pub fn as_str(&self) -> &str {
                match &self.0 {
                    Spelling::Known(i) => Self::KNOWN[usize::from(*i)],
                    Spelling::Custom(s) => s,
                }
            }

            /// True when `other` names the same value under ASCII case folding.
            pub fn matches(&self, other: &str) -> bool {
                self.as_str().eq_ignore_ascii_case(other)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self(Spelling::Known($default))
            }
        }

        impl PartialEq for $name {
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                match (&self.0, &other.0) {
                    // Distinct well-known names differ under case folding too.
                    (Spelling::Known(a), Spelling::Known(b)) => a == b,
                    _ => self.as_str().eq_ignore_ascii_case(other.as_str()),
                }
            }
        }

        impl Eq for $name {}

        impl Hash for $name {
            fn hash<H: Hasher>(&self, state: &mut H) {
                hash_folded(self.as_str(), state);
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self.as_str(), f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

folded_string_type!(
    /// What an item is (`Message`, `Document`, `ToolOutput`, `Memory`, `SystemPrompt`, or any
    /// other non-blank string). Equality and hashing fold ASCII case; the spelling is kept.
    ContextKind,
    Error::EmptyKind,
    0, // Message
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
    0, // Chat
    [ContextSource::CHAT, ContextSource::TOOL, ContextSource::RAG]
);

impl ContextKind {
    /// The kind's position in `KNOWN` when it is spelled exactly like a well-known name
    /// (KindScorer then reads its weight by position instead of looking the name up).
    #[inline]
    pub(crate) fn known_index(&self) -> Option<usize> {
        match self.0 {
            Spelling::Known(i) => Some(usize::from(i)),
            Spelling::Custom(_) => None,
        }
    }

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
        assert_eq!(known.0, Spelling::Known(3));
        assert!(matches!(owned.0, Spelling::Custom(_)));
        assert_eq!(known, owned);
        assert_eq!((known.as_str(), owned.as_str()), ("Memory", "memory"));
        let set: HashSet<_> = [known.clone(), owned].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_eq!(ContextSource::new("Rag").unwrap().0, Spelling::Known(2));
        assert_eq!(ContextKind::default().0, Spelling::Known(0));
        assert_eq!(known.known_index(), Some(3));
        assert_eq!(ContextKind::new("memory").unwrap().known_index(), None);
        for (i, name) in ContextKind::KNOWN.iter().enumerate() {
            assert_eq!(ContextKind::new(*name).unwrap().known_index(), Some(i));
        }
        // Well-known values compare by number, others by their folded text.
        let custom = ContextKind::new(String::from("ToolOUTPUT")).unwrap();
        assert_eq!(custom, ContextKind::new("ToolOutput").unwrap());
        assert_ne!(custom, ContextKind::new("Document").unwrap());
        assert_ne!(known, ContextKind::new("Document").unwrap());
        assert_eq!(format!("{known:?} {custom}"), "\"Memory\" ToolOUTPUT");
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<ContextKind>(), 16);
    }

    /// The word comparison finds exactly the names `==` finds: every well-known name fits
    /// it, and every string up to 20 bytes differing from a name in one byte, its length
    /// or its case is told apart.
    #[test]
    fn well_known_by_words_is_string_equality() {
        let names: Vec<&str> = ContextKind::KNOWN
            .iter()
            .chain(ContextSource::KNOWN)
            .copied()
            .collect();
        assert!(names.iter().all(|n| n.len() <= SHORT_MAX));
        let naive = |s: &str, known: &[&str]| known.iter().position(|k| *k == s);
        let mut probes: Vec<String> = vec![String::new(), "x".repeat(17), "x".repeat(20)];
        for name in &names {
            probes.push(name.to_string());
            probes.push(name.to_ascii_lowercase());
            probes.push(format!("{name}s"));
            probes.push(name[..name.len() - 1].to_string());
            for at in 0..name.len() {
                let mut b = name.as_bytes().to_vec();
                b[at] ^= 1;
                probes.push(String::from_utf8(b).unwrap());
            }
        }
        for p in &probes {
            for known in [ContextKind::KNOWN, ContextSource::KNOWN] {
                let want = naive(p, known).map(|i| i as u8);
                assert_eq!(well_known(p, known), want, "{p:?}");
            }
        }
    }

    /// `well_known` (the push path's shortcut) gives what `new` gives for every exact
    /// well-known spelling, and nothing for any other spelling, blank ones included.
    #[test]
    fn well_known_shortcut_matches_new() {
        for name in ContextKind::KNOWN {
            let shortcut = ContextKind::well_known(name).unwrap();
            assert_eq!(shortcut.0, ContextKind::new(*name).unwrap().0, "{name}");
        }
        for name in ContextSource::KNOWN {
            let shortcut = ContextSource::well_known(name).unwrap();
            assert_eq!(shortcut.0, ContextSource::new(*name).unwrap().0, "{name}");
        }
        for other in ["message", "MEMORY", "Message ", "", " ", "Custom"] {
            assert!(ContextKind::well_known(other).is_none(), "{other:?}");
        }
        assert!(ContextSource::well_known("chat").is_none());
    }

    #[test]
    fn defaults() {
        assert_eq!(ContextKind::default().as_str(), "Message");
        assert_eq!(ContextSource::default().as_str(), "Chat");
    }
}
