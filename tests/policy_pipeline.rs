//! Tests of policy → pipeline (policy steps M1–M6 in docs/decisions.md, same errors as by hand) and
//! pipeline → policy.

use std::sync::Arc;

use ctxpack::model::{ContextItem, ContextKind, OverflowStrategy};
use ctxpack::pipeline::Pipeline;
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::policy::{
    CountQuota, KnapsackSpec, PercentQuota, PlacerType, Policy, Preset, ScorerEntry, ScorerSpec,
    SlicerSpec,
};
use ctxpack::scorer::{
    CompositeScorer, DecayCurve, DecayScorer, FixedClock, KindScorer, MetadataKeyScorer,
    PerItemScorer, RecencyScorer, ScaledScorer, Scorer, SystemClock, TagScorer,
};
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, Slicer,
};
use ctxpack::Error;

fn kind(s: &str) -> ContextKind {
    ContextKind::new(s).unwrap()
}

fn e(weight: f64, scorer: ScorerSpec) -> ScorerEntry {
    ScorerEntry::new(weight, scorer)
}

fn one(scorer: ScorerSpec) -> Policy {
    Policy::new(vec![e(1.0, scorer)])
}

fn with_slicer(slicer: SlicerSpec) -> Policy {
    let mut p = one(ScorerSpec::Recency);
    p.slicer = slicer;
    p
}

fn build_err(p: &Policy) -> Error {
    p.build_pipeline().unwrap_err()
}

fn hand_built(
    scorer: Arc<dyn Scorer>,
    slicer: Arc<dyn Slicer>,
    placer: Arc<dyn Placer>,
) -> Pipeline {
    Pipeline::builder()
        .scorer(scorer)
        .slicer(slicer)
        .placer(placer)
        .build()
        .unwrap()
}

/// A policy's recovered form: what `from_pipeline(build(p))` must give.
fn anonymous(mut p: Policy) -> Policy {
    p.name = None;
    p.description = None;
    p
}

#[test]
fn every_entry_becomes_a_composite_term() {
    let pipeline = one(ScorerSpec::Recency).build_pipeline().unwrap();
    let composite = pipeline
        .scorer()
        .as_any()
        .downcast_ref::<CompositeScorer>()
        .unwrap();
    assert_eq!(composite.children().len(), 1);
    assert_eq!(composite.children()[0].1, 1.0);
    assert!(composite.children()[0].0.as_any().is::<RecencyScorer>());
    assert!(pipeline.slicer().as_any().is::<GreedySlice>());
    assert!(pipeline.placer().as_any().is::<ChronologicalPlacer>());
    assert!(pipeline.deduplication());
    assert_eq!(pipeline.overflow_strategy(), OverflowStrategy::Throw);
}

#[test]
fn flags_and_placer_are_copied() {
    let mut p = one(ScorerSpec::Recency);
    p.deduplication = false;
    p.overflow_strategy = OverflowStrategy::Proceed;
    p.placer = PlacerType::UShaped;
    let pipeline = p.build_pipeline().unwrap();
    assert!(!pipeline.deduplication());
    assert_eq!(pipeline.overflow_strategy(), OverflowStrategy::Proceed);
    assert!(pipeline.placer().as_any().is::<UShapedPlacer>());
}

#[test]
fn stream_builds_a_greedy_slicer() {
    let p = with_slicer(SlicerSpec::Stream {
        batch_size: Some(8),
    });
    assert!(p
        .build_pipeline()
        .unwrap()
        .slicer()
        .as_any()
        .is::<GreedySlice>());
}

#[test]
fn structural_errors_come_first_as_invalid_policy() {
    let p = Policy::new(vec![]);
    assert_eq!(
        build_err(&p),
        Error::InvalidPolicy("scorers: must contain at least one entry".into())
    );
}

#[test]
fn scorer_errors_are_the_hand_built_errors() {
    let bad_kind = vec![(kind("Document"), -1.0)];
    assert_eq!(
        build_err(&one(ScorerSpec::Kind {
            weights: Some(bad_kind.clone())
        })),
        KindScorer::with_weights(bad_kind).unwrap_err()
    );
    let dup = vec![(kind("Document"), 1.0), (kind("document"), 2.0)];
    assert_eq!(
        build_err(&one(ScorerSpec::Kind {
            weights: Some(dup.clone())
        })),
        KindScorer::with_weights(dup).unwrap_err()
    );
    let bad_tag = vec![("a".to_string(), f64::NAN)];
    assert_eq!(
        build_err(&one(ScorerSpec::Tag {
            weights: bad_tag.clone()
        })),
        TagScorer::new(bad_tag).unwrap_err()
    );
    let curve = DecayCurve::Exponential { half_life_ns: 0 };
    assert_eq!(
        build_err(&one(ScorerSpec::Decay {
            curve: curve.clone(),
            null_timestamp_score: 0.5
        })),
        DecayScorer::new(Arc::new(SystemClock), curve, 0.5).unwrap_err()
    );
    assert_eq!(
        build_err(&one(ScorerSpec::MetadataKey {
            key: "k".into(),
            value: "v".into(),
            boost: 0.0
        })),
        MetadataKeyScorer::new("k", "v", 0.0).unwrap_err()
    );
    let err = build_err(&one(ScorerSpec::MetadataTrust { default_score: 2.0 }));
    assert_eq!(err.code(), ctxpack::ErrorCode::ScorerConfig);
}

#[test]
fn slicer_errors_are_the_hand_built_errors() {
    let over = vec![
        PercentQuota {
            kind: kind("Document"),
            min_percent: Some(60.0),
            max_percent: None,
        },
        PercentQuota {
            kind: kind("Memory"),
            min_percent: Some(50.0),
            max_percent: None,
        },
    ];
    let hand = QuotaSlice::new(
        vec![
            QuotaEntry::new(kind("Document"), 60.0, 100.0).unwrap(),
            QuotaEntry::new(kind("Memory"), 50.0, 100.0).unwrap(),
        ],
        Arc::new(GreedySlice::new()),
    )
    .unwrap_err();
    let p = with_slicer(SlicerSpec::Quota {
        entries: over,
        inner: Box::new(SlicerSpec::Greedy),
    });
    assert_eq!(build_err(&p), hand);

    let counts = vec![CountQuota {
        kind: kind("Memory"),
        require_count: 1,
        cap_count: 2,
    }];
    let p = with_slicer(SlicerSpec::CountQuota {
        entries: counts,
        inner: Box::new(SlicerSpec::Knapsack(KnapsackSpec::default())),
        scarcity: ScarcityBehavior::Degrade,
    });
    let hand = CountQuotaSlice::new(
        vec![CountQuotaEntry::new(kind("Memory"), 1, 2).unwrap()],
        Arc::new(KnapsackSlice::new(100).unwrap()),
        ScarcityBehavior::Degrade,
    )
    .unwrap_err();
    assert_eq!(build_err(&p), hand);

    let bad = vec![CountQuota {
        kind: kind("Memory"),
        require_count: 3,
        cap_count: 2,
    }];
    let p = with_slicer(SlicerSpec::CountConstrainedKnapsack {
        entries: bad,
        knapsack: KnapsackSpec::default(),
        scarcity: ScarcityBehavior::Degrade,
    });
    assert_eq!(
        build_err(&p),
        CountQuotaEntry::new(kind("Memory"), 3, 2).unwrap_err()
    );
}

#[test]
fn quota_entries_merge_like_the_dotnet_builder() {
    let p = with_slicer(SlicerSpec::Quota {
        entries: vec![
            PercentQuota {
                kind: kind("Document"),
                min_percent: Some(20.0),
                max_percent: Some(60.0),
            },
            PercentQuota {
                kind: kind("ToolOutput"),
                min_percent: None,
                max_percent: Some(25.0),
            },
            PercentQuota {
                kind: kind("document"),
                min_percent: None,
                max_percent: Some(40.0),
            },
        ],
        inner: Box::new(SlicerSpec::Knapsack(KnapsackSpec {
            bucket_size: Some(50),
            table_limit_bytes: None,
        })),
    });
    let pipeline = p.build_pipeline().unwrap();
    let quota = pipeline
        .slicer()
        .as_any()
        .downcast_ref::<QuotaSlice>()
        .unwrap();
    let got: Vec<(&str, f64, f64)> = quota
        .entries()
        .iter()
        .map(|e| (e.kind().as_str(), e.require(), e.cap()))
        .collect();
    assert_eq!(
        got,
        vec![("Document", 20.0, 40.0), ("ToolOutput", 0.0, 25.0)]
    );
    let inner = quota
        .inner()
        .as_any()
        .downcast_ref::<KnapsackSlice>()
        .unwrap();
    assert_eq!(inner.bucket_size(), 50);
}

#[test]
fn presets_build_and_are_recovered() {
    for preset in Preset::ALL {
        let policy = preset.policy();
        let pipeline = policy.build_pipeline().unwrap();
        assert_eq!(
            Policy::from_pipeline(&pipeline).unwrap(),
            anonymous(policy),
            "{preset:?}"
        );
    }
}

#[test]
fn every_component_is_recovered() {
    let counts = vec![CountQuota {
        kind: kind("ToolOutput"),
        require_count: 1,
        cap_count: 3,
    }];
    let policy = Policy {
        scorers: vec![
            e(
                2.0,
                ScorerSpec::Kind {
                    weights: Some(vec![(kind("Memory"), 0.25)]),
                },
            ),
            e(
                1.0,
                ScorerSpec::Tag {
                    weights: vec![("a".into(), 0.5), ("b".into(), 1.0)],
                },
            ),
            e(
                1.0,
                ScorerSpec::Scaled {
                    inner: Box::new(e(1.0, ScorerSpec::Frequency)),
                },
            ),
            e(
                0.5,
                ScorerSpec::Composite {
                    children: vec![e(3.0, ScorerSpec::Priority), e(1.0, ScorerSpec::Reflexive)],
                },
            ),
            e(
                1.0,
                ScorerSpec::Decay {
                    curve: DecayCurve::Step {
                        windows: vec![(10, 1.0), (20, 0.5)],
                    },
                    null_timestamp_score: 0.25,
                },
            ),
            e(
                1.0,
                ScorerSpec::MetadataTrust {
                    default_score: 0.75,
                },
            ),
            e(
                1.0,
                ScorerSpec::MetadataKey {
                    key: "k".into(),
                    value: "v".into(),
                    boost: 3.0,
                },
            ),
        ],
        slicer: SlicerSpec::Quota {
            entries: vec![PercentQuota {
                kind: kind("Document"),
                min_percent: Some(10.0),
                max_percent: Some(80.0),
            }],
            inner: Box::new(SlicerSpec::CountQuota {
                entries: counts.clone(),
                inner: Box::new(SlicerSpec::CountConstrainedKnapsack {
                    entries: counts,
                    knapsack: KnapsackSpec {
                        bucket_size: Some(7),
                        table_limit_bytes: Some(4096),
                    },
                    scarcity: ScarcityBehavior::Throw,
                }),
                scarcity: ScarcityBehavior::Degrade,
            }),
        },
        placer: PlacerType::UShaped,
        deduplication: false,
        overflow_strategy: OverflowStrategy::Truncate,
        group_value: ctxpack::GroupValue::Sum,
        pinned_first: false,
        use_variants: true,
        name: Some("x".into()),
        description: None,
    };
    let pipeline = policy.build_pipeline().unwrap();
    let recovered = Policy::from_pipeline(&pipeline).unwrap();
    assert_eq!(recovered, anonymous(policy.clone()));
    // Tables keep their configuration order through a pipeline.
    let unsorted = one(ScorerSpec::Tag {
        weights: vec![("b".into(), 1.0), ("a".into(), 0.5)],
    });
    let back = Policy::from_pipeline(&unsorted.build_pipeline().unwrap()).unwrap();
    assert_eq!(back, unsorted);
    // And through JSON.
    assert_eq!(
        Policy::from_json(&recovered.to_json().unwrap()).unwrap(),
        recovered
    );
}

#[test]
fn hand_built_pipelines_are_recovered() {
    // A non-composite top scorer becomes one entry of weight 1; defaults become `None`.
    let pipeline = hand_built(
        Arc::new(KindScorer::new()),
        Arc::new(KnapsackSlice::new(100).unwrap()),
        Arc::new(ChronologicalPlacer::new()),
    );
    let mut expected = one(ScorerSpec::Kind { weights: None });
    expected.slicer = SlicerSpec::Knapsack(KnapsackSpec {
        bucket_size: Some(100),
        table_limit_bytes: None,
    });
    assert_eq!(Policy::from_pipeline(&pipeline).unwrap(), expected);
    // A scaled inner entry gets weight 1.
    let pipeline = hand_built(
        Arc::new(ScaledScorer::new(Arc::new(RecencyScorer::new()))),
        Arc::new(GreedySlice::new()),
        Arc::new(UShapedPlacer::new()),
    );
    let p = Policy::from_pipeline(&pipeline).unwrap();
    assert_eq!(
        p.scorers,
        vec![e(
            1.0,
            ScorerSpec::Scaled {
                inner: Box::new(e(1.0, ScorerSpec::Recency))
            }
        )]
    );
    // CCKS with its own knapsack.
    let ccks = CountConstrainedKnapsackSlice::new(
        vec![CountQuotaEntry::new(kind("Memory"), 0, 1).unwrap()],
        KnapsackSlice::new(5).unwrap(),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let pipeline = hand_built(
        Arc::new(RecencyScorer::new()),
        Arc::new(ccks),
        Arc::new(UShapedPlacer::new()),
    );
    assert!(matches!(
        Policy::from_pipeline(&pipeline).unwrap().slicer,
        SlicerSpec::CountConstrainedKnapsack {
            knapsack: KnapsackSpec {
                bucket_size: Some(5),
                table_limit_bytes: None
            },
            ..
        }
    ));
}

#[test]
fn custom_components_cannot_be_expressed() {
    let custom: Arc<dyn Scorer> =
        Arc::new(PerItemScorer::new(|_: usize, _: &[&ContextItem]| Ok(0.5)));
    let greedy: Arc<dyn Slicer> = Arc::new(GreedySlice::new());
    let chrono: Arc<dyn Placer> = Arc::new(ChronologicalPlacer::new());
    let msg = |p: &Pipeline| match Policy::from_pipeline(p).unwrap_err() {
        Error::InvalidPolicy(m) => m,
        other => panic!("unexpected {other:?}"),
    };
    let p = hand_built(custom.clone(), greedy.clone(), chrono.clone());
    assert_eq!(
        msg(&p),
        "scorer: custom components cannot be expressed as a policy"
    );
    let composite = CompositeScorer::new(vec![
        (Arc::new(RecencyScorer::new()), 1.0),
        (custom.clone(), 2.0),
    ])
    .unwrap();
    let p = hand_built(Arc::new(composite), greedy.clone(), chrono.clone());
    assert_eq!(
        msg(&p),
        "scorers[1]: custom components cannot be expressed as a policy"
    );
    let nested = CompositeScorer::new(vec![(
        Arc::new(ScaledScorer::new(Arc::new(
            CompositeScorer::new(vec![(custom.clone(), 1.0)]).unwrap(),
        ))),
        1.0,
    )])
    .unwrap();
    let p = hand_built(Arc::new(nested), greedy.clone(), chrono.clone());
    assert_eq!(
        msg(&p),
        "scorers[0].innerScorer.children[0]: custom components cannot be expressed as a policy"
    );

    #[derive(Debug)]
    struct TakeAll;
    impl Slicer for TakeAll {
        fn slice(
            &self,
            items: &[ctxpack::model::ScoredItem<'_>],
            _: &ctxpack::ContextBudget,
        ) -> ctxpack::Result<ctxpack::slicer::SliceOutcome> {
            Ok(ctxpack::slicer::SliceOutcome {
                selected: (0..items.len()).collect(),
                ..Default::default()
            })
        }
    }
    let recency: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
    let p = hand_built(recency.clone(), Arc::new(TakeAll), chrono.clone());
    assert_eq!(
        msg(&p),
        "slicer: custom components cannot be expressed as a policy"
    );
    let cq = CountQuotaSlice::new(vec![], Arc::new(TakeAll), ScarcityBehavior::Degrade).unwrap();
    let p = hand_built(recency.clone(), Arc::new(cq), chrono.clone());
    assert_eq!(
        msg(&p),
        "slicer.innerSlicer: custom components cannot be expressed as a policy"
    );

    #[derive(Debug)]
    struct Reverse;
    impl Placer for Reverse {
        fn place(&self, items: &[ctxpack::model::ScoredItem<'_>]) -> ctxpack::Result<Vec<usize>> {
            Ok((0..items.len()).rev().collect())
        }
    }
    let p = hand_built(recency.clone(), greedy.clone(), Arc::new(Reverse));
    assert_eq!(
        msg(&p),
        "placer: custom components cannot be expressed as a policy"
    );

    // A decay scorer on a fixed clock has no policy form; on the system clock it has.
    let curve = DecayCurve::Window { max_age_ns: 5 };
    let fixed = DecayScorer::new(Arc::new(FixedClock(0)), curve.clone(), 0.5).unwrap();
    let p = hand_built(Arc::new(fixed), greedy.clone(), chrono.clone());
    assert_eq!(
        msg(&p),
        "scorer: a DecayScorer on a clock other than the system clock cannot be expressed as a policy"
    );
    let system = DecayScorer::new(Arc::new(SystemClock), curve.clone(), 0.5).unwrap();
    let p = hand_built(Arc::new(system), greedy, chrono);
    assert_eq!(
        Policy::from_pipeline(&p).unwrap().scorers,
        vec![e(
            1.0,
            ScorerSpec::Decay {
                curve,
                null_timestamp_score: 0.5
            }
        )]
    );
}

#[test]
fn shapes_without_a_policy_form_are_reported() {
    let q = |inner: Arc<dyn Slicer>| {
        QuotaSlice::new(
            vec![QuotaEntry::new(kind("Document"), 10.0, 50.0).unwrap()],
            inner,
        )
        .unwrap()
    };
    let nested = q(Arc::new(q(Arc::new(GreedySlice::new()))));
    let p = hand_built(
        Arc::new(RecencyScorer::new()),
        Arc::new(nested),
        Arc::new(ChronologicalPlacer::new()),
    );
    assert_eq!(
        Policy::from_pipeline(&p).unwrap_err(),
        Error::InvalidPolicy(
            "quotas: a percentage quota cannot directly wrap another percentage quota".into()
        )
    );
}
