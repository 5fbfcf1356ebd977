//! Command-line arguments of the `ctxpack` tool, parsed by hand (no dependency needed for
//! a dozen flags).

use std::fmt;

use ctxpack::prefix::{CacheRule, PrefixMode};
use ctxpack::tokenizer::ENCODING_NAMES;
use ctxpack::GroupValue;

/// What the tool prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// The selected window as JSON Lines, in placed order.
    Window,
    /// A readable table of every candidate: score, decision, reason.
    Explain,
    /// The SelectionReport in the JSON wire form.
    ReportJson,
}

/// Where the pipeline configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// A built-in preset by name.
    Preset(String),
    /// A policy JSON file.
    File(String),
}

/// What the input is (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// Candidate items, JSON Lines or a JSON array.
    Items,
    /// An OpenAI Chat Completions request body.
    OpenAi,
    /// An Anthropic Messages request body.
    Anthropic,
}

/// Where the budget comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetSource {
    /// `--max`, `--target` (defaults to `--max`), `--reserve` (defaults to 0).
    Flags {
        /// `--max`.
        max_tokens: i64,
        /// `--target`.
        target_tokens: Option<i64>,
        /// `--reserve`.
        output_reserve: i64,
    },
    /// `--budget FILE.json`: a budget in the .NET JSON form.
    File(String),
}

/// Parsed arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// Input path; `None` or `-` reads standard input.
    pub input: Option<String>,
    /// `--max/--target/--reserve` or `--budget` (one of them is required).
    pub budget: BudgetSource,
    /// `--preset` or `--policy` (defaults to the `chat` preset).
    pub policy: PolicySource,
    /// `--strict`: reject in policy and budget files what is otherwise ignored with a
    /// warning.
    pub strict: bool,
    /// What to print.
    pub output: OutputMode,
    /// `--format` (defaults to items).
    pub format: InputFormat,
    /// `--pinned-first`: place pinned items first (overrides the policy when given).
    pub pinned_first: bool,
    /// `--group-value`: how a group's value is computed (overrides the policy when given).
    pub group_value: Option<GroupValue>,
    /// `--no-variants`: select every item in full or not at all (overrides the policy).
    pub no_variants: bool,
    /// `--encoding`: the encoding that counts items and variants without `tokens` and chat
    /// requests, and cuts `--head-tail` forms (one of `ctxpack::tokenizer::ENCODING_NAMES`,
    /// as spelled there).
    pub encoding: Option<&'static str>,
    /// `false` with `--no-pin-last-turn` (chat requests only).
    pub pin_last_turn: bool,
    /// `--head-tail HEAD[:TAIL]`: add a head-and-tail form to long items.
    pub head_tail: Option<(usize, usize)>,
    /// `--head-tail-quality Q`: the quality of those forms (default: the share kept).
    pub head_tail_quality: Option<f64>,
    /// `--state FILE` and its companions: a prefix state carried across runs.
    pub prefix: Option<PrefixArgs>,
}

/// The prefix-state options (`--state` and the flags that need it).
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixArgs {
    /// `--state FILE`: read when it exists, rewritten after a successful run.
    pub file: String,
    /// `--prefix measure|hold` (default hold).
    pub mode: PrefixMode,
    /// `--conversation KEY`.
    pub conversation: Option<String>,
    /// `--cache RULE` (default none).
    pub cache: CacheRule,
    /// `--max-value-loss X`.
    pub max_value_loss: Option<f64>,
    /// `--watermark X`.
    pub low_watermark: Option<f64>,
}

/// A usage error: the message is printed on one line, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `--help` text.
pub const USAGE: &str = "\
usage: ctxpack [FILE] (--max N [--target N] [--reserve N] | --budget FILE.json)
               [--preset NAME | --policy FILE.json] [--strict] [--pinned-first]
               [--group-value V] [--no-variants] [--head-tail HEAD[:TAIL] [--head-tail-quality Q]]
               [--explain | --report json] [--format items|openai|anthropic]
               [--state FILE [--prefix measure|hold] [--conversation KEY] [--cache RULE]
                [--max-value-loss X] [--watermark X]]
               [--encoding o200k_base|cl100k_base] [--no-pin-last-turn]

Reads candidate items (JSON Lines or a JSON array; FILE or standard input when FILE is
absent or '-'), selects the context window for the budget, and prints it as JSON Lines in
placed order. With --format openai or anthropic, reads a chat request body instead and
prints it trimmed to the budget (tool calls kept with their results; docs/chat.md).

  --max N          max_tokens of the budget (required unless --budget is given)
  --target N       target_tokens (default: --max)
  --reserve N      output_reserve (default: 0)
  --budget FILE    the budget as JSON (the .NET form: maxTokens, targetTokens,
                   outputReserve, reservedSlots, estimationSafetyMarginPercent)
  --preset NAME    chat, code-review, rag, document-qa, tool-use, long-running, debugging
                   (default: chat)
  --policy FILE    a policy JSON file instead of a preset
  --pinned-first   place pinned items first, in input order (e.g. an undated system prompt)
  --group-value V  how a group's value is computed from its members' scores: sum (default),
                   max or mean (items with equal \"group\" keys are kept or dropped together)
  --no-variants    select every item in full or not at all: ignore the \"variants\" of
                   the items (cheaper forms used instead of an item that does not fit)
  --head-tail HEAD[:TAIL]
                   add to every item with more than HEAD + TAIL tokens (by the encoding)
                   a form made of its first HEAD and last TAIL tokens (TAIL defaults to
                   HEAD) with a marker between (docs/variants.md); with --format openai
                   or anthropic, shorten long tool outputs that way instead of only
                   dropping them (docs/chat.md)
  --head-tail-quality Q
                   the quality of those forms, in (0, 1] (default: the share of the
                   item's tokens they keep)
  --strict         treat as errors what policy and budget files are otherwise read
                   past with a warning on standard error, as .NET reads them: unknown
                   properties, a scorer without type (recency), a kind repeated in
                   other letter case (last wins), a missing budget field (0)
  --explain        print every candidate with its score, decision, reason and group
  --report json    print the SelectionReport as JSON
  --format F       items (default), openai (Chat Completions request), anthropic (Messages
                   request)
  --state FILE     keep the selection stable across runs for provider prompt caches
                   (docs/prefix-cache.md): FILE holds the previous run's prefix state (read
                   when it exists) and receives this run's (binary, or JSON when FILE ends
                   in .json); --explain adds the reuse report, --report json its JSON
  --prefix M       hold (default): keep the previous window first and append; measure:
                   select as usual and report what survived
  --conversation K a key naming the conversation; a state made with another key is refused
  --cache RULE     the provider's caching rule for the reuse report: none (default), openai,
                   anthropic[:MIN], vllm, blocks:N
  --max-value-loss X  the share of a fresh selection's value a held run may give up (0.05)
  --watermark X    the share of the target a re-anchor selects to, at least (0.8)
  --encoding E     o200k_base or cl100k_base: items and variants without \"tokens\" are
                   counted with it (those with \"tokens\" keep theirs); so are chat
                   requests and the --head-tail forms (default: o200k_base)
  --no-pin-last-turn
                   chat requests: let the last turn (and the question it works on) be
                   dropped like any other message (default: always kept)
  -h, --help       this text
  -V, --version    print the version

Exit status: 0 success, 1 the selection failed (e.g. overflow under the throw strategy),
2 bad input or arguments (the message names the line and field).";

/// Parses the arguments after the program name. `Ok(None)` means help was requested.
pub fn parse(argv: &[String]) -> Result<Option<Args>, UsageError> {
    let mut input = None;
    let (mut max, mut target, mut reserve) = (None, None, None);
    let mut budget_file = None;
    let mut policy = None;
    let mut strict = false;
    let mut output = OutputMode::Window;
    let mut format = InputFormat::Items;
    let (mut pinned_first, mut group_value) = (false, None);
    let (mut state, mut mode, mut conversation, mut cache) = (None, None, None, None);
    let (mut max_value_loss, mut low_watermark) = (None, None);
    let (mut encoding, mut pin_last_turn) = (None, true);
    let (mut no_variants, mut head_tail, mut head_tail_quality) = (false, None, None);
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| UsageError(format!("{flag} needs a value")))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--max" => max = Some(integer("--max", &value("--max")?)?),
            "--target" => target = Some(integer("--target", &value("--target")?)?),
            "--reserve" => reserve = Some(integer("--reserve", &value("--reserve")?)?),
            "--budget" => {
                if budget_file.replace(value("--budget")?).is_some() {
                    return Err(UsageError("give --budget once".into()));
                }
            }
            "--strict" => strict = true,
            "--preset" => set_policy(&mut policy, PolicySource::Preset(value("--preset")?))?,
            "--policy" => set_policy(&mut policy, PolicySource::File(value("--policy")?))?,
            "--explain" => set_output(&mut output, OutputMode::Explain)?,
            "--pinned-first" => pinned_first = true,
            "--group-value" => {
                let v = value("--group-value")?;
                let parsed = GroupValue::from_name(&v).map_err(|_| {
                    UsageError(format!("--group-value expects sum, max or mean, got '{v}'"))
                })?;
                group_value = Some(parsed);
            }
            "--no-variants" => no_variants = true,
            "--head-tail" => head_tail = Some(head_tail_sizes(&value("--head-tail")?)?),
            "--head-tail-quality" => {
                let v = value("--head-tail-quality")?;
                let q: f64 = v
                    .parse()
                    .ok()
                    .filter(|q: &f64| *q > 0.0 && *q <= 1.0)
                    .ok_or_else(|| {
                        UsageError(format!(
                            "--head-tail-quality expects a number in (0, 1], got '{v}'"
                        ))
                    })?;
                head_tail_quality = Some(q);
            }
            "--report" => match value("--report")?.as_str() {
                "json" => set_output(&mut output, OutputMode::ReportJson)?,
                other => {
                    return Err(UsageError(format!(
                        "--report supports only 'json', not '{other}'"
                    )))
                }
            },
            "--format" => format = input_format(&value("--format")?)?,
            "--state" => state = Some(value("--state")?),
            "--prefix" => {
                mode = Some(match value("--prefix")?.as_str() {
                    "hold" => PrefixMode::Hold,
                    "measure" => PrefixMode::Measure,
                    other => {
                        return Err(UsageError(format!(
                            "--prefix expects hold or measure, not '{other}'"
                        )))
                    }
                })
            }
            "--conversation" => conversation = Some(value("--conversation")?),
            "--cache" => {
                let v = value("--cache")?;
                cache = Some(CacheRule::from_name(&v).map_err(|_| {
                    UsageError(format!(
                        "--cache expects none, openai, anthropic[:MIN], vllm or blocks:N, \
                         not '{v}'"
                    ))
                })?);
            }
            "--max-value-loss" => {
                max_value_loss = Some(share("--max-value-loss", &value("--max-value-loss")?)?)
            }
            "--watermark" => low_watermark = Some(share("--watermark", &value("--watermark")?)?),
            "--encoding" => encoding = Some(encoding_name(&value("--encoding")?)?),
            "--no-pin-last-turn" => pin_last_turn = false,
            flag if flag.starts_with("--") => {
                return Err(UsageError(format!("unknown option {flag}")))
            }
            path => {
                if input.replace(path.to_owned()).is_some() {
                    return Err(UsageError("more than one input file given".into()));
                }
            }
        }
    }
    if head_tail_quality.is_some() && head_tail.is_none() {
        return Err(UsageError("--head-tail-quality needs --head-tail".into()));
    }
    if !pin_last_turn && format == InputFormat::Items {
        return Err(UsageError(
            "--no-pin-last-turn applies to --format openai or anthropic".into(),
        ));
    }
    let budget = match budget_file {
        Some(_) if max.is_some() || target.is_some() || reserve.is_some() => {
            return Err(UsageError(
                "give either --budget or --max/--target/--reserve".into(),
            ))
        }
        Some(path) => BudgetSource::File(path),
        None => BudgetSource::Flags {
            max_tokens: max.ok_or_else(|| UsageError("--max (or --budget) is required".into()))?,
            target_tokens: target,
            output_reserve: reserve.unwrap_or(0),
        },
    };
    let prefix = match state {
        Some(file) => Some(PrefixArgs {
            file,
            mode: mode.unwrap_or(PrefixMode::Hold),
            conversation,
            cache: cache.unwrap_or_default(),
            max_value_loss,
            low_watermark,
        }),
        None => {
            let needs = [
                ("--prefix", mode.is_some()),
                ("--conversation", conversation.is_some()),
                ("--cache", cache.is_some()),
                ("--max-value-loss", max_value_loss.is_some()),
                ("--watermark", low_watermark.is_some()),
            ];
            if let Some((flag, _)) = needs.iter().find(|(_, given)| *given) {
                return Err(UsageError(format!("{flag} needs --state FILE")));
            }
            None
        }
    };
    Ok(Some(Args {
        input,
        budget,
        policy: policy.unwrap_or_else(|| PolicySource::Preset("chat".into())),
        strict,
        output,
        format,
        pinned_first,
        group_value,
        no_variants,
        encoding,
        pin_last_turn,
        head_tail,
        head_tail_quality,
        prefix,
    }))
}

/// A number in [0, 1] (the range checks of the library apply on top).
fn share(flag: &str, text: &str) -> Result<f64, UsageError> {
    text.parse::<f64>()
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| UsageError(format!("{flag} expects a number from 0 to 1, got '{text}'")))
}

/// `HEAD` or `HEAD:TAIL` (token counts; not both 0).
fn head_tail_sizes(text: &str) -> Result<(usize, usize), UsageError> {
    let bad = || {
        UsageError(format!(
            "--head-tail expects HEAD or HEAD:TAIL token counts, got '{text}'"
        ))
    };
    let (head, tail) = match text.split_once(':') {
        Some((h, t)) => (h, t),
        None => (text, text),
    };
    let head: usize = head.parse().map_err(|_| bad())?;
    let tail: usize = tail.parse().map_err(|_| bad())?;
    if head == 0 && tail == 0 {
        return Err(bad());
    }
    Ok((head, tail))
}

/// The encoding's name as the library spells it; the check does not need the tokenizer
/// (a build without it reports that when the encoding is loaded).
fn encoding_name(text: &str) -> Result<&'static str, UsageError> {
    ENCODING_NAMES
        .into_iter()
        .find(|name| name.eq_ignore_ascii_case(text))
        .ok_or_else(|| {
            UsageError(format!(
                "--encoding expects {}, not '{text}'",
                ENCODING_NAMES.join(" or ")
            ))
        })
}

fn input_format(text: &str) -> Result<InputFormat, UsageError> {
    match text {
        "items" => Ok(InputFormat::Items),
        "openai" => Ok(InputFormat::OpenAi),
        "anthropic" => Ok(InputFormat::Anthropic),
        other => Err(UsageError(format!(
            "--format expects items, openai or anthropic, not '{other}'"
        ))),
    }
}

fn integer(flag: &str, text: &str) -> Result<i64, UsageError> {
    text.parse()
        .map_err(|_| UsageError(format!("{flag} expects an integer, got '{text}'")))
}

fn set_policy(slot: &mut Option<PolicySource>, value: PolicySource) -> Result<(), UsageError> {
    if slot.replace(value).is_some() {
        return Err(UsageError("give either --preset or --policy, once".into()));
    }
    Ok(())
}

fn set_output(slot: &mut OutputMode, value: OutputMode) -> Result<(), UsageError> {
    if *slot != OutputMode::Window {
        return Err(UsageError(
            "give at most one of --explain and --report json".into(),
        ));
    }
    *slot = value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Option<Args>, UsageError> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn parses_every_flag() {
        let a = args("in.jsonl --max 100 --target 80 --reserve 5 --preset rag --explain")
            .unwrap()
            .unwrap();
        assert_eq!(a.input.as_deref(), Some("in.jsonl"));
        assert_eq!(
            a.budget,
            BudgetSource::Flags {
                max_tokens: 100,
                target_tokens: Some(80),
                output_reserve: 5
            }
        );
        assert!(!a.strict);
        assert_eq!(a.policy, PolicySource::Preset("rag".into()));
        assert_eq!(a.output, OutputMode::Explain);
        let a = args("--max 10 --policy p.json --report json")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.input, a.policy, a.output),
            (
                None,
                PolicySource::File("p.json".into()),
                OutputMode::ReportJson
            )
        );
        assert_eq!(a.format, InputFormat::Items);
        let a = args("r.json --max 10 --format anthropic").unwrap().unwrap();
        assert_eq!(a.format, InputFormat::Anthropic);
        assert_eq!(args("--help").unwrap(), None);
        assert_eq!((a.pinned_first, a.group_value), (false, None));
        let a = args("--max 10 --pinned-first --group-value MAX")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.pinned_first, a.group_value),
            (true, Some(GroupValue::Max))
        );
        let a = args("--budget b.json --strict --policy p.json")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.budget, a.strict),
            (BudgetSource::File("b.json".into()), true)
        );
        assert_eq!(a.prefix, None);
        let a = args(
            "--max 10 --state s.bin --prefix measure --conversation c7 --cache openai \
                      --max-value-loss 0.1 --watermark 0.75",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            a.prefix,
            Some(PrefixArgs {
                file: "s.bin".into(),
                mode: PrefixMode::Measure,
                conversation: Some("c7".into()),
                cache: CacheRule::OpenAi,
                max_value_loss: Some(0.1),
                low_watermark: Some(0.75),
            })
        );
        let a = args("--max 10 --state s.json").unwrap().unwrap();
        let p = a.prefix.unwrap();
        assert_eq!(
            (p.mode, p.cache, p.max_value_loss),
            (PrefixMode::Hold, CacheRule::None, None)
        );
        assert_eq!((a.encoding, a.pin_last_turn), (None, true));
        let a = args("r.json --max 10 --format openai --encoding CL100K_BASE --no-pin-last-turn")
            .unwrap()
            .unwrap();
        assert_eq!((a.encoding, a.pin_last_turn), (Some("cl100k_base"), false));
    }

    #[test]
    fn parses_the_variant_flags() {
        let a = args("--max 10").unwrap().unwrap();
        assert_eq!(
            (a.no_variants, a.encoding, a.head_tail, a.head_tail_quality),
            (false, None, None, None)
        );
        let a = args("--max 10 --no-variants --encoding cl100k_base --head-tail 64:32")
            .unwrap()
            .unwrap();
        assert!(a.no_variants);
        assert_eq!(a.encoding, Some("cl100k_base"));
        assert_eq!(a.head_tail, Some((64, 32)));
        let a = args("--max 10 --head-tail 50 --head-tail-quality 0.4")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.head_tail, a.head_tail_quality),
            (Some((50, 50)), Some(0.4))
        );
        assert_eq!(
            args("--max 10 --head-tail 0:7").unwrap().unwrap().head_tail,
            Some((0, 7))
        );
        for (line, msg) in [
            (
                "--max 1 --head-tail 0",
                "--head-tail expects HEAD or HEAD:TAIL token counts, got '0'",
            ),
            (
                "--max 1 --head-tail 5:x",
                "--head-tail expects HEAD or HEAD:TAIL token counts, got '5:x'",
            ),
            (
                "--max 1 --head-tail 5 --head-tail-quality 0",
                "--head-tail-quality expects a number in (0, 1], got '0'",
            ),
            (
                "--max 1 --head-tail 5 --head-tail-quality NaN",
                "--head-tail-quality expects a number in (0, 1], got 'NaN'",
            ),
            (
                "--max 1 --head-tail-quality 0.5",
                "--head-tail-quality needs --head-tail",
            ),
        ] {
            assert_eq!(args(line).unwrap_err().0, msg, "{line}");
        }
    }

    #[test]
    fn rejects_bad_arguments() {
        for (line, msg) in [
            ("", "--max (or --budget) is required"),
            (
                "--budget b.json --max 3",
                "give either --budget or --max/--target/--reserve",
            ),
            (
                "--target 3 --budget b.json",
                "give either --budget or --max/--target/--reserve",
            ),
            ("--budget a --budget b", "give --budget once"),
            ("--budget", "--budget needs a value"),
            ("--max", "--max needs a value"),
            ("--max ten", "--max expects an integer, got 'ten'"),
            (
                "--max 1 --preset a --policy b",
                "give either --preset or --policy, once",
            ),
            (
                "--max 1 --explain --report json",
                "give at most one of --explain and --report json",
            ),
            (
                "--max 1 --report yaml",
                "--report supports only 'json', not 'yaml'",
            ),
            ("--max 1 --frobnicate", "unknown option --frobnicate"),
            ("a b --max 1", "more than one input file given"),
            (
                "--max 1 --format yaml",
                "--format expects items, openai or anthropic, not 'yaml'",
            ),
            (
                "--max 1 --group-value median",
                "--group-value expects sum, max or mean, got 'median'",
            ),
            ("--max 1 --group-value", "--group-value needs a value"),
            ("--max 1 --prefix hold", "--prefix needs --state FILE"),
            ("--max 1 --cache openai", "--cache needs --state FILE"),
            (
                "--max 1 --state s --prefix off",
                "--prefix expects hold or measure, not 'off'",
            ),
            (
                "--max 1 --state s --cache gemini",
                "--cache expects none, openai, anthropic[:MIN], vllm or blocks:N, not 'gemini'",
            ),
            (
                "--max 1 --state s --watermark 2",
                "--watermark expects a number from 0 to 1, got '2'",
            ),
            ("--max 1 --state", "--state needs a value"),
            (
                "--max 1 --encoding p50k_base",
                "--encoding expects o200k_base or cl100k_base, not 'p50k_base'",
            ),
            ("--max 1 --encoding", "--encoding needs a value"),
            (
                "--max 1 --no-pin-last-turn",
                "--no-pin-last-turn applies to --format openai or anthropic",
            ),
        ] {
            assert_eq!(args(line).unwrap_err().0, msg, "{line}");
        }
    }
}
