//! [`ByteReader`]: turns libFuzzer's bytes into values, biased towards the edges.
//!
//! Every read succeeds: once the input is used up, reads return zeros (and so the first
//! choice of every menu). Numbers come either from a small table of "interesting" values
//! (zero, ±1, the i64 extremes, NaN, ±inf, subnormals, …) or straight from the bytes, so
//! the fuzzer reaches the edges quickly without losing the ability to produce anything.

/// A cursor over the fuzz input.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    data: &'a [u8],
}

/// Token counts and budget values the reader likes to return.
const INTERESTING_I64: [i64; 16] = [
    0,
    1,
    -1,
    2,
    100,
    1_000_000,
    i64::MAX,
    i64::MAX - 1,
    i64::MAX / 2,
    i64::MAX / 2 + 1,
    i64::MIN,
    i64::MIN + 1,
    1 << 31,
    1 << 32,
    1 << 53,
    (1 << 53) + 1,
];

/// Weights, hints, percentages and scores the reader likes to return.
const INTERESTING_F64: [f64; 20] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    100.0,
    100.000_000_000_000_01,
    f64::MIN_POSITIVE,
    5e-324,
    f64::MAX,
    -f64::MAX,
    f64::EPSILON,
    1e-300,
    1e300,
    0.1,
    99.999_999_999_999_99,
    9_007_199_254_740_993.0,
];

impl<'a> ByteReader<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte (0 once the input is used up).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next `N` bytes, zero-padded.
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        out
    }

    /// A boolean from the low bit of the next byte.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// True one time in `n` (for `n > 0`), from one byte.
    pub fn one_in(&mut self, n: u8) -> bool {
        self.u8().is_multiple_of(n)
    }

    /// A value in `0..n` (`n > 0`), from one byte (two when `n > 256`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        if n <= 256 {
            usize::from(self.u8()) % n
        } else {
            usize::from(u16::from_le_bytes(self.array())) % n
        }
    }

    /// A raw little-endian u64.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// An i64: small values most often, then the interesting table, then raw bits.
    pub fn i64(&mut self) -> i64 {
        match self.u8() % 8 {
            0..=3 => i64::from(self.u8()),
            4 | 5 => INTERESTING_I64[self.below(INTERESTING_I64.len())],
            6 => i64::MAX - i64::from(self.u8()),
            _ => self.u64() as i64,
        }
    }

    /// A usize for counts (quota counts and the like), small values most often.
    pub fn count(&mut self) -> usize {
        match self.u8() % 8 {
            0..=5 => usize::from(self.u8() % 8),
            6 => usize::MAX - usize::from(self.u8()),
            _ => self.u64() as usize,
        }
    }

    /// An f64: small multiples of 1/16 most often, then the interesting table, then raw
    /// bits (which include every NaN payload).
    pub fn f64(&mut self) -> f64 {
        match self.u8() % 8 {
            0..=3 => f64::from(self.u8()) / 16.0,
            4..=6 => INTERESTING_F64[self.below(INTERESTING_F64.len())],
            _ => f64::from_bits(self.u64()),
        }
    }

    /// Up to `max_len` raw bytes of the input (not necessarily UTF-8).
    pub fn bytes(&mut self, max_len: usize) -> &'a [u8] {
        let len = self.below(max_len + 1).min(self.data.len());
        let (bytes, rest) = self.data.split_at(len);
        self.data = rest;
        bytes
    }

    /// A string of up to `max_len` bytes, decoded lossily (invalid UTF-8 becomes U+FFFD).
    pub fn string(&mut self, max_len: usize) -> String {
        String::from_utf8_lossy(self.bytes(max_len)).into_owned()
    }

    /// One of `choices` or, one time in four, an arbitrary short string. Reusing a few
    /// spellings makes kinds, tags, metadata keys and contents collide often.
    pub fn pick_or_string(&mut self, choices: &[&str]) -> String {
        if self.one_in(4) {
            self.string(12)
        } else {
            choices[self.below(choices.len())].to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_zero() {
        let mut r = ByteReader::new(&[7]);
        assert_eq!(r.u8(), 7);
        assert!(r.is_empty());
        assert_eq!((r.u8(), r.u64(), r.below(5)), (0, 0, 0));
        assert_eq!(r.string(10), "");
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = ByteReader::new(&[255, 255, 255, 3, 1]);
        assert!(r.below(3) < 3);
        assert!(r.below(1000) < 1000);
        assert!(r.below(1) == 0);
    }
}
