//! How a chat request's tokens are counted: the caller's counting function, a built-in
//! estimate for when no tokenizer is at hand, and each provider's overheads (the framing
//! every message carries, the reply priming, a stand-in for media whose size is unknown).
//! `docs/chat.md` gives the sources of the numbers.

use serde_json::Value;

use crate::chat::Provider;
use crate::tokenizer::Encoding;

/// Counts the tokens of a text. Every [`Encoding`] of the built-in tokenizer is one, and
/// so is any `Fn(&str) -> usize`.
pub trait CountTokens {
    /// The number of tokens `text` encodes to.
    fn count_tokens(&self, text: &str) -> usize;

    /// The built-in encoding this counter is, if it is one: shortening a tool output
    /// ([`ChatOptions::shorten`](crate::chat::ChatOptions::shorten)) then cuts on the
    /// encoding's token boundaries. Other counters answer `None` (the default), and the cut
    /// is searched with [`count_tokens`](Self::count_tokens) instead.
    fn as_encoding(&self) -> Option<&Encoding> {
        None
    }
}

impl<F: Fn(&str) -> usize + ?Sized> CountTokens for F {
    fn count_tokens(&self, text: &str) -> usize {
        self(text)
    }
}

impl CountTokens for Encoding {
    /// [`Encoding::count`]: the exact number of tokens of the encoding's ordinary text.
    fn count_tokens(&self, text: &str) -> usize {
        self.count(text)
    }

    fn as_encoding(&self) -> Option<&Encoding> {
        Some(self)
    }
}

/// The encoding chat requests are counted with by default: `o200k_base`, the encoding of
/// OpenAI's GPT-4o and later models.
pub const DEFAULT_ENCODING: &str = "o200k_base";

/// The default counting function: the built-in [`DEFAULT_ENCODING`] when the library is
/// built with the `tokenizer` feature (the default), otherwise [`estimate_tokens`]. The
/// encoding is loaded on first use (a few milliseconds, once per process).
pub fn default_counter() -> &'static dyn CountTokens {
    match Encoding::by_name(DEFAULT_ENCODING) {
        Ok(encoding) => encoding,
        Err(_) => &estimate_tokens,
    }
}

/// A tokenizer-free estimate: one token per three ASCII bytes (rounded up) plus one per
/// non-ASCII character. It errs high on English prose (about 1.4 times an `o200k_base`
/// count), is close on code and JSON, and is about right for CJK text; exact counts need the
/// model's encoding.
pub fn estimate_tokens(text: &str) -> usize {
    let (ascii, other) = text.bytes().fold((0usize, 0usize), |(a, o), b| match b {
        0..=0x7f => (a + 1, o),
        // A leading byte starts a non-ASCII character; continuation bytes (0x80-0xbf) do not.
        0xc0..=0xff => (a, o + 1),
        _ => (a, o),
    });
    ascii.div_ceil(3) + other
}

/// The tokens a request costs besides the text of its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overheads {
    /// Framing every message carries (role markers and separators).
    pub per_message: i64,
    /// Extra tokens when a message has a `name` (OpenAI).
    pub per_name: i64,
    /// Tokens of the request as a whole: the priming of the model's reply.
    pub per_request: i64,
    /// Stand-in for one image, audio clip or binary document whose size ctxpack cannot
    /// know without decoding it.
    pub media: i64,
}

impl Overheads {
    /// OpenAI Chat Completions: 3 per message, 1 per `name`, 3 for the reply priming (the
    /// OpenAI cookbook's counting rule), and 765 for an image (a 1024×1024 image at high
    /// detail: 85 plus 170 for each of four 512-pixel tiles); a low-detail image counts 85.
    pub const OPENAI: Overheads = Overheads {
        per_message: 3,
        per_name: 1,
        per_request: 3,
        media: 765,
    };

    /// Anthropic Messages: Anthropic publishes no framing rule (exact counts come from its
    /// token-counting endpoint), so ctxpack assumes OpenAI's 3 per message and 3 per request;
    /// 1 600 for an image (Anthropic's figure for the largest images it does not resize).
    pub const ANTHROPIC: Overheads = Overheads {
        per_message: 3,
        per_name: 0,
        per_request: 3,
        media: 1600,
    };

    /// The defaults of a provider.
    pub fn of(provider: Provider) -> Overheads {
        match provider {
            Provider::OpenAi => Self::OPENAI,
            Provider::Anthropic => Self::ANTHROPIC,
        }
    }
}

/// The counting function and the overheads of one run.
pub(crate) struct Counter<'a> {
    pub(crate) count: &'a dyn CountTokens,
    pub(crate) overheads: Overheads,
}

impl Counter<'_> {
    /// Tokens of a text.
    pub(crate) fn text(&self, text: &str) -> i64 {
        i64::try_from(self.count.count_tokens(text)).unwrap_or(i64::MAX)
    }

    /// Tokens of a value whose rendering ctxpack does not know: its compact JSON text, which
    /// errs high (keys and punctuation count too).
    pub(crate) fn json(&self, value: &Value) -> i64 {
        match value {
            Value::String(s) => self.text(s),
            Value::Null => 0,
            other => self.text(&other.to_string()),
        }
    }
}

/// A running token total that saturates instead of overflowing (a caller's counting
/// function may return huge values; the pipeline's checked sums report those).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally(pub(crate) i64);

impl Tally {
    pub(crate) fn add(&mut self, tokens: i64) {
        self.0 = self.0.saturating_add(tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_ascii_in_threes_and_other_characters_singly() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 2);
        assert_eq!(estimate_tokens("日本語"), 3);
        assert_eq!(estimate_tokens("é!"), 2);
        assert_eq!(estimate_tokens("👍👍"), 2);
    }

    #[test]
    fn closures_and_functions_count() {
        let words = |t: &str| t.split_whitespace().count();
        let counter = Counter {
            count: &words,
            overheads: Overheads::OPENAI,
        };
        assert_eq!(counter.text("a b c"), 3);
        assert_eq!(counter.json(&serde_json::json!({"a": "x y"})), 2);
        assert_eq!(counter.json(&Value::Null), 0);
        let huge = |_: &str| usize::MAX;
        let counter = Counter {
            count: &huge,
            overheads: Overheads::OPENAI,
        };
        assert_eq!(counter.text("a"), i64::MAX);
        let mut t = Tally::default();
        t.add(i64::MAX);
        t.add(5);
        assert_eq!(t.0, i64::MAX);
    }
}
