//! End-to-end tests of policies, presets, policy JSON and analytics through the public API.

use ctxpack::analytics::{
    budget_utilization, kind_diversity, marginal_items, min_budget_for, pipeline_sensitivity,
    policy_sensitivity, quota_utilization, timestamp_coverage,
};
use ctxpack::policy::{Policy, Preset};
use ctxpack::{ContextBudget, ContextItem, ContextKind, Error};

const SECOND: i64 = 1_000_000_000;

/// A small conversation with every kind, timestamps, priorities and hints.
fn items() -> Vec<ContextItem> {
    let mk = |content: &str, tokens: i64, kind: &str, ts: Option<i64>, priority: i64, hint: f64| {
        let b = ContextItem::builder(content, tokens)
            .kind(ContextKind::new(kind).unwrap())
            .priority(priority)
            .future_relevance_hint(hint)
            .tags(["support"]);
        match ts {
            Some(t) => b.timestamp(t * SECOND).build().unwrap(),
            None => b.build().unwrap(),
        }
    };
    vec![
        mk(
            "You are a support assistant.",
            12,
            "SystemPrompt",
            None,
            10,
            1.0,
        ),
        mk("User: my invoice is wrong", 9, "Message", Some(100), 5, 0.8),
        mk(
            "Billing policy document, section 4",
            120,
            "Document",
            Some(50),
            3,
            0.9,
        ),
        mk(
            "Tool: invoice lookup result",
            40,
            "ToolOutput",
            Some(110),
            4,
            0.7,
        ),
        mk(
            "Memory: customer prefers email",
            15,
            "Memory",
            Some(20),
            2,
            0.4,
        ),
        mk("Assistant: let me check", 8, "Message", Some(105), 1, 0.3),
        mk("Old chit-chat", 30, "Message", Some(10), 0, 0.1),
        mk("Refund guide", 80, "Document", None, 2, 0.6),
    ]
}

fn included(policy: &Policy, items: &[ContextItem], budget: &ContextBudget) -> Vec<usize> {
    let report = policy.dry_run(items, budget).unwrap();
    report.included.iter().map(|x| x.index).collect()
}

#[test]
fn every_preset_runs_deterministically_and_is_recovered() {
    let items = items();
    let budget = ContextBudget::new(200, 150).unwrap();
    for preset in Preset::ALL {
        let policy = preset.policy();
        let pipeline = policy.build_pipeline().unwrap();
        let a = pipeline.dry_run(&items, &budget).unwrap();
        let b = pipeline.dry_run(&items, &budget).unwrap();
        assert_eq!(a.included, b.included, "{preset:?}");
        assert_eq!(a.excluded, b.excluded, "{preset:?}");
        assert_eq!(a.included.len() + a.excluded.len(), items.len());
        let recovered = Policy::from_pipeline(&pipeline).unwrap();
        assert_eq!(recovered.scorers, policy.scorers);
        assert_eq!(recovered.slicer, policy.slicer);
        // The JSON form builds the same pipeline.
        let from_json = Policy::from_json(&policy.to_json().unwrap()).unwrap();
        assert_eq!(
            included(&from_json, &items, &budget),
            included(&policy, &items, &budget)
        );
    }
}

#[test]
fn spec_example_policy_runs() {
    let json = r#"{
      "scorers": [
        { "type": "recency", "weight": 2 },
        { "type": "kind", "weight": 1.5,
          "kindWeights": { "SystemPrompt": 1.0, "Document": 0.7, "Message": 0.5, "ToolOutput": 0.3 } },
        { "type": "tag", "weight": 1, "tagWeights": { "escalation": 1.0, "billing": 0.6 } },
        { "type": "scaled", "weight": 0.5, "innerScorer": { "type": "priority", "weight": 1 } }
      ],
      "slicerType": "knapsack", "placerType": "uShaped", "deduplicationEnabled": true,
      "overflowStrategy": "truncate", "knapsackBucketSize": 50,
      "quotas": [
        { "kind": "Document", "minPercent": 20, "maxPercent": 60 },
        { "kind": "ToolOutput", "maxPercent": 25 }
      ],
      "name": "SupportDesk"
    }"#;
    let policy = Policy::from_json(json).unwrap();
    let pipeline = policy.build_pipeline().unwrap();
    let items = items();
    let budget = ContextBudget::new(400, 300).unwrap();
    let report = pipeline.dry_run(&items, &budget).unwrap();
    assert!(!report.included.is_empty());
    let quotas = quota_utilization(&report, &items, pipeline.slicer().as_ref(), &budget).unwrap();
    let kinds: Vec<&str> = quotas.iter().map(|q| q.kind.as_str()).collect();
    assert_eq!(kinds, ["Document", "ToolOutput"]);
    assert!(quotas.iter().all(|q| (0.0..=1.0).contains(&q.utilization)));
    // A quota slicer is refused by budget simulation.
    assert!(matches!(
        marginal_items(&pipeline, &items, &budget, 10),
        Err(Error::PipelineConfig(_))
    ));
    assert!(matches!(
        min_budget_for(&pipeline, &items, 0, 400),
        Err(Error::PipelineConfig(_))
    ));
}

/// Every complete JSON example of `docs/policy-json.md` reads, writes back and builds.
#[test]
fn documentation_examples_build() {
    let doc = include_str!("../docs/policy-json.md");
    let mut found = 0;
    for block in doc.split("```json").skip(1) {
        let json = block.split("```").next().unwrap();
        if !json.contains("\"scorers\"") {
            continue; // fragments (a slicer object on its own)
        }
        let policy = Policy::from_json(json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert_eq!(
            Policy::from_json(&policy.to_json().unwrap()).unwrap(),
            policy
        );
        policy
            .build_pipeline()
            .unwrap_or_else(|e| panic!("{e}\n{json}"));
        found += 1;
    }
    assert!(found >= 1);
    // The slicer-object fragment, completed with a scorer.
    let fragment = doc
        .split("```json")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let completed = fragment.trim().trim_start_matches('{');
    let json = format!(r#"{{ "scorers": [ {{ "type": "recency", "weight": 1 }} ], {completed}"#);
    let policy = Policy::from_json(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
    policy.build_pipeline().unwrap();
}

#[test]
fn budget_simulation_on_a_preset() {
    let items = items();
    let chat = Preset::Chat.policy().build_pipeline().unwrap();
    let budget = ContextBudget::new(200, 150).unwrap();
    let full = chat.dry_run(&items, &budget).unwrap();
    let marginal = marginal_items(&chat, &items, &budget, 50).unwrap();
    // Every marginal item was included at the full budget, in placed order.
    let placed: Vec<usize> = full.included.iter().map(|x| x.index).collect();
    let mut last = 0;
    for i in &marginal {
        let at = placed
            .iter()
            .position(|p| p == i)
            .expect("marginal items were included");
        assert!(at >= last);
        last = at;
    }
    // The minimum budget of each item includes it, and one token less does not.
    for target in 0..items.len() {
        let tokens = items[target].tokens();
        if let Some(b) = min_budget_for(&chat, &items, target, 1_000).unwrap() {
            assert!(b >= tokens);
            let at = |b: i64| {
                chat.dry_run(&items, &ContextBudget::new(b, b).unwrap())
                    .unwrap()
                    .included
                    .iter()
                    .any(|x| x.index == target)
            };
            assert!(at(b), "item {target} at {b}");
            if b > tokens {
                assert!(!at(b - 1), "item {target} at {}", b - 1);
            }
        }
    }
}

#[test]
fn sensitivity_across_presets() {
    let items = items();
    let budget = ContextBudget::new(150, 100).unwrap();
    let chat = Preset::Chat.policy();
    let rag = Preset::Rag.policy();
    let debugging = Preset::Debugging.policy();
    let report = policy_sensitivity(
        &items,
        &budget,
        &[("chat", &chat), ("rag", &rag), ("debugging", &debugging)],
    )
    .unwrap();
    assert_eq!(report.variants.len(), 3);
    // Diffs are in input order and each really swings.
    assert!(report.diffs.windows(2).all(|w| w[0].index < w[1].index));
    for diff in &report.diffs {
        assert_eq!(diff.statuses.len(), 3);
        let labels: Vec<&str> = diff.statuses.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["chat", "rag", "debugging"]);
    }
    let pipelines: Vec<_> = [&chat, &rag, &debugging]
        .iter()
        .map(|p| p.build_pipeline().unwrap())
        .collect();
    let by_pipeline = pipeline_sensitivity(
        &items,
        &budget,
        &[
            ("chat", &pipelines[0]),
            ("rag", &pipelines[1]),
            ("debugging", &pipelines[2]),
        ],
    )
    .unwrap();
    assert_eq!(by_pipeline.diffs, report.diffs);
}

#[test]
fn report_helpers_on_a_real_report() {
    let items = items();
    let budget = ContextBudget::new(200, 150).unwrap();
    let report = Preset::ToolUse.policy().dry_run(&items, &budget).unwrap();
    let tokens: i64 = report
        .included
        .iter()
        .map(|x| items[x.index].tokens())
        .sum();
    assert_eq!(
        budget_utilization(&report, &items, &budget).unwrap(),
        tokens as f64 / 200.0
    );
    let diversity = kind_diversity(&report, &items).unwrap();
    assert!((1..=5).contains(&diversity));
    let coverage = timestamp_coverage(&report, &items).unwrap();
    assert!((0.0..=1.0).contains(&coverage));
}
