//! Whole characters as the starting units of byte-pair merging, where that is exact.
//!
//! Byte-pair merging starts from single bytes, so a Chinese character (three UTF-8 bytes)
//! costs two merges before it can meet its neighbours, and a Cyrillic one (two bytes) one
//! merge. Starting instead from the character, when it is a token, saves most of the work
//! on text in those scripts. It gives the same tokens as starting from bytes when nothing
//! can join part of the character to a neighbour before the character is complete. This
//! module decides that, character by character, from the bytes around it.
//!
//! Why it is exact. Two facts about the two vocabularies, checked for every token by the
//! unit test `every_token_merges_to_itself_with_rising_ranks` (`bpe.rs`): merging a
//! token's own bytes gives back the token, and the merges that build it come in order of
//! rank, never falling. It follows that every merge run from bytes merges in order of
//! rank, never falling (a pair that a merge makes possible, once merged, is a token built
//! from the part just made, so it ranks above it). A character `c` of rank `R(c)` is
//! therefore complete by the time the run passes rank `R(c)`, and until then only merges
//! of lower rank happen. The first merge that joins part of an incomplete `c` to a
//! neighbour makes a token that either *starts* with the last one or two bytes of `c`
//! followed by the byte `q` after `c`, or *ends* with the byte `p` before `c` followed by
//! the first one or two bytes of `c`. When every token of those four shapes (for these
//! bytes) ranks above `R(c)` — the [`Crossings`] table keeps the lowest rank of each shape
//! and bytes — no such merge can happen before `c` is complete, and `c` can enter the
//! merge as one unit. With every unit chosen that way, the merge from units makes the
//! merges that the merge from bytes makes between whole units, in the same order,
//! provided each of its merges ranks above both of its parts (so that the parts exist at
//! that point of the run from bytes). `bpe.rs` checks this as it goes and starts again
//! from bytes when a merge does not (in the tests and on the agreement corpus, none has
//! to). Characters of four bytes are never units.

use super::vocab::{Rank, NONE};

/// Whether `b` is a UTF-8 continuation byte (`10xxxxxx`).
#[inline]
pub(super) fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The four shapes of token that join part of a multi-byte character to a neighbour.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `... p c1`: ends with a character's first byte, after at least one byte.
    EndsWithFirst = 0,
    /// `... p c1 c2`: ends with the first two bytes of a three-byte character.
    EndsWithFirstTwo = 1,
    /// `cn q ...`: starts with a character's last byte, then at least one byte.
    StartsWithLast = 2,
    /// `c2 c3 q ...`: starts with the last two bytes of a three-byte character.
    StartsWithLastTwo = 3,
}

/// The key of a shape and its two or three bytes.
#[inline]
fn key(shape: Shape, bytes: u32) -> u32 {
    ((shape as u32) << 24) | bytes | (1 << 31)
}

/// The lowest rank of the tokens of each shape and bytes (a few hundred keys in the
/// OpenAI vocabularies), in an open-addressing table, and the byte pairs at which a token
/// of any shape joins across (its `p c1` or its `cn q`), as a bit set: at most other
/// boundaries between characters one bit says that no token can join across.
pub(super) struct Crossings {
    keys: Box<[u32]>,
    ranks: Box<[Rank]>,
    /// `32 - log2(slots)`: a key's first slot is the top bits of its hash.
    shift: u32,
    /// One bit per pair of bytes `(x, y)`: some token of one of the shapes joins the byte
    /// `x` to the byte `y` that follows it.
    joins: Box<[u64]>,
}

const MUL: u32 = 0x9E37_79B1;

/// The bit of the byte pair `(x, y)` in [`Crossings::joins`]: word and mask.
#[inline]
fn join_bit(x: u8, y: u8) -> (usize, u64) {
    let i = (usize::from(x) << 8) | usize::from(y);
    (i >> 6, 1 << (i & 63))
}

impl Crossings {
    /// Collects the shapes from every token of a vocabulary (`tokens`, in rank order).
    pub(super) fn build<'t>(tokens: impl Iterator<Item = &'t [u8]>) -> Crossings {
        let mut found: Vec<(u32, Rank, u8, u8)> = Vec::new();
        for (rank, t) in tokens.enumerate() {
            let rank = rank as Rank;
            let n = t.len();
            if n < 2 {
                continue;
            }
            let b = |i: usize| u32::from(t[i]);
            if t[n - 1] >= 0xC0 {
                let k = key(Shape::EndsWithFirst, (b(n - 2) << 8) | b(n - 1));
                found.push((k, rank, t[n - 2], t[n - 1]));
            }
            if n >= 3 && t[n - 2] >= 0xE0 && is_continuation(t[n - 1]) {
                let bytes = (b(n - 3) << 16) | (b(n - 2) << 8) | b(n - 1);
                found.push((
                    key(Shape::EndsWithFirstTwo, bytes),
                    rank,
                    t[n - 3],
                    t[n - 2],
                ));
            }
            if is_continuation(t[0]) {
                let k = key(Shape::StartsWithLast, (b(0) << 8) | b(1));
                found.push((k, rank, t[0], t[1]));
                if n >= 3 && is_continuation(t[1]) {
                    let bytes = (b(0) << 16) | (b(1) << 8) | b(2);
                    found.push((key(Shape::StartsWithLastTwo, bytes), rank, t[1], t[2]));
                }
            }
        }
        let slots = (found.len() * 2).next_power_of_two().max(64);
        let mut table = Crossings {
            keys: vec![0; slots].into_boxed_slice(),
            ranks: vec![NONE; slots].into_boxed_slice(),
            shift: 32 - slots.trailing_zeros(),
            joins: vec![0; (1 << 16) / 64].into_boxed_slice(),
        };
        let mask = slots - 1;
        for (k, rank, x, y) in found {
            let (word, bit) = join_bit(x, y);
            table.joins[word] |= bit;
            let mut slot = (k.wrapping_mul(MUL) >> table.shift) as usize;
            while table.keys[slot] != 0 && table.keys[slot] != k {
                slot = (slot + 1) & mask;
            }
            table.keys[slot] = k;
            table.ranks[slot] = table.ranks[slot].min(rank);
        }
        table
    }

    /// The lowest rank of a token of `shape` with `bytes`, `NONE` if there is none.
    fn lowest(&self, shape: Shape, bytes: u32) -> Rank {
        let k = key(shape, bytes);
        let mask = self.keys.len() - 1;
        let mut slot = (k.wrapping_mul(MUL) >> self.shift) as usize;
        loop {
            match self.keys[slot] {
                0 => return NONE,
                found if found == k => return self.ranks[slot],
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// Whether some token could join the byte `x` to the byte `y` after it (if not, no
    /// token of the four shapes joins across that boundary).
    #[inline]
    fn may_join(&self, x: u8, y: u8) -> bool {
        let (word, bit) = join_bit(x, y);
        self.joins[word] & bit != 0
    }

    /// Whether the character `s[at..at + len]` (two or three bytes, a token of rank
    /// `rank`) is complete before any merge can join part of it to the bytes around it in
    /// `s`.
    #[inline(always)]
    pub(super) fn keeps_whole(&self, s: &[u8], at: usize, len: usize, rank: Rank) -> bool {
        let end = at + len;
        (at == 0 || !self.may_join(s[at - 1], s[at]) || self.left_holds(s, at, len, rank))
            && (end == s.len()
                || !self.may_join(s[end - 1], s[end])
                || self.right_holds(s, at, len, rank))
    }

    /// No token joining the byte before the character to its first one or two bytes
    /// ranks at or below `rank`.
    #[cold]
    fn left_holds(&self, s: &[u8], at: usize, len: usize, rank: Rank) -> bool {
        let (p, c0) = (u32::from(s[at - 1]), u32::from(s[at]));
        self.lowest(Shape::EndsWithFirst, (p << 8) | c0) > rank
            && (len < 3
                || self.lowest(
                    Shape::EndsWithFirstTwo,
                    (p << 16) | (c0 << 8) | u32::from(s[at + 1]),
                ) > rank)
    }

    /// No token joining the character's last one or two bytes to the byte after it ranks
    /// at or below `rank`.
    #[cold]
    fn right_holds(&self, s: &[u8], at: usize, len: usize, rank: Rank) -> bool {
        let end = at + len;
        let (last, q) = (u32::from(s[end - 1]), u32::from(s[end]));
        self.lowest(Shape::StartsWithLast, (last << 8) | q) > rank
            && (len < 3
                || self.lowest(
                    Shape::StartsWithLastTwo,
                    (u32::from(s[end - 2]) << 16) | (last << 8) | q,
                ) > rank)
    }
}
