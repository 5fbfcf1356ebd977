//! Byte-pair merging of one piece of text (a match of the split pattern).
//!
//! The rule is OpenAI's: start from single bytes and repeatedly merge the adjacent pair
//! whose concatenation is the token of lowest rank, the leftmost such pair when several
//! are equal, until no adjacent pair is a token.
//!
//! * Pieces of up to `SCAN_LIMIT` bytes are merged in small arrays on the stack (part
//!   starts, pair ranks), the lowest rank found by a linear scan the compiler vectorises:
//!   for the few dozen parts of a word this beats anything cleverer. A piece with
//!   non-ASCII characters starts from whole characters where `units.rs` shows that this
//!   gives the same tokens (a Chinese character is then one part instead of three bytes
//!   and two merges); the scan checks that every merge ranks above both of its parts, the
//!   condition of that proof, and starts again from bytes if one does not.
//! * Longer pieces are cut into chunks (`CHUNK` bytes, `CHUNK_UNITS` with non-ASCII
//!   characters, ending on a character boundary), each merged on its own, and the chunks
//!   are joined with a check: an encoding is the piece's byte-pair encoding exactly when
//!   every two adjacent tokens are *compatible* (merging their bytes alone gives back
//!   those two tokens). Where a junction is not, the tokens around it are merged again as
//!   one window, widened until both of its edges are compatible. Linear in the piece in
//!   practice, exact always (the window can grow to the whole piece). A chunk with the
//!   same bytes as the one before reuses its tokens, and a junction between the same two
//!   tokens as the last one checked reuses that answer: a long run of one character (or
//!   of a short pattern) costs a comparison per chunk.
//! * A window too long to scan is merged with a heap and a linked list, O(n log n).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

use super::units::is_continuation;
use super::vocab::{Rank, Vocab, NONE};

/// Pieces up to this many bytes are merged by scanning (also the most two tokens take).
const SCAN_LIMIT: usize = 256;
/// Pieces longer than this are merged in chunks.
const CHUNK_ABOVE: usize = 64;
/// The same for pieces with non-ASCII characters, merged from characters (fewer parts).
const CHUNK_ABOVE_UNITS: usize = 256;
/// The chunk length for long pieces.
const CHUNK: usize = 32;
/// The same for pieces with non-ASCII characters.
const CHUNK_UNITS: usize = 64;

/// Calls `visit` with the end offset (in `piece`) of each token of the piece, in order,
/// and returns the number of tokens.
pub(super) fn merge(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    let limit = if piece.is_ascii() {
        CHUNK_ABOVE
    } else {
        CHUNK_ABOVE_UNITS
    };
    if piece.len() > limit {
        merge_chunked(vocab, piece, visit)
    } else {
        merge_exact(vocab, piece, visit)
    }
}

/// The number of tokens of the piece.
#[inline]
pub(super) fn count(vocab: &Vocab, piece: &[u8]) -> usize {
    if piece.len() <= 1 || vocab.rank(piece) != NONE {
        return piece.len().min(1);
    }
    merge(vocab, piece, &mut |_| {})
}

/// Merges the whole piece at once (no chunks).
fn merge_exact(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    match piece.len() {
        0 => 0,
        1 => {
            visit(1);
            1
        }
        n if n < SHORT => merge_scan::<SHORT>(vocab, piece, visit),
        n if n <= SCAN_LIMIT => merge_scan::<{ SCAN_LIMIT + 1 }>(vocab, piece, visit),
        _ => merge_heap(vocab, piece, visit),
    }
}

/// Pieces shorter than this are merged in arrays of this size (cheaper to set up than
/// arrays for `SCAN_LIMIT` bytes).
const SHORT: usize = 65;

/// Merges a piece of 2 to `N - 1` bytes by scanning for the lowest pair: from whole
/// characters where `units.rs` allows (text with non-ASCII characters), else from bytes.
fn merge_scan<const N: usize>(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    if !piece.is_ascii() {
        if let Some(tokens) = scan::<N, true>(vocab, piece, visit) {
            return tokens;
        }
    }
    scan::<N, false>(vocab, piece, visit).expect("a merge from bytes is never given up")
}

/// The scan. With `UNITS`, parts start as the units of [`Vocab::units`] and the merge is
/// given up (`None`) if a merge ranks below one of its two parts (the condition of
/// `units.rs`); without, parts start as bytes and the result is always `Some`.
fn scan<const N: usize, const UNITS: bool>(
    vocab: &Vocab,
    piece: &[u8],
    visit: &mut dyn FnMut(usize),
) -> Option<usize> {
    let n = piece.len();
    debug_assert!((2..N).contains(&n));
    // Parts 0..parts: part i is piece[starts[i]..starts[i + 1]] (starts[parts] = n);
    // ranks[i] is the rank of parts i and i + 1 merged (NONE if that is no token);
    // own[i] (UNITS only) is the rank of part i itself.
    let mut starts = [0u16; N];
    let mut ranks = [NONE; N];
    let mut own = [0 as Rank; N];
    let mut parts;
    if UNITS {
        parts = vocab.units(piece, &mut starts, &mut own);
        for i in 0..parts - 1 {
            ranks[i] = vocab.rank(&piece[starts[i] as usize..starts[i + 2] as usize]);
        }
    } else {
        parts = n;
        for (i, start) in starts.iter_mut().enumerate().take(n + 1) {
            *start = i as u16;
        }
        for (i, rank) in ranks.iter_mut().enumerate().take(n - 1) {
            *rank = vocab.pair(piece[i], piece[i + 1]);
        }
    }
    // After a merge, a pair spans at least 3 bytes.
    let pair = |starts: &[u16], parts: usize, i: usize| -> Rank {
        if i + 2 <= parts {
            vocab.rank_of_long(&piece[starts[i] as usize..starts[i + 2] as usize])
        } else {
            NONE
        }
    };
    while parts > 1 {
        let live = &ranks[..parts - 1];
        let best = live.iter().fold(NONE, |m, &r| m.min(r));
        if best == NONE {
            break;
        }
        let at = live.iter().position(|&r| r == best).unwrap_or(0);
        if UNITS {
            if best < own[at] || best < own[at + 1] {
                return None;
            }
            for i in at + 1..parts - 1 {
                own[i] = own[i + 1];
            }
            own[at] = best;
        }
        // Merge parts `at` and `at + 1` (element moves, not memmove calls: few and short).
        for i in at + 1..parts {
            starts[i] = starts[i + 1];
        }
        for i in at + 1..parts.saturating_sub(2) {
            ranks[i] = ranks[i + 1];
        }
        parts -= 1;
        ranks[at] = pair(&starts, parts, at);
        if at > 0 {
            ranks[at - 1] = pair(&starts, parts, at - 1);
        }
    }
    for &end in &starts[1..=parts] {
        visit(end as usize);
    }
    Some(parts)
}

/// The compatibility checks of one chunked merge, with the last answer remembered: the
/// junctions of a long run of one character (or of any text that repeats with the
/// chunks' period) are all between the same two tokens.
#[derive(Default)]
struct Junctions {
    /// The last two tokens checked (ranges of the piece) and the answer.
    last: Option<(Range<usize>, Range<usize>, bool)>,
}

impl Junctions {
    /// Whether two adjacent tokens of a piece, `piece[left]` and `piece[right]`, stay two
    /// tokens when their bytes are merged alone — the condition for them to stand next
    /// to each other in any encoding.
    fn compatible(
        &mut self,
        vocab: &Vocab,
        piece: &[u8],
        left: Range<usize>,
        right: Range<usize>,
    ) -> bool {
        if let Some((l, r, answer)) = &self.last {
            if piece[l.clone()] == piece[left.clone()] && piece[r.clone()] == piece[right.clone()] {
                return *answer;
            }
        }
        let mut bytes = [0u8; SCAN_LIMIT];
        let (l, r) = (&piece[left.clone()], &piece[right.clone()]);
        let n = l.len() + r.len();
        bytes[..l.len()].copy_from_slice(l);
        bytes[l.len()..n].copy_from_slice(r);
        let mut first_end = None;
        let tokens = merge_exact(vocab, &bytes[..n], &mut |end| {
            first_end.get_or_insert(end);
        });
        let answer = tokens == 2 && first_end == Some(l.len());
        self.last = Some((left, right, answer));
        answer
    }
}

/// Where the chunk that starts at `start` ends: `len` bytes on, moved back to the start
/// of a character if that leaves something.
fn chunk_end(piece: &[u8], start: usize, len: usize) -> usize {
    let mut end = (start + len).min(piece.len());
    while end < piece.len() && end > start + 1 && is_continuation(piece[end]) {
        end -= 1;
    }
    end
}

fn merge_chunked(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    let n = piece.len();
    let chunk_len = if piece.is_ascii() { CHUNK } else { CHUNK_UNITS };
    // Token ends (offsets in `piece`) decided so far; they cover piece[..last].
    let mut out: Vec<usize> = Vec::with_capacity(n / 2);
    let mut right: Vec<usize> = Vec::with_capacity(chunk_len);
    let mut window: Vec<usize> = Vec::new();
    let mut junctions = Junctions::default();
    // The last chunk merged and its token ends (relative to its start): a chunk with the
    // same bytes has the same tokens.
    let mut last_chunk = 0..0;
    let mut last_ends: Vec<usize> = Vec::with_capacity(chunk_len);
    let start_of = |ends: &[usize], i: usize| if i == 0 { 0 } else { ends[i - 1] };
    let mut chunk_start = 0;
    while chunk_start < n {
        let chunk = chunk_start..chunk_end(piece, chunk_start, chunk_len);
        if piece[chunk.clone()] != piece[last_chunk.clone()] {
            last_ends.clear();
            merge_exact(vocab, &piece[chunk.clone()], &mut |e| last_ends.push(e));
            last_chunk = chunk.clone();
        }
        right.clear();
        right.extend(last_ends.iter().map(|e| chunk_start + e));
        let mut taken = 0; // tokens of `right` merged into the window
        if let Some(&last_end) = out.last() {
            let last_start = start_of(&out, out.len() - 1);
            if !junctions.compatible(vocab, piece, last_start..last_end, chunk_start..right[0]) {
                let (mut lo, mut hi) = (last_start, right[0]);
                out.pop();
                taken = 1;
                loop {
                    window.clear();
                    merge_exact(vocab, &piece[lo..hi], &mut |e| window.push(lo + e));
                    if let Some(&prev_end) = out.last() {
                        let prev_start = start_of(&out, out.len() - 1);
                        if !junctions.compatible(vocab, piece, prev_start..prev_end, lo..window[0])
                        {
                            lo = prev_start;
                            out.pop();
                            continue;
                        }
                    }
                    if taken < right.len() {
                        let w_last = start_of(&window, window.len() - 1).max(lo);
                        let next = right[taken - 1]..right[taken];
                        if !junctions.compatible(vocab, piece, w_last..hi, next) {
                            hi = right[taken];
                            taken += 1;
                            continue;
                        }
                    }
                    break;
                }
                out.extend_from_slice(&window);
            }
        }
        out.extend_from_slice(&right[taken..]);
        chunk_start = chunk.end;
    }
    for &end in &out {
        visit(end);
    }
    out.len()
}

fn merge_heap(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    let n = piece.len();
    // A doubly linked list of parts, by the offset where each starts; `end[i]` is where
    // part i ends (the next part's start), `prev[i]` the previous part's start; `rank[i]`
    // the rank of part i merged with the next one. A merged-away part has `end == 0`.
    let mut end: Vec<u32> = (1..=n as u32).collect();
    let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
    let mut rank = vec![NONE; n];
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        rank[i] = vocab.rank(&piece[i..i + 2]);
        if rank[i] != NONE {
            heap.push(Reverse((rank[i], i as u32)));
        }
    }
    let mut tokens = n;
    while let Some(Reverse((r, i))) = heap.pop() {
        let i = i as usize;
        if end[i] == 0 || rank[i] != r {
            continue; // stale: merged away or re-ranked since it was pushed
        }
        // Merge part i with the next part.
        let next = end[i] as usize;
        let after = end[next] as usize;
        end[i] = after as u32;
        end[next] = 0;
        if after < n {
            prev[after] = i as u32;
        }
        tokens -= 1;
        rank[i] = if after < n {
            vocab.rank(&piece[i..end[after] as usize])
        } else {
            NONE
        };
        if rank[i] != NONE {
            heap.push(Reverse((rank[i], i as u32)));
        }
        if i > 0 {
            let p = prev[i] as usize;
            rank[p] = vocab.rank(&piece[p..after]);
            if rank[p] != NONE {
                heap.push(Reverse((rank[p], p as u32)));
            }
        }
    }
    let mut at = 0;
    while at < n {
        at = end[at] as usize;
        visit(at);
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tokenizer::{Encoding, ENCODING_NAMES};

    /// The rule written as plainly as possible (O(n) lookups per merge): the token ends,
    /// and the rank of each merge in the order they happen.
    fn naive_run(vocab: &Vocab, piece: &[u8]) -> (Vec<usize>, Vec<Rank>) {
        let mut bounds: Vec<usize> = (0..=piece.len()).collect();
        let mut merges = Vec::new();
        loop {
            let mut best = (NONE, 0);
            for i in 0..bounds.len().saturating_sub(2) {
                let r = vocab.rank(&piece[bounds[i]..bounds[i + 2]]);
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == NONE {
                break;
            }
            merges.push(best.0);
            bounds.remove(best.1 + 1);
        }
        (bounds[1..].to_vec(), merges)
    }

    fn naive(vocab: &Vocab, piece: &[u8]) -> Vec<usize> {
        naive_run(vocab, piece).0
    }

    fn vocab_of(name: &str) -> &'static Vocab {
        &Encoding::by_name(name).unwrap().inner.vocab
    }

    /// A vocabulary of every byte and then `tokens`, in rank order.
    fn vocab_with(tokens: &[&[u8]]) -> Vocab {
        let mut data = Vec::new();
        for b in 0..=255u8 {
            data.extend([1, b]);
        }
        for t in tokens {
            data.push(t.len() as u8);
            data.extend_from_slice(t);
        }
        Vocab::load(Box::leak(data.into_boxed_slice()))
    }

    /// The two facts `units.rs` builds on: merging a token's own bytes gives back the
    /// token, and the ranks of the merges that build it never fall.
    fn assert_merges_to_itself_with_rising_ranks(name: &str, vocab: &Vocab) {
        for rank in 0..vocab.len() as Rank {
            let token = vocab.token(rank);
            let (ends, merges) = naive_run(vocab, token);
            assert_eq!(
                ends,
                [token.len()],
                "{name}: token {rank} does not merge to itself"
            );
            assert!(
                merges.windows(2).all(|w| w[0] <= w[1]),
                "{name}: token {rank} is built with falling ranks {merges:?}"
            );
        }
    }

    #[test]
    fn every_token_merges_to_itself_with_rising_ranks() {
        for name in ENCODING_NAMES {
            assert_merges_to_itself_with_rising_ranks(name, vocab_of(name));
        }
    }

    struct XorShift(u64);
    impl XorShift {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Merges with `scan`, both ways: the tokens from bytes, and from characters if the
    /// merge from characters was not given up.
    fn both_scans(vocab: &Vocab, bytes: &[u8]) -> (Vec<usize>, Option<Vec<usize>>) {
        let mut by_bytes = Vec::new();
        scan::<{ SCAN_LIMIT + 1 }, false>(vocab, bytes, &mut |e| by_bytes.push(e));
        let mut by_units = Vec::new();
        let kept = scan::<{ SCAN_LIMIT + 1 }, true>(vocab, bytes, &mut |e| by_units.push(e));
        (by_bytes, kept.map(|_| by_units))
    }

    /// On both vocabularies, merging from whole characters gives the tokens merging from
    /// bytes gives — on strings that put every kind of neighbour next to characters of
    /// two and three bytes (and on arbitrary byte ranges of them, so that characters are
    /// cut at the edges) — and is never given up.
    #[test]
    fn characters_and_bytes_merge_alike() {
        let pool = [
            "中", "国", "人", "的", "一", "是", "我们", "中国", "。", "，", "東", "京", "の", "カ",
            "ー", "ｶ", "ﾀ", "한", "국", "어", "ж", "в", "а", "Ё", "é", "ß", "ا", "ل", "ש", "ก",
            "ไ", "्", "क", "\u{301}", "😀", "👍🏽", "\u{FFFD}", " ", "  ", "\n", "a", "T", "1", "'",
            ".", "ſ", "\u{a0}", "\u{3000}", "\u{85}",
        ];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for name in ENCODING_NAMES {
            let vocab = vocab_of(name);
            let (mut tried, mut with_characters) = (0, 0);
            for _ in 0..20_000 {
                let words = 1 + rng.below(30);
                let text: String = (0..words).map(|_| pool[rng.below(pool.len())]).collect();
                let bytes = text.as_bytes();
                let from = rng.below(3).min(bytes.len() - 1);
                let to = bytes.len() - rng.below(3).min(bytes.len() - from - 1);
                for piece in [bytes, &bytes[from..to]] {
                    if !(2..=SCAN_LIMIT).contains(&piece.len()) {
                        continue;
                    }
                    let (by_bytes, by_units) = both_scans(vocab, piece);
                    let by_units = by_units.unwrap_or_else(|| {
                        panic!("{name}: merge from characters given up on {piece:?}")
                    });
                    assert_eq!(
                        by_units,
                        by_bytes,
                        "{name}: {:?}",
                        String::from_utf8_lossy(piece)
                    );
                    assert_eq!(naive(vocab, piece), by_bytes, "{name}: {piece:?}");
                    let mut got = Vec::new();
                    assert_eq!(merge(vocab, piece, &mut |e| got.push(e)), by_bytes.len());
                    assert_eq!(got, by_bytes);
                    tried += 1;
                    let (mut starts, mut own) = ([0u16; SCAN_LIMIT + 1], [0; SCAN_LIMIT + 1]);
                    if vocab.units(piece, &mut starts, &mut own) < piece.len() {
                        with_characters += 1;
                    }
                }
            }
            // Not vacuous: most strings had characters merged whole.
            assert!(
                with_characters * 2 > tried,
                "{name}: {with_characters} of {tried}"
            );
        }
    }

    /// A character starts whole exactly when no token joining part of it to its
    /// neighbour ranks below it; either way the tokens are those of the plain rule.
    #[test]
    fn characters_start_whole_only_where_nothing_can_join_them_earlier() {
        let vocab = vocab_with(&[
            b" \xd0",          // 256: a space and the first byte of a Cyrillic letter
            "ж".as_bytes(),    // 257
            b"\xe4\xb8",       // 258
            b"\xad!",          // 259: the last byte of 中 and "!"
            "中".as_bytes(),   // 260
            "жж".as_bytes(),   // 261
            "中中".as_bytes(), // 262
            " ж".as_bytes(),   // 263
            b"a\xe4\xb8",      // 264: "a" and the first two bytes of 中
            "中!".as_bytes(),  // 265
            "a中".as_bytes(),  // 266
        ]);
        assert_merges_to_itself_with_rising_ranks("test", &vocab);
        let units = |s: &str| {
            let (mut starts, mut own) = ([0u16; 64], [0; 64]);
            let n = vocab.units(s.as_bytes(), &mut starts, &mut own);
            starts[..n].to_vec()
        };
        assert_eq!(units("жж"), [0, 2]);
        assert_eq!(units(" ж"), [0, 1, 2], "' \\xd0' ranks below ж");
        assert_eq!(units("ж "), [0, 2]);
        assert_eq!(units("中中"), [0, 3]);
        assert_eq!(units("中!"), [0, 1, 2, 3], "'\\xad!' ranks below 中");
        assert_eq!(units("!中"), [0, 1]);
        assert_eq!(units("a中"), [0, 1], "'a\\xe4\\xb8' ranks above 中");
        let pool = [" ", "ж", "中", "!", "a", "b"];
        let mut rng = XorShift(7);
        for _ in 0..5_000 {
            let words = 1 + rng.below(12);
            let text: String = (0..words).map(|_| pool[rng.below(pool.len())]).collect();
            let piece = text.as_bytes();
            if piece.len() < 2 {
                continue;
            }
            let (by_bytes, by_units) = both_scans(&vocab, piece);
            assert_eq!(by_bytes, naive(&vocab, piece), "{text:?}");
            assert_eq!(by_units.as_ref(), Some(&by_bytes), "{text:?}");
        }
    }

    /// Long pieces that repeat (runs of one character, short patterns), with and without
    /// one different character somewhere: the chunks reuse earlier chunks' tokens and
    /// junction answers, and the result is still the byte-pair encoding.
    #[test]
    fn repeated_chunks_merge_exactly() {
        let patterns = [
            "a", "ab", "abc", "=-", "中", "ж", "ab中", "    x", "aaaaaaab", "😀",
        ];
        let mut rng = XorShift(11);
        for name in ENCODING_NAMES {
            let vocab = vocab_of(name);
            for pattern in patterns {
                for len in [65, 100, 257, 1000, 2049, 3001] {
                    let char_start = |s: &str, mut i: usize| {
                        while !s.is_char_boundary(i) {
                            i -= 1;
                        }
                        i
                    };
                    let mut text = pattern.repeat(len / pattern.len() + 1);
                    text.truncate(char_start(&text, len));
                    let mut odd = text.clone();
                    let at = char_start(&odd, rng.below(odd.len()));
                    odd.insert(at, if rng.below(2) == 0 { 'Q' } else { '国' });
                    for piece in [text.as_bytes(), odd.as_bytes()] {
                        let mut want = Vec::new();
                        merge_heap(vocab, piece, &mut |e| want.push(e));
                        let mut got = Vec::new();
                        assert_eq!(merge(vocab, piece, &mut |e| got.push(e)), want.len());
                        assert_eq!(got, want, "{name}: {pattern:?} x {len}");
                    }
                }
            }
        }
    }

    fn test_vocab() -> Vocab {
        let mut data = Vec::new();
        for b in 0..=255u8 {
            data.extend([1, b]);
        }
        // Ranks chosen so that ties and re-merges happen: "aa" cheap, "aaa" and "aaaa"
        // dearer, "ab", "ba", "aab", "abab".
        for t in [
            &b"aa"[..],
            b"ab",
            b"ba",
            b"aaaa",
            b"aab",
            b"abab",
            b"aaa",
            b"bb",
        ] {
            data.push(t.len() as u8);
            data.extend_from_slice(t);
        }
        Vocab::load(Box::leak(data.into_boxed_slice()))
    }

    #[test]
    fn scan_and_heap_agree_with_the_plain_rule() {
        let vocab = test_vocab();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 1..700 {
            for _ in 0..4 {
                let piece: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        [b'a', b'a', b'b', b'c'][(state % 4) as usize]
                    })
                    .collect();
                let want = naive(&vocab, &piece);
                let mut got = Vec::new();
                if piece.len() >= 2 {
                    assert_eq!(merge_heap(&vocab, &piece, &mut |e| got.push(e)), want.len());
                    assert_eq!(got, want, "heap: {:?}", String::from_utf8_lossy(&piece));
                }
                if (2..=SCAN_LIMIT).contains(&piece.len()) {
                    got.clear();
                    assert_eq!(
                        merge_scan::<{ SCAN_LIMIT + 1 }>(&vocab, &piece, &mut |e| got.push(e)),
                        want.len()
                    );
                    assert_eq!(got, want, "scan: {:?}", String::from_utf8_lossy(&piece));
                }
                got.clear();
                assert_eq!(merge(&vocab, &piece, &mut |e| got.push(e)), want.len());
                assert_eq!(got, want, "chunked: {:?}", String::from_utf8_lossy(&piece));
                assert_eq!(count(&vocab, &piece), want.len());
            }
        }
    }
}
