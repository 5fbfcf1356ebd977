//! DecayScorer: freshness by age against a clock (spec 03 §2.10, decisions D9, D14, D16 in
//! docs/decisions.md).

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::{config_error, score_each, Scorer};

/// The time source of a DecayScorer; read once per scoring pass (decision D14 in
/// docs/decisions.md).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, in nanoseconds since the Unix epoch (UTC).
    fn now_unix_nanos(&self) -> i64;

    /// True only for [`SystemClock`]: policies (which always decay against the system
    /// clock) use it to recognise the one clock they can express.
    fn is_system_clock(&self) -> bool {
        false
    }
}

/// The system clock (`std::time::SystemTime`). Instants beyond the `i64` nanosecond range
/// (before 1677 or after 2262) saturate to `i64::MIN` / `i64::MAX`; it never panics.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn is_system_clock(&self) -> bool {
        true
    }

    fn now_unix_nanos(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => saturating_nanos(after.as_nanos() as i128),
            Err(before) => saturating_nanos(-(before.duration().as_nanos() as i128)),
        }
    }
}

/// Clamps a signed nanosecond count into `i64`. (A `u128` count of a `Duration` is below
/// 2^94, so its `i128` form never wraps.)
fn saturating_nanos(nanos: i128) -> i64 {
    nanos.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// A clock that always returns the same instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now_unix_nanos(&self) -> i64 {
        self.0
    }
}

/// The decay curve; durations in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum DecayCurve {
    /// `2^(-age/half_life)`, age and half-life in exact f64 seconds.
    Exponential {
        /// Half-life (> 0).
        half_life_ns: i64,
    },
    /// 1.0 when `age < max_age`, else 0.0.
    Window {
        /// Window length (> 0).
        max_age_ns: i64,
    },
    /// The score of the first window with `age < max_age`, else the last window's score.
    Step {
        /// (max_age_ns > 0, finite score) in list order.
        windows: Vec<(i64, f64)>,
    },
}

impl DecayCurve {
    /// The construction checks of spec 03 §2.10, plus finite Step scores (decision D9 in
    /// docs/decisions.md).
    fn validate(&self) -> Result<()> {
        match self {
            DecayCurve::Exponential { half_life_ns } if *half_life_ns <= 0 => {
                Err(config_error("halfLife must be strictly positive"))
            }
            DecayCurve::Window { max_age_ns } if *max_age_ns <= 0 => {
                Err(config_error("maxAge must be strictly positive"))
            }
            DecayCurve::Step { windows } => validate_step_windows(windows),
            _ => Ok(()),
        }
    }

    /// The curve's value at `age_ns` (>= 0).
    fn score_at(&self, age_ns: i128) -> f64 {
        match self {
            DecayCurve::Exponential { half_life_ns } => {
                let age_secs = age_ns as f64 / 1e9;
                let half_life_secs = *half_life_ns as f64 / 1e9;
                2f64.powf(-(age_secs / half_life_secs))
            }
            DecayCurve::Window { max_age_ns } => {
                if age_ns < i128::from(*max_age_ns) {
                    1.0
                } else {
                    0.0
                }
            }
            DecayCurve::Step { windows } => step_score(windows, age_ns),
        }
    }
}

/// Step checks, in this order: non-empty, every `max_age > 0`, then every score finite.
/// The order of the windows is not checked; they are used in list order.
fn validate_step_windows(windows: &[(i64, f64)]) -> Result<()> {
    if windows.is_empty() {
        return Err(config_error("windows must be non-empty"));
    }
    if windows.iter().any(|(max_age, _)| *max_age <= 0) {
        return Err(config_error(
            "windows: each maxAge must be strictly positive",
        ));
    }
    if windows.iter().any(|(_, score)| !score.is_finite()) {
        return Err(config_error("windows: each score must be finite"));
    }
    Ok(())
}

/// The score of the first window (in list order) with `age < max_age`, else the last one's.
fn step_score(windows: &[(i64, f64)], age_ns: i128) -> f64 {
    windows
        .iter()
        .find(|(max_age, _)| age_ns < i128::from(*max_age))
        .or(windows.last())
        .map_or(0.0, |(_, score)| *score)
}

/// DecayScorer: freshness by age against a clock.
///
/// An item's age is `now − timestamp`, clamped at 0 (future-dated items are maximally fresh), and
/// scores the curve's value at that age; an item without a timestamp scores `null_timestamp_score`.
/// It never looks at the other items.
///
/// The clock is read **once per pass**, before any item is scored, so every item of one pass is
/// aged against the same instant (decision D14 in docs/decisions.md; the reference crate reads its
/// clock per item, which only agrees with a fixed clock). Ages are exact: Exponential converts
/// nanoseconds to f64 seconds without the crate's truncation to whole milliseconds, and Window and
/// Step compare at nanosecond resolution.
#[derive(Debug, Clone)]
pub struct DecayScorer {
    clock: Arc<dyn Clock>,
    curve: DecayCurve,
    null_timestamp_score: f64,
}

impl DecayScorer {
    /// Score for items without a timestamp unless configured otherwise (decision D16 in
    /// docs/decisions.md).
    pub const DEFAULT_NULL_TIMESTAMP_SCORE: f64 = 0.5;

    /// Builds and validates the curve and `null_timestamp_score` (in [0, 1]).
    ///
    /// The curve is checked first: Exponential `half_life_ns <= 0` fails with `halfLife
    /// must be strictly positive`; Window `max_age_ns <= 0` with `maxAge must be strictly
    /// positive`; Step with no windows with `windows must be non-empty`, any `max_age <= 0`
    /// with `windows: each maxAge must be strictly positive`, and any non-finite score with
    /// `windows: each score must be finite`. Then a `null_timestamp_score` outside [0, 1]
    /// (NaN included) fails with `nullTimestampScore must be in [0.0, 1.0]`.
    pub fn new(
        clock: Arc<dyn Clock>,
        curve: DecayCurve,
        null_timestamp_score: f64,
    ) -> Result<Self> {
        curve.validate()?;
        if !(0.0..=1.0).contains(&null_timestamp_score) {
            return Err(config_error("nullTimestampScore must be in [0.0, 1.0]"));
        }
        Ok(Self {
            clock,
            curve,
            null_timestamp_score,
        })
    }

    /// The curve.
    pub fn curve(&self) -> &DecayCurve {
        &self.curve
    }

    /// The null-timestamp score.
    pub fn null_timestamp_score(&self) -> f64 {
        self.null_timestamp_score
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    fn score_item(&self, item: &ContextItem, now_ns: i64) -> f64 {
        match item.timestamp() {
            None => self.null_timestamp_score,
            Some(timestamp) => self.curve.score_at(clamped_age(now_ns, timestamp)),
        }
    }
}

/// `now − timestamp` in nanoseconds, never negative; `i128` so no pair of instants overflows.
fn clamped_age(now_ns: i64, timestamp_ns: i64) -> i128 {
    (i128::from(now_ns) - i128::from(timestamp_ns)).max(0)
}

impl Scorer for DecayScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        let now_ns = self.clock.now_unix_nanos();
        score_each(items, out, |item| self.score_item(item, now_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{plain, run};
    use std::sync::atomic::{AtomicI64, Ordering};

    const SEC: i64 = 1_000_000_000;
    const HOUR: i64 = 3600 * SEC;
    const DAY: i64 = 24 * HOUR;
    /// 2025-01-01T12:00:00Z, the vectors' reference time.
    const REFERENCE: i64 = 1_735_732_800 * SEC;

    fn scorer(curve: DecayCurve) -> DecayScorer {
        DecayScorer::new(Arc::new(FixedClock(REFERENCE)), curve, 0.5).unwrap()
    }

    fn at_ages(s: &DecayScorer, ages: &[i64]) -> Vec<f64> {
        let items: Vec<ContextItem> = ages
            .iter()
            .enumerate()
            .map(|(i, age)| {
                ContextItem::builder(format!("item{i}"), 1)
                    .timestamp(REFERENCE - age)
                    .build()
                    .unwrap()
            })
            .collect();
        run(s, &items)
    }

    fn err(curve: DecayCurve, null_score: f64) -> String {
        DecayScorer::new(Arc::new(FixedClock(0)), curve, null_score)
            .unwrap_err()
            .to_string()
    }

    fn step_example() -> DecayCurve {
        DecayCurve::Step {
            windows: vec![(HOUR, 0.9), (DAY, 0.5), (72 * HOUR, 0.1)],
        }
    }

    #[test]
    fn vectors() {
        let exp = scorer(DecayCurve::Exponential { half_life_ns: DAY });
        // decay-exponential-half-life, decay-future-dated (12 h in the future).
        assert_eq!(at_ages(&exp, &[DAY, -12 * HOUR]), [0.5, 1.0]);
        // decay-null-timestamp.
        assert_eq!(run(&exp, &[plain(0)]), [0.5]);
        // decay-step-second-window.
        assert_eq!(at_ages(&scorer(step_example()), &[6 * HOUR]), [0.5]);
    }

    #[test]
    fn exponential_uses_exact_seconds() {
        let exp = scorer(DecayCurve::Exponential { half_life_ns: SEC });
        let got = at_ages(&exp, &[0, SEC, 2 * SEC, 1_500_000_001, i64::MAX / 2]);
        assert_eq!(&got[..3], [1.0, 0.5, 0.25]);
        // The crate would truncate 1.500000001 s to 1.5 s; we do not.
        assert_eq!(
            got[3].to_bits(),
            2f64.powf(-(1_500_000_001f64 / 1e9)).to_bits()
        );
        assert_ne!(got[3], 2f64.powf(-1.5));
        assert_eq!(got[4], 0.0, "very old items underflow to 0.0");
    }

    #[test]
    fn window_is_half_open() {
        let w = scorer(DecayCurve::Window { max_age_ns: HOUR });
        assert_eq!(
            at_ages(&w, &[0, HOUR - 1, HOUR, HOUR + 1, -HOUR]),
            [1.0, 1.0, 0.0, 0.0, 1.0]
        );
    }

    #[test]
    fn step_boundaries_and_list_order() {
        let s = scorer(step_example());
        assert_eq!(
            at_ages(&s, &[0, HOUR - 1, HOUR, DAY, 72 * HOUR, 1000 * DAY]),
            [0.9, 0.9, 0.5, 0.1, 0.1, 0.1]
        );
        // Unsorted windows: first match in list order, else the last entry.
        let unsorted = scorer(DecayCurve::Step {
            windows: vec![(DAY, 0.7), (HOUR, 0.2), (2 * HOUR, 3.0)],
        });
        assert_eq!(at_ages(&unsorted, &[0, 2 * HOUR, 2 * DAY]), [0.7, 0.7, 3.0]);
    }

    #[test]
    fn extreme_instants_do_not_overflow() {
        let s = DecayScorer::new(
            Arc::new(FixedClock(i64::MAX)),
            DecayCurve::Window {
                max_age_ns: i64::MAX,
            },
            0.5,
        )
        .unwrap();
        let items = [
            ContextItem::builder("a", 1)
                .timestamp(i64::MIN)
                .build()
                .unwrap(),
            ContextItem::builder("b", 1).timestamp(1).build().unwrap(),
        ];
        assert_eq!(run(&s, &items), [0.0, 1.0]);
        let future = DecayScorer::new(Arc::new(FixedClock(i64::MIN)), step_example(), 0.5).unwrap();
        assert_eq!(run(&future, &items[..1]), [0.9]);
    }

    #[derive(Debug, Default)]
    struct CountingClock(AtomicI64);

    impl Clock for CountingClock {
        fn now_unix_nanos(&self) -> i64 {
            // Each read moves time forward by an hour and counts the reads.
            self.0.fetch_add(1, Ordering::SeqCst) * HOUR
        }
    }

    #[test]
    fn clock_is_read_once_per_pass() {
        let clock = Arc::new(CountingClock::default());
        let s =
            DecayScorer::new(clock.clone(), DecayCurve::Window { max_age_ns: HOUR }, 0.5).unwrap();
        let items: Vec<ContextItem> = (0..5)
            .map(|i| {
                ContextItem::builder(format!("i{i}"), 1)
                    .timestamp(0)
                    .build()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            run(&s, &items),
            [1.0; 5],
            "every item sees the first instant"
        );
        assert_eq!(
            run(&s, &items),
            [0.0; 5],
            "the next pass reads the clock again"
        );
        assert_eq!(clock.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn null_timestamp_score_is_configurable_and_validated() {
        let s = DecayScorer::new(Arc::new(FixedClock(0)), step_example(), 0.0).unwrap();
        assert_eq!(run(&s, &[plain(0)]), [0.0]);
        assert_eq!(s.null_timestamp_score(), 0.0);
        assert_eq!(s.curve(), &step_example());
        assert!(DecayScorer::new(Arc::new(FixedClock(0)), step_example(), 1.0).is_ok());
        for bad in [-0.01, 1.01, f64::NAN, f64::INFINITY] {
            assert_eq!(
                err(step_example(), bad),
                "invalid scorer configuration: nullTimestampScore must be in [0.0, 1.0]"
            );
        }
        assert_eq!(DecayScorer::DEFAULT_NULL_TIMESTAMP_SCORE, 0.5);
    }

    #[test]
    fn curve_validation_messages() {
        let cfg = |m: &str| format!("invalid scorer configuration: {m}");
        for bad in [0, -1, i64::MIN] {
            assert_eq!(
                err(DecayCurve::Exponential { half_life_ns: bad }, 0.5),
                cfg("halfLife must be strictly positive")
            );
            assert_eq!(
                err(DecayCurve::Window { max_age_ns: bad }, 0.5),
                cfg("maxAge must be strictly positive")
            );
            assert_eq!(
                err(
                    DecayCurve::Step {
                        windows: vec![(HOUR, 0.5), (bad, 0.5)]
                    },
                    0.5
                ),
                cfg("windows: each maxAge must be strictly positive")
            );
        }
        assert_eq!(
            err(DecayCurve::Step { windows: vec![] }, 0.5),
            cfg("windows must be non-empty")
        );
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                err(
                    DecayCurve::Step {
                        windows: vec![(HOUR, bad)]
                    },
                    0.5
                ),
                cfg("windows: each score must be finite")
            );
        }
        // Every maxAge is checked before any score, and the curve before the null score.
        assert_eq!(
            err(
                DecayCurve::Step {
                    windows: vec![(HOUR, f64::NAN), (0, 0.5)]
                },
                0.5
            ),
            cfg("windows: each maxAge must be strictly positive")
        );
        assert_eq!(
            err(DecayCurve::Window { max_age_ns: 0 }, f64::NAN),
            cfg("maxAge must be strictly positive")
        );
        // Scores outside [0, 1] and unsorted windows are legal.
        assert!(DecayScorer::new(
            Arc::new(FixedClock(0)),
            DecayCurve::Step {
                windows: vec![(DAY, -2.0), (HOUR, 7.0)]
            },
            0.5
        )
        .is_ok());
    }

    #[test]
    fn system_clock_is_near_now_and_saturates() {
        let now = SystemClock.now_unix_nanos();
        assert!(now > 1_700_000_000 * SEC, "{now}");
        assert_eq!(saturating_nanos(i128::MAX), i64::MAX);
        assert_eq!(saturating_nanos(i128::MIN), i64::MIN);
        assert_eq!(saturating_nanos(-5), -5);
    }
}
