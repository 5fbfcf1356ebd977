//! `ctxpack`: select a context window from candidate items on the command line.
//!
//! Reads items (JSON Lines or a JSON array), a budget and a policy, runs the pipeline and
//! prints the window as JSON Lines in placed order, an explanation table, or the report.
//! What a policy or budget file contains that is ignored (read as .NET reads it) is
//! reported on standard error as `ctxpack: warning: FILE: <path>: <message>`.
//! See `ctxpack --help`.

mod args;
mod chat;
mod input;
mod output;
mod prefix;

use std::io::Write;
use std::process::ExitCode;

use args::{Args, BudgetSource, InputFormat, OutputMode, PolicySource};
use ctxpack::diagnostics::TraceDetail;
use ctxpack::model::{read_items_with, HeadTail, ItemReadOptions};
use ctxpack::policy::{JsonRead, JsonReadOptions, Policy};
use ctxpack::tokenizer::Encoding;
use ctxpack::{ContextBudget, ContextItem, Pipeline, RunOptions};

/// A failure, reported on one line with its exit status.
struct Failure {
    status: u8,
    message: String,
}

impl Failure {
    fn input(message: impl Into<String>) -> Self {
        Self {
            status: 2,
            message: message.into(),
        }
    }
    fn selection(message: impl Into<String>) -> Self {
        Self {
            status: 1,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut warnings = Vec::new();
    let outcome = run(&argv, &mut warnings);
    for warning in warnings {
        eprintln!("ctxpack: warning: {warning}");
    }
    match outcome {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            let _ = stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(f) => {
            eprintln!("ctxpack: {}", f.message);
            ExitCode::from(f.status)
        }
    }
}

/// Everything but the writing: returns the complete output text, and adds the warnings
/// of the policy and budget files to `warnings` (`FILE: <path>: <message>`).
fn run(argv: &[String], warnings: &mut Vec<String>) -> Result<String, Failure> {
    if argv.iter().any(|a| a == "--version" || a == "-V") {
        return Ok(format!("ctxpack {}\n", env!("CARGO_PKG_VERSION")));
    }
    let Some(args) = args::parse(argv).map_err(|e| Failure::input(format!("{e} (see --help)")))?
    else {
        return Ok(format!("{}\n", args::USAGE));
    };
    if args.format != InputFormat::Items {
        return run_chat(&args, warnings);
    }
    let items = load_items(&args)?;
    let budget = load_budget(&args, warnings)?;
    let pipeline = load_pipeline(&args, warnings)?;
    let trace = match args.output {
        OutputMode::Window => TraceDetail::None,
        OutputMode::Explain | OutputMode::ReportJson => TraceDetail::Stage,
    };
    let options = RunOptions {
        trace,
        on_overflow: None,
    };
    let (selection, reuse) = match &args.prefix {
        None => (
            pipeline
                .run_with(&items, &budget, &options)
                .map_err(|e| Failure::selection(e.to_string()))?,
            None,
        ),
        Some(p) => {
            let previous = prefix::load(p).map_err(Failure::input)?;
            let run = pipeline
                .run_prefix(
                    &items,
                    &budget,
                    &options,
                    &prefix::options(p, previous.as_ref()),
                )
                .map_err(|e| prefix_failure(p, e))?;
            prefix::save(p, &run.state).map_err(Failure::selection)?;
            (run.selection, Some(run.reuse))
        }
    };
    Ok(match (&args.output, &selection.report) {
        (OutputMode::Explain, Some(report)) => {
            let mut text = output::explain_table(&items, report);
            if !pipeline.pinned_first() {
                text.push_str(&output::pinned_last_hint(&items, &selection));
            }
            if let Some(reuse) = &reuse {
                text.push_str(&prefix::describe(reuse));
            }
            text
        }
        (OutputMode::ReportJson, Some(report)) => {
            let json = output::report_json(&items, report);
            match &reuse {
                Some(reuse) => prefix::add_to_report_json(&json, reuse),
                None => json,
            }
        }
        _ => output::window_jsonl(&items, &selection),
    })
}

/// A failed run with a prefix state: a state the library refuses (another conversation) is
/// bad input, named by the state file; anything else is the selection's failure.
fn prefix_failure(args: &args::PrefixArgs, e: ctxpack::Error) -> Failure {
    if e.code() == ctxpack::ErrorCode::InvalidState {
        Failure::input(format!("{}: {e}", args.file))
    } else {
        Failure::selection(e.to_string())
    }
}

/// `--format openai|anthropic`: the request is read before the budget and the policy, so
/// that an unreadable file is reported first, as for items.
fn run_chat(args: &Args, warnings: &mut Vec<String>) -> Result<String, Failure> {
    let provider = match args.format {
        InputFormat::Anthropic => ctxpack::chat::Provider::Anthropic,
        _ => ctxpack::chat::Provider::OpenAi,
    };
    let (name, text) = input::read_text(args.input.as_deref()).map_err(Failure::input)?;
    let budget = load_budget(args, warnings)?;
    let pipeline = load_pipeline(args, warnings)?;
    // The request's counting: --encoding, else the default encoding, else (a build without
    // the tokenizer) the estimate.
    let counting = match args.encoding {
        Some(name) => chat::Counting::Encoding(load_encoding(name)?),
        None => Encoding::by_name(ctxpack::chat::DEFAULT_ENCODING)
            .map_or(chat::Counting::Estimate, chat::Counting::Encoding),
    };
    let shorten = head_tail_spec(args)?;
    let setup = chat::Setup {
        budget: &budget,
        pipeline: &pipeline,
        counting,
        shorten: shorten.as_ref(),
    };
    chat::run(args, provider, &name, &text, &setup).map_err(|f| match f {
        chat::ChatFailure::Request(m) => Failure::input(m),
        chat::ChatFailure::Selection(m) => Failure::selection(m),
    })
}

/// The head-and-tail form `--head-tail` and `--head-tail-quality` ask for.
pub(crate) fn head_tail_spec(args: &Args) -> Result<Option<HeadTail>, Failure> {
    let Some((head, tail)) = args.head_tail else {
        return Ok(None);
    };
    let spec = HeadTail::new(head, tail).map_err(|e| Failure::input(e.to_string()))?;
    Ok(Some(match args.head_tail_quality {
        Some(q) => spec.with_quality(q),
        None => spec,
    }))
}

/// Reads the items; with `--encoding`, items and variants without `tokens` are counted with
/// it; with `--head-tail`, long items get a head-and-tail form cut by that encoding (default
/// `o200k_base`).
fn load_items(args: &Args) -> Result<Vec<ContextItem>, Failure> {
    // The encoding is loaded only when a flag needs it.
    let encoding = match (args.encoding, args.head_tail) {
        (None, None) => None,
        (name, _) => Some(load_encoding(name.unwrap_or("o200k_base"))?),
    };
    let head_tail = head_tail_spec(args)?;
    let (name, text) = input::read_text(args.input.as_deref()).map_err(Failure::input)?;
    let options = ItemReadOptions {
        encoding: args.encoding.and(encoding),
        head_tail: encoding.zip(head_tail.as_ref()),
    };
    read_items_with(&text, &options).map_err(|e| {
        let hint = if options.encoding.is_none()
            && e.field.as_deref() == Some("tokens")
            && e.message == "is required"
        {
            " (or give --encoding o200k_base to have ctxpack count it)"
        } else {
            ""
        };
        Failure::input(format!("{name}: {e}{hint}"))
    })
}

/// The encoding named by `--encoding`; a build without the tokenizer says so (exit 2).
fn load_encoding(name: &str) -> Result<&'static Encoding, Failure> {
    Encoding::by_name(name).map_err(|e| Failure::input(format!("--encoding {name}: {e}")))
}

fn load_budget(args: &Args, warnings: &mut Vec<String>) -> Result<ContextBudget, Failure> {
    match &args.budget {
        BudgetSource::Flags {
            max_tokens,
            target_tokens,
            output_reserve,
        } => ContextBudget::with_all(
            *max_tokens,
            target_tokens.unwrap_or(*max_tokens),
            *output_reserve,
            Vec::new(),
            0.0,
        )
        .map_err(|e| Failure::input(e.to_string())),
        BudgetSource::File(path) => read_json_file(path, warnings, |text| {
            ContextBudget::from_json_with(text, &read_options(args))
        }),
    }
}

fn load_pipeline(args: &Args, warnings: &mut Vec<String>) -> Result<Pipeline, Failure> {
    // The command line's group options override the policy's.
    let adjust = |policy: Policy| Policy {
        pinned_first: policy.pinned_first || args.pinned_first,
        group_value: args.group_value.unwrap_or(policy.group_value),
        use_variants: policy.use_variants && !args.no_variants,
        ..policy
    };
    match &args.policy {
        PolicySource::Preset(name) => Policy::preset(name)
            .and_then(|p| adjust(p).build_pipeline())
            .map_err(|e| Failure::input(e.to_string())),
        PolicySource::File(path) => read_json_file(path, warnings, |text| {
            let read = Policy::from_json_with(text, &read_options(args))?;
            Ok(JsonRead {
                value: adjust(read.value).build_pipeline()?,
                warnings: read.warnings,
            })
        }),
    }
}

/// How policy and budget files are read: leniently as .NET reads them, or `--strict`.
fn read_options(args: &Args) -> JsonReadOptions<'static> {
    JsonReadOptions {
        strict: args.strict,
        registry: None,
    }
}

/// Reads the JSON file at `path` with `read`; errors and warnings name the file once
/// (`FILE: invalid policy: scorers[0].weight: ...`).
fn read_json_file<T>(
    path: &str,
    warnings: &mut Vec<String>,
    read: impl FnOnce(&str) -> ctxpack::Result<JsonRead<T>>,
) -> Result<T, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::input(format!("{path}: {e}")))?;
    let read = read(&text).map_err(|e| Failure::input(format!("{path}: {e}")))?;
    warnings.extend(read.warnings.iter().map(|w| format!("{path}: {w}")));
    Ok(read.value)
}
