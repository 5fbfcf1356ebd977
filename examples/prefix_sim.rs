//! The simulated agent session of `docs/prefix-cache.md`: 200 turns at the budget ceiling,
//! the specification's selection every turn (Off, measured) against Hold. Prints the
//! summary table (Markdown) on standard error and one CSV row per turn on standard output,
//! which `scripts/plot_prefix.py` turns into the plot.
//!
//! ```sh
//! cargo run --release --example prefix_sim > docs/prefix-sim.csv
//! python3 scripts/plot_prefix.py docs/prefix-sim.csv docs/prefix-sim.png
//! ```
//!
//! `PREFIX_SIM_SEED` picks another session (default 18, the documented one).

#[path = "../tests/common/agent_session.rs"]
mod agent_session;

use agent_session::{doc_budget, doc_pipeline, simulate, Session, TurnRow, DOC_SHAPE};
use ctxpack::prefix::{CacheRule, PrefixMode, TurnOutcome};

/// The seed of the documented session.
const SEED: u64 = 18;

fn main() {
    let seed = std::env::var("PREFIX_SIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SEED);
    let session = Session::generate(seed, DOC_SHAPE);
    let pipeline = doc_pipeline();
    let budget = doc_budget();
    let off = simulate(&session, &pipeline, &budget, PrefixMode::Measure, |_| {});
    let hold = simulate(&session, &pipeline, &budget, PrefixMode::Hold, |_| {});
    println!("turn,window_off,cached_off,window_hold,cached_hold,outcome_hold,value_lost_hold");
    for (o, h) in off.iter().zip(&hold) {
        println!(
            "{},{},{},{},{},{},{:.6}",
            o.turn,
            o.window_tokens,
            o.cached_tokens,
            h.window_tokens,
            h.cached_tokens,
            h.outcome.name(),
            h.value_lost
        );
    }
    eprintln!(
        "session seed {seed}: {} turns, {} items, {} tokens; budget target {} of max {}",
        session.turns(),
        session.at(session.turns() - 1).len(),
        session.total_tokens(),
        budget.target_tokens(),
        budget.max_tokens()
    );
    eprintln!(
        "| per turn, over {} turns | Off (fresh every turn) | Hold |",
        off.len()
    );
    eprintln!("|---|---:|---:|");
    let line = |name: &str, f: &dyn Fn(&[TurnRow]) -> String| {
        eprintln!("| {name} | {} | {} |", f(&off), f(&hold))
    };
    let mean = |r: &[TurnRow], f: &dyn Fn(&TurnRow) -> i64| {
        format!(
            "{:.0}",
            r.iter().map(f).sum::<i64>() as f64 / r.len() as f64
        )
    };
    let total = |r: &[TurnRow], f: &dyn Fn(&TurnRow) -> i64| r.iter().map(f).sum::<i64>();
    line("window tokens (mean)", &|r| mean(r, &|t| t.window_tokens));
    for (name, rule) in [
        ("OpenAI (1 024, then 128-token steps)", CacheRule::OpenAi),
        (
            "Anthropic (1 024 minimum, 20-item lookback)",
            CacheRule::ANTHROPIC,
        ),
        ("vLLM (16-token blocks)", CacheRule::VLLM),
    ] {
        line(&format!("cached tokens (mean), {name}"), &|r| {
            mean(r, &|t| t.cached_under(rule))
        });
    }
    line("cache hit rate, OpenAI (cached / window tokens)", &|r| {
        format!(
            "{:.1} %",
            100.0 * total(r, &|t| t.cached_tokens) as f64 / total(r, &|t| t.window_tokens) as f64
        )
    });
    line("uncached tokens, all turns, OpenAI", &|r| {
        format!("{}", total(r, &|t| t.window_tokens - t.cached_tokens))
    });
    line("re-anchors", &|r| {
        let n = r
            .iter()
            .filter(|t| t.outcome == TurnOutcome::Reanchored)
            .count();
        format!("{n}")
    });
    line("fewest turns between two re-anchors", &|r| {
        let at: Vec<usize> = r
            .iter()
            .filter(|t| t.outcome == TurnOutcome::Reanchored)
            .map(|t| t.turn)
            .collect();
        at.windows(2)
            .map(|w| w[1] - w[0])
            .min()
            .map_or("–".to_owned(), |g| g.to_string())
    });
    line("value lost (mean / max share of a fresh selection)", &|r| {
        let max = r.iter().map(|t| t.value_lost).fold(0.0, f64::max);
        let mean = r.iter().map(|t| t.value_lost).sum::<f64>() / r.len() as f64;
        format!("{:.2} % / {:.2} %", 100.0 * mean, 100.0 * max)
    });
}
