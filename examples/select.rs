//! Runs a chat-style selection over a JSON Lines file and explains every decision.
//!
//! `cargo run --example select -- examples/data/chat.jsonl [max_tokens target_tokens]`

use std::sync::Arc;

use ctxpack::diagnostics::TraceDetail;
use ctxpack::placer::ChronologicalPlacer;
use ctxpack::scorer::{CompositeScorer, KindScorer, RecencyScorer, Scorer};
use ctxpack::slicer::GreedySlice;
use ctxpack::{ContextBudget, Pipeline, RunOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or("usage: select FILE.jsonl [max_tokens target_tokens]")?;
    let max: i64 = args.get(1).map_or(Ok(400), |s| s.parse())?;
    let target: i64 = args.get(2).map_or(Ok(max * 3 / 4), |s| s.parse())?;

    let items = ctxpack::model::read_items(&std::fs::read_to_string(path)?)?;
    let recency: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
    let kind: Arc<dyn Scorer> = Arc::new(KindScorer::new());
    let pipeline = Pipeline::builder()
        .scorer(Arc::new(CompositeScorer::new(vec![
            (recency, 3.0),
            (kind, 1.0),
        ])?))
        .slicer(Arc::new(GreedySlice::new()))
        .placer(Arc::new(ChronologicalPlacer::new()))
        .build()?;
    let budget = ContextBudget::new(max, target)?;
    let options = RunOptions {
        trace: TraceDetail::Stage,
        on_overflow: None,
    };
    let selection = pipeline.run_with(&items, &budget, &options)?;

    println!(
        "Selected {} of {} items (budget: max {max}, target {target}):",
        selection.indices.len(),
        items.len()
    );
    for (&i, &score) in selection.indices.iter().zip(&selection.scores) {
        println!(
            "  [{i:2}] {score:.3}  {:>4} tok  {}",
            items[i].tokens(),
            items[i].content()
        );
    }
    let report = selection.report.expect("traced run");
    println!("Excluded:");
    for e in &report.excluded {
        println!(
            "  [{:2}] {:.3}  {:<16} {}",
            e.index,
            e.score,
            e.reason.name(),
            items[e.index].content()
        );
    }
    Ok(())
}
