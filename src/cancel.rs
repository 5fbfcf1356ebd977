//! Cancelling a run from another thread.
//!
//! A [`CancelToken`] is a shared flag: any clone of it may [`CancelToken::cancel`] from any
//! thread, and a run started with [`crate::Pipeline::run_cancellable`] stops with
//! [`crate::Error::Cancelled`] at its next check. The run checks before each stage and
//! inside its long loops: every row of a knapsack DP (the plain knapsack and the one inside
//! the count-constrained knapsack), and every call of a per-item custom scorer.
//!
//! How the loops see the token: the run installs it as the calling thread's *current*
//! token for its duration ([`Scope`]) and the loops read it there ([`check`]), so no slicer
//! or scorer signature carries it. A run without a token installs nothing; a check then
//! reads one thread-local `None`, which costs nothing measurable. A run nested in a callback
//! of a cancellable run (on the same thread) and started without its own token is cancelled
//! with the outer one, as it works on the outer run's behalf; one started with its own token
//! answers to that token only, until it returns. Work a custom component moves to other
//! threads does not see the token: the run stops at its next check on its own thread.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// A cancellation flag shared by its clones. Cheap to clone, `Send + Sync`; once cancelled
/// it stays cancelled.
///
/// ```
/// use ctxpack::CancelToken;
///
/// let token = CancelToken::new();
/// let other = token.clone(); // e.g. moved to another thread
/// assert!(!token.is_cancelled());
/// other.cancel();
/// assert!(token.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run using this token (or any clone of it), now and later.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`CancelToken::cancel`] was called on this token or a clone of it.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

thread_local! {
    /// The token of the cancellable run in progress on this thread, if any.
    static CURRENT: RefCell<Option<CancelToken>> = const { RefCell::new(None) };
}

/// Makes a token the thread's current one until dropped, then restores the previous one
/// (also when the run fails or unwinds).
pub(crate) struct Scope {
    previous: Option<CancelToken>,
}

impl Scope {
    /// Installs `token` as the current token of this thread.
    pub(crate) fn enter(token: &CancelToken) -> Scope {
        let previous = CURRENT.with(|c| c.replace(Some(token.clone())));
        Scope { previous }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Fails with [`Error::Cancelled`] when the thread's current token is cancelled; `when`
/// completes the message ("the run was cancelled {when}", e.g. "while slicing").
pub(crate) fn check(when: &str) -> Result<()> {
    let cancelled = CURRENT.with(|c| c.borrow().as_ref().is_some_and(CancelToken::is_cancelled));
    if cancelled {
        return Err(Error::Cancelled(format!("the run was cancelled {when}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_passes_without_a_token_and_with_an_uncancelled_one() {
        assert!(check("x").is_ok());
        let token = CancelToken::new();
        let _scope = Scope::enter(&token);
        assert!(check("x").is_ok());
    }

    #[test]
    fn check_fails_once_a_clone_is_cancelled() {
        let token = CancelToken::new();
        let _scope = Scope::enter(&token);
        token.clone().cancel();
        let e = check("while slicing").unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::Cancelled);
        assert_eq!(
            e.to_string(),
            "cancelled: the run was cancelled while slicing"
        );
    }

    #[test]
    fn scopes_nest_and_restore_the_previous_token() {
        let outer = CancelToken::new();
        outer.cancel();
        {
            let _outer = Scope::enter(&outer);
            {
                let inner = CancelToken::new();
                let _inner = Scope::enter(&inner);
                assert!(check("x").is_ok(), "the inner token answers alone");
            }
            assert!(check("x").is_err(), "the outer token is back");
        }
        assert!(check("x").is_ok(), "no token after the outer scope");
    }

    fn knapsack_pipeline(scorer: Arc<dyn crate::scorer::Scorer>) -> crate::Pipeline {
        crate::Pipeline::builder()
            .scorer(scorer)
            .slicer(Arc::new(crate::slicer::KnapsackSlice::new(1).unwrap()))
            .placer(Arc::new(crate::placer::ChronologicalPlacer::new()))
            .build()
            .unwrap()
    }

    fn items(n: usize) -> Vec<crate::ContextItem> {
        (0..n)
            .map(|i| {
                crate::ContextItem::new(format!("item {i}"), 100 + (i as i64 * 37) % 900).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_token_never_cancelled_gives_the_plain_result() {
        let scorer = crate::scorer::PerItemScorer::new(|i, _: &[&crate::ContextItem]| {
            Ok(((i * 7) % 11) as f64 / 11.0)
        });
        let pipeline = knapsack_pipeline(Arc::new(scorer));
        let items = items(40);
        let budget = crate::ContextBudget::new(5000, 5000).unwrap();
        let options = crate::RunOptions {
            trace: crate::diagnostics::TraceDetail::Item,
            on_overflow: None,
        };
        let plain = pipeline.run_with(&items, &budget, &options).unwrap();
        let token = CancelToken::new();
        let with = pipeline
            .run_cancellable(&items, &budget, &options, &token)
            .unwrap();
        assert!(!plain.indices.is_empty());
        assert_eq!(plain.indices, with.indices);
        assert_eq!(plain.scores, with.scores);
        assert_eq!(plain.reasons, with.reasons);
        let report = |s: &crate::Selection| s.report.clone().unwrap();
        assert_eq!(report(&plain).included, report(&with).included);
        assert_eq!(report(&plain).excluded, report(&with).excluded);
        assert!(check("x").is_ok(), "the run's scope ended with it");
    }

    #[test]
    fn another_thread_stops_a_long_knapsack_run() {
        // 800 candidates against 300 000 one-token buckets: seconds of DP in a debug build.
        let started = Arc::new(AtomicBool::new(false));
        let flag = started.clone();
        let scorer = crate::scorer::PerItemScorer::new(move |i, _: &[&crate::ContextItem]| {
            flag.store(true, Ordering::Release);
            Ok(1.0 / (i + 1) as f64)
        });
        let pipeline = knapsack_pipeline(Arc::new(scorer));
        let items = items(800);
        let budget = crate::ContextBudget::new(300_000, 300_000).unwrap();
        let token = CancelToken::new();
        let remote = token.clone();
        let canceller = std::thread::spawn(move || {
            while !started.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            remote.cancel();
            std::time::Instant::now()
        });
        let e = pipeline
            .run_cancellable(&items, &budget, &crate::RunOptions::default(), &token)
            .unwrap_err();
        let returned = std::time::Instant::now();
        let cancelled_at = canceller.join().unwrap();
        assert_eq!(e.code(), crate::ErrorCode::Cancelled, "{e}");
        assert!(e.to_string().contains("while slicing (knapsack)"), "{e}");
        let latency = returned.saturating_duration_since(cancelled_at);
        assert!(latency < std::time::Duration::from_secs(1), "{latency:?}");
    }

    #[test]
    fn another_thread_cancels() {
        let token = CancelToken::new();
        let remote = token.clone();
        std::thread::spawn(move || remote.cancel()).join().unwrap();
        assert!(token.is_cancelled());
    }
}
