//! Generated variants (`docs/variants.md`): a head-and-tail form of a long item — its first
//! and last tokens with a marker between — made with one of the built-in encodings, so a
//! host gets a useful cheaper form without writing a summary.
//!
//! This is an item-building helper, not a pipeline option: the form is computed once,
//! when the item is built, and becomes an ordinary variant that the host can see, store
//! and send; a run never tokenizes anything.

use crate::error::{Error, Result};
use crate::model::ContextItemBuilder;
use crate::tokenizer::Encoding;

/// The marker put between the head and the tail unless another is set; `{omitted}` is
/// replaced by the number of tokens left out.
pub const DEFAULT_HEAD_TAIL_MARKER: &str = "\n[… {omitted} tokens omitted …]\n";

/// How to make a head-and-tail form: keep the first `head_tokens` and the last
/// `tail_tokens` tokens of a text and put a marker between them.
///
/// ```
/// # #[cfg(feature = "tokenizer")] {
/// use ctxpack::model::HeadTail;
/// use ctxpack::tokenizer::Encoding;
/// use ctxpack::ContextItem;
///
/// let enc = Encoding::by_name("o200k_base")?;
/// let log = (1..=400).map(|i| format!("line {i}: ok\n")).collect::<String>();
/// let item = ContextItem::builder(log.as_str(), enc.count(&log) as i64)
///     .head_tail(enc, &HeadTail::new(20, 20)?)
///     .build()?;
/// let form = &item.variants()[0];
/// assert!(form.content().starts_with("line 1: ok\n"));
/// assert!(form.content().ends_with("line 400: ok\n"));
/// assert!(form.content().contains("tokens omitted"));
/// assert!(form.tokens() < 60 && form.quality() < 0.05); // quality: the share kept
/// # }
/// # Ok::<(), ctxpack::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HeadTail {
    head_tokens: usize,
    tail_tokens: usize,
    quality: Option<f64>,
    marker: String,
}

impl HeadTail {
    /// Keeps `head_tokens` and `tail_tokens` (together at least 1), with the default
    /// marker and the default quality (the share of the text's tokens kept). Fails with
    /// [`Error::InvalidArgument`] when both are 0.
    pub fn new(head_tokens: usize, tail_tokens: usize) -> Result<HeadTail> {
        if head_tokens == 0 && tail_tokens == 0 {
            return Err(Error::InvalidArgument(
                "a head-and-tail form keeps at least one token (head and tail are both 0)".into(),
            ));
        }
        Ok(HeadTail {
            head_tokens,
            tail_tokens,
            quality: None,
            marker: DEFAULT_HEAD_TAIL_MARKER.to_owned(),
        })
    }

    /// Sets a fixed quality for the forms made (checked in (0, 1] when the item is built).
    pub fn with_quality(mut self, quality: f64) -> Self {
        self.quality = Some(quality);
        self
    }

    /// Sets the marker; `{omitted}` in it is replaced by the number of tokens left out.
    pub fn with_marker(mut self, marker: impl Into<String>) -> Self {
        self.marker = marker.into();
        self
    }

    /// Tokens kept from the start.
    pub fn head_tokens(&self) -> usize {
        self.head_tokens
    }

    /// Tokens kept from the end.
    pub fn tail_tokens(&self) -> usize {
        self.tail_tokens
    }

    /// The fixed quality, or `None` for the share of the text's tokens kept.
    pub fn quality(&self) -> Option<f64> {
        self.quality
    }

    /// The marker template.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Cuts `text` with `encoding`, or `None` when it has no more than `head + tail`
    /// tokens (nothing would be left out) or when nothing of it can be kept (the first and
    /// last tokens end inside multi-byte characters).
    ///
    /// The head is [`Encoding::truncate`]'s prefix of at most `head_tokens` tokens. The
    /// tail starts at the end of the prefix of the first `k` tokens of the whole text,
    /// for the smallest `k >= total − tail_tokens` whose [`Encoding::truncate`] boundary
    /// leaves a suffix that, counted on its own, has at most `tail_tokens` tokens: it
    /// starts on a token boundary of the whole text and on a character boundary.
    pub fn cut<'t>(&self, encoding: &Encoding, text: &'t str) -> Option<HeadTailCut<'t>> {
        let total = encoding.count(text);
        if total <= self.head_tokens.saturating_add(self.tail_tokens) {
            return None;
        }
        let head = encoding.truncate(text, self.head_tokens);
        let mut k = total - self.tail_tokens;
        let (start, tail_count) = loop {
            // Monotone in k, and k > head_tokens: the tail never overlaps the head.
            let start = encoding.truncate(text, k).text.len();
            if let Some(n) = encoding.count_with_limit(&text[start..], self.tail_tokens) {
                break (start, n);
            }
            k += 1; // at k = total the suffix is empty, which fits
        };
        let kept = head.tokens + tail_count;
        (kept > 0).then(|| HeadTailCut {
            head: head.text,
            tail: &text[start..],
            kept_tokens: kept,
            omitted_tokens: total.saturating_sub(kept),
            total_tokens: total,
        })
    }

    /// The form's text for `cut`: head, marker (with `{omitted}` filled in), tail.
    pub fn form_text(&self, cut: &HeadTailCut<'_>) -> String {
        let marker = self
            .marker
            .replace("{omitted}", &cut.omitted_tokens.to_string());
        let mut text = String::with_capacity(cut.head.len() + marker.len() + cut.tail.len());
        text.push_str(cut.head);
        text.push_str(&marker);
        text.push_str(cut.tail);
        text
    }

    /// The quality of the form made from `cut`: the fixed one, or `kept / total` tokens.
    pub fn form_quality(&self, cut: &HeadTailCut<'_>) -> f64 {
        self.quality
            .unwrap_or(cut.kept_tokens as f64 / cut.total_tokens as f64)
    }
}

/// Where [`HeadTail::cut`] cuts a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadTailCut<'t> {
    /// The kept start of the text (a prefix of it).
    pub head: &'t str,
    /// The kept end of the text (a suffix of it).
    pub tail: &'t str,
    /// Tokens of the head and of the tail, each counted on its own, added.
    pub kept_tokens: usize,
    /// The text's tokens minus the kept ones.
    pub omitted_tokens: usize,
    /// The whole text's tokens.
    pub total_tokens: usize,
}

impl ContextItemBuilder {
    /// Adds a head-and-tail form of the item's content (`docs/variants.md`): its first
    /// and last tokens by `encoding`, with the marker between them, its tokens counted by
    /// `encoding`. Nothing is added when the content has no more than the head and tail
    /// tokens, or when the form would have as many tokens as the item says it has (it
    /// could never be chosen). The form's quality is `spec`'s, checked by `build`.
    pub fn head_tail(self, encoding: &Encoding, spec: &HeadTail) -> Self {
        let Some(cut) = spec.cut(encoding, self.content()) else {
            return self;
        };
        let text = spec.form_text(&cut);
        let tokens = i64::try_from(encoding.count(&text)).unwrap_or(i64::MAX);
        if tokens >= self.tokens() {
            return self;
        }
        let quality = spec.form_quality(&cut);
        self.variant(text, tokens, quality)
    }
}

#[cfg(all(test, feature = "tokenizer"))]
mod tests {
    use super::*;
    use crate::ContextItem;

    fn enc() -> &'static Encoding {
        Encoding::by_name("cl100k_base").unwrap()
    }

    #[test]
    fn cuts_within_the_token_counts() {
        let texts = [
            "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".to_string(),
            "👍".repeat(30),
            "Übergrößenträger café naïve — résumé ".repeat(6),
            (0..60).map(|i| format!("{i},")).collect::<String>(),
        ];
        for text in &texts {
            let total = enc().count(text);
            for (h, t) in [(3, 4), (0, 5), (5, 0), (1, 1)] {
                let spec = HeadTail::new(h, t).unwrap();
                let Some(cut) = spec.cut(enc(), text) else {
                    // Nothing to leave out, or nothing that can be kept (a token ending
                    // inside a character keeps nothing of it).
                    let nothing_kept = enc().truncate(text, h).tokens == 0;
                    assert!(total <= h + t || nothing_kept, "{text:?} {h} {t}");
                    continue;
                };
                assert!(text.starts_with(cut.head) && text.ends_with(cut.tail));
                assert!(cut.head.len() + cut.tail.len() < text.len());
                assert!(enc().count(cut.head) <= h && enc().count(cut.tail) <= t);
                assert!(text.is_char_boundary(text.len() - cut.tail.len()));
                assert_eq!(cut.total_tokens, total);
                assert_eq!(cut.kept_tokens + cut.omitted_tokens, total);
            }
        }
    }

    #[test]
    fn builder_adds_the_form_only_when_it_saves_tokens() {
        let text = "word ".repeat(200);
        let total = enc().count(&text) as i64;
        let spec = HeadTail::new(5, 5).unwrap().with_marker(" … ");
        let item = ContextItem::builder(text.as_str(), total)
            .head_tail(enc(), &spec)
            .build()
            .unwrap();
        let form = &item.variants()[0];
        assert_eq!(form.tokens(), enc().count(form.content()) as i64);
        assert!(form.content().starts_with("word word") && form.content().contains(" … "));
        assert_eq!(form.quality(), 10.0 / total as f64);
        // Short texts and forms no cheaper than the item's own count are not added.
        let short = ContextItem::builder("a few words", 3)
            .head_tail(enc(), &spec)
            .build()
            .unwrap();
        assert!(!short.has_variants());
        let cheap = ContextItem::builder(text.as_str(), 8)
            .head_tail(enc(), &spec)
            .build()
            .unwrap();
        assert!(!cheap.has_variants());
        // A fixed quality is checked by build.
        let err = ContextItem::builder(text.as_str(), total)
            .head_tail(enc(), &spec.clone().with_quality(0.0))
            .build()
            .unwrap_err();
        assert!(
            err.to_string().contains("quality must be in (0, 1]"),
            "{err}"
        );
        let default = HeadTail::new(2, 2).unwrap();
        let cut = default.cut(enc(), &text).unwrap();
        let omitted = format!("\n[… {} tokens omitted …]\n", cut.omitted_tokens);
        assert_eq!(
            default.form_text(&cut),
            format!("{}{omitted}{}", cut.head, cut.tail)
        );
        assert_eq!(cut.omitted_tokens as i64, total - cut.kept_tokens as i64);
        assert!(HeadTail::new(0, 0).is_err());
    }
}
