//! A vocabulary: token bytes ↔ rank, with the lookups byte-pair merging needs.
//!
//! The embedded file lists every token in rank order as one length byte followed by the
//! token's bytes (`tests/tokenizer_data.rs` checks it against an independent copy). On
//! load, the tokens stay where they are (in the library's read-only data) and three
//! lookup structures are built:
//!
//! * the rank of each single byte (every byte is a token);
//! * the rank of each two-byte token, in a direct 65 536-entry table;
//! * an open-addressing hash table for longer tokens. A token of at most 7 bytes is its
//!   own key (its bytes and its length packed into a `u64`), so finding it costs one
//!   probe sequence and no byte comparison; a longer token's key is a hash with the top
//!   bit set, confirmed by comparing the bytes;
//! * for merging from whole characters (`units.rs`): the rank of each three-byte
//!   character that is a token (a compact table) and the tokens that join part of a
//!   character to a neighbour ([`Crossings`]).

use super::units::{is_continuation, Crossings};

/// Rank of a token; `NONE` marks "not a token".
pub(super) type Rank = u32;
/// Not a token.
pub(super) const NONE: Rank = u32::MAX;

const LONG_KEY: u64 = 1 << 63;
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

pub(super) struct Vocab {
    /// The embedded file.
    data: &'static [u8],
    /// Start of each token's bytes in `data`, by rank; the length byte precedes it.
    starts: Vec<u32>,
    byte_rank: [Rank; 256],
    pair_rank: Box<[Rank]>,
    /// The open-addressing table of tokens of 3 bytes and more: each slot is a key (two
    /// words, low then high; 0 for an empty slot) and a rank, together so that a probe
    /// reads one cache line.
    slots: Box<[[u32; 3]]>,
    /// `64 - log2(slots)`: a key's first slot is the top bits of its hash.
    shift: u32,
    max_len: usize,
    /// The three-byte tokens shaped like a UTF-8 character.
    char3: Char3Ranks,
    crossings: Crossings,
}

/// The key of a token of 1 to 7 bytes: the bytes, little-endian, and the length in the top
/// byte (never 0, so 0 marks an empty slot).
#[inline]
fn short_key(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!((1..=7).contains(&n));
    let packed = if n >= 4 {
        // Two overlapping 4-byte reads cover 4 to 7 bytes; the overlap ORs equal bytes.
        let lo = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        let hi = u32::from_le_bytes(bytes[n - 4..].try_into().expect("4 bytes"));
        u64::from(lo) | (u64::from(hi) << (8 * (n - 4)))
    } else {
        bytes
            .iter()
            .enumerate()
            .fold(0u64, |k, (i, &b)| k | (u64::from(b) << (8 * i)))
    };
    packed | ((n as u64) << 56)
}

/// The key of a token of 8 bytes or more: a hash of its bytes, top bit set.
#[inline(always)]
fn long_key(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let mix = |h: u64, w: u64| (h.rotate_left(26) ^ w).wrapping_mul(MUL);
    let mut h = (n as u64).wrapping_mul(MUL);
    // Whole words from the start, then the last 8 bytes (overlapping the previous word
    // unless the length is a multiple of 8): 8 to 16 bytes are two reads, no loop.
    let mut at = 0;
    while at + 8 < n {
        h = mix(h, word(at));
        at += 8;
    }
    mix(h, word(n - 8)) | LONG_KEY
}

/// The ranks of the three-byte tokens shaped like a UTF-8 character (a lead byte
/// `1110xxxx`, two continuation bytes: 4 471 of `o200k_base`'s tokens, 969 of
/// `cl100k_base`'s), by the 16 bits that are not fixed. For each group of 8 indices, a
/// word holds which of them are tokens (low byte) and how many tokens the groups before
/// have (the rest); the ranks follow in index order. About 50 KB instead of a 256 KB
/// table, for one more load per lookup.
#[derive(Default)]
struct Char3Ranks {
    groups: Box<[u32]>,
    ranks: Box<[Rank]>,
}

/// The number of bits set in each byte.
static ONES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).count_ones() as u8;
        i += 1;
    }
    t
};

impl Char3Ranks {
    /// From `(index, rank)` pairs (indices distinct, below 65 536).
    fn new(mut tokens: Vec<(usize, Rank)>) -> Char3Ranks {
        tokens.sort_unstable();
        let mut groups = vec![0u32; (1 << 16) / 8];
        for &(index, _) in &tokens {
            groups[index / 8] |= 1 << (index % 8);
        }
        let mut total = 0u32;
        for group in &mut groups {
            let here = group.count_ones();
            *group |= total << 8;
            total += here;
        }
        Char3Ranks {
            groups: groups.into_boxed_slice(),
            ranks: tokens.iter().map(|&(_, rank)| rank).collect(),
        }
    }

    /// The rank of the token at `index` (below 65 536), or `NONE`.
    #[inline(always)]
    fn get(&self, index: usize) -> Rank {
        let group = self.groups[index / 8];
        let bit = index % 8;
        if group & (1 << bit) == 0 {
            return NONE;
        }
        let below = ONES[(group & ((1 << bit) - 1)) as usize];
        self.ranks[(group >> 8) as usize + usize::from(below)]
    }
}

/// The index in `Char3Ranks` of three bytes shaped like a UTF-8 character (`1110xxxx`,
/// then two continuation bytes).
#[inline(always)]
fn char3_index(a: u8, b: u8, c: u8) -> usize {
    (usize::from(a & 0x0F) << 12) | (usize::from(b & 0x3F) << 6) | usize::from(c & 0x3F)
}

impl Vocab {
    /// Builds the lookups over an embedded vocabulary file.
    ///
    /// Panics if the file is malformed (it is part of the build and checked by tests).
    pub(super) fn load(data: &'static [u8]) -> Vocab {
        let mut starts = Vec::with_capacity(data.len() / 7);
        let mut at = 0usize;
        let mut max_len = 0;
        while at < data.len() {
            let len = data[at] as usize;
            assert!(
                len > 0 && at + 1 + len <= data.len(),
                "malformed vocabulary"
            );
            starts.push((at + 1) as u32);
            max_len = max_len.max(len);
            at += 1 + len;
        }
        let slots = (starts.len() * 2).next_power_of_two().max(1024);
        let mut vocab = Vocab {
            data,
            starts,
            byte_rank: [NONE; 256],
            pair_rank: vec![NONE; 1 << 16].into_boxed_slice(),
            // Filled, not zeroed (an empty slot only needs a zero high word): the fill
            // touches the memory in order, where a zeroed allocation would be faulted in
            // page by page at random by the inserts below (a third of the load time).
            slots: vec![[0, 0, NONE]; slots].into_boxed_slice(),
            shift: 64 - slots.trailing_zeros(),
            max_len,
            char3: Char3Ranks::default(),
            crossings: Crossings::build(std::iter::empty()),
        };
        let mut char3 = Vec::new();
        for rank in 0..vocab.starts.len() as Rank {
            let bytes = vocab.token(rank);
            match bytes.len() {
                1 => vocab.byte_rank[bytes[0] as usize] = rank,
                2 => vocab.pair_rank[usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))] = rank,
                _ => {
                    if let [a, b, c] = *bytes {
                        if a & 0xF0 == 0xE0 && is_continuation(b) && is_continuation(c) {
                            char3.push((char3_index(a, b, c), rank));
                        }
                    }
                    vocab.insert(bytes, rank)
                }
            }
        }
        vocab.char3 = Char3Ranks::new(char3);
        vocab.crossings = Crossings::build((0..vocab.starts.len() as Rank).map(|r| vocab.token(r)));
        assert!(
            vocab.byte_rank.iter().all(|&r| r != NONE),
            "every byte must be a token"
        );
        vocab
    }

    fn insert(&mut self, bytes: &[u8], rank: Rank) {
        let key = if bytes.len() <= 7 {
            short_key(bytes)
        } else {
            long_key(bytes)
        };
        let mask = self.slots.len() - 1;
        let mut slot = self.first_slot(key);
        while self.slots[slot][1] != 0 {
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = [key as u32, (key >> 32) as u32, rank];
    }

    /// The first slot to probe for `key`: the top bits of a multiplicative hash.
    #[inline(always)]
    fn first_slot(&self, key: u64) -> usize {
        (key.wrapping_mul(MUL) >> self.shift) as usize
    }

    /// The number of tokens.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The bytes of the token of `rank` (which must be below `len()`).
    #[inline]
    pub(super) fn token(&self, rank: Rank) -> &'static [u8] {
        let start = self.starts[rank as usize] as usize;
        let len = self.data[start - 1] as usize;
        &self.data[start..start + len]
    }

    /// Cuts `s` into the units merging starts from, writing where each starts and its
    /// rank, and returns their number (at most `s.len()`; `starts` gets one more entry,
    /// `s.len()`). A unit is a whole character when the character has two or three bytes,
    /// is a token, and nothing can join part of it to the bytes around it in `s` before it
    /// is complete (`units.rs`); otherwise a single byte.
    #[inline(always)]
    pub(super) fn units(&self, s: &[u8], starts: &mut [u16], own: &mut [Rank]) -> usize {
        let mut parts = 0;
        let mut at = 0;
        while at < s.len() {
            let b = s[at];
            let (mut len, mut rank) = (1, self.byte_rank[b as usize]);
            if b >= 0xC0 {
                let (char_len, char_rank) = self.char_token(&s[at..]);
                if char_rank != NONE && self.crossings.keeps_whole(s, at, char_len, char_rank) {
                    (len, rank) = (char_len, char_rank);
                }
            }
            starts[parts] = at as u16;
            own[parts] = rank;
            parts += 1;
            at += len;
        }
        starts[parts] = s.len() as u16;
        parts
    }

    /// The length and rank of the two- or three-byte character that `s` starts with, if it
    /// is a token; `(1, NONE)` otherwise.
    #[inline(always)]
    fn char_token(&self, s: &[u8]) -> (usize, Rank) {
        match *s {
            [a, b, c, ..] if a & 0xF0 == 0xE0 && is_continuation(b) && is_continuation(c) => {
                (3, self.char3.get(char3_index(a, b, c)))
            }
            [a, b, ..] if a & 0xE0 == 0xC0 && is_continuation(b) => (2, self.pair(a, b)),
            _ => (1, NONE),
        }
    }

    /// The rank of the two-byte string `[a, b]` if it is a token, else `NONE`.
    #[inline]
    pub(super) fn pair(&self, a: u8, b: u8) -> Rank {
        self.pair_rank[usize::from(u16::from_le_bytes([a, b]))]
    }

    /// The rank of `bytes` if they are a token, else `NONE`.
    #[inline(always)]
    pub(super) fn rank(&self, bytes: &[u8]) -> Rank {
        match bytes.len() {
            0 => NONE,
            1 => self.byte_rank[bytes[0] as usize],
            2 => self.pair_rank[usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))],
            _ => self.rank_of_long(bytes),
        }
    }

    /// `rank` for byte strings of at least 3 bytes (what merging looks up after the
    /// first merge).
    #[inline(always)]
    pub(super) fn rank_of_long(&self, bytes: &[u8]) -> Rank {
        if bytes.len() <= 7 {
            self.find(short_key(bytes), |_| true)
        } else if bytes.len() > self.max_len {
            NONE
        } else {
            self.find(long_key(bytes), |rank| self.token(rank) == bytes)
        }
    }

    /// Every key has a nonzero high word (the length byte of a short key, the top bit of
    /// a long one), so a zero high word marks an empty slot.
    #[inline(always)]
    fn find(&self, key: u64, confirm: impl Fn(Rank) -> bool) -> Rank {
        let mask = self.slots.len() - 1;
        let (lo, hi) = (key as u32, (key >> 32) as u32);
        let mut slot = self.first_slot(key);
        loop {
            let [k_lo, k_hi, rank] = self.slots[slot];
            if k_hi == 0 {
                return NONE;
            }
            if k_hi == hi && k_lo == lo && confirm(rank) {
                return rank;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The length of the longest token, in bytes.
    pub(super) fn max_token_len(&self) -> usize {
        self.max_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Vocab {
        // Every byte, then "ab", "abc", "abcdefgh" (a long token).
        let mut data = Vec::new();
        for b in 0..=255u8 {
            data.extend([1, b]);
        }
        for t in [&b"ab"[..], b"abc", b"abcdefgh"] {
            data.push(t.len() as u8);
            data.extend_from_slice(t);
        }
        Vocab::load(Box::leak(data.into_boxed_slice()))
    }

    #[test]
    fn ranks_round_trip() {
        let v = tiny();
        assert_eq!(v.len(), 259);
        for rank in 0..v.len() as Rank {
            assert_eq!(v.rank(v.token(rank)), rank);
        }
        assert_eq!(v.rank(b"abcd"), NONE);
        assert_eq!(v.rank(b"abcdefgi"), NONE);
        assert_eq!(v.rank(b""), NONE);
        assert_eq!(v.rank(b"ba"), NONE);
    }

    /// The compact table of three-byte characters answers as the hash table does, for
    /// every three bytes shaped like a character, in both vocabularies.
    #[test]
    fn three_byte_characters_rank_as_in_the_hash_table() {
        for name in crate::tokenizer::ENCODING_NAMES {
            let v = &crate::tokenizer::Encoding::by_name(name)
                .unwrap()
                .inner
                .vocab;
            let mut tokens = 0;
            for a in 0xE0..=0xEFu8 {
                for b in 0x80..=0xBFu8 {
                    for c in 0x80..=0xBFu8 {
                        let want = v.rank(&[a, b, c]);
                        assert_eq!(
                            v.char3.get(char3_index(a, b, c)),
                            want,
                            "{name}: {a:x} {b:x} {c:x}"
                        );
                        tokens += usize::from(want != NONE);
                    }
                }
            }
            assert!(tokens > 900, "{name}: {tokens}");
        }
    }

    #[test]
    fn short_keys_are_distinct_by_length() {
        assert_ne!(short_key(b"a\0"), short_key(b"a"));
        assert_ne!(short_key(b"abc"), short_key(b"abc\0"));
    }
}
