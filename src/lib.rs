//! ctxpack decides what goes into a language model's context window.
//!
//! Given candidate items with caller-counted tokens and a token budget, a [`Pipeline`]
//! scores, deduplicates, sorts, slices to fit and places them in an attention-aware order,
//! and can explain every inclusion and exclusion. It implements the Cupel
//! context-selection specification v1.0.0.
//!
//! The modules follow the specification: [`model`], [`pipeline`], [`scorer`], [`slicer`],
//! [`placer`], [`diagnostics`]; declarative [`policy`] configurations and [`analytics`]
//! build on them; [`tokenizer`] counts tokens for OpenAI's encodings. The C ABI lives in
//! its own module tree on top.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod analytics;
pub mod diagnostics;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
mod hash;
pub mod model;
pub mod pipeline;
pub mod placer;
pub mod policy;
mod radix;
pub mod scorer;
pub mod slicer;
pub mod tokenizer;

#[cfg(test)]
pub(crate) mod testutil;

pub use error::{Error, ErrorCode, Result};
pub use model::{
    ContextBudget, ContextItem, ContextKind, ContextSource, OverflowStrategy, ScoredItem,
};
pub use pipeline::{Pipeline, PipelineBuilder, RunOptions, Selection};
