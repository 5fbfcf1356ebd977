//! Conformance runner: `cargo test --test conformance [-- FILTER…]`.
//!
//! Runs every `*.toml` vector (format: `shared/spec/08-conformance-format.md`) found, in sorted
//! order, under
//!
//! 1. `tests/vectors/` of this crate: the project's own vectors, and the Cupel conformance suite
//!    1.0.0's required tier in `tests/vectors/cupel-1.0.0/required/` (copied with its licence
//!    notice, so a fresh clone runs it),
//! 2. every directory listed in `CTXPACK_CONFORMANCE_DIRS` (colon-separated), recursively (for
//!    example the suite's optional tier).
//!
//! The tier is `required` or `optional` when the path below its root has a folder of that name (for
//! the extra directories, also the directory's own path), otherwise `project`. When no
//! required-tier vector is found at all, the runner prints a loud warning and the level `none`.
//! Each failing vector gets one line with its path, name and reason; then come a per-tier summary,
//! the conformance level, and finally the line `N passed, M failed`. The exit status is non-zero
//! when any vector fails or none ran. A vector that cannot be parsed, misses a required key, names
//! an unknown stage or component, or panics in the engine counts as failed. Positional arguments
//! filter vectors by path or name substring; `CTXPACK_CONFORMANCE_VERBOSE=1` also prints passing
//! vectors; `CTXPACK_CONFORMANCE_ENGINE=ffi` runs every vector through the exported C ABI, exactly
//! as a C host calls it; `CTXPACK_CONFORMANCE_ENGINE=cupel` runs the vectors on the reference crate
//! instead of ctxpack (a check for vector authors; see `tests/vectors/README.md`).
//!
//! # Extensions to the format (ignored by other runners)
//!
//! * `[budget] reserved_slots = { Kind = count, … }` and `[budget] estimation_safety_margin_percent
//!   = float` (pipeline vectors): the budget's reserved slots and safety margin (decision D1 in
//!   docs/decisions.md).
//! * `[test] expect_run_error = true` (slicing and pipeline vectors): the slice or run must fail
//!   (count-quota scarcity `throw`, the Throw overflow strategy, pinned items over budget).
//!   Expectations are then not read.
//! * `[expected.overflow]` (pipeline): `tokens_over_budget` (0 = no overflow event may be produced)
//!   and optionally `overflowing_contents` (merged order) (decision D7).
//! * `[[expected.diagnostics.shortfalls]]` (pipeline): `kind`, `required_count`, `satisfied_count`,
//!   compared exactly and in order with the report (decision D10); an empty inline array
//!   `shortfalls = []` asserts there are none.
//! * Items may set `source` and `original_tokens`.
//! * `inner_scorer` / `inner_slicer` may be a table with `type` that is also the inner component's
//!   configuration (a plain name builds it without configuration, as 08 says).
//! * Scorer entries of pipeline vectors are configured from their own table (08 §6.4).
//! * Item groups (`docs/groups.md`), in every stage that takes items: an item may set
//!   `group = "key"`; `[config] group_value = "sum" | "max" | "mean"` (default `sum`) sets
//!   how a group's value is computed (slicing, placing and pipeline vectors), and
//!   `[config] pinned_first = true` turns on the pinned-first option (pipeline). Slicing and
//!   placing vectors whose items have group keys call the slicer's or placer's grouped entry
//!   point with the items' units. `[[expected.diagnostics.groups]]` lists the report's
//!   groups in order: `key`, `members` (contents in input order), `decision` (`Included` /
//!   `Excluded`), and optionally `tokens`, `stage`, `member` (content of the member whose
//!   exclusion took the group out), `pinned_by` (content) and `partial_selection`. The
//!   `GroupExcluded` reason's fields are `group`, `member_index`, `member_content` and
//!   `member_reason`. An engine that lacks groups (the reference crate) reports such vectors
//!   as skipped, with the reason; the C-ABI engine runs them through the `group` field of
//!   `ctxpack_item_desc`, the group options of `ctxpack_pipeline_options` and the report's
//!   group accessors.
//! * Item variants (`docs/variants.md`): an item may set `variants = [{ content = "…",
//!   tokens = N, quality = Q }, …]`; `[config] use_variants = false` turns them off
//!   (pipeline). Slicing vectors whose items have variants call the slicer's grouped entry
//!   point with the items' units (which then have levels) and may give
//!   `[expected] selected_forms = { "content" = form, … }` — every selected item not listed
//!   must be in full (form 0); an `[[expected_output]]` entry may give `form = N` (default
//!   0); an `[[expected.diagnostics.included]]` entry with `inclusion_reason = "Downgraded"`
//!   may give the reason's fields `form`, `full_tokens`, `chosen_tokens`,
//!   `available_tokens` and `cause`; `[[expected.diagnostics.pruned_forms]]` lists the
//!   pruned forms in order (`content`, `form`, `dominated_by`). An engine that lacks
//!   variants (the reference crate; the C ABI until its item descriptor carries them)
//!   reports such vectors as skipped, with the reason.
//!
//! # Checks beyond chapter 08
//!
//! * Pipeline output comes from an untraced run; when diagnostics are expected, a traced run (Item
//!   detail) must place the same items, and its report is checked (decision D8).
//! * Slicer, placer and report positions must be in range and unique; a placer must return a
//!   permutation.
//! * The Rust engine requires the Proceed overflow event to be identical in the selection, the
//!   report and the `on_overflow` callback (decision D7).
//!
//! # Structure
//!
//! [`parse`] turns a file into a plain [`spec::Vector`]; [`check`] runs it on an [`engine::Engine`]
//! and compares. [`rust_engine::RustEngine`] drives the Rust API; a C-ABI engine implements the
//! same trait and is selected in [`select_engine`].

#[path = "conformance/check.rs"]
mod check;
#[path = "conformance/cupel_engine.rs"]
mod cupel_engine;
#[path = "conformance/engine.rs"]
mod engine;
#[path = "conformance/ffi_engine.rs"]
mod ffi_engine;
#[path = "conformance/parse.rs"]
mod parse;
#[path = "conformance/rust_engine.rs"]
mod rust_engine;
#[path = "conformance/spec.rs"]
mod spec;
#[path = "conformance/toml_read.rs"]
mod toml_read;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Component as PathComponent, Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs};

use engine::Engine;
use spec::{Tier, VectorFile};

/// The suite version these vectors belong to (08 §1).
const SUITE_VERSION: &str = "1.0.0";

/// The verdict on one vector.
#[derive(Debug)]
struct Outcome {
    file: VectorFile,
    name: String,
    failure: Option<String>,
    /// Why the engine did not run the vector (it uses an extension the engine lacks).
    skipped: Option<&'static str>,
}

fn main() -> ExitCode {
    toml_read::self_check();
    install_quiet_panic_hook();
    let Some(engine) = select_engine() else {
        return ExitCode::FAILURE;
    };
    let filters: Vec<String> = env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (files, missing_roots) = discover();
    let mut outcomes: Vec<Outcome> = missing_roots;
    outcomes.extend(files.into_iter().filter_map(|f| {
        let outcome = run_file(f, engine.as_ref());
        matches_filters(&outcome, &filters).then_some(outcome)
    }));
    report(&outcomes, engine.name())
}

/// The engine named by `CTXPACK_CONFORMANCE_ENGINE`: `rust` (default), `ffi` (the C ABI)
/// or `cupel` (the reference crate, a diagnostic aid for vector authors).
fn select_engine() -> Option<Box<dyn Engine>> {
    match env::var("CTXPACK_CONFORMANCE_ENGINE").as_deref() {
        Err(_) | Ok("") | Ok("rust") => Some(Box::new(rust_engine::RustEngine)),
        Ok("ffi") => Some(Box::new(ffi_engine::FfiEngine)),
        Ok("cupel") => Some(Box::new(cupel_engine::CupelEngine)),
        Ok(other) => {
            eprintln!("unknown CTXPACK_CONFORMANCE_ENGINE `{other}` (known: rust, ffi, cupel)");
            None
        }
    }
}

fn matches_filters(outcome: &Outcome, filters: &[String]) -> bool {
    filters.is_empty()
        || filters
            .iter()
            .any(|f| outcome.file.display.contains(f.as_str()) || outcome.name.contains(f.as_str()))
}

// ---------------------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------------------

/// A directory of vectors.
struct Root {
    /// Where it is.
    path: PathBuf,
    /// Shown in front of its files.
    label: String,
    /// The repository's own folder: its tier comes only from the path below it, whatever
    /// the folders above the checkout are called.
    own: bool,
}

/// The vector roots, in run order.
fn roots() -> Vec<Root> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = |path: PathBuf, label: &str, own| Root {
        path,
        label: label.to_string(),
        own,
    };
    let mut roots = vec![root(manifest.join("tests/vectors"), "tests/vectors", true)];
    if let Ok(dirs) = env::var("CTXPACK_CONFORMANCE_DIRS") {
        roots.extend(
            dirs.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| root(PathBuf::from(d), d, false)),
        );
    }
    roots
}

/// All vector files, sorted within each root, each file once; a listed root that does not
/// exist becomes a failed outcome so a typo cannot pass silently.
fn discover() -> (Vec<VectorFile>, Vec<Outcome>) {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    let mut missing = Vec::new();
    for root in roots() {
        if !root.path.is_dir() {
            missing.push(Outcome {
                file: VectorFile {
                    path: root.path.clone(),
                    display: root.label,
                    tier: Tier::Project,
                },
                name: "(vector directory)".into(),
                failure: Some("directory not found".into()),
                skipped: None,
            });
            continue;
        }
        let mut found = Vec::new();
        collect_toml(&root.path, &mut found);
        found.sort();
        for path in found {
            let canonical = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if !seen.insert(canonical) {
                continue;
            }
            let relative = path.strip_prefix(&root.path).unwrap_or(&path);
            let tier = tier_in(relative)
                .or_else(|| (!root.own).then(|| tier_in(&root.path)).flatten())
                .unwrap_or(Tier::Project);
            files.push(VectorFile {
                display: format!("{}/{}", root.label, relative.display()),
                tier,
                path,
            });
        }
    }
    (files, missing)
}

fn collect_toml(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_toml(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

/// `required` / `optional` from the last folder of `path` with that name.
fn tier_in(path: &Path) -> Option<Tier> {
    path.components().rev().find_map(|c| match c {
        PathComponent::Normal(s) if s == "required" => Some(Tier::Required),
        PathComponent::Normal(s) if s == "optional" => Some(Tier::Optional),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------

thread_local! {
    /// Message and location of the last panic on this thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records panics instead of printing them: a `todo!()` in the engine is reported as the
/// failure reason of its vector.
fn install_quiet_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".into());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()));
        LAST_PANIC
            .with(|p| *p.borrow_mut() = Some(format!("{message}{}", location.unwrap_or_default())));
    }));
}

/// Reads, parses and checks one file; never panics.
fn run_file(file: VectorFile, engine: &dyn Engine) -> Outcome {
    let mut name = String::from("?");
    let mut skipped = None;
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let text = fs::read_to_string(&file.path).map_err(|e| format!("cannot read: {e}"))?;
        let vector = parse::parse_vector(&text).map_err(|f| {
            name = f.name.unwrap_or_else(|| "?".into());
            format!("malformed vector: {}", f.message)
        })?;
        name = vector.name.clone();
        if vector.case.uses_groups() {
            if let Some(reason) = engine.groups_unsupported() {
                skipped = Some(reason);
                return Ok(());
            }
        }
        if vector.case.uses_variants() {
            if let Some(reason) = engine.variants_unsupported() {
                skipped = Some(reason);
                return Ok(());
            }
        }
        check::check(&vector.case, engine)
    }));
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(reason)) => Some(reason),
        Err(_) => {
            let message = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_default();
            Some(format!("panicked: {message}"))
        }
    };
    Outcome {
        file,
        name,
        failure,
        skipped,
    }
}

// ---------------------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------------------

/// Prints failures, the per-tier summary, the level and the final line; returns the exit
/// status.
fn report(outcomes: &[Outcome], engine: &str) -> ExitCode {
    let verbose = env::var("CTXPACK_CONFORMANCE_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut tiers: BTreeMap<Tier, (usize, usize)> = BTreeMap::new();
    let mut skipped = 0;
    for o in outcomes {
        if let Some(why) = o.skipped {
            skipped += 1;
            println!(
                "SKIP [{}] {} — {}: {why}",
                o.file.tier.label(),
                o.file.display,
                o.name
            );
            continue;
        }
        let counts = tiers.entry(o.file.tier).or_default();
        match &o.failure {
            None => {
                counts.0 += 1;
                if verbose {
                    println!(
                        "PASS [{}] {} — {}",
                        o.file.tier.label(),
                        o.file.display,
                        o.name
                    );
                }
            }
            Some(reason) => {
                counts.1 += 1;
                println!(
                    "FAIL [{}] {} — {}: {}",
                    o.file.tier.label(),
                    o.file.display,
                    o.name,
                    one_line(reason)
                );
            }
        }
    }
    println!("--- conformance summary ({engine} engine, suite {SUITE_VERSION}) ---");
    for (tier, (passed, failed)) in &tiers {
        println!("{:>9}: {passed} passed, {failed} failed", tier.label());
    }
    if tiers.get(&Tier::Required).is_none_or(|c| c.0 + c.1 == 0) {
        println!();
        println!("{}", "!".repeat(78));
        println!(
            "WARNING: no required-tier conformance vector was found; conformance is NOT shown."
        );
        println!("Expected the Cupel suite in tests/vectors/cupel-1.0.0/required/.");
        println!("{}", "!".repeat(78));
        println!();
    }
    println!("level: {}", level(&tiers));
    let passed: usize = tiers.values().map(|c| c.0).sum();
    let failed: usize = tiers.values().map(|c| c.1).sum();
    if skipped > 0 {
        println!("{passed} passed, {failed} failed, {skipped} skipped (extension not supported by the {engine} engine)");
    } else {
        println!("{passed} passed, {failed} failed");
    }
    if failed > 0 || passed == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A reason on one line: whitespace runs (including newlines) become one space.
fn one_line(reason: &str) -> String {
    reason.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The conformance level reached on the tiered vectors (08 §1).
fn level(tiers: &BTreeMap<Tier, (usize, usize)>) -> &'static str {
    let get = |t| tiers.get(&t).copied().unwrap_or((0, 0));
    let (required_passed, required_failed) = get(Tier::Required);
    let (optional_passed, optional_failed) = get(Tier::Optional);
    if required_passed == 0 || required_failed > 0 {
        "none"
    } else if optional_passed > 0 && optional_failed == 0 {
        "Cupel Fully Conformant"
    } else {
        "Cupel Conformant"
    }
}
