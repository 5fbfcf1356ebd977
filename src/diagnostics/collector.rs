//! Trace collectors (STUB).
pub(crate) trait Collector {}
pub(crate) struct NullCollector;
pub(crate) struct Recorder;
