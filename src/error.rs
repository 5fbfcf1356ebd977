//! The one error type of the core engine and its stable numeric codes.
//!
//! Every variant maps to an [`ErrorCode`] whose numeric value never changes between
//! releases; the C ABI exposes these values as `ctxpack_status`.

/// The one table of the core error kinds: the [`Error`] and [`ErrorCode`] variant, its
/// stable number, and the name of the C ABI's `ctxpack_status` with the same number.
///
/// `ErrorCode`, `ErrorCode::ALL`, [`Error::code`] and the C layer's conversions are all
/// derived from it: adding a kind is one line here, the `Error` variant (its payload and
/// message), and the `ctxpack_status` enumerator (written out in `src/ffi/status.rs` so
/// that cbindgen sees it); the compiler reports any of them that is missing. Numbers are
/// part of the C ABI: never renumber, only append.
///
/// Invoked with the name of a macro, it calls that macro with the table.
macro_rules! core_error_kinds {
    ($then:ident) => {
        $then! {
            /// An item was built with empty content.
            EmptyContent = 1 => CTXPACK_EMPTY_CONTENT,
            /// A kind was empty or whitespace-only.
            EmptyKind = 2 => CTXPACK_EMPTY_KIND,
            /// A source was empty or whitespace-only.
            EmptySource = 3 => CTXPACK_EMPTY_SOURCE,
            /// A budget failed one of its seven validation rules.
            InvalidBudget = 4 => CTXPACK_INVALID_BUDGET,
            /// Pinned items need more tokens than `max_tokens - output_reserve`.
            PinnedExceedsBudget = 5 => CTXPACK_PINNED_EXCEEDS_BUDGET,
            /// The merged selection exceeds the target under the Throw strategy.
            Overflow = 6 => CTXPACK_OVERFLOW,
            /// A scorer configuration is invalid.
            ScorerConfig = 7 => CTXPACK_SCORER_CONFIG,
            /// A slicer configuration is invalid.
            SlicerConfig = 8 => CTXPACK_SLICER_CONFIG,
            /// A pipeline is missing a component or is otherwise misconfigured.
            PipelineConfig = 9 => CTXPACK_PIPELINE_CONFIG,
            /// A knapsack keep table would exceed the memory guard.
            TableTooLarge = 10 => CTXPACK_TABLE_TOO_LARGE,
            /// A count-quota slicer under Throw found too few candidates of a required kind.
            CountRequirementUnmet = 11 => CTXPACK_COUNT_REQUIREMENT_UNMET,
            /// A caller-supplied callback failed or returned an invalid result.
            Callback = 12 => CTXPACK_CALLBACK,
            /// A token sum does not fit in a signed 64-bit integer.
            TokenOverflow = 13 => CTXPACK_TOKEN_OVERFLOW,
            /// A policy (JSON or value) is invalid.
            InvalidPolicy = 14 => CTXPACK_INVALID_POLICY,
            /// An argument is invalid (out of range, malformed, or inconsistent).
            InvalidArgument = 15 => CTXPACK_INVALID_ARGUMENT,
            /// Memory for a size the caller asked for (a budget, a count, a length) could
            /// not be allocated.
            OutOfMemory = 16 => CTXPACK_OUT_OF_MEMORY,
            /// The operation needs a cargo feature this build was compiled without.
            Unsupported = 17 => CTXPACK_UNSUPPORTED,
            /// The run was cancelled through its [`crate::CancelToken`].
            Cancelled = 18 => CTXPACK_CANCELLED,
            /// A prefix state is corrupt, truncated, of a newer format, or from another
            /// conversation.
            InvalidState = 19 => CTXPACK_INVALID_STATE,
            /// A chat request is malformed or breaks its provider's rules.
            InvalidRequest = 20 => CTXPACK_INVALID_REQUEST,
        }
    };
}
pub(crate) use core_error_kinds;

/// Defines [`ErrorCode`] and [`Error::code`] from the table.
macro_rules! define_error_code {
    ($($(#[doc = $doc:literal])* $kind:ident = $value:literal => $status:ident,)*) => {
        /// Stable numeric identity of an error kind. `0` is reserved for success.
        ///
        /// The values are part of the C ABI: never renumber a variant, only append (hence
        /// `#[non_exhaustive]`).
        #[repr(i32)]
        #[non_exhaustive]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $kind = $value,)*
        }

        impl ErrorCode {
            /// Every code, in numeric order.
            pub const ALL: [ErrorCode; [$($value),*].len()] = [$(ErrorCode::$kind),*];
        }

        impl Error {
            /// The stable code of this error.
            pub fn code(&self) -> ErrorCode {
                match self {
                    $(Error::$kind { .. } => ErrorCode::$kind,)*
                }
            }
        }
    };
}
core_error_kinds!(define_error_code);

impl ErrorCode {
    /// The numeric value exposed through the C ABI.
    pub fn value(self) -> i32 {
        self as i32
    }
}

/// Every way a ctxpack operation can fail. Messages carry the numbers involved.
///
/// Each variant has a row, under the same name, in this module's table of error kinds,
/// which gives its [`ErrorCode`]; variants are only ever appended, hence
/// `#[non_exhaustive]`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An item was built with empty content.
    #[error("content must be non-empty")]
    EmptyContent,
    /// A kind was empty or whitespace-only.
    #[error("kind must be a non-empty, non-whitespace-only string")]
    EmptyKind,
    /// A source was empty or whitespace-only.
    #[error("source must be a non-empty, non-whitespace-only string")]
    EmptySource,
    /// A budget failed validation; the message names the rule and the values.
    #[error("invalid budget: {0}")]
    InvalidBudget(String),
    /// Pinned items need more tokens than `max_tokens - output_reserve`.
    #[error("pinned tokens ({pinned_tokens}) exceed available budget ({available})")]
    PinnedExceedsBudget {
        /// Sum of the pinned items' tokens.
        pinned_tokens: i64,
        /// `max_tokens - output_reserve`.
        available: i64,
    },
    /// The merged selection exceeds the target under the Throw strategy.
    #[error("merged tokens ({merged_tokens}) exceed target tokens ({target_tokens})")]
    Overflow {
        /// Tokens of pinned plus sliced items.
        merged_tokens: i64,
        /// The caller's `target_tokens`.
        target_tokens: i64,
    },
    /// A scorer configuration is invalid.
    #[error("invalid scorer configuration: {0}")]
    ScorerConfig(String),
    /// A slicer configuration is invalid.
    #[error("invalid slicer configuration: {0}")]
    SlicerConfig(String),
    /// A pipeline is missing a component or is otherwise misconfigured.
    #[error("invalid pipeline configuration: {0}")]
    PipelineConfig(String),
    /// A knapsack keep table would exceed the memory guard.
    #[error(
        "KnapsackSlice keep table needs {bytes} bytes, over the {limit} byte limit: \
         candidates={candidates}, capacity={capacity}, cells={cells}"
    )]
    TableTooLarge {
        /// Candidates with positive tokens.
        candidates: u64,
        /// Discretised capacity (`target / bucket_size`).
        capacity: u64,
        /// `candidates * (capacity + 1)`.
        cells: u64,
        /// Bytes the keep table would need.
        bytes: u64,
        /// The configured limit in bytes.
        limit: u64,
    },
    /// A count-quota slicer under Throw found too few candidates of a required kind.
    #[error(
        "{slicer}: candidate pool for kind '{kind}' has {satisfied} items but RequireCount is {required}."
    )]
    CountRequirementUnmet {
        /// `CountQuotaSlice` or `CountConstrainedKnapsackSlice`.
        slicer: &'static str,
        /// The entry's kind spelling.
        kind: String,
        /// Candidates found.
        satisfied: u64,
        /// `require_count`.
        required: u64,
    },
    /// A caller-supplied callback failed or returned an invalid result.
    #[error("callback failed: {0}")]
    Callback(String),
    /// A token sum does not fit in a signed 64-bit integer.
    #[error("token arithmetic overflow: {0}")]
    TokenOverflow(String),
    /// A policy is invalid; the message names the JSON path of the bad field.
    #[error("invalid policy: {0}")]
    InvalidPolicy(String),
    /// An argument is invalid.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An allocation whose size comes from the caller's numbers failed.
    #[error("out of memory: {what} needs {bytes} bytes")]
    OutOfMemory {
        /// What was being allocated (`"the knapsack DP row"`, `"item 3: content"`, ...).
        what: String,
        /// The bytes asked for (wider than `usize`: a request may exceed the address space).
        bytes: u128,
    },
    /// The operation needs a cargo feature this build was compiled without (the message
    /// names it).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The run was cancelled through its [`crate::CancelToken`]; the message says where
    /// the run stopped.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// A prefix state cannot be used: it is corrupt or truncated (the checksum or the
    /// layout does not hold), of a newer format version, or from another conversation
    /// (`docs/prefix-cache.md`); the message says which.
    #[error("invalid prefix state: {0}")]
    InvalidState(String),
    /// A chat request is invalid; the message starts with the JSON path of the bad value.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds token counts with overflow checking; `what` names the sum in the error.
pub(crate) fn checked_token_sum<I: IntoIterator<Item = i64>>(values: I, what: &str) -> Result<i64> {
    values.into_iter().try_fold(0i64, |acc, t| {
        acc.checked_add(t)
            .ok_or_else(|| Error::TokenOverflow(format!("{what} does not fit in 64 bits")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_ascending_unique_and_below_the_c_layer() {
        let values: Vec<i32> = ErrorCode::ALL.iter().map(|c| c.value()).collect();
        assert_eq!(values[0], 1);
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        assert!(values.iter().all(|&v| v < 100), "{values:?}");
        assert_eq!(ErrorCode::InvalidRequest.value(), 20);
        assert_eq!(ErrorCode::Cancelled.value(), 18);
        assert_eq!(ErrorCode::InvalidState.value(), 19);
    }

    #[test]
    fn messages_carry_numbers() {
        let e = Error::PinnedExceedsBudget {
            pinned_tokens: 120,
            available: 100,
        };
        assert_eq!(
            e.to_string(),
            "pinned tokens (120) exceed available budget (100)"
        );
        assert_eq!(e.code(), ErrorCode::PinnedExceedsBudget);
        let e = Error::Overflow {
            merged_tokens: 5,
            target_tokens: 4,
        };
        assert_eq!(e.to_string(), "merged tokens (5) exceed target tokens (4)");
    }

    #[test]
    fn checked_sum_reports_overflow() {
        assert_eq!(checked_token_sum([1, 2, -3], "x"), Ok(0));
        let err = checked_token_sum([i64::MAX, 1], "pinned tokens").unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenOverflow);
        assert!(err.to_string().contains("pinned tokens"));
    }
}
