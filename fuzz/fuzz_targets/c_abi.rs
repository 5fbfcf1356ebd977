//! `c_abi`: arbitrary bytes as a sequence of calls to the exported C functions.
//!
//! `ctxpack_fuzz::abi` interprets the bytes: item lists and descriptors, budgets, every
//! scorer / slicer / placer constructor (custom callbacks that return NaN, fail, return
//! non-permutations or call back into the library included), pipelines, runs (also the
//! one-shot run over a descriptor array, the run into a kept result, and the release of
//! the memory a pipeline keeps for its one-shot runs, by the session and by callbacks),
//! result and report accessors, single stages and frees, with NULL, wrong-type,
//! out-of-range and invalid UTF-8 arguments and versioned structs of every
//! `struct_size`. No call may panic, crash or break the documented status, ownership and
//! output contracts.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ctxpack_fuzz::abi::run(data));
