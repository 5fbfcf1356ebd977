//! DecayScorer (STUB).
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// The time source of a DecayScorer; read once per scoring pass (D14).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, in nanoseconds since the Unix epoch (UTC).
    fn now_unix_nanos(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_nanos(&self) -> i64 {
        todo!()
    }
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

/// DecayScorer: freshness by age against a clock.
#[derive(Debug, Clone)]
pub struct DecayScorer;

impl DecayScorer {
    /// Score for items without a timestamp unless configured otherwise (D16).
    pub const DEFAULT_NULL_TIMESTAMP_SCORE: f64 = 0.5;
    /// Builds and validates the curve and `null_timestamp_score` (in [0, 1]).
    pub fn new(
        _clock: Arc<dyn Clock>,
        _curve: DecayCurve,
        _null_timestamp_score: f64,
    ) -> Result<Self> {
        todo!()
    }
    /// The curve.
    pub fn curve(&self) -> &DecayCurve {
        todo!()
    }
    /// The null-timestamp score.
    pub fn null_timestamp_score(&self) -> f64 {
        todo!()
    }
}

impl Scorer for DecayScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
