//! Byte-pair merging of one piece of text (a match of the split pattern).
//!
//! The rule is OpenAI's: start from single bytes and repeatedly merge the adjacent pair
//! whose concatenation is the token of lowest rank, the leftmost such pair when several
//! are equal, until no adjacent pair is a token. Short pieces are merged in a small array
//! (a scan per merge, as fast as anything for a few dozen bytes); long ones with a heap and
//! a linked list, O(n log n), so that a megabyte without a split point stays cheap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::vocab::{Rank, Vocab, NONE};

/// Pieces up to this many bytes are merged by scanning.
const SCAN_LIMIT: usize = 96;

/// Calls `visit` with the end offset (in `piece`) of each token of the piece, in order,
/// and returns the number of tokens.
pub(super) fn merge(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    match piece.len() {
        0 => 0,
        1 => {
            visit(1);
            1
        }
        n if n <= SCAN_LIMIT => merge_scan(vocab, piece, visit),
        _ => merge_heap(vocab, piece, visit),
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

fn merge_scan(vocab: &Vocab, piece: &[u8], visit: &mut dyn FnMut(usize)) -> usize {
    // parts[i] = (start of part i, rank of parts i and i+1 merged); a last entry marks
    // the end of the piece.
    let mut parts = [(0u32, NONE); SCAN_LIMIT + 1];
    let n = piece.len();
    for (i, part) in parts.iter_mut().enumerate().take(n + 1) {
        *part = (i as u32, NONE);
    }
    for i in 0..n - 1 {
        parts[i].1 = vocab.rank(&piece[i..i + 2]);
    }
    let mut len = n + 1;
    // The rank of parts i and i+1 merged, given the current boundaries.
    let pair = |parts: &[(u32, Rank)], len: usize, i: usize| -> Rank {
        if i + 2 < len {
            vocab.rank(&piece[parts[i].0 as usize..parts[i + 2].0 as usize])
        } else {
            NONE
        }
    };
    loop {
        let mut best = NONE;
        let mut at = 0;
        for (i, part) in parts[..len - 1].iter().enumerate() {
            if part.1 < best {
                best = part.1;
                at = i;
            }
        }
        if best == NONE {
            break;
        }
        // Merge parts `at` and `at + 1`: drop the boundary between them.
        parts.copy_within(at + 2..len, at + 1);
        len -= 1;
        parts[at].1 = pair(&parts, len, at);
        if at > 0 {
            parts[at - 1].1 = pair(&parts, len, at - 1);
        }
    }
    for part in &parts[1..len] {
        visit(part.0 as usize);
    }
    len - 1
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

    /// The rule written as plainly as possible: O(n²) per merge.
    fn naive(vocab: &Vocab, piece: &[u8]) -> Vec<usize> {
        let mut bounds: Vec<usize> = (0..=piece.len()).collect();
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
            bounds.remove(best.1 + 1);
        }
        bounds[1..].to_vec()
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
        for len in 1..300 {
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
                    assert_eq!(merge_scan(&vocab, &piece, &mut |e| got.push(e)), want.len());
                    assert_eq!(got, want, "scan: {:?}", String::from_utf8_lossy(&piece));
                }
                assert_eq!(count(&vocab, &piece), want.len());
            }
        }
    }
}
