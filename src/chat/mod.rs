//! Chat requests in, chat requests out: trims an OpenAI Chat Completions or Anthropic
//! Messages request body to a token budget and writes back a body of the same shape that
//! the provider accepts.
//!
//! Each message becomes an item (system and developer messages: pinned `SystemPrompt`;
//! user and assistant messages: `Message`; tool results: `ToolOutput`), stamped in
//! conversation order, with tokens from the caller's counting function plus the provider's
//! framing ([`Overheads`]). A tool call and its results form one unit, kept or dropped
//! whole. The pipeline (any preset, policy or hand-built pipeline) selects; the kept
//! messages are written back in conversation order, every byte of the request outside the
//! dropped messages unchanged. `docs/chat.md` lists the provider rules relied on, with
//! their sources, and what is not supported.
//!
//! ```
//! use ctxpack::chat::{trim_openai, ChatOptions};
//! use ctxpack::policy::Policy;
//! use ctxpack::ContextBudget;
//!
//! let request = r#"{"model": "gpt-4o", "messages": [
//!   {"role": "system", "content": "You are terse."},
//!   {"role": "user", "content": "Look up order 7."},
//!   {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
//!     "function": {"name": "order", "arguments": "{\"id\":7}"}}]},
//!   {"role": "tool", "tool_call_id": "c1", "content": "shipped on May 2"},
//!   {"role": "user", "content": "And order 8?"}]}"#;
//! let pipeline = Policy::preset("chat")?.build_pipeline()?;
//! let budget = ContextBudget::new(40, 40)?;
//! let trimmed = trim_openai(request, &budget, &pipeline, &ChatOptions::default())?;
//! // The tool call and its result are kept or dropped together.
//! let body: serde_json::Value = serde_json::from_str(&trimmed.json).unwrap();
//! let roles: Vec<&str> = body["messages"].as_array().unwrap().iter()
//!     .map(|m| m["role"].as_str().unwrap()).collect();
//! assert_eq!(roles.contains(&"assistant"), roles.contains(&"tool"), "{roles:?}");
//! assert_eq!(roles.last(), Some(&"user")); // the last turn is pinned
//! assert!(trimmed.tokens <= 40);
//! # Ok::<(), ctxpack::Error>(())
//! ```

use serde_json::{Map, Value};

use crate::cancel::CancelToken;
use crate::diagnostics::TraceDetail;
use crate::error::Result;
use crate::model::{ContextBudget, ContextItem, HeadTail};
use crate::pipeline::{Pipeline, Selection};
use crate::prefix::{PrefixOptions, PrefixState, ReuseReport};

mod anthropic;
mod conversation;
mod count;
mod openai;
mod prefix;
mod rules;
mod select;
mod shorten;
#[cfg(test)]
mod tests;
mod write;

use conversation::{invalid, type_name};
pub use count::{default_counter, estimate_tokens, CountTokens, Overheads, DEFAULT_ENCODING};

/// The request format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
}

/// How a request is trimmed besides the budget and the pipeline.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ChatOptions<'a> {
    /// Counts the tokens of a text. Default: [`default_counter`] — the built-in
    /// `o200k_base` encoding, or [`estimate_tokens`] in a build without the `tokenizer`
    /// feature. Any [`Encoding`](crate::tokenizer::Encoding) is a counter
    /// (`ChatOptions::with_counter(Encoding::by_name("cl100k_base")?)`), and so is any
    /// `Fn(&str) -> usize`. The provider's framing ([`ChatOptions::overheads`]) is added on
    /// top.
    pub counter: &'a dyn CountTokens,
    /// Framing and media estimates (default: the provider's, [`Overheads::of`]).
    pub overheads: Option<Overheads>,
    /// Keep the last unit of the conversation (what the model answers next) and, when it
    /// does not start with a user message, the nearest unit before it that does (default:
    /// true).
    pub pin_last_turn: bool,
    /// How much of the run to record; the report is in [`Trimmed::selection`] (default:
    /// none).
    pub trace: TraceDetail,
    /// Cache-friendly trimming across turns (default: none): the previous turn's state,
    /// the mode and thresholds (`docs/prefix-cache.md`). The state describes the trimmed
    /// request in conversation order, each message recognised by its JSON text; the
    /// options' order and identities are set by the trimming itself.
    pub prefix: Option<PrefixOptions<'a>>,
    /// A token that cancels the trim (default: none): once it is cancelled, from any
    /// thread, the trim stops with [`crate::Error::Cancelled`] before it starts or at the
    /// run's next check (between stages and inside long loops, as
    /// [`Pipeline::run_cancellable`] does).
    pub cancel: Option<&'a CancelToken>,
    /// Shorten long tool outputs instead of only dropping them (default: none): every
    /// text of a tool result longer than the head and tail tokens gives its message a
    /// cheaper form with those texts cut to their head and tail and a marker between
    /// ([`HeadTail`]; cut with the counter). When the pipeline places that form (it uses
    /// variants, `docs/variants.md`), the message is sent with only those strings
    /// replaced; [`Trimmed::shortened`] lists it. Not available with
    /// [`ChatOptions::prefix`] yet (`InvalidArgument`). `docs/chat.md`, *Shortening tool
    /// outputs*.
    pub shorten: Option<&'a HeadTail>,
}

impl Default for ChatOptions<'static> {
    /// The default options, counting with [`default_counter`].
    fn default() -> Self {
        Self::with_counter(default_counter())
    }
}

impl<'a> ChatOptions<'a> {
    /// The default options with another counting function.
    pub fn with_counter(counter: &'a dyn CountTokens) -> Self {
        Self {
            counter,
            overheads: None,
            pin_last_turn: true,
            trace: TraceDetail::None,
            prefix: None,
            cancel: None,
            shorten: None,
        }
    }
}

impl std::fmt::Debug for ChatOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatOptions")
            .field("overheads", &self.overheads)
            .field("pin_last_turn", &self.pin_last_turn)
            .field("trace", &self.trace)
            .field("prefix", &self.prefix)
            .field("cancel", &self.cancel.map(CancelToken::is_cancelled))
            .field("shorten", &self.shorten)
            .finish_non_exhaustive()
    }
}

/// A unit that a provider rule the pipeline does not know made ctxpack drop after the run
/// ([`Trimmed::adjustments`]) or pin for another run ([`Trimmed::rule_pins`]); either way
/// the budget holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adjustment {
    /// JSON paths of the unit's messages.
    pub paths: Vec<String>,
    /// Why.
    pub reason: String,
}

/// A trimmed request and how it was obtained.
#[derive(Debug, Clone)]
pub struct Trimmed {
    /// The trimmed request body: the input with the dropped messages removed.
    pub json: String,
    /// Positions in the input's `messages` of the kept messages, ascending.
    pub kept: Vec<usize>,
    /// Positions in the input's `messages` of the dropped messages, ascending.
    pub dropped: Vec<usize>,
    /// Positions in the input's `messages` of the kept messages sent shortened
    /// ([`ChatOptions::shorten`]), ascending; a subset of `kept`, empty without the option.
    pub shortened: Vec<usize>,
    /// The items the pipeline ran on (the report's indices point into this list).
    pub items: Vec<ContextItem>,
    /// For each item, the JSON path it stands for: `"messages[3]"`, `"system"`, or `"$"`
    /// (the request's own framing and tool definitions). The messages of a unit (a tool
    /// call and its results) are items of their own that share a group key.
    pub item_paths: Vec<String>,
    /// The pipeline's selection, with the report when [`ChatOptions::trace`] asked for one.
    pub selection: Selection,
    /// Units dropped after the run to satisfy the provider's rules.
    pub adjustments: Vec<Adjustment>,
    /// Units pinned, beyond the system messages and the last turn, for the run whose
    /// selection this is: when the first run's selection breaks an Anthropic ordering rule
    /// (it starts with an assistant message, or a thinking turn would merge into an earlier
    /// assistant message), ctxpack also tries pinning a user message that repairs it and
    /// running the pipeline again, and keeps that run when it keeps more of the first
    /// run's selection (in tokens; then more messages, then more tokens) than dropping
    /// units (`docs/chat.md`, *Repairing a selection*). Empty otherwise; each entry is one
    /// user message.
    pub rule_pins: Vec<Adjustment>,
    /// Tokens of the whole input request as counted ([`ChatOptions::counter`] and the
    /// overheads).
    pub input_tokens: i64,
    /// Tokens of the trimmed request, counted the same way.
    pub tokens: i64,
    /// With [`ChatOptions::prefix`]: how much of the previous turn's request this one
    /// starts with (after the provider rules' adjustments).
    pub reuse: Option<ReuseReport>,
    /// With [`ChatOptions::prefix`]: the state to pass to the next turn.
    pub state: Option<PrefixState>,
}

/// Trims an OpenAI Chat Completions request body. Errors: [`crate::Error::InvalidRequest`]
/// (the message starts with the JSON path) for a malformed or invalid request, and the
/// pipeline's own errors (for example [`crate::Error::PinnedExceedsBudget`]).
pub fn trim_openai(
    json: &str,
    budget: &ContextBudget,
    pipeline: &Pipeline,
    options: &ChatOptions<'_>,
) -> Result<Trimmed> {
    trim(Provider::OpenAi, json, budget, pipeline, options)
}

/// Trims an Anthropic Messages request body; see [`trim_openai`].
pub fn trim_anthropic(
    json: &str,
    budget: &ContextBudget,
    pipeline: &Pipeline,
    options: &ChatOptions<'_>,
) -> Result<Trimmed> {
    trim(Provider::Anthropic, json, budget, pipeline, options)
}

/// Trims a request body of the given provider's format.
pub fn trim(
    provider: Provider,
    json: &str,
    budget: &ContextBudget,
    pipeline: &Pipeline,
    options: &ChatOptions<'_>,
) -> Result<Trimmed> {
    // Runs inside the trim (plain or prefix) see the token as the thread's current one.
    let _cancel_scope = options.cancel.map(crate::cancel::Scope::enter);
    crate::cancel::check("before the trim started")?;
    let counter = count::Counter {
        count: options.counter,
        overheads: options.overheads.unwrap_or(Overheads::of(provider)),
    };
    if let Some(q) = options.shorten.and_then(HeadTail::quality) {
        if !(q > 0.0 && q <= 1.0) {
            return Err(crate::Error::InvalidArgument(format!(
                "the quality of a shortened tool output must be in (0, 1] (got {q})"
            )));
        }
    }
    if options.shorten.is_some() && options.prefix.is_some() {
        return Err(crate::Error::InvalidArgument(
            "shortening tool outputs is not supported with a prefix state (Hold or Measure) \
             yet"
            .into(),
        ));
    }
    let (conv, spans) = read(provider, json, &counter, options.shorten)?;
    let pinned = conv.pinned_units(options.pin_last_turn);
    let identify = |paths: &[String], items: &[ContextItem]| {
        prefix::identities(provider, json, &spans, paths, items)
    };
    let prefix_input = options.prefix.map(|o| select::PrefixInput {
        options: o,
        identify: &identify,
    });
    let select_valid = |conv: &conversation::Conversation| {
        let run_pinned = |pins: &[bool]| {
            select::run(
                conv,
                pipeline,
                budget,
                pins,
                options.trace,
                prefix_input.as_ref(),
            )
        };
        rules::select(conv, &pinned, &run_pinned)
    };
    // Pinned parts are placed whole: when they do not fit and some are long tool outputs
    // with a shortened form, the trim runs again with those sent shortened.
    let (conv, valid) = match select_valid(&conv) {
        Err(e @ crate::Error::PinnedExceedsBudget { .. }) => {
            let Some(shortened) = conv.pinned_outputs_shortened(&pinned) else {
                return Err(e);
            };
            let valid = select_valid(&shortened)?;
            (shortened, valid)
        }
        other => (conv, other?),
    };
    let rules::Valid {
        mut run,
        dropped: adjustments,
        pinned: rule_pins,
    } = valid;
    let mut keep = vec![false; conv.messages.len()];
    for (unit, _) in conv.units.iter().zip(&run.kept_units).filter(|(_, &k)| k) {
        keep[unit.clone()].fill(true);
    }
    let (reuse, state) = match run.prefix.take() {
        None => (None, None),
        Some((mut reuse, mut state, ids)) => {
            if !adjustments.is_empty() {
                // The state describes what is sent: drop what the provider rules dropped.
                let kept = prefix::kept_items(&run.item_paths, &keep);
                let keys = crate::prefix::item_keys(&run.items, Some(&ids));
                let previous = options.prefix.and_then(|o| o.previous);
                crate::prefix::restate((&mut reuse, &mut state), previous, keys, &kept, true);
            }
            (Some(reuse), Some(state))
        }
    };
    let shortened: Vec<bool> = keep
        .iter()
        .zip(&run.shortened)
        .map(|(&k, &s)| k && s)
        .collect();
    let replace = rewrites(&conv, json, &spans, &shortened)?;
    let out = write::splice(json, &spans, &keep, &replace);
    // A trimmed output must pass the same reading as the input (structure, pairing, first
    // message); a failure here is a bug, reported rather than returned as a bad request.
    // Its tokens are known already: the check does not count them again. An output with
    // every message kept in full is the input itself, which passed.
    if keep.contains(&false) || shortened.contains(&true) {
        let no_count = |_: &str| 0;
        let check = count::Counter {
            count: &no_count,
            overheads: counter.overheads,
        };
        read(provider, &out, &check, None).map_err(|e| {
            crate::Error::InvalidRequest(format!(
                "internal error, the trimmed request is invalid: {e}"
            ))
        })?;
    }
    let fixed: i64 = conv
        .fixed
        .iter()
        .map(|f| f.tokens)
        .fold(0, i64::saturating_add);
    let sum = |sent: bool| {
        (0..conv.messages.len())
            .filter(|&i| keep[i] || !sent)
            .fold(fixed, |t, i| {
                t.saturating_add(conv.sent_tokens(i, sent && shortened[i]))
            })
    };
    let (input_tokens, tokens) = (sum(false), sum(true));
    let (kept, dropped): (Vec<usize>, Vec<usize>) = (0..keep.len()).partition(|&i| keep[i]);
    let shortened = (0..keep.len()).filter(|&i| shortened[i]).collect();
    Ok(Trimmed {
        json: out,
        kept,
        dropped,
        shortened,
        items: run.items,
        item_paths: run.item_paths,
        selection: run.selection,
        adjustments,
        rule_pins,
        input_tokens,
        tokens,
        reuse,
        state,
    })
}

/// The JSON text of each message to send shortened (`shortened`), `None` for the others.
fn rewrites(
    conv: &conversation::Conversation,
    json: &str,
    spans: &write::Spans,
    shortened: &[bool],
) -> Result<Vec<Option<String>>> {
    let mut out = vec![None; shortened.len()];
    let messages = spans.elements.iter().zip(&conv.messages).zip(shortened);
    for (i, ((element, m), _)) in messages.enumerate().filter(|(_, (_, &s))| s) {
        let Some(short) = &m.short else {
            continue;
        };
        out[i] = Some(
            write::rewrite(&json[element.clone()], &short.texts).ok_or_else(|| {
                crate::Error::InvalidRequest(format!(
                    "internal error, cannot find the shortened texts of {}",
                    conversation::Conversation::path(i)
                ))
            })?,
        );
    }
    Ok(out)
}

/// Parses, locates and reads a request; with `shorten`, also the cheaper form of each long
/// tool output.
fn read(
    provider: Provider,
    json: &str,
    counter: &count::Counter<'_>,
    shorten: Option<&HeadTail>,
) -> Result<(conversation::Conversation, write::Spans)> {
    let doc: Value =
        serde_json::from_str(json).map_err(|e| invalid("$", format!("malformed JSON: {e}")))?;
    let spans = write::messages_spans(json)?;
    let mut conv = match provider {
        Provider::OpenAi => openai::read(&doc, counter)?,
        Provider::Anthropic => anthropic::read(&doc, counter)?,
    };
    if let (Some(spec), Ok((_, values))) = (shorten, request_messages(&doc)) {
        for (m, value) in conv.messages.iter_mut().zip(values) {
            m.short = shorten::short_form(provider, value, m, counter, spec);
        }
    }
    // `read` accepted a non-empty `messages` array, so the spans exist.
    let spans = spans.ok_or_else(|| invalid("messages", "must be an array"))?;
    Ok((conv, spans))
}

/// The request object and its non-empty `messages` array.
fn request_messages(doc: &Value) -> Result<(&Map<String, Value>, &Vec<Value>)> {
    let Value::Object(object) = doc else {
        return Err(invalid(
            "$",
            format!(
                "a request body must be a JSON object, found {}",
                type_name(doc)
            ),
        ));
    };
    match object.get("messages") {
        None => Err(invalid("messages", "is required")),
        Some(Value::Array(values)) if values.is_empty() => {
            Err(invalid("messages", "must not be empty"))
        }
        Some(Value::Array(values)) => Ok((object, values)),
        Some(other) => Err(invalid(
            "messages",
            format!("must be an array, found {}", type_name(other)),
        )),
    }
}
