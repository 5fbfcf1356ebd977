//! ctxpack decides what goes into a language model's context window.
//!
//! Given candidate items with caller-counted tokens and a token budget, a [`Pipeline`]
//! scores, deduplicates, sorts, slices to fit and places them in an attention-aware order,
//! and can explain every inclusion and exclusion. It implements the Cupel
//! context-selection specification v1.0.0.
//!
//! The modules follow the specification: [`model`], [`pipeline`], [`scorer`], [`slicer`],
//! [`placer`], [`diagnostics`]; [`prefix`] keeps selections stable across turns for provider
//! prompt caches; declarative [`policy`] configurations and [`analytics`]
//! build on them; [`chat`] trims OpenAI and Anthropic chat requests and [`tokenizer`] counts
//! tokens for OpenAI's encodings. The C ABI lives in its own module tree on top.
//!
//! # Quickstart
//!
//! Three items, a chat-style pipeline, the selected window (the README's Rust quickstart,
//! also `cargo run --example quickstart`):
//!
//! ```
//! use std::sync::Arc;
//!
//! use ctxpack::placer::ChronologicalPlacer;
//! use ctxpack::scorer::{CompositeScorer, KindScorer, RecencyScorer, Scorer};
//! use ctxpack::slicer::GreedySlice;
//! use ctxpack::{ContextBudget, ContextItem, ContextKind, Pipeline};
//!
//! let items = vec![
//!     ContextItem::builder("You are a helpful assistant.", 8)
//!         .kind(ContextKind::new("SystemPrompt")?)
//!         .pinned(true)
//!         .build()?,
//!     ContextItem::builder("User: what changed in v2?", 9)
//!         .timestamp(1_700_000_000_000_000_000)
//!         .build()?,
//!     ContextItem::builder("Release notes for v2 ...", 300)
//!         .kind(ContextKind::new("Document")?)
//!         .timestamp(1_690_000_000_000_000_000)
//!         .build()?,
//! ];
//! let recency: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
//! let kind: Arc<dyn Scorer> = Arc::new(KindScorer::new());
//! let pipeline = Pipeline::builder()
//!     .scorer(Arc::new(CompositeScorer::new(vec![
//!         (recency, 3.0),
//!         (kind, 1.0),
//!     ])?))
//!     .slicer(Arc::new(GreedySlice::new()))
//!     .placer(Arc::new(ChronologicalPlacer::new()))
//!     .build()?;
//! let selection = pipeline.run(&items, &ContextBudget::new(4096, 3000)?)?;
//! for &i in &selection.indices {
//!     println!("{}", items[i].content());
//! }
//! # Ok::<(), ctxpack::Error>(())
//! ```
//!
//! Or start from a preset or a policy file ([`policy::Policy`]). Run with
//! [`RunOptions`] and a [`diagnostics::TraceDetail`] above `None` to get a
//! [`diagnostics::SelectionReport`] explaining every inclusion and exclusion;
//! [`analytics`] has budget simulation, policy sensitivity and report metrics.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod alloc;
pub mod analytics;
pub mod cancel;
pub mod chat;
pub mod diagnostics;
mod downcast;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
mod hash;
pub mod model;
pub mod pipeline;
pub mod placer;
pub mod policy;
pub mod prefix;
mod radix;
pub mod scorer;
pub mod slicer;
pub mod tokenizer;

/// The seeded generator the unit tests share with the integration tests and the benchmark.
#[cfg(test)]
#[path = "../tests/common/rng.rs"]
pub(crate) mod testutil;

pub use cancel::CancelToken;
pub use error::{Error, ErrorCode, Result};
pub use model::{
    ContextBudget, ContextItem, ContextKind, ContextSource, GroupValue, OverflowStrategy,
    ScoredItem, TagIter, Tags,
};
pub use pipeline::{Pipeline, PipelineBuilder, RunOptions, Selection};
