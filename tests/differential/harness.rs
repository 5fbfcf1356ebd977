//! The case runner: seeds, case counts, replay instructions and failure collection.
//!
//! Every case draws its inputs from its own generator, derived from the run seed, the test
//! name and the case number, so one case can be replayed alone:
//!
//! * `CTXPACK_DIFF_SEED`  — run seed (decimal or `0x…` hex; default [`DEFAULT_SEED`]);
//! * `CTXPACK_DIFF_CASES` — cases per group (default: the group's own count);
//! * `CTXPACK_DIFF_CASE`  — run only this case number.

use std::panic::{catch_unwind, AssertUnwindSafe};

use std::fmt::Debug;

use crate::gen::{renumber, ItemSpec};
use crate::rng::{mix, Rng};

/// The fixed default run seed.
pub const DEFAULT_SEED: u64 = 0x00C7_9ACC_D1FF_2024;

/// A group stops after this many failing cases; the rest are usually the same bug.
const MAX_FAILURES: usize = 3;

/// One differential case: where its randomness comes from and how to name it.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// The `#[test]` function running the group.
    pub test: &'static str,
    /// The run seed.
    pub seed: u64,
    /// The case number within the group.
    pub number: u64,
}

impl Case {
    /// The case's own generator.
    pub fn rng(&self) -> Rng {
        Rng::new(mix(mix(self.seed, fnv1a(self.test)), self.number))
    }

    /// Names the case in failure messages, with the command that replays it.
    pub fn label(&self) -> String {
        format!(
            "[{} seed={:#x} case={}] replay: CTXPACK_DIFF_SEED={:#x} CTXPACK_DIFF_CASE={} \
             cargo test --test differential {}",
            self.test, self.seed, self.number, self.seed, self.number, self.test
        )
    }
}

/// Runs `cases` cases of one group (or the single case named by `CTXPACK_DIFF_CASE`) and
/// panics with every collected failure. A case fails when it returns `Err` or panics.
pub fn run_group(
    test: &'static str,
    default_cases: u64,
    case: impl Fn(&Case) -> Result<(), String>,
) {
    let seed = env_u64("CTXPACK_DIFF_SEED").unwrap_or(DEFAULT_SEED);
    let numbers: Vec<u64> = match env_u64("CTXPACK_DIFF_CASE") {
        Some(n) => vec![n],
        None => (0..env_u64("CTXPACK_DIFF_CASES").unwrap_or(default_cases)).collect(),
    };
    let mut failures = Vec::new();
    for &number in &numbers {
        let c = Case { test, seed, number };
        if let Err(msg) = attempt(&c, &case) {
            failures.push(format!("{}\n{msg}", c.label()));
            if failures.len() >= MAX_FAILURES {
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{test}: {} failing case(s) (stopped after {MAX_FAILURES}):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    eprintln!("{test}: {} cases passed (seed {seed:#x})", numbers.len());
}

/// A case input built around an item list, so a failing case can be shrunk by items.
pub trait HasItems: Clone + Debug {
    /// The items.
    fn items_mut(&mut self) -> &mut Vec<ItemSpec>;
}

/// Most checks a shrink may spend on one failing case.
const SHRINK_BUDGET: usize = 400;

/// Runs `check` on `spec`; on failure, shrinks the input by dropping items while the check
/// still fails, and reports the first failure with the smallest failing input.
pub fn verify<S: HasItems>(
    spec: S,
    check: impl Fn(&S) -> Result<(), String>,
) -> Result<(), String> {
    let first = match attempt(&spec, &check) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let (min, last) = shrink(spec, first.clone(), &check);
    Err(format!(
        "{first}
-- minimal failing input (fails with: {last}):\n{min:#?}"
    ))
}

/// Drops one item at a time, keeping each removal under which `check` still fails.
fn shrink<S: HasItems>(
    mut spec: S,
    mut last: String,
    check: &impl Fn(&S) -> Result<(), String>,
) -> (S, String) {
    let mut budget = SHRINK_BUDGET;
    let mut i = 0;
    while i < spec.items_mut().len() && budget > 0 {
        budget -= 1;
        let mut smaller = spec.clone();
        smaller.items_mut().remove(i);
        renumber(smaller.items_mut());
        match attempt(&smaller, check) {
            Err(e) => (spec, last) = (smaller, e),
            Ok(()) => i += 1,
        }
    }
    (spec, last)
}

/// One check, with a panic turned into a failure.
fn attempt<S>(spec: &S, check: &impl Fn(&S) -> Result<(), String>) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| check(spec)))
        .unwrap_or_else(|payload| Err(format!("panicked: {}", panic_text(&*payload))))
}

/// Reads an unsigned integer from the environment, in decimal or `0x` hex.
fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    let raw = raw.trim().replace('_', "");
    let parsed = match raw.strip_prefix("0x").or_else(|| raw.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => raw.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name} must be an unsigned integer, got {raw:?}")))
}

/// FNV-1a of a string: a stable per-group salt.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// The text of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}
