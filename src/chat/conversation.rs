//! The provider-neutral form of a chat request: its messages (role, readable text, tokens,
//! the tool calls each makes or answers), the units that must be kept or dropped together,
//! and the pinned parts that are not messages. The provider readers build it; selection
//! and writing use it.

use std::ops::Range;

use crate::chat::shorten::Short;
use crate::chat::Provider;
use crate::error::{Error, Result};
use crate::model::{ContextItem, ContextItemBuilder, ContextKind, ContextSource};

/// The role of a message, as written in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
    Function,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
        }
    }
}

/// What the pipeline sees of a message: its kind decides scoring, pinned system messages
/// are always kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    SystemPrompt,
    Message,
    ToolOutput,
}

impl Kind {
    fn context_kind(self) -> ContextKind {
        let name = match self {
            Kind::SystemPrompt => ContextKind::SYSTEM_PROMPT,
            Kind::Message => ContextKind::MESSAGE,
            Kind::ToolOutput => ContextKind::TOOL_OUTPUT,
        };
        // Well-known names never fail; the default is unreachable.
        ContextKind::new(name).unwrap_or_default()
    }
}

/// One message of the request's `messages` array.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub(crate) role: Role,
    pub(crate) kind: Kind,
    /// A readable rendering (text, tool calls, results) for the item's content.
    pub(crate) text: String,
    /// Tokens, framing included.
    pub(crate) tokens: i64,
    /// The tool calls this message makes.
    pub(crate) calls: Vec<CallRef>,
    /// The tool calls this message answers.
    pub(crate) answers: Vec<CallRef>,
    /// Anthropic: the content starts with a `thinking` or `redacted_thinking` block.
    pub(crate) starts_with_thinking: bool,
    /// A tool output's cheaper form, with `ChatOptions::shorten`.
    pub(crate) short: Option<Short>,
    /// The cheaper form is the message's only form: a pinned tool output that does not
    /// fit whole ([`Conversation::pinned_outputs_shortened`]).
    pub(crate) send_short: bool,
}

impl Message {
    pub(crate) fn new(role: Role, kind: Kind) -> Self {
        Self {
            role,
            kind,
            text: String::new(),
            tokens: 0,
            calls: Vec::new(),
            answers: Vec::new(),
            starts_with_thinking: false,
            short: None,
            send_short: false,
        }
    }
}

/// A tool call id and the JSON path where this message names it.
#[derive(Debug, Clone)]
pub(crate) struct CallRef {
    pub(crate) id: String,
    pub(crate) path: String,
}

/// A pinned part of the request that is not a message (Anthropic's `system`, the request's
/// own framing and tool definitions): it is always sent, so it takes its share of the
/// budget.
#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    pub(crate) path: String,
    pub(crate) content: String,
    pub(crate) tokens: i64,
}

/// A request read into messages and units.
#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    pub(crate) provider: Provider,
    pub(crate) messages: Vec<Message>,
    /// Consecutive ranges of messages, covering all of them in order; each is kept or
    /// dropped as a whole (a tool call with its results).
    pub(crate) units: Vec<Range<usize>>,
    pub(crate) fixed: Vec<Fixed>,
}

/// Nanoseconds between the timestamps of consecutive messages: message `i` is stamped `i`
/// seconds after the Unix epoch, so recency follows conversation order.
const STEP_NS: i64 = 1_000_000_000;

impl Conversation {
    /// The JSON path of message `i`.
    pub(crate) fn path(i: usize) -> String {
        format!("messages[{i}]")
    }

    /// The group key of message `i`: the path of its unit's first message when the unit
    /// has more than one message, `None` for a message that stands alone.
    pub(crate) fn group_key(&self, i: usize) -> Option<String> {
        let unit = &self.units[self.unit_of(i)];
        (unit.len() > 1).then(|| Self::path(unit.start))
    }

    /// The unit holding message `i`.
    pub(crate) fn unit_of(&self, i: usize) -> usize {
        self.units.partition_point(|u| u.end <= i)
    }

    /// Which units are pinned: every unit holding a system or developer message, and with
    /// `pin_last_turn` the last unit and, when it does not start with a user message (a
    /// tool loop in progress, a prefilled reply), the nearest unit before it that does.
    pub(crate) fn pinned_units(&self, pin_last_turn: bool) -> Vec<bool> {
        let mut pinned: Vec<bool> = self
            .units
            .iter()
            .map(|u| {
                self.messages[u.clone()]
                    .iter()
                    .any(|m| m.kind == Kind::SystemPrompt)
            })
            .collect();
        if pin_last_turn {
            if let Some(last) = self.units.len().checked_sub(1) {
                pinned[last] = true;
                if !self.starts_with_user(last) {
                    if let Some(u) = self.last_user_led(0..last) {
                        pinned[u] = true;
                    }
                }
            }
        }
        pinned
    }

    pub(crate) fn starts_with_user(&self, unit: usize) -> bool {
        self.messages[self.units[unit].start].role == Role::User
    }

    /// The last of `units` that starts with a user message.
    pub(crate) fn last_user_led(&self, units: Range<usize>) -> Option<usize> {
        units.rev().find(|&u| self.starts_with_user(u))
    }

    /// The JSON paths of the messages of `unit`.
    pub(crate) fn unit_paths(&self, unit: usize) -> Vec<String> {
        self.units[unit].clone().map(Self::path).collect()
    }

    /// The item of message `i`, without pinning or group (the caller adds those).
    pub(crate) fn message_item(&self, i: usize) -> ContextItemBuilder {
        let m = &self.messages[i];
        let source = if m.kind == Kind::ToolOutput {
            ContextSource::TOOL
        } else {
            ContextSource::CHAT
        };
        let shortened = |short: &Short| {
            format!(
                "{} {} (shortened): {}",
                Self::path(i),
                m.role.name(),
                short.rendering()
            )
        };
        let full = || format!("{} {}: {}", Self::path(i), m.role.name(), m.text);
        // The item's own form, and the cheaper one it may be placed in instead.
        let (content, tokens, cheaper) = match &m.short {
            Some(short) if m.send_short => (shortened(short), short.tokens, None),
            short => (full(), m.tokens, short.as_ref()),
        };
        let item = ContextItem::builder(content, tokens)
            .kind(m.kind.context_kind())
            .source(ContextSource::new(source).unwrap_or_default())
            .tags([m.role.name()])
            .timestamp(i64::try_from(i).unwrap_or(i64::MAX / STEP_NS) * STEP_NS);
        match cheaper {
            Some(short) => item.variant(shortened(short), short.tokens, short.quality),
            None => item,
        }
    }

    /// The tokens of message `i`: its shortened form's when `shortened` (as the run placed
    /// it), its own otherwise.
    pub(crate) fn sent_tokens(&self, i: usize, shortened: bool) -> i64 {
        let m = &self.messages[i];
        match &m.short {
            Some(short) if shortened => short.tokens,
            _ => m.tokens,
        }
    }

    /// This conversation with every tool output of the `pinned` units that has a cheaper
    /// form sent in that form only, or `None` when no pinned unit has one. Pinned items are
    /// placed whole, so this is how a trim whose pinned parts do not fit can still send
    /// the last turn's long tool results (docs/chat.md, *Shortening tool outputs*).
    pub(crate) fn pinned_outputs_shortened(&self, pinned: &[bool]) -> Option<Conversation> {
        let mut conv = self.clone();
        let mut any = false;
        for (unit, _) in self.units.iter().zip(pinned).filter(|(_, &p)| p) {
            for m in &mut conv.messages[unit.clone()] {
                if m.short.is_some() {
                    m.send_short = true;
                    any = true;
                }
            }
        }
        any.then_some(conv)
    }

    /// The item of a fixed part: pinned, undated.
    pub(crate) fn fixed_item(fixed: &Fixed) -> Result<ContextItem> {
        ContextItem::builder(format!("{}: {}", fixed.path, fixed.content), fixed.tokens)
            .kind(Kind::SystemPrompt.context_kind())
            .pinned(true)
            .build()
    }
}

/// The error of a bad request: the JSON path, then what is wrong.
pub(crate) fn invalid(path: impl std::fmt::Display, message: impl std::fmt::Display) -> Error {
    Error::InvalidRequest(format!("{path}: {message}"))
}

pub(crate) use crate::model::type_name;
