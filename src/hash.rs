//! Fast, non-cryptographic hashing for the engine: [`FastMap`] (FxHash) for the small
//! internal maps (kind weights, Frequency's tag sets), and [`hash_bytes`] for the content
//! hash every item carries, which Deduplicate groups by. The maps are built from one
//! run's own input and dropped at the end of it, so HashDoS resistance buys nothing here,
//! while SipHash over every content string dominated the Deduplicate stage.

use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate hashing over 8-byte words (the FxHash construction).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8-byte chunk")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// MurmurHash3's final avalanche: every input bit affects every output bit.
#[inline]
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Mixes the hash `next` into the running hash `acc` of a sequence (order matters).
pub(crate) fn combine(acc: u64, next: u64) -> u64 {
    fmix64((acc.rotate_left(5) ^ next).wrapping_mul(SEED))
}

const LANE_KEYS: [u64; 4] = [
    0x9e37_79b9_7f4a_7c15,
    0xc2b2_ae3d_27d4_eb4f,
    0x1656_67b1_9e37_79f9,
    0x85eb_ca77_c2b2_ae63,
];

/// Hashes a byte string whose hash is used for grouping (Deduplicate), where both the
/// high bits (partitions) and the low bits (table slots) must be well mixed.
///
/// FxHash is one multiply chain, so long strings wait on one multiplication per 8 bytes.
/// Here four independent lanes take 32 bytes per step (their multiplications overlap);
/// the last partial block is zero-padded, the length is mixed in (so padding cannot
/// collide with real zero bytes), and the lanes are merged by rotations and finished by
/// an avalanche (MurmurHash3's fmix64). Not a cryptographic hash: equal hashes are always
/// confirmed by comparing the bytes.
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    hash_seeing_words(bytes, |_| {})
}

/// [`hash_bytes`] of `bytes` when every byte is ASCII, `None` otherwise: one pass reads
/// each word for both, so a string that is checked and hashed (an item's content) is
/// read once.
#[inline]
pub(crate) fn hash_if_ascii(bytes: &[u8]) -> Option<u64> {
    let mut any = 0u64;
    let hash = hash_seeing_words(bytes, |word| any |= word);
    (any & 0x8080_8080_8080_8080 == 0).then_some(hash)
}

/// [`hash_bytes`]'s algorithm, showing `seen` every word it absorbs; together they cover
/// every byte of `bytes` (the last block's padding adds only zero bytes).
#[inline(always)]
fn hash_seeing_words(bytes: &[u8], mut seen: impl FnMut(u64)) -> u64 {
    let mut absorb = |lanes: &mut [u64; 4], words: [u64; 4]| {
        for (i, lane) in lanes.iter_mut().enumerate() {
            seen(words[i]);
            *lane = (*lane ^ words[i])
                .wrapping_mul(LANE_KEYS[i])
                .rotate_left(31);
        }
    };
    let mut lanes = LANE_KEYS;
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        let word = |i: usize| u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().expect("word"));
        absorb(&mut lanes, [word(0), word(1), word(2), word(3)]);
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        absorb(&mut lanes, padded_words(bytes, rest.len()));
    }
    let merged = (bytes.len() as u64).wrapping_mul(LANE_KEYS[0])
        ^ lanes[0].rotate_left(1)
        ^ lanes[1].rotate_left(17)
        ^ lanes[2].rotate_left(33)
        ^ lanes[3].rotate_left(49);
    fmix64(merged)
}

/// The four little-endian words of the last `rest` bytes of `bytes` (`rest` < 32) padded
/// with zero bytes to a 32-byte block, read in place: a word the string ends inside is
/// the string's last 8 bytes shifted down (or, for a string shorter than 8 bytes, its
/// bytes one by one), so no copy of the tail is made. Inlined, with each word computed
/// inline: built by `std::array::from_fn` in a call, the array came back through memory,
/// and reading it stalled on the four stores just made.
#[inline(always)]
fn padded_words(bytes: &[u8], rest: usize) -> [u64; 4] {
    let start = bytes.len() - rest;
    let word = |i: usize| tail_word(bytes, start + i * 8);
    [word(0), word(1), word(2), word(3)]
}

/// The little-endian word of `bytes` at `from`, zero-padded past the end (see
/// [`padded_words`]).
#[inline(always)]
fn tail_word(bytes: &[u8], from: usize) -> u64 {
    let end = bytes.len();
    if from + 8 <= end {
        u64::from_le_bytes(bytes[from..from + 8].try_into().expect("word"))
    } else if from >= end {
        0
    } else if end >= 8 {
        let last = u64::from_le_bytes(bytes[end - 8..].try_into().expect("word"));
        last >> (8 * (from + 8 - end))
    } else {
        bytes[from..]
            .iter()
            .rev()
            .fold(0u64, |word, &b| (word << 8) | u64::from(b))
    }
}

/// `HashMap` with the fast hasher.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash_of<T: Hash + ?Sized>(v: &T) -> u64 {
        let mut h = FxHasher::default();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn hash_bytes_separates_lengths_blocks_and_spreads_bits() {
        let long = "x".repeat(100);
        assert_eq!(
            hash_bytes(long.as_bytes()),
            hash_bytes(long.clone().as_bytes())
        );
        // Trailing zero bytes, lengths around the block and word sizes.
        let mut seen = std::collections::HashSet::new();
        for len in 0..80 {
            assert!(
                seen.insert(hash_bytes(&vec![0u8; len])),
                "zeros of length {len}"
            );
        }
        // Swapped 32-byte blocks differ.
        let a: Vec<u8> = (0..64).collect();
        let mut b = a[32..].to_vec();
        b.extend_from_slice(&a[..32]);
        assert_ne!(hash_bytes(&a), hash_bytes(&b));
        // Similar strings spread over the top 8 bits and the low 8 bits alike.
        let (mut top, mut low) = ([0u32; 256], [0u32; 256]);
        for i in 0..25_600 {
            let h = hash_bytes(format!("message {i}: some text").as_bytes());
            top[(h >> 56) as usize] += 1;
            low[(h & 0xff) as usize] += 1;
        }
        assert!(
            top.iter().chain(&low).all(|&c| (50..=160).contains(&c)),
            "{top:?} {low:?}"
        );
    }

    /// Reading the tail in place gives the hash of the zero-padded block it replaced, at
    /// every length (the hash is part of the prefix state format).
    #[test]
    fn the_tail_hashes_as_a_zero_padded_block() {
        fn padded_hash(bytes: &[u8]) -> u64 {
            let mut lanes = LANE_KEYS;
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().div_ceil(32) * 32, 0);
            for block in padded.chunks_exact(32) {
                for (i, lane) in lanes.iter_mut().enumerate() {
                    let word = u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().unwrap());
                    *lane = (*lane ^ word).wrapping_mul(LANE_KEYS[i]).rotate_left(31);
                }
            }
            fmix64(
                (bytes.len() as u64).wrapping_mul(LANE_KEYS[0])
                    ^ lanes[0].rotate_left(1)
                    ^ lanes[1].rotate_left(17)
                    ^ lanes[2].rotate_left(33)
                    ^ lanes[3].rotate_left(49),
            )
        }
        let text: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8 + 1).collect();
        for n in 0..text.len() {
            assert_eq!(
                hash_bytes(&text[..n]),
                padded_hash(&text[..n]),
                "length {n}"
            );
        }
    }

    /// The one-pass check gives `hash_bytes`'s value for ASCII at every length, and
    /// `None` when any one byte (at every position, of every high value class) is not.
    #[test]
    fn hash_if_ascii_is_hash_bytes_of_ascii_and_none_otherwise() {
        let text: Vec<u8> = (0..160u32).map(|i| (i * 37 % 127) as u8).collect();
        for n in 0..text.len() {
            assert_eq!(
                hash_if_ascii(&text[..n]),
                Some(hash_bytes(&text[..n])),
                "length {n}"
            );
            for at in 0..n {
                for high in [0x80u8, 0xC3, 0xFF] {
                    let mut bad = text[..n].to_vec();
                    bad[at] = high;
                    assert_eq!(hash_if_ascii(&bad), None, "length {n}, byte {at}");
                }
            }
        }
    }

    #[test]
    fn equal_values_hash_equal_and_maps_work() {
        assert_eq!(hash_of("abcdefghij"), hash_of(&String::from("abcdefghij")));
        assert_ne!(hash_of("abcdefghij"), hash_of("abcdefghik"));
        let mut m: FastMap<&str, usize> = FastMap::default();
        for (i, w) in ["a", "bb", "a", "ccc"].into_iter().enumerate() {
            m.entry(w).or_insert(i);
        }
        assert_eq!((m.len(), m["a"], m["ccc"]), (3, 0, 3));
    }
}
