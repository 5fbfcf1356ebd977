//! A fast, non-cryptographic hasher for the engine's internal maps (contents in
//! Deduplicate, folded kinds in the slicers). The maps are built from one run's own input
//! and dropped at the end of it, so HashDoS resistance buys nothing here, while SipHash
//! over every content string dominated the Deduplicate stage.

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
