//! Token counting for OpenAI's `o200k_base` and `cl100k_base` encodings, offline.
//!
//! ```
//! # #[cfg(feature = "tokenizer")] {
//! use ctxpack::tokenizer::Encoding;
//!
//! let enc = Encoding::by_name("cl100k_base")?;
//! assert_eq!(enc.encode("hello world"), [15339, 1917]);
//! assert_eq!(enc.count("hello world"), 2);
//! assert_eq!(enc.count_with_limit("hello world", 1), None);
//! let cut = enc.truncate("hello world", 1);
//! assert_eq!((cut.text, cut.tokens), ("hello", 1));
//! # }
//! # Ok::<(), ctxpack::Error>(())
//! ```
//!
//! Counts are those of the encodings' ordinary text: special tokens such as
//! `<|endoftext|>` are counted as the characters they are written with, as an API counts
//! a message that contains them. The vocabularies are part of the library; nothing is read
//! or downloaded at build or run time. An encoding is loaded on first use — its lookup
//! tables are built from the embedded vocabulary, once per process, by whichever thread
//! asks first (others wait) — and shared by every thread afterwards; `docs/tokenizer.md`
//! gives the first-use time and the memory it takes.
//!
//! The module is always present. Without the `tokenizer` cargo feature,
//! [`Encoding::by_name`] fails with [`Error::Unsupported`] and no [`Encoding`] can exist.
//!
//! How a text becomes tokens: the encoding's split pattern cuts it into pieces (words with
//! their leading space, runs of digits, punctuation, white space; `split.rs`), and each
//! piece is byte-pair merged on its own (`bpe.rs`) with the vocabulary's ranks
//! (`vocab.rs`). `docs/tokenizer.md` has the design, the measurements and the checks
//! against two independent implementations.

use crate::error::{Error, Result};

#[cfg(feature = "tokenizer")]
mod bpe;
#[cfg(feature = "tokenizer")]
mod split;
#[cfg(feature = "tokenizer")]
mod unicode;
#[cfg(feature = "tokenizer")]
mod units;
#[cfg(feature = "tokenizer")]
mod vocab;

/// The names of the encodings this build knows, as [`Encoding::by_name`] accepts them.
pub const ENCODING_NAMES: [&str; 2] = ["o200k_base", "cl100k_base"];

/// A text cut to a token budget by [`Encoding::truncate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation<'t> {
    /// The kept prefix of the text (a slice of it).
    pub text: &'t str,
    /// Its token count (`count(text)`), at most the budget.
    pub tokens: usize,
}

/// One of the built-in encodings. Obtained from [`Encoding::by_name`] as a `&'static`
/// reference: loaded once, shared, immutable, `Send + Sync`.
pub struct Encoding {
    inner: Inner,
}

#[cfg(not(feature = "tokenizer"))]
enum Inner {}

#[cfg(feature = "tokenizer")]
struct Inner {
    name: &'static str,
    vocab: vocab::Vocab,
    pattern: split::Pattern,
}

impl std::fmt::Debug for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Encoding({})", self.name())
    }
}

impl Encoding {
    /// The encoding called `name` (`"o200k_base"` or `"cl100k_base"`, in any ASCII case),
    /// loaded on first use. An unknown name is [`Error::InvalidArgument`] listing the known
    /// ones; a build without the `tokenizer` feature answers [`Error::Unsupported`].
    pub fn by_name(name: &str) -> Result<&'static Encoding> {
        Self::by_index(Self::index_of(name)?)
    }

    /// The position of `name` in [`ENCODING_NAMES`] (any ASCII case); an unknown name is
    /// [`Error::InvalidArgument`] listing the known ones, and a build without the
    /// `tokenizer` feature answers [`Error::Unsupported`] whatever the name.
    pub fn index_of(name: &str) -> Result<usize> {
        if cfg!(not(feature = "tokenizer")) {
            return Err(unsupported());
        }
        let Some(index) = ENCODING_NAMES
            .iter()
            .position(|known| known.eq_ignore_ascii_case(name))
        else {
            return Err(Error::InvalidArgument(format!(
                "unknown encoding {name:?}; known encodings: {}",
                ENCODING_NAMES.join(", ")
            )));
        };
        Ok(index)
    }

    /// The encoding named `ENCODING_NAMES[index]`, loaded on first use;
    /// [`Error::InvalidArgument`] for an index out of range, [`Error::Unsupported`]
    /// without the `tokenizer` feature.
    pub fn by_index(index: usize) -> Result<&'static Encoding> {
        if index >= ENCODING_NAMES.len() {
            return Err(Error::InvalidArgument(format!(
                "encoding index {index} is out of range (0..{})",
                ENCODING_NAMES.len()
            )));
        }
        load(index)
    }

    /// The encoding's name (`"o200k_base"`, ...).
    pub fn name(&self) -> &'static str {
        #[cfg(feature = "tokenizer")]
        {
            self.inner.name
        }
        #[cfg(not(feature = "tokenizer"))]
        match self.inner {}
    }

    /// The number of tokens of `text`.
    pub fn count(&self, text: &str) -> usize {
        self.count_with_limit(text, usize::MAX)
            .expect("no text has more than usize::MAX tokens")
    }

    /// The number of tokens of `text` if it is at most `limit`, else `None` — found
    /// without counting the whole text: counting stops at the first piece that takes the
    /// total past `limit`, and a piece longer than `limit` times the longest token's
    /// length is rejected unseen. The work is proportional to the part of the text that
    /// fits (plus the piece that crosses the limit), not to the text, so huge tool outputs
    /// are rejected cheaply.
    pub fn count_with_limit(&self, text: &str, limit: usize) -> Option<usize> {
        #[cfg(feature = "tokenizer")]
        {
            self.inner.count_prefix(text, limit)
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = (text, limit);
            match self.inner {}
        }
    }

    /// The token ids (ranks) of `text`, as the encoding's ordinary encoding produces them.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        #[cfg(feature = "tokenizer")]
        {
            let inner = &self.inner;
            let mut out = Vec::with_capacity(text.len() / 4);
            for (_, piece) in split::Pieces::new(text, inner.pattern) {
                let whole = inner.vocab.rank(piece);
                if whole != vocab::NONE {
                    out.push(whole);
                    continue;
                }
                let mut start = 0;
                bpe::merge(&inner.vocab, piece, &mut |end| {
                    out.push(inner.vocab.rank(&piece[start..end]));
                    start = end;
                });
            }
            out
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = text;
            match self.inner {}
        }
    }

    /// The longest prefix of `text` that has at most `max_tokens` tokens and ends on a
    /// token boundary and a character boundary, with its token count.
    ///
    /// "Token boundary" is defined on the whole text's encoding: the prefix is the text of
    /// its first `k` tokens, `k <= max_tokens`, for the largest `k` such that those tokens
    /// end on a UTF-8 character boundary (a token may end inside a multi-byte character)
    /// and the prefix, counted on its own, also has at most `max_tokens` tokens. (Counted
    /// alone, a prefix is split again, and the split pattern can join or cut its last
    /// piece differently; the count is checked, never assumed.) The whole text is returned
    /// when it fits; `max_tokens == 0` gives the empty prefix. Costs about two counts of
    /// the kept prefix, whatever the length of the rest of the text.
    pub fn truncate<'t>(&self, text: &'t str, max_tokens: usize) -> Truncation<'t> {
        #[cfg(feature = "tokenizer")]
        {
            truncate(&self.inner, text, max_tokens)
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = (text, max_tokens);
            match self.inner {}
        }
    }
}

/// The error of every tokenizer entry point in a build without the `tokenizer` feature.
pub(crate) fn unsupported() -> Error {
    Error::Unsupported("ctxpack was built without the tokenizer feature".to_string())
}

#[cfg(not(feature = "tokenizer"))]
fn load(_index: usize) -> Result<&'static Encoding> {
    Err(unsupported())
}

#[cfg(feature = "tokenizer")]
fn load(index: usize) -> Result<&'static Encoding> {
    use std::sync::OnceLock;
    static ENCODINGS: [OnceLock<Encoding>; 2] = [OnceLock::new(), OnceLock::new()];
    const DATA: [&[u8]; 2] = [
        include_bytes!("data/o200k_base.bin"),
        include_bytes!("data/cl100k_base.bin"),
    ];
    const PATTERNS: [split::Pattern; 2] = [split::Pattern::O200k, split::Pattern::Cl100k];
    Ok(ENCODINGS[index].get_or_init(|| {
        unicode::load();
        Encoding {
            inner: Inner {
                name: ENCODING_NAMES[index],
                vocab: vocab::Vocab::load(DATA[index]),
                pattern: PATTERNS[index],
            },
        }
    }))
}

#[cfg(feature = "tokenizer")]
fn truncate<'t>(inner: &Inner, text: &'t str, max_tokens: usize) -> Truncation<'t> {
    let fits = |end: usize| {
        inner
            .count_prefix(&text[..end], max_tokens)
            .map(|tokens| Truncation {
                text: &text[..end],
                tokens,
            })
    };
    let mut total = 0usize;
    for (start, piece) in split::Pieces::new(text, inner.pattern) {
        let n = bpe::count(&inner.vocab, piece);
        if total + n <= max_tokens {
            total += n;
            continue;
        }
        // This piece crosses the budget: the candidate is the end of its last token that
        // still fits and ends on a character boundary (the piece's start, at worst).
        let mut ends = Vec::new();
        bpe::merge(&inner.vocab, piece, &mut |end| ends.push(start + end));
        let room = max_tokens - total;
        let candidate = ends[..room]
            .iter()
            .rev()
            .copied()
            .find(|&end| text.is_char_boundary(end))
            .unwrap_or(start);
        if let Some(cut) = fits(candidate) {
            return cut;
        }
        return truncate_slowly(inner, text, max_tokens, candidate);
    }
    Truncation {
        text,
        tokens: total,
    }
}

/// The rare case where the first candidate, counted alone, exceeds the budget: every
/// earlier candidate (token ends on character boundaries) is tried, longest first.
#[cfg(feature = "tokenizer")]
#[cold]
fn truncate_slowly<'t>(
    inner: &Inner,
    text: &'t str,
    max_tokens: usize,
    below: usize,
) -> Truncation<'t> {
    let mut candidates = vec![0usize];
    let mut ends = Vec::new();
    for (start, piece) in split::Pieces::new(text, inner.pattern) {
        if start >= below {
            break;
        }
        ends.clear();
        bpe::merge(&inner.vocab, piece, &mut |end| ends.push(start + end));
        candidates.extend(
            ends.iter()
                .copied()
                .filter(|&end| end < below && text.is_char_boundary(end)),
        );
    }
    for &end in candidates.iter().rev() {
        if let Some(tokens) = inner.count_prefix(&text[..end], max_tokens) {
            return Truncation {
                text: &text[..end],
                tokens,
            };
        }
    }
    Truncation {
        text: "",
        tokens: 0,
    }
}

#[cfg(feature = "tokenizer")]
impl Inner {
    /// `count_with_limit`: pieces are counted until the total passes `limit`; a piece
    /// longer than the remaining room times the longest token is rejected unseen.
    fn count_prefix(&self, text: &str, limit: usize) -> Option<usize> {
        let max_len = self.vocab.max_token_len();
        let mut total = 0usize;
        for (_, piece) in split::Pieces::new(text, self.pattern) {
            if piece.len() > (limit - total).saturating_mul(max_len) {
                return None;
            }
            total += bpe::count(&self.vocab, piece);
            if total > limit {
                return None;
            }
        }
        Some(total)
    }
}
