//! A small exact string map for the scorers' configuration tables (tag weights, kind
//! weights), built once per scorer and probed once per item string.
//!
//! A general hash map hashes every byte of the probe before it can compare anything. The
//! keys of a scorer's table are few and short, so this map describes every string by its
//! length and two 64-bit words read from at most 16 of its bytes (its *head*, see
//! [`head_words`]): a probe computes its head with four loads, finds its slot by one
//! multiplication, and compares the length and the head. Only a string longer than 16
//! bytes has bytes the head does not describe, and only then are the whole strings
//! compared. Strings of up to 16 bytes are therefore matched without any byte loop.
//!
//! The map is exact: it answers a key only for a probe whose bytes equal the key's bytes
//! ([`StrTable`]), or equal them under ASCII case folding ([`StrTable::new_ascii_folded`]).

/// The first multiplier tried: an odd constant whose bits are spread evenly (the golden
/// ratio in 64-bit fixed point). A probe starts at the top bits of its mixed head times the
/// table's multiplier.
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Tables of up to this many keys look for a multiplier (and a size up to four times the
/// minimum) that gives every key its own start slot, so that a hit costs one comparison
/// whatever key is probed (a collision makes the comparisons depend on which key an item
/// has, which the processor cannot predict).
const SPREAD_KEYS_MAX: usize = 64;

/// Multipliers tried per table size when spreading the keys.
const SPREAD_TRIES: u64 = 32;

/// Marks an empty slot: no string is `usize::MAX` bytes long (allocations stop at
/// `isize::MAX`).
const EMPTY: usize = usize::MAX;

const LOW_SEVEN_BITS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
/// Added to a byte's low seven bits, sets its high bit when they are at least `b'A'`.
const FROM_UPPER_A: u64 = 0x3f3f_3f3f_3f3f_3f3f; // 0x80 - 0x41 per byte
/// Added to a byte's low seven bits, sets its high bit when they are past `b'Z'`.
const PAST_UPPER_Z: u64 = 0x2525_2525_2525_2525; // 0x80 - 0x5b per byte

/// Two words that, together with the length, identify a string of up to 16 bytes, read
/// without touching any byte past the end of `bytes`:
///
/// - 4 bytes or more: four 4-byte groups, at offsets `0`, `min(4, n - 4)`,
///   `n - 8` (or 0 when `n < 8`) and `n - 4`; the first two groups make the first word, the
///   last two the second. For `n <= 16` the groups cover every byte, and the offsets are
///   computed without branching on the length, so strings of mixed lengths cost no
///   mispredicted branches;
/// - 1 to 3 bytes: the first, middle and last bytes (again covering every byte);
/// - no bytes: zeros.
///
/// For a given length every byte of the string sits at fixed places of the words, so two
/// strings of the same length up to 16 bytes have the same words exactly when their bytes
/// are equal; longer strings also need their remaining bytes compared.
#[inline]
pub(crate) fn head_words(bytes: &[u8]) -> [u64; 2] {
    let n = bytes.len();
    if n >= 4 {
        let group = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|g| g.first_chunk::<4>())
                .map_or(0, |g| u64::from(u32::from_le_bytes(*g)))
        };
        let second = (n - 4).min(4);
        let third = n.saturating_sub(8);
        return [
            group(0) | group(second) << 32,
            group(third) | group(n - 4) << 32,
        ];
    }
    match (bytes.first(), bytes.get(n / 2), bytes.last()) {
        (Some(&a), Some(&b), Some(&c)) => {
            [u64::from(a) | u64::from(b) << 8 | u64::from(c) << 16, 0]
        }
        _ => [0, 0],
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

/// The slot a string of this head and length starts at in a table of `64 - shift` bits.
#[inline]
fn start_slot(head: [u64; 2], len: usize, multiplier: u64, shift: u32) -> usize {
    let mixed =
        (head[0] ^ head[1].rotate_left(29) ^ (len as u64).rotate_right(8)).wrapping_mul(multiplier);
    // With no slots the shift is 64: `checked_shr` gives 0 and the caller's `get` misses.
    mixed.checked_shr(shift).unwrap_or(0) as usize
}

/// One slot of the open-addressing table: the key's length ([`EMPTY`] when unused), its
/// head words, the key's position in configuration order, and its value.
#[derive(Debug, Clone, Copy)]
struct Slot<V> {
    len: usize,
    head: [u64; 2],
    entry: usize,
    value: V,
}

/// Strings up to this many bytes are identified by their length and head words alone.
const HEAD_BYTES: usize = 16;

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
    /// Odd; see [`MULTIPLIER`].
    multiplier: u64,
    /// The keys in insertion order (compared whole when longer than the head).
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
            multiplier: MULTIPLIER,
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
        if self.keys.len() <= SPREAD_KEYS_MAX && !self.spread(self.slots.len(), self.multiplier) {
            self.respread();
        }
        true
    }

    /// Whether every key would start at a slot of its own with this size and multiplier.
    fn spread(&self, capacity: usize, multiplier: u64) -> bool {
        let shift = 64 - capacity.trailing_zeros();
        let mut taken = vec![false; capacity];
        for slot in self.slots.iter().filter(|s| s.len != EMPTY) {
            let at = start_slot(slot.head, slot.len, multiplier, shift);
            match taken.get_mut(at) {
                Some(t) if !*t => *t = true,
                _ => return false,
            }
        }
        true
    }

    /// Looks for a size (up to four times the current one) and a multiplier under which no
    /// two keys share a start slot, and rebuilds the table with the first found; keeps the
    /// table as it is (correct, with longer probes) when there is none.
    fn respread(&mut self) {
        let base = self.slots.len();
        for capacity in [base, 2 * base, 4 * base] {
            for i in 0..SPREAD_TRIES {
                let multiplier = MULTIPLIER.wrapping_add(i.wrapping_mul(0x6a09_e667_f3bc_c908)) | 1;
                if self.spread(capacity, multiplier) {
                    self.rebuild(capacity, multiplier);
                    return;
                }
            }
        }
    }

    /// The value of the key equal to `probe`, if any.
    #[inline(always)]
    pub(crate) fn get(&self, probe: &str) -> Option<V> {
        self.get_bytes(probe.as_bytes())
    }

    /// [`get`](Self::get) for a probe given as its UTF-8 bytes.
    #[inline(always)]
    pub(crate) fn get_bytes(&self, bytes: &[u8]) -> Option<V> {
        self.get_with_head(bytes, head_words(bytes))
    }

    /// [`get_bytes`](Self::get_bytes) for a probe whose [`head_words`] (`head`) the
    /// caller has already read.
    #[inline(always)]
    pub(crate) fn get_with_head(&self, bytes: &[u8], head: [u64; 2]) -> Option<V> {
        let len = bytes.len();
        let head = match self.fold {
            true => head.map(fold_word),
            false => head,
        };
        let mask = self.slots.len().wrapping_sub(1);
        let mut at = self.start(head, len);
        loop {
            let slot = self.slots.get(at)?;
            if slot.len == EMPTY {
                return None;
            }
            if slot.len == len && slot.head == head && (len <= HEAD_BYTES || self.same(slot, bytes))
            {
                return Some(slot.value);
            }
            at = (at + 1) & mask;
        }
    }

    /// Whether `probe` equals the slot's key (for keys longer than the head words).
    #[inline(never)]
    fn same(&self, slot: &Slot<V>, probe: &[u8]) -> bool {
        let Some(key) = self.keys.get(slot.entry) else {
            return false;
        };
        if self.fold {
            key.eq_ignore_ascii_case(probe)
        } else {
            **key == *probe
        }
    }

    #[inline]
    fn head(&self, bytes: &[u8]) -> [u64; 2] {
        let head = head_words(bytes);
        if self.fold {
            head.map(fold_word)
        } else {
            head
        }
    }

    /// The first slot to look at for a string of this head and length.
    #[inline]
    fn start(&self, head: [u64; 2], len: usize) -> usize {
        start_slot(head, len, self.multiplier, self.shift)
    }

    fn grow(&mut self) {
        self.rebuild((2 * self.slots.len()).max(4), self.multiplier);
    }

    /// Moves every key to a new table of `capacity` slots (a power of two) and `multiplier`.
    fn rebuild(&mut self, capacity: usize, multiplier: u64) {
        let empty = Slot {
            len: EMPTY,
            head: [0, 0],
            entry: 0,
            value: V::default(),
        };
        let old = std::mem::replace(&mut self.slots, vec![empty; capacity]);
        self.shift = 64 - capacity.trailing_zeros();
        self.multiplier = multiplier;
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
    fn head_words_identify_short_strings() {
        let mut seen = HashMap::new();
        let alphabet = [b'a', b'b', 0u8, 0xff];
        // Every string of length 0..=5 over four symbols (zero bytes included).
        for len in 0..=5u32 {
            for code in 0..4usize.pow(len) {
                let s: Vec<u8> = (0..len)
                    .map(|i| alphabet[code / 4usize.pow(i) % 4])
                    .collect();
                let previous = seen.insert((s.len(), head_words(&s)), s.clone());
                assert!(previous.is_none(), "{s:?} and {previous:?} share a head");
            }
        }
        // Up to 16 bytes, changing any one byte changes the head.
        let mut rng = Rng::new(1);
        for len in 0..=16 {
            for _ in 0..50 {
                let s: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
                for at in 0..len {
                    let mut changed = s.clone();
                    changed[at] ^= 1 + rng.below(255) as u8;
                    assert_ne!(head_words(&s), head_words(&changed), "{s:?} at {at}");
                }
            }
        }
        // Past 16 bytes the head does not see every byte (the table then compares them).
        assert_eq!(
            head_words(b"abcdefgh-XXX-ijklmnop"),
            head_words(b"abcdefgh-YYY-ijklmnop")
        );
        assert_eq!(head_words(b""), [0, 0]);
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
            s.push_str(alphabet[rng.below(alphabet.len())]);
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
