//! Time to trim a chat request: the bundled OpenAI sample (`examples/data/openai-request.json`,
//! 17 messages with parallel tool calls and long outputs, 42 KB) and Anthropic sample, at a
//! few budgets, counted with each built-in encoding and with the tokenizer-free estimate
//! (docs/performance.md, "Chat requests").
//!
//! cargo bench --bench chat                 # the table
//! cargo bench --bench chat -- --quick      # fewer repetitions
//!
//! One measured run is one `ctxpack::chat::trim` call, everything a host pays per request:
//! parsing the JSON, reading and checking every message, counting its tokens, running the
//! `chat` preset over one item per message, and writing and re-checking the trimmed body.
//! The encodings are loaded before timing (their first use is measured in
//! docs/tokenizer.md). The counters run alternately, and the table shows the medians of
//! wall-clock time. A second table times the same trims with `o200k_base` with and
//! without long tool outputs shortened (`ChatOptions::shorten`, head 60 and tail 40
//! tokens), alternately.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ctxpack::chat::{estimate_tokens, trim, ChatOptions, CountTokens, Provider};
use ctxpack::model::HeadTail;
use ctxpack::policy::Policy;
use ctxpack::tokenizer::Encoding;
use ctxpack::ContextBudget;

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 15 } else { 101 };
    let pipeline = Policy::preset("chat").unwrap().build_pipeline().unwrap();
    let o200k = Encoding::by_name("o200k_base").unwrap();
    let cl100k = Encoding::by_name("cl100k_base").unwrap();
    let counters: [(&str, &dyn CountTokens); 3] = [
        ("o200k_base", o200k),
        ("cl100k_base", cl100k),
        ("estimate", &estimate_tokens),
    ];
    println!("| request | budget | kept (o200k_base) | tokens kept / in (o200k_base) | o200k_base | cl100k_base | estimate |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut shortening = Vec::new();
    let spec = HeadTail::new(60, 40).unwrap();
    for (provider, file, budgets) in [
        (
            Provider::OpenAi,
            "openai-request.json",
            [1_000, 2_000, 4_000, 8_000, 16_000],
        ),
        (
            Provider::Anthropic,
            "anthropic-request.json",
            [1_000, 2_000, 4_000, 8_000, 16_000],
        ),
    ] {
        let path = format!("{}/examples/data/{file}", env!("CARGO_MANIFEST_DIR"));
        let json = std::fs::read_to_string(&path).unwrap();
        for target in budgets {
            let budget = ContextBudget::new(target, target).unwrap();
            let run = |counter: &dyn CountTokens| {
                trim(
                    provider,
                    &json,
                    &budget,
                    &pipeline,
                    &ChatOptions::with_counter(counter),
                )
            };
            let summary = match run(o200k) {
                Ok(t) => (
                    format!("{} of {}", t.kept.len(), t.kept.len() + t.dropped.len()),
                    format!("{} / {}", t.tokens, t.input_tokens),
                ),
                Err(e) => (format!("refused: {:?}", e.code()), "—".into()),
            };
            let mut times = [Vec::new(), Vec::new(), Vec::new()];
            for _ in 0..runs {
                for (slot, (_, counter)) in times.iter_mut().zip(&counters) {
                    let start = Instant::now();
                    let _ = black_box(run(*counter));
                    slot.push(start.elapsed());
                }
            }
            let [a, b, c] = times.map(|mut t| micros(median(&mut t)));
            println!(
                "| {file} | {target} | {} | {} | {a} | {b} | {c} |",
                summary.0, summary.1
            );
            // The same trim with long tool outputs shortened, against it without.
            let mut short = ChatOptions::with_counter(o200k);
            short.shorten = Some(&spec);
            let shortened = match trim(provider, &json, &budget, &pipeline, &short) {
                Ok(t) => format!(
                    "{} of {} ({} shortened) | {} / {}",
                    t.kept.len(),
                    t.kept.len() + t.dropped.len(),
                    t.shortened.len(),
                    t.tokens,
                    t.input_tokens
                ),
                Err(e) => format!("refused: {:?} | —", e.code()),
            };
            let mut times = [Vec::new(), Vec::new()];
            for _ in 0..runs {
                for (slot, options) in times
                    .iter_mut()
                    .zip([ChatOptions::with_counter(o200k), short])
                {
                    let start = Instant::now();
                    let _ = black_box(trim(provider, &json, &budget, &pipeline, &options));
                    slot.push(start.elapsed());
                }
            }
            let [plain, with] = times.map(|mut t| micros(median(&mut t)));
            shortening.push(format!(
                "| {file} | {target} | {shortened} | {plain} | {with} |"
            ));
        }
    }
    println!();
    println!("| request | budget | kept with shortening (o200k_base) | tokens kept / in | without | with |");
    println!("|---|---:|---:|---:|---:|---:|");
    for row in shortening {
        println!("{row}");
    }
}
