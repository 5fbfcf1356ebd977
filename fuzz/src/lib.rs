//! Shared helpers of the ctxpack fuzz targets (see `docs/fuzzing.md`).
//!
//! * [`reader`]: a byte cursor that never fails and favours edge values;
//! * [`generate`]: items, budgets, run options and every built-in component from bytes;
//! * [`check`]: the invariants every run must satisfy, checked by running twice;
//! * [`abi`]: the `c_abi` target's engine, fuzz bytes as a sequence of C ABI calls.
//!
//! The targets themselves (`fuzz_targets/*.rs`) only decide what to feed and which extra
//! property to assert.
#![warn(missing_docs)]

pub mod abi;
pub mod check;
pub mod generate;
pub mod reader;

pub use reader::ByteReader;

/// A 64-bit FNV-1a hash of `data`: a cheap way to derive values (budgets, choices) from an
/// input that is consumed whole by a parser.
pub fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
