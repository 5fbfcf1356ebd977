//! The README's Rust quickstart: three items, a chat-style pipeline, the selected window.

use std::sync::Arc;

use ctxpack::placer::ChronologicalPlacer;
use ctxpack::scorer::{CompositeScorer, KindScorer, RecencyScorer, Scorer};
use ctxpack::slicer::GreedySlice;
use ctxpack::{ContextBudget, ContextItem, ContextKind, Pipeline};

fn main() -> Result<(), ctxpack::Error> {
    let items = vec![
        ContextItem::builder("You are a helpful assistant.", 8)
            .kind(ContextKind::new("SystemPrompt")?)
            .pinned(true)
            .build()?,
        ContextItem::builder("User: what changed in v2?", 9)
            .timestamp(1_700_000_000_000_000_000)
            .build()?,
        ContextItem::builder("Release notes for v2 ...", 300)
            .kind(ContextKind::new("Document")?)
            .timestamp(1_690_000_000_000_000_000)
            .build()?,
    ];
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
    let selection = pipeline.run(&items, &ContextBudget::new(4096, 3000)?)?;
    for &i in &selection.indices {
        println!("{}", items[i].content());
    }
    Ok(())
}
