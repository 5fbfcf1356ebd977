//! A simulated tool-heavy agent session, and the turn-by-turn run of a pipeline over it
//! with and without a held prefix (`docs/prefix-cache.md`). Deterministic: a seed gives
//! the same session, item for item. Shared by the prefix tests (`tests/prefix_sim.rs`),
//! the table and plot of the documentation (`examples/prefix_sim.rs`) and the benchmark
//! (`benches/prefix.rs`). Not every includer uses every function.
#![allow(dead_code)]

use ctxpack::prefix::{CacheRule, PrefixMode, PrefixOptions, PrefixState, TurnOutcome};
use ctxpack::{ContextBudget, ContextItem, ContextKind, ContextSource, Pipeline, RunOptions};

#[path = "rng.rs"]
mod rng;
use rng::Rng;

/// The shape of a session: how many turns and how big its parts are.
#[derive(Debug, Clone, Copy)]
pub struct SessionShape {
    /// Turns to generate.
    pub turns: usize,
    /// Tokens of the pinned system prompt (with the tool definitions).
    pub system_tokens: i64,
    /// Chance that a turn starts with a user message (otherwise the agent goes on alone).
    pub user_chance: f64,
    /// Tool rounds per turn: 1 to this many.
    pub max_rounds: usize,
    /// Parallel calls per round: 1 to this many.
    pub max_calls: usize,
    /// A tool result's tokens: from 80 to this many, heavy-tailed.
    pub max_result_tokens: i64,
    /// Chance of a retrieved document in a turn.
    pub document_chance: f64,
}

/// The session of the documentation's table: 200 turns of an agent working through a
/// code base, 1 to 3 tool rounds a turn, up to 3 parallel calls a round, results of up to
/// 4 000 tokens.
pub const DOC_SHAPE: SessionShape = SessionShape {
    turns: 200,
    system_tokens: 1_800,
    user_chance: 0.3,
    max_rounds: 3,
    max_calls: 3,
    max_result_tokens: 4_000,
    document_chance: 0.1,
};

/// A generated session: one append-only item list and where each turn's list ends.
pub struct Session {
    items: Vec<ContextItem>,
    ends: Vec<usize>,
}

const SECOND: i64 = 1_000_000_000;
const TOOLS: [&str; 6] = [
    "read_file",
    "grep",
    "run_tests",
    "list_dir",
    "git_diff",
    "http_get",
];

impl Session {
    /// Generates a session of `shape` from `seed`.
    pub fn generate(seed: u64, shape: SessionShape) -> Session {
        let mut rng = Rng::new(seed);
        let mut items = Vec::new();
        let mut ends = Vec::with_capacity(shape.turns);
        let mut clock: i64 = 1_700_000_000 * SECOND;
        let tick = |clock: &mut i64| {
            *clock += SECOND;
            *clock
        };
        let kind = |name: &str| ContextKind::new(name).expect("kind");
        items.push(
            ContextItem::builder(
                "system: You are a coding agent. Tools: read_file, grep, run_tests, list_dir, \
                 git_diff, http_get. Work step by step; cite the files you change.",
                shape.system_tokens,
            )
            .kind(kind(ContextKind::SYSTEM_PROMPT))
            .pinned(true)
            .build()
            .expect("system item"),
        );
        for turn in 0..shape.turns {
            if turn == 0 || rng.chance(shape.user_chance) {
                let tokens = rng.range(30, 240);
                items.push(
                    ContextItem::builder(
                        format!(
                            "user (turn {turn}): request #{} about module m{}",
                            rng.below(1000),
                            rng.below(40)
                        ),
                        tokens,
                    )
                    .timestamp(tick(&mut clock))
                    .tags(["user"])
                    .build()
                    .expect("user item"),
                );
            }
            if rng.chance(shape.document_chance) {
                items.push(
                    ContextItem::builder(
                        format!("doc (turn {turn}): design note {}", rng.below(10_000)),
                        rng.range(400, 1_600),
                    )
                    .kind(kind(ContextKind::DOCUMENT))
                    .timestamp(tick(&mut clock))
                    .build()
                    .expect("document item"),
                );
            }
            let rounds = 1 + rng.below(shape.max_rounds);
            for round in 0..rounds {
                let key = format!("t{turn}r{round}");
                let calls = 1 + rng.below(shape.max_calls);
                let names: Vec<&str> = (0..calls).map(|_| *rng.pick(&TOOLS)).collect();
                items.push(
                    ContextItem::builder(
                        format!(
                            "assistant (turn {turn}): calls {} [{key}]",
                            names.join(", ")
                        ),
                        rng.range(40, 40 + 60 * calls as i64),
                    )
                    .group(&key)
                    .timestamp(tick(&mut clock))
                    .tags(["assistant"])
                    .build()
                    .expect("call item"),
                );
                for (c, name) in names.iter().enumerate() {
                    // Heavy-tailed: most results are short, some are whole files or logs.
                    let u = rng.unit();
                    let tokens = (80.0 + (shape.max_result_tokens - 80) as f64 * u * u * u) as i64;
                    items.push(
                        ContextItem::builder(
                            format!("tool {name} [{key}.{c}]: output {}", rng.next_u64()),
                            tokens,
                        )
                        .kind(kind(ContextKind::TOOL_OUTPUT))
                        .source(ContextSource::new(ContextSource::TOOL).expect("source"))
                        .group(&key)
                        .timestamp(tick(&mut clock))
                        .build()
                        .expect("result item"),
                    );
                }
            }
            if rng.chance(0.6) {
                items.push(
                    ContextItem::builder(
                        format!("assistant (turn {turn}): summary {}", rng.below(100_000)),
                        rng.range(40, 320),
                    )
                    .timestamp(tick(&mut clock))
                    .tags(["assistant"])
                    .build()
                    .expect("summary item"),
                );
            }
            ends.push(items.len());
        }
        Session { items, ends }
    }

    /// Number of turns.
    pub fn turns(&self) -> usize {
        self.ends.len()
    }

    /// The item list the host has at turn `t` (0-based): everything so far.
    pub fn at(&self, t: usize) -> &[ContextItem] {
        &self.items[..self.ends[t]]
    }

    /// All tokens of the session.
    pub fn total_tokens(&self) -> i64 {
        self.items.iter().map(ContextItem::tokens).sum()
    }
}

/// One turn of a simulated run.
#[derive(Debug, Clone)]
pub struct TurnRow {
    /// 1-based turn number.
    pub turn: usize,
    /// Tokens of the window.
    pub window_tokens: i64,
    /// Items of the window.
    pub window_entries: usize,
    /// Items kept from the previous window.
    pub kept_entries: usize,
    /// Tokens kept from the previous window (raw).
    pub kept_tokens: i64,
    /// Kept tokens under the OpenAI rule.
    pub cached_tokens: i64,
    /// What the turn did.
    pub outcome: TurnOutcome,
    /// Share of a fresh selection's value given up.
    pub value_lost: f64,
}

/// Runs `pipeline` over every turn of `session` with a prefix state carried from turn to
/// turn (Measure is the specification's selection, measured; Hold keeps the prefix), with
/// the OpenAI caching rule and the defaults unless `tune` changes them.
pub fn simulate(
    session: &Session,
    pipeline: &Pipeline,
    budget: &ContextBudget,
    mode: PrefixMode,
    tune: impl Fn(&mut PrefixOptions<'_>),
) -> Vec<TurnRow> {
    let mut state: Option<PrefixState> = None;
    let mut rows = Vec::with_capacity(session.turns());
    for t in 0..session.turns() {
        let mut options = PrefixOptions::new(mode);
        options.previous = state.as_ref();
        options.cache = CacheRule::OpenAi;
        tune(&mut options);
        let run = pipeline
            .run_prefix(session.at(t), budget, &RunOptions::default(), &options)
            .expect("simulated turn");
        rows.push(TurnRow {
            turn: t + 1,
            window_tokens: run.reuse.window_tokens,
            window_entries: run.reuse.window_entries,
            kept_entries: run.reuse.kept_entries,
            kept_tokens: run.reuse.kept_tokens,
            cached_tokens: run.reuse.cached_tokens,
            outcome: run.reuse.outcome,
            value_lost: run.reuse.value_share_given_up(),
        });
        state = Some(run.state);
    }
    rows
}

/// The pipeline of the table: the tool-use preset with pinned items first.
pub fn doc_pipeline() -> Pipeline {
    let mut policy = ctxpack::policy::Policy::preset("tool-use").expect("preset");
    policy.pinned_first = true;
    policy.build_pipeline().expect("pipeline")
}

/// The budget of the table: 64 000 tokens of target under an 80 000 maximum.
pub fn doc_budget() -> ContextBudget {
    ContextBudget::new(80_000, 64_000).expect("budget")
}

impl TurnRow {
    /// The kept tokens under another caching rule.
    pub fn cached_under(&self, rule: CacheRule) -> i64 {
        rule.cached_tokens(self.kept_tokens, self.kept_entries, self.window_entries)
    }
}
