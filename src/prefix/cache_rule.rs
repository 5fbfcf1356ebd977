//! How a provider turns a reused prefix into cached tokens (`docs/prefix-cache.md` cites
//! the providers' documentation for each rule).

use crate::error::{Error, Result};

/// A provider's prompt-caching rule, applied to the tokens of the previous window that the
/// new window starts with. The figure is in the caller's token units: exact when the
/// item tokens are the provider's, an estimate otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheRule {
    /// No alignment: every kept token counts (a custom cache, or the raw figure).
    #[default]
    None,
    /// OpenAI: prompts of 1 024 tokens or more are cached, and hits come in 128-token
    /// increments: 0 below 1 024, else `1024 + 128 × ⌊(kept − 1024) / 128⌋`.
    OpenAi,
    /// Anthropic, with a cache breakpoint at the end of every request (automatic caching):
    /// the kept prefix is read from the cache when it holds at least `min_tokens` (the
    /// model's minimum cacheable length) and the first difference is no more than
    /// `lookback` items before the end of the new window (the breakpoint looks back 20
    /// content blocks; an item stands for at least one block, so this is optimistic for
    /// items of several blocks). `lookback` 0 means no limit (breakpoints placed by the
    /// host closer to edits).
    Anthropic {
        /// The model's minimum cacheable prompt length (1 024 for most models; 2 048 or
        /// 4 096 for some, see the provider's table).
        min_tokens: i64,
        /// Items the breakpoint looks back over (20), or 0 for no limit.
        lookback: usize,
    },
    /// Fixed-size blocks hashed with their prefix (vLLM's automatic prefix caching): only
    /// whole blocks of `size` tokens are reused, `size × ⌊kept / size⌋`.
    Blocks {
        /// Tokens per block (vLLM's default is 16).
        size: i64,
    },
}

impl CacheRule {
    /// Anthropic's rule with the defaults: 1 024 tokens, 20 items of lookback.
    pub const ANTHROPIC: CacheRule = CacheRule::Anthropic {
        min_tokens: 1024,
        lookback: 20,
    };
    /// vLLM's default block size, 16 tokens.
    pub const VLLM: CacheRule = CacheRule::Blocks { size: 16 };

    /// Checks the parameters: a block size of at least 1, a non-negative minimum.
    pub fn validate(&self) -> Result<()> {
        match *self {
            CacheRule::Blocks { size } if size < 1 => Err(Error::InvalidArgument(format!(
                "cache block size must be at least 1, got {size}"
            ))),
            CacheRule::Anthropic { min_tokens, .. } if min_tokens < 0 => {
                Err(Error::InvalidArgument(format!(
                    "cache minimum length must not be negative, got {min_tokens}"
                )))
            }
            _ => Ok(()),
        }
    }

    /// The cached tokens of a turn whose window starts with `kept_tokens` tokens
    /// (`kept_entries` items) of the previous window and holds `window_entries` items.
    pub fn cached_tokens(
        &self,
        kept_tokens: i64,
        kept_entries: usize,
        window_entries: usize,
    ) -> i64 {
        let kept = kept_tokens.max(0);
        match *self {
            CacheRule::None => kept,
            CacheRule::OpenAi if kept < 1024 => 0,
            CacheRule::OpenAi => 1024 + (kept - 1024) / 128 * 128,
            CacheRule::Anthropic {
                min_tokens,
                lookback,
            } => {
                let after = window_entries.saturating_sub(kept_entries);
                if kept >= min_tokens.max(1) && (lookback == 0 || after <= lookback) {
                    kept
                } else {
                    0
                }
            }
            CacheRule::Blocks { size } => kept / size.max(1) * size.max(1),
        }
    }

    /// The rule's name as the CLI and the JSON report spell it: `none`, `openai`,
    /// `anthropic`, `blocks`.
    pub fn name(&self) -> &'static str {
        match self {
            CacheRule::None => "none",
            CacheRule::OpenAi => "openai",
            CacheRule::Anthropic { .. } => "anthropic",
            CacheRule::Blocks { .. } => "blocks",
        }
    }

    /// Parses the CLI spelling: `none`, `openai`, `anthropic` or `anthropic:MIN`, `vllm`
    /// (16-token blocks) or `blocks:N`.
    pub fn from_name(text: &str) -> Result<CacheRule> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown cache rule '{text}'; known: none, openai, anthropic[:MIN], vllm, \
                 blocks:N"
            ))
        };
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (text, None),
        };
        let number = |a: &str| a.parse::<i64>().map_err(|_| bad());
        let rule = match (name.to_ascii_lowercase().as_str(), arg) {
            ("none", None) => CacheRule::None,
            ("openai", None) => CacheRule::OpenAi,
            ("anthropic", None) => CacheRule::ANTHROPIC,
            ("anthropic", Some(a)) => CacheRule::Anthropic {
                min_tokens: number(a)?,
                lookback: 20,
            },
            ("vllm", None) => CacheRule::VLLM,
            ("vllm" | "blocks", Some(a)) => CacheRule::Blocks { size: number(a)? },
            _ => return Err(bad()),
        };
        rule.validate()?;
        Ok(rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_starts_at_1024_and_steps_by_128() {
        let r = CacheRule::OpenAi;
        for (kept, want) in [
            (0, 0),
            (1023, 0),
            (1024, 1024),
            (1151, 1024),
            (1152, 1152),
            (5000, 4992),
        ] {
            assert_eq!(r.cached_tokens(kept, 3, 5), want, "{kept}");
        }
    }

    #[test]
    fn anthropic_needs_the_minimum_and_the_lookback() {
        let r = CacheRule::ANTHROPIC;
        assert_eq!(r.cached_tokens(1023, 10, 12), 0);
        assert_eq!(r.cached_tokens(3000, 10, 30), 3000); // 20 items after the difference
        assert_eq!(r.cached_tokens(3000, 10, 31), 0); // 21: out of the breakpoint's reach
        let unlimited = CacheRule::Anthropic {
            min_tokens: 2048,
            lookback: 0,
        };
        assert_eq!(unlimited.cached_tokens(3000, 10, 500), 3000);
        assert_eq!(unlimited.cached_tokens(2047, 10, 11), 0);
    }

    #[test]
    fn blocks_round_down_to_whole_blocks() {
        assert_eq!(CacheRule::VLLM.cached_tokens(47, 1, 2), 32);
        assert_eq!(CacheRule::Blocks { size: 1 }.cached_tokens(47, 1, 2), 47);
        assert_eq!(CacheRule::None.cached_tokens(47, 1, 2), 47);
    }

    #[test]
    fn names_parse_and_bad_ones_fail() {
        assert_eq!(CacheRule::from_name("openai").unwrap(), CacheRule::OpenAi);
        assert_eq!(CacheRule::from_name("vllm").unwrap(), CacheRule::VLLM);
        assert_eq!(
            CacheRule::from_name("blocks:32").unwrap(),
            CacheRule::Blocks { size: 32 }
        );
        assert_eq!(
            CacheRule::from_name("anthropic:4096").unwrap(),
            CacheRule::Anthropic {
                min_tokens: 4096,
                lookback: 20
            }
        );
        for bad in ["blocks:0", "blocks", "gemini", "openai:3", "blocks:x"] {
            assert!(CacheRule::from_name(bad).is_err(), "{bad}");
        }
    }
}
