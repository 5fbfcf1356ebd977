//! A small exact string map for the scorers' configuration tables (tag weights, kind
//! weights), built once per scorer and probed once per item string.
//!
//! A general hash map hashes every byte of the probe before it can compare anything. The
//! keys of a scorer's table are few and short, so this map describes every string by its
//! length and one 64-bit word made of its first bytes (its *head*, see [`head_word`]): a
//! probe computes its head from at most 8 bytes, finds its slot by one multiplication of that
//! word, and compares the length and the head first. Only a string longer than 8 bytes
//! has bytes the head does not describe, and only those are compared afterwards. Strings of
//! up to 8 bytes are therefore matched without any byte loop.
//!
//! The map is exact: it answers a key only for a probe whose bytes equal the key's bytes
//! ([`StrTable`]), or equal them under ASCII case folding ([`StrTable::new_ascii_folded`]).

/// The slot a probe starts at: the top bits of its head (mixed with its length) multiplied
/// by an odd constant whose bits are spread evenly (the golden ratio in 64-bit fixed point).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Marks an empty slot: no string is `usize::MAX` bytes long (allocations stop at
/// `isize::MAX`).
const EMPTY: usize = usize::MAX;

const LOW_SEVEN_BITS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
/// Added to a byte's low seven bits, sets its high bit when they are at least `b'A'`.
const FROM_UPPER_A: u64 = 0x3f3f_3f3f_3f3f_3f3f; // 0x80 - 0x41 per byte
/// Added to a byte's low seven bits, sets its high bit when they are past `b'Z'`.
const PAST_UPPER_Z: u64 = 0x2525_2525_2525_2525; // 0x80 - 0x5b per byte

/// A word that, together with the length, identifies a string of up to 8 bytes, read
/// without touching any byte past the end of `bytes`:
///
/// - 8 bytes or more: the first 8 bytes (little-endian);
/// - 4 to 7 bytes: the first 4 bytes in the low half, the last 4 in the high half (they
///   overlap, but together they cover every byte);
/// - 1 to 3 bytes: the first, middle and last bytes (again covering every byte);
/// - no bytes: 0.
///
/// For a given length every byte of the string sits at fixed places of the word, so two
/// strings of the same length up to 8 bytes have the same word exactly when their bytes are
/// equal; longer strings also need their bytes from 8 on compared.
#[inline]
pub(crate) fn head_word(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    if let Some(first) = bytes.first_chunk::<8>() {
        return u64::from_le_bytes(*first);
    }
    if let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        return u64::from(u32::from_le_bytes(*first))
            | (u64::from(u32::from_le_bytes(*last)) << 32);
    }
    match (bytes.first(), bytes.get(n / 2), bytes.last()) {
        (Some(&a), Some(&b), Some(&c)) => u64::from(a) | u64::from(b) << 8 | u64::from(c) << 16,
        _ => 0,
    }
}

/// `word` with every byte `A`–`Z` mapped to `a`–`z` and every other byte unchanged (the
/// bytes >= 0x80 of UTF-8 sequences included), eight bytes at a time.
#[inline]
pub(crate) fn fold_word(word: u64) -> u64 {
    let low = word & LOW_SEVEN_BITS;
    let from_a = low + FROM_UPPER_A;
    let past_z = low + PAST_UPPER_Z;
    let upper = from_a & !past_z & !word & HIGH_BITS;
    word | (upper >> 2)
}

/// One slot of the open-addressing table: the key's length ([`EMPTY`] when unused), its
/// head word, the key's position in configuration order, and its value.
#[derive(Debug, Clone, Copy)]
struct Slot<V> {
    len: usize,
    head: u64,
    entry: usize,
    value: V,
}

/// An exact map from strings to small `Copy` values, for tables configured once and probed
/// per item (see the module documentation).
///
/// Keys are compared byte for byte (case-sensitive), or under ASCII case folding when the
/// table is built with [`StrTable::new_ascii_folded`] (`A`–`Z` equal `a`–`z`; every other
/// byte, non-ASCII ones included, must be equal).
#[derive(Debug, Clone)]
pub(crate) struct StrTable<V> {
    /// A power of two in length, at most half full, so every probe meets an empty slot.
    slots: Vec<Slot<V>>,
    /// `64 - log2(slots.len())`: the shift that keeps the top bits of the product.
    shift: u32,
    /// The keys in insertion order (for the bytes past the head of long keys).
    keys: Vec<Box<[u8]>>,
    fold: bool,
}

impl<V: Copy + Default> StrTable<V> {
    /// An empty case-sensitive table.
    pub(crate) fn new() -> Self {
        Self::with_folding(false)
    }

    /// An empty table whose keys match under ASCII case folding.
    pub(crate) fn new_ascii_folded() -> Self {
        Self::with_folding(true)
    }

    fn with_folding(fold: bool) -> Self {
        Self {
            slots: Vec::new(),
            shift: 64,
            keys: Vec::new(),
            fold,
        }
    }

    /// The number of keys.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Adds `key` with `value`; returns false (and changes nothing) when an equal key is
    /// already present.
    pub(crate) fn insert(&mut self, key: &str, value: V) -> bool {
        if self.get(key).is_some() {
            return false;
        }
        if 2 * (self.keys.len() + 1) > self.slots.len() {
            self.grow();
        }
        let bytes = key.as_bytes();
        let slot = Slot {
            len: bytes.len(),
            head: self.head(bytes),
            entry: self.keys.len(),
            value,
        };
        self.keys.push(bytes.into());
        self.place(slot);
        true
    }

    /// The value of the key equal to `probe`, if any.
    #[inline]
    pub(crate) fn get(&self, probe: &str) -> Option<V> {
        let bytes = probe.as_bytes();
        let len = bytes.len();
        let head = self.head(bytes);
        let mask = self.slots.len().wrapping_sub(1);
        let mut at = self.start(head, len);
        loop {
            let slot = self.slots.get(at)?;
            if slot.len == EMPTY {
                return None;
            }
            if slot.len == len && slot.head == head && (len <= 8 || self.tail_eq(slot, bytes)) {
                return Some(slot.value);
            }
            at = (at + 1) & mask;
        }
    }

    /// Whether the bytes of `probe` past the head equal those of the slot's key.
    #[inline(never)]
    fn tail_eq(&self, slot: &Slot<V>, probe: &[u8]) -> bool {
        let (Some(key), Some(tail)) = (
            self.keys.get(slot.entry).and_then(|k| k.get(8..)),
            probe.get(8..),
        ) else {
            return false;
        };
        if self.fold {
            key.eq_ignore_ascii_case(tail)
        } else {
            key == tail
        }
    }

    #[inline]
    fn head(&self, bytes: &[u8]) -> u64 {
        let head = head_word(bytes);
        if self.fold {
            fold_word(head)
        } else {
            head
        }
    }

    /// The first slot to look at for a string of this head and length.
    #[inline]
    fn start(&self, head: u64, len: usize) -> usize {
        let mixed = (head ^ (len as u64).rotate_right(8)).wrapping_mul(MULTIPLIER);
        // With no slots the shift is 64: `checked_shr` gives 0 and `get` then misses.
        mixed.checked_shr(self.shift).unwrap_or(0) as usize
    }

    fn grow(&mut self) {
        let capacity = (2 * self.slots.len()).max(4);
        let empty = Slot {
            len: EMPTY,
            head: 0,
            entry: 0,
            value: V::default(),
        };
        let old = std::mem::replace(&mut self.slots, vec![empty; capacity]);
        self.shift = 64 - capacity.trailing_zeros();
        for slot in old.into_iter().filter(|s| s.len != EMPTY) {
            self.place(slot);
        }
    }

    /// Puts `slot` at its first empty slot from its start (the table is never full).
    fn place(&mut self, slot: Slot<V>) {
        let mask = self.slots.len() - 1;
        let mut at = self.start(slot.head, slot.len);
        while self.slots[at].len != EMPTY {
            at = (at + 1) & mask;
        }
        self.slots[at] = slot;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::testutil::Rng;

    fn table(keys: &[&str]) -> StrTable<usize> {
        let mut t = StrTable::new();
        for (i, k) in keys.iter().enumerate() {
            assert!(t.insert(k, i), "{k:?} inserted twice");
        }
        t
    }

    #[test]
    fn head_word_identifies_short_strings_and_reads_only_their_bytes() {
        let mut seen = HashMap::new();
        let alphabet = [b'a', b'b', 0u8, 0xff];
        // Every string of length 0..=5 over four symbols (zero bytes included).
        for len in 0..=5u32 {
            for code in 0..4usize.pow(len) {
                let s: Vec<u8> = (0..len)
                    .map(|i| alphabet[code / 4usize.pow(i) % 4])
                    .collect();
                let previous = seen.insert((s.len(), head_word(&s)), s.clone());
                assert!(previous.is_none(), "{s:?} and {previous:?} share a head");
            }
        }
        assert_eq!(head_word(b"abcdefghXYZ"), head_word(b"abcdefgh"));
        assert_eq!(head_word(b""), 0);
    }

    #[test]
    fn fold_word_lowers_ascii_letters_only() {
        for byte in 0..=255u8 {
            let word = u64::from_le_bytes([byte, b'Q', 0xc3, b'@', b'[', b'z', b'Z', byte]);
            let mut want = word.to_le_bytes();
            want.make_ascii_lowercase();
            assert_eq!(fold_word(word), u64::from_le_bytes(want), "byte {byte:#x}");
        }
    }

    #[test]
    fn hits_misses_and_shared_prefixes() {
        let keys = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcdefgh",
            "abcdefghi",
            "abcdefghj",
            "abcdefgh-",
            "user-pref",
            "user-prefs",
            "é",
            "日本語のタグ",
        ];
        let t = table(&keys);
        assert_eq!(t.len(), keys.len());
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(t.get(k), Some(i), "{k:?}");
        }
        for miss in [
            "b",
            "A",
            "abcde",
            "abcdefg",
            "abcdefgha",
            "abcdefghk",
            "user-pre",
            "user-prefz",
            "É",
            "日本語のタ",
            "abcdefghij",
        ] {
            assert_eq!(t.get(miss), None, "{miss:?}");
        }
    }

    #[test]
    fn insert_rejects_an_equal_key_and_keeps_the_first_value() {
        let mut t = table(&["x", "long-key-1"]);
        assert!(!t.insert("x", 7));
        assert!(!t.insert("long-key-1", 7));
        assert!(t.insert("X", 7));
        assert_eq!(
            (t.get("x"), t.get("long-key-1"), t.get("X")),
            (Some(0), Some(1), Some(7))
        );
    }

    #[test]
    fn empty_table_misses_everything() {
        let t: StrTable<f64> = StrTable::new();
        for probe in ["", "a", "abcdefghijkl"] {
            assert_eq!(t.get(probe), None);
        }
        let f: StrTable<f64> = StrTable::new_ascii_folded();
        assert_eq!(f.get("a"), None);
    }

    #[test]
    fn folded_table_matches_ascii_case_only() {
        let mut t = StrTable::new_ascii_folded();
        for (i, k) in ["Message", "ToolOutput", "SystemPrompt", "é-Kind", "X"]
            .iter()
            .enumerate()
        {
            assert!(t.insert(k, i));
        }
        assert!(!t.insert("MESSAGE", 9), "equal under folding");
        assert!(
            !t.insert("systemprompt", 9),
            "equal under folding past byte 8"
        );
        for (probe, want) in [
            ("message", Some(0)),
            ("TOOLOUTPUT", Some(1)),
            ("toolOutput", Some(1)),
            ("systemPROMPT", Some(2)),
            ("é-kind", Some(3)),
            ("É-kind", None),
            ("x", Some(4)),
            ("Messages", None),
            ("SystemPromp", None),
            ("SystemPrompz", None),
        ] {
            assert_eq!(t.get(probe), want, "{probe:?}");
        }
    }

    /// A random string of 0..=40 bytes over a small alphabet (so prefixes are often shared),
    /// sometimes with a non-ASCII character.
    fn random_key(rng: &mut Rng, alphabet: &[&str]) -> String {
        let len = rng.below(41);
        let mut s = String::new();
        while s.len() < len {
            s.push_str(*rng.pick(alphabet));
        }
        s
    }

    fn compare_with_hash_map(fold: bool, seeds: std::ops::Range<u64>) {
        let alphabet = ["a", "b", "A", "B", "-", "é", "\u{0}"];
        for seed in seeds {
            let mut rng = Rng::new(seed);
            let mut table = if fold {
                StrTable::new_ascii_folded()
            } else {
                StrTable::new()
            };
            let mut reference: HashMap<String, usize> = HashMap::new();
            let normal = |s: &str| {
                if fold {
                    s.to_ascii_lowercase()
                } else {
                    s.to_string()
                }
            };
            let mut keys = Vec::new();
            for i in 0..rng.below(40) {
                let key = random_key(&mut rng, &alphabet);
                let fresh = !reference.contains_key(&normal(&key));
                assert_eq!(table.insert(&key, i), fresh, "seed {seed}: {key:?}");
                reference.entry(normal(&key)).or_insert(i);
                keys.push(key);
            }
            // Every key, every key with one byte changed or cut, and fresh random probes.
            let mut probes = keys.clone();
            for key in &keys {
                let mut cut = key.clone();
                cut.pop();
                probes.push(cut);
                probes.push(format!("{key}a"));
                if !key.is_empty() {
                    let at = rng.below(key.len());
                    if key.is_char_boundary(at) && key.is_char_boundary(at + 1) {
                        let mut changed = key.clone();
                        changed.replace_range(at..at + 1, "b");
                        probes.push(changed);
                    }
                }
            }
            for _ in 0..40 {
                probes.push(random_key(&mut rng, &alphabet));
            }
            for probe in &probes {
                assert_eq!(
                    table.get(probe),
                    reference.get(&normal(probe)).copied(),
                    "seed {seed}: {probe:?}"
                );
            }
        }
    }

    #[test]
    fn agrees_with_a_hash_map_on_random_tables() {
        compare_with_hash_map(false, 0..2_000);
    }

    #[test]
    fn agrees_with_a_folded_hash_map_on_random_tables() {
        compare_with_hash_map(true, 2_000..4_000);
    }
}
