//! The memory a pipeline handle keeps for its one-shot runs (`ctxpack_pipeline_run_descs`),
//! so that a host calling it once per request does not allocate, and fault in, the
//! columnar run's buffers every time (docs/ffi.md, "A pipeline's run memory").
//!
//! One set of buffers per pipeline, for runs of at most [`KEPT_RUN_LIMIT`] descriptors: a
//! run takes it, and gives it back when it is over; a run that finds it taken (another
//! thread's run holds it) uses memory of its own, as does a larger run, whose buffers
//! are freed stage by stage as before, so the peak memory of a large run is unchanged.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

use crate::pipeline::ColumnarScratch;

/// The largest one-shot run, in descriptors, whose memory a pipeline keeps: 2^17. For
/// an agent pipeline the kept buffers take about 170 bytes per descriptor of the largest
/// run kept, so at most about 22 MB, under 0.4× such a run's own input.
pub(crate) const KEPT_RUN_LIMIT: usize = 1 << 17;

/// The kept buffers of a pipeline handle: empty before the first run, while a run holds
/// them, and after `ctxpack_pipeline_release_memory`.
#[derive(Default)]
pub(crate) struct RunMemory(Mutex<Option<ColumnarScratch>>);

impl RunMemory {
    /// The buffers of a one-shot run over `count` descriptors: the kept ones when the run
    /// may keep them and no other run holds them, otherwise new ones.
    pub(crate) fn lease(&self, count: usize) -> Lease<'_> {
        if count > KEPT_RUN_LIMIT {
            return Lease {
                scratch: ColumnarScratch::for_one_run(),
                home: None,
            };
        }
        let scratch = self.slot().take().unwrap_or_default();
        Lease {
            scratch,
            home: Some(self),
        }
    }

    /// Frees the kept buffers (a run that holds them keeps them until it is over, then
    /// gives them back).
    pub(crate) fn release(&self) {
        drop(self.slot().take());
    }

    /// Whether buffers are kept (for tests).
    #[cfg(test)]
    pub(crate) fn is_kept(&self) -> bool {
        self.slot().is_some()
    }

    /// The slot; a panic while it was locked (there is no code that can panic under the
    /// lock) would leave it as it was, so a poisoned lock is used as it is.
    fn slot(&self) -> MutexGuard<'_, Option<ColumnarScratch>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A run's buffers; those that may be kept go back to their pipeline when the lease is
/// dropped, unless another run has given back its own in the meantime.
pub(crate) struct Lease<'a> {
    scratch: ColumnarScratch,
    home: Option<&'a RunMemory>,
}

impl Deref for Lease<'_> {
    type Target = ColumnarScratch;
    fn deref(&self) -> &ColumnarScratch {
        &self.scratch
    }
}

impl DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut ColumnarScratch {
        &mut self.scratch
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(home) = self.home {
            let mut slot = home.slot();
            if slot.is_none() {
                // Taking the buffers leaves empty ones, which allocate nothing.
                *slot = Some(std::mem::take(&mut self.scratch));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives the lease's buffers some memory, as a run would.
    fn grow(lease: &mut Lease<'_>, count: usize) {
        lease.columns.tokens.resize(count, 1);
    }

    #[test]
    fn a_small_run_keeps_its_memory_for_the_next() {
        let memory = RunMemory::default();
        assert!(!memory.is_kept());
        let mut first = memory.lease(1_000);
        grow(&mut first, 1_000);
        drop(first);
        assert!(memory.is_kept());
        let second = memory.lease(10);
        assert!(!memory.is_kept(), "the run holds the buffers");
        assert!(
            second.columns.tokens.capacity() >= 1_000,
            "the same buffers"
        );
        drop(second);
        assert!(memory.is_kept());
    }

    #[test]
    fn a_run_over_the_limit_neither_takes_nor_keeps_memory() {
        let memory = RunMemory::default();
        let mut kept = memory.lease(KEPT_RUN_LIMIT);
        grow(&mut kept, 64);
        drop(kept);
        let mut large = memory.lease(KEPT_RUN_LIMIT + 1);
        assert!(memory.is_kept(), "the kept buffers stay");
        assert_eq!(large.columns.tokens.capacity(), 0, "new buffers");
        grow(&mut large, 128);
        drop(large);
        assert!(memory.lease(1).columns.tokens.capacity() < 128);
    }

    #[test]
    fn concurrent_runs_take_one_set_and_keep_one_set() {
        let memory = RunMemory::default();
        let mut first = memory.lease(100);
        grow(&mut first, 100);
        drop(first);
        let holder = memory.lease(100);
        let mut other = memory.lease(100);
        assert_eq!(
            other.columns.tokens.capacity(),
            0,
            "the other run's own buffers"
        );
        grow(&mut other, 7);
        drop(other);
        assert!(memory.is_kept(), "the other run's buffers kept");
        drop(holder);
        assert_eq!(
            memory.lease(1).columns.tokens.len(),
            7,
            "the first given back stays"
        );
    }

    #[test]
    fn release_frees_the_kept_memory_and_a_running_lease_gives_its_back() {
        let memory = RunMemory::default();
        drop(memory.lease(5));
        memory.release();
        assert!(!memory.is_kept());
        let running = memory.lease(5);
        memory.release();
        drop(running);
        assert!(memory.is_kept(), "given back after the release");
    }
}
