//! Splitting text into pieces, exactly as the encodings' regular expressions do.
//!
//! Each encoding defines its pieces by a regular expression matched repeatedly from the
//! start of the text (leftmost-first alternation, the way a backtracking engine reads it);
//! byte-pair merging then happens inside each piece only. These are those expressions,
//! written out as code: one function per encoding returns where the piece that starts at
//! a given offset ends. Both expressions match at every position, so the pieces cover the
//! text without gaps. The comments quote the alternatives as the encodings define them;
//! `\s` is Unicode White_Space, `$` the end of the text.

use super::unicode::{self, Class};

/// A text being split: its bytes (valid UTF-8) and the class of the character at an offset.
struct Text<'a> {
    bytes: &'a [u8],
    classes: &'static unicode::Table,
}

impl Text<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The class and byte length of the character starting at `at` (`at < len`).
    #[inline(always)]
    fn char_at(&self, at: usize) -> (Class, usize) {
        let b = self.bytes[at];
        if b < 0x80 {
            return (ASCII[b as usize], 1);
        }
        let (cp, len) = if b < 0xE0 {
            (
                (u32::from(b & 0x1F) << 6) | u32::from(self.bytes[at + 1] & 0x3F),
                2,
            )
        } else if b < 0xF0 {
            (
                (u32::from(b & 0x0F) << 12)
                    | (u32::from(self.bytes[at + 1] & 0x3F) << 6)
                    | u32::from(self.bytes[at + 2] & 0x3F),
                3,
            )
        } else {
            (
                (u32::from(b & 0x07) << 18)
                    | (u32::from(self.bytes[at + 1] & 0x3F) << 12)
                    | (u32::from(self.bytes[at + 2] & 0x3F) << 6)
                    | u32::from(self.bytes[at + 3] & 0x3F),
                4,
            )
        };
        (self.classes.class_of(cp), len)
    }

    /// The class of the character at `at`, or `None` at the end of the text.
    #[inline]
    fn class_at(&self, at: usize) -> Option<Class> {
        (at < self.len()).then(|| self.char_at(at).0)
    }

    /// The end of the longest run of characters from `at` whose class satisfies `keep`.
    #[inline]
    fn run_end(&self, mut at: usize, keep: impl Fn(Class) -> bool) -> usize {
        while at < self.len() {
            let (class, len) = self.char_at(at);
            if !keep(class) {
                break;
            }
            at += len;
        }
        at
    }

    /// The end of the run of bytes from `at` that are in `set` (ASCII only).
    #[inline]
    fn bytes_end(&self, mut at: usize, set: &[u8]) -> usize {
        while at < self.len() && set.contains(&self.bytes[at]) {
            at += 1;
        }
        at
    }

    /// The end of `\p{N}{1,3}` after its first digit, which ends at `at`: up to two more.
    #[inline]
    fn digits_end(&self, mut at: usize) -> usize {
        for _ in 0..2 {
            match self.class_at(at) {
                Some(Class::Number) => at += self.char_at(at).1,
                _ => break,
            }
        }
        at
    }

    /// The end of `' '?[^\s\p{L}\p{N}]+[trailing]*` at `at`, whose character has `class`,
    /// or `None` when no punctuation starts there (after an optional space).
    #[inline]
    fn punctuation_end(&self, at: usize, class: Class, trailing: &[u8]) -> Option<usize> {
        let start =
            if self.bytes[at] == b' ' && self.class_at(at + 1).is_some_and(Class::is_punctuation) {
                at + 1
            } else if class.is_punctuation() {
                at
            } else {
                return None;
            };
        Some(self.bytes_end(self.run_end(start, Class::is_punctuation), trailing))
    }

    /// The byte at `at`, or 0 at the end of the text.
    #[inline]
    fn byte(&self, at: usize) -> u8 {
        self.bytes.get(at).copied().unwrap_or(0)
    }

    /// How many bytes of the contractions `'s 't 're 've 'm 'll 'd` (any case) follow the
    /// apostrophe at `at - 1`: 0 if none. `ſ` (U+017F) is an `s` under case folding.
    #[inline]
    fn contraction_after(&self, at: usize) -> usize {
        match self.byte(at).to_ascii_lowercase() {
            b's' | b't' | b'm' | b'd' => 1,
            b'r' | b'v' if self.byte(at + 1).eq_ignore_ascii_case(&b'e') => 2,
            b'l' if self.byte(at + 1).eq_ignore_ascii_case(&b'l') => 2,
            0xC5 if self.byte(at + 1) == 0xBF => 2,
            _ => 0,
        }
    }

    /// The white space alternatives common to both encodings, at the start `at` of a run
    /// of white space. `end_first`: whether `\s++$` is tried before `\s*[\r\n]`
    /// (cl100k_base) or not at all (o200k_base, whose `\s+(?!\S)` still takes a run that
    /// ends the text whole, but only after `\s*[\r\n]+`).
    fn space(&self, at: usize, end_first: bool) -> usize {
        let mut end = at;
        let mut last_newline = None;
        let mut last_start = at;
        while end < self.len() {
            let (class, len) = self.char_at(end);
            if class != Class::Space {
                break;
            }
            if matches!(self.bytes[end], b'\r' | b'\n') {
                last_newline = Some(end);
            }
            last_start = end;
            end += len;
        }
        // cl100k_base: \s++$
        if end_first && end == self.len() {
            return end;
        }
        // \s*[\r\n]  /  \s*[\r\n]+ : through the last line break of the run.
        if let Some(newline) = last_newline {
            return newline + 1;
        }
        // \s+(?!\S): the whole run at the end of the text, else all but its last
        // character, if that leaves one.
        if end == self.len() {
            return end;
        }
        if last_start > at {
            return last_start;
        }
        // \s  /  \s+ : the single character.
        end
    }
}

/// Classes of the ASCII characters.
static ASCII: [Class; 128] = {
    let mut t = [Class::Other; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        t[i] = if c.is_ascii_lowercase() {
            Class::Lower
        } else if c.is_ascii_uppercase() {
            Class::Upper
        } else if c.is_ascii_digit() {
            Class::Number
        } else if matches!(c, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r') {
            Class::Space
        } else {
            Class::Other
        };
        i += 1;
    }
    t
};

/// `[^\r\n\p{L}\p{N}]`: what may stand before a word.
#[inline]
fn may_lead(byte: u8, class: Class) -> bool {
    byte != b'\r' && byte != b'\n' && !class.is_letter() && class != Class::Number
}

/// The end of the cl100k_base piece that starts at `at`:
///
/// ```text
/// '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
/// |\s++$|\s*[\r\n]|\s+(?!\S)|\s
/// ```
fn cl100k_piece_end(text: &Text, at: usize) -> usize {
    let b = text.bytes[at];
    let (class, len) = text.char_at(at);
    // '(?i:[sdmt]|ll|ve|re)
    if b == b'\'' {
        let n = text.contraction_after(at + 1);
        if n > 0 {
            return at + 1 + n;
        }
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++
    if class.is_letter() {
        return text.run_end(at, Class::is_letter);
    }
    if may_lead(b, class) && text.class_at(at + len).is_some_and(Class::is_letter) {
        return text.run_end(at + len, Class::is_letter);
    }
    // \p{N}{1,3}+
    if class == Class::Number {
        return text.digits_end(at + len);
    }
    // ' '?[^\s\p{L}\p{N}]++[\r\n]*+
    if let Some(end) = text.punctuation_end(at, class, b"\r\n") {
        return end;
    }
    text.space(at, true)
}

/// The end of the o200k_base piece that starts at `at`:
///
/// ```text
/// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
/// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
/// ```
fn o200k_piece_end(text: &Text, at: usize) -> usize {
    let b = text.bytes[at];
    let (class, len) = text.char_at(at);
    let lead = may_lead(b, class);
    // The two word alternatives, each first with the leading character, then without.
    let word = |body: fn(&Text, usize) -> Option<usize>| {
        if lead {
            if let Some(end) = body(text, at + len) {
                return Some(end);
            }
        }
        body(text, at)
    };
    if let Some(end) = word(upper_then_lower).or_else(|| word(upper_then_any)) {
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)?
        let contraction = if text.byte(end) == b'\'' {
            text.contraction_after(end + 1)
        } else {
            0
        };
        return if contraction > 0 {
            end + 1 + contraction
        } else {
            end
        };
    }
    // \p{N}{1,3}
    if class == Class::Number {
        return text.digits_end(at + len);
    }
    // ' '?[^\s\p{L}\p{N}]+[\r\n/]*
    if let Some(end) = text.punctuation_end(at, class, b"\r\n/") {
        return end;
    }
    text.space(at, false)
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` from `at`, greedy with
/// backtracking: the end of the match, if any.
fn upper_then_lower(text: &Text, at: usize) -> Option<usize> {
    // The end of the last upper-part character that is also a lower-part character (Lm,
    // Lo, M): where the match ends if it has to give characters back.
    let mut last_lower = None;
    let mut i = at;
    while i < text.len() {
        let (class, len) = text.char_at(i);
        if !class.is_upper_part() {
            if class.is_lower_part() {
                return Some(text.run_end(i + len, Class::is_lower_part));
            }
            break;
        }
        i += len;
        if class.is_lower_part() {
            last_lower = Some(i);
        }
    }
    last_lower
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` from `at`.
fn upper_then_any(text: &Text, at: usize) -> Option<usize> {
    let upper_end = text.run_end(at, Class::is_upper_part);
    (upper_end > at).then(|| text.run_end(upper_end, Class::is_lower_part))
}

/// The split patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pattern {
    /// cl100k_base's.
    Cl100k,
    /// o200k_base's.
    O200k,
}

/// The pieces of a text, in order, as byte ranges that cover it.
pub(super) struct Pieces<'a> {
    text: Text<'a>,
    at: usize,
    pattern: Pattern,
}

impl<'a> Pieces<'a> {
    pub(super) fn new(text: &'a str, pattern: Pattern) -> Self {
        Pieces {
            text: Text {
                bytes: text.as_bytes(),
                classes: unicode::table(),
            },
            at: 0,
            pattern,
        }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = (usize, &'a [u8]);

    /// The next piece and the offset where it starts.
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.text.len() {
            return None;
        }
        let start = self.at;
        let end = match self.pattern {
            Pattern::Cl100k => cl100k_piece_end(&self.text, start),
            Pattern::O200k => o200k_piece_end(&self.text, start),
        };
        debug_assert!(end > start);
        self.at = end;
        Some((start, &self.text.bytes[start..end]))
    }
}
