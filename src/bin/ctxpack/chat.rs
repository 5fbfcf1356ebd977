//! `--format openai|anthropic`: trims a chat request body and prints it, or explains the
//! trim. Tokens are counted with an encoding of the built-in tokenizer (`--encoding`,
//! default `o200k_base`) plus the provider's framing; a build without the tokenizer
//! estimates them (`docs/chat.md`).

use std::fmt::Write;

use ctxpack::chat::{self, ChatOptions, CountTokens, Provider, Trimmed};
use ctxpack::diagnostics::{report_to_json_with_positions, TraceDetail};
use ctxpack::model::HeadTail;
use ctxpack::tokenizer::Encoding;
use ctxpack::{ContextBudget, Error, Pipeline};

use crate::args::{Args, OutputMode};
use crate::{output, prefix};

/// What went wrong: the request (exit status 2) or the selection (exit status 1).
pub enum ChatFailure {
    /// The request is malformed or breaks its provider's rules.
    Request(String),
    /// The selection failed (budget too small for the pinned parts, overflow under Throw…).
    Selection(String),
}

/// How the request's tokens are counted.
#[derive(Clone, Copy)]
pub enum Counting {
    /// Exactly, with an encoding of the built-in tokenizer.
    Encoding(&'static Encoding),
    /// With `ctxpack::chat::estimate_tokens` (a build without the tokenizer).
    Estimate,
}

impl Counting {
    fn counter(self) -> &'static dyn CountTokens {
        match self {
            Counting::Encoding(encoding) => encoding,
            Counting::Estimate => &chat::estimate_tokens,
        }
    }

    /// How the summary names the counting.
    fn describe(self) -> String {
        match self {
            Counting::Encoding(encoding) => format!("counted with {}", encoding.name()),
            Counting::Estimate => "estimated: this build has no tokenizer".into(),
        }
    }
}

/// What a trim runs with besides the request: read from the files and flags first.
pub struct Setup<'a> {
    pub budget: &'a ContextBudget,
    pub pipeline: &'a Pipeline,
    pub counting: Counting,
    /// `--head-tail`: shorten long tool outputs.
    pub shorten: Option<&'a HeadTail>,
}

/// Trims `text` (a request of `provider`'s format) and returns the complete output.
pub fn run(
    args: &Args,
    provider: Provider,
    name: &str,
    text: &str,
    setup: &Setup<'_>,
) -> Result<String, ChatFailure> {
    let Setup {
        budget,
        pipeline,
        counting,
        shorten,
    } = *setup;
    let previous = match &args.prefix {
        Some(p) => prefix::load(p).map_err(ChatFailure::Request)?,
        None => None,
    };
    let mut options = ChatOptions::with_counter(counting.counter());
    options.pin_last_turn = args.pin_last_turn;
    options.shorten = shorten;
    options.trace = match args.output {
        OutputMode::Window => TraceDetail::None,
        OutputMode::Explain | OutputMode::ReportJson => TraceDetail::Stage,
    };
    options.prefix = args
        .prefix
        .as_ref()
        .map(|p| prefix::options(p, previous.as_ref()));
    let trimmed = chat::trim(provider, text, budget, pipeline, &options).map_err(|e| match e {
        Error::InvalidRequest(_) => ChatFailure::Request(format!("{name}: {e}")),
        Error::InvalidState(_) => ChatFailure::Request(format!(
            "{}: {e}",
            args.prefix.as_ref().map_or(name, |p| p.file.as_str())
        )),
        other => ChatFailure::Selection(other.to_string()),
    })?;
    if let (Some(p), Some(state)) = (&args.prefix, &trimmed.state) {
        prefix::save(p, state).map_err(ChatFailure::Selection)?;
    }
    Ok(match (args.output, &trimmed.selection.report) {
        (OutputMode::Explain, Some(report)) => {
            let mut out = output::explain_table(&trimmed.items, report);
            out.push_str(&summary(&trimmed, counting));
            if let Some(reuse) = &trimmed.reuse {
                out.push_str(&prefix::describe(reuse));
            }
            out
        }
        (OutputMode::ReportJson, Some(report)) => {
            let mut out = report_to_json_with_positions(report, &trimmed.items);
            out.push('\n');
            match &trimmed.reuse {
                Some(reuse) => prefix::add_to_report_json(&out, reuse),
                None => out,
            }
        }
        _ => {
            let mut out = trimmed.json;
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out
        }
    })
}

/// The lines `--explain` adds for a chat request: messages pinned and units dropped to
/// satisfy the provider's rules, messages sent shortened, and what was kept.
fn summary(t: &Trimmed, counting: Counting) -> String {
    let mut out = String::new();
    for &i in &t.shortened {
        let path = format!("messages[{i}]");
        let Some(item) = t
            .item_paths
            .iter()
            .position(|p| *p == path)
            .map(|k| &t.items[k])
        else {
            continue;
        };
        // A pinned output sent shortened because the pinned parts did not fit whole has
        // that form as its only one.
        let tokens = if item.has_variants() {
            format!("{} of {} tokens", item.form_tokens(1), item.tokens())
        } else {
            format!("{} tokens (pinned; it did not fit whole)", item.tokens())
        };
        let _ = writeln!(out, "shortened {path}: sent as its head and tail, {tokens}");
    }
    for p in &t.rule_pins {
        let _ = writeln!(out, "pinned {}: {}", p.paths.join(", "), p.reason);
    }
    for a in &t.adjustments {
        let _ = writeln!(
            out,
            "dropped {} after the run: {}",
            a.paths.join(", "),
            a.reason
        );
    }
    let _ = writeln!(
        out,
        "kept {} of {} messages, {} of {} tokens ({}, with the provider's framing)",
        t.kept.len(),
        t.kept.len() + t.dropped.len(),
        t.tokens,
        t.input_tokens,
        counting.describe()
    );
    out
}
