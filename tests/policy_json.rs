//! Tests of the policy JSON: the spec example, round trips, leniency and every error.

use serde_json::Value;

use ctxpack::model::{ContextKind, OverflowStrategy};
use ctxpack::policy::{
    CountQuota, JsonReadOptions, JsonWarning, JsonWarningKind, KnapsackSpec, PercentQuota,
    PlacerType, Policy, Preset, ScorerEntry, ScorerSpec, SlicerSpec,
};
use ctxpack::scorer::DecayCurve;
use ctxpack::slicer::ScarcityBehavior;
use ctxpack::Error;

/// Spec 07 §3.4, verbatim.
const SPEC_EXAMPLE: &str = r#"{
  "scorers": [
    { "type": "recency", "weight": 2 },
    { "type": "kind", "weight": 1.5,
      "kindWeights": { "SystemPrompt": 1.0, "Document": 0.7, "Message": 0.5, "ToolOutput": 0.3 } },
    { "type": "tag", "weight": 1, "tagWeights": { "escalation": 1.0, "billing": 0.6 } },
    { "type": "scaled", "weight": 0.5, "innerScorer": { "type": "priority", "weight": 1 } }
  ],
  "slicerType": "knapsack",
  "placerType": "uShaped",
  "deduplicationEnabled": true,
  "overflowStrategy": "truncate",
  "knapsackBucketSize": 50,
  "quotas": [
    { "kind": "Document", "minPercent": 20, "maxPercent": 60 },
    { "kind": "ToolOutput", "maxPercent": 25 }
  ],
  "name": "SupportDesk",
  "description": "Ticket triage with weighted recency, kind and tag signals."
}"#;

fn kind(s: &str) -> ContextKind {
    ContextKind::new(s).unwrap()
}

fn e(weight: f64, scorer: ScorerSpec) -> ScorerEntry {
    ScorerEntry::new(weight, scorer)
}

/// JSON equality modulo formatting: every number compared as f64, objects as maps.
fn normalized(json: &str) -> Value {
    fn walk(v: Value) -> Value {
        match v {
            Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
            Value::Array(a) => Value::Array(a.into_iter().map(walk).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, walk(v))).collect()),
            other => other,
        }
    }
    walk(serde_json::from_str(json).unwrap())
}

fn error(json: &str) -> String {
    match Policy::from_json(json) {
        Err(Error::InvalidPolicy(m)) => m,
        other => panic!("expected an InvalidPolicy error for {json}, got {other:?}"),
    }
}

/// A minimal document with `extra` top-level members appended.
fn doc(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    format!(r#"{{"scorers":[{{"type":"recency","weight":1}}]{sep}{extra}}}"#)
}

/// A minimal document whose only scorer entry is `entry`.
fn entry_doc(entry: &str) -> String {
    format!(r#"{{"scorers":[{entry}]}}"#)
}

fn spec_example_policy() -> Policy {
    Policy {
        scorers: vec![
            e(2.0, ScorerSpec::Recency),
            e(
                1.5,
                ScorerSpec::Kind {
                    // Document order, which TagScorer's total and the writer keep.
                    weights: Some(vec![
                        (kind("SystemPrompt"), 1.0),
                        (kind("Document"), 0.7),
                        (kind("Message"), 0.5),
                        (kind("ToolOutput"), 0.3),
                    ]),
                },
            ),
            e(
                1.0,
                ScorerSpec::Tag {
                    weights: vec![("escalation".into(), 1.0), ("billing".into(), 0.6)],
                },
            ),
            e(
                0.5,
                ScorerSpec::Scaled {
                    inner: Box::new(e(1.0, ScorerSpec::Priority)),
                },
            ),
        ],
        slicer: SlicerSpec::Quota {
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
            ],
            inner: Box::new(SlicerSpec::Knapsack(KnapsackSpec {
                bucket_size: Some(50),
                table_limit_bytes: None,
            })),
        },
        placer: PlacerType::UShaped,
        deduplication: true,
        overflow_strategy: OverflowStrategy::Truncate,
        group_value: ctxpack::GroupValue::Sum,
        pinned_first: false,
        use_variants: true,
        name: Some("SupportDesk".into()),
        description: Some("Ticket triage with weighted recency, kind and tag signals.".into()),
    }
}

/// A policy using every extension.
fn extended_policy() -> Policy {
    let counts = vec![
        CountQuota {
            kind: kind("ToolOutput"),
            require_count: 1,
            cap_count: 3,
        },
        CountQuota {
            kind: kind("Memory"),
            require_count: 0,
            cap_count: 2,
        },
    ];
    Policy {
        scorers: vec![
            e(
                1.0,
                ScorerSpec::Composite {
                    children: vec![e(2.0, ScorerSpec::Frequency), e(1.0, ScorerSpec::Reflexive)],
                },
            ),
            e(
                0.25,
                ScorerSpec::Decay {
                    curve: DecayCurve::Exponential {
                        half_life_ns: 3_600_000_000_000,
                    },
                    null_timestamp_score: 0.5,
                },
            ),
            e(
                1.0,
                ScorerSpec::Decay {
                    curve: DecayCurve::Window {
                        max_age_ns: 60_000_000_000,
                    },
                    null_timestamp_score: 0.0,
                },
            ),
            e(
                1.0,
                ScorerSpec::Decay {
                    curve: DecayCurve::Step {
                        windows: vec![(1_000, 1.0), (i64::MAX, 0.125)],
                    },
                    null_timestamp_score: 1.0,
                },
            ),
            e(3.0, ScorerSpec::MetadataTrust { default_score: 0.3 }),
            e(
                1e-3,
                ScorerSpec::MetadataKey {
                    key: "lang \"x\"".into(),
                    value: "rust".into(),
                    boost: 2.5,
                },
            ),
            e(
                1.0,
                ScorerSpec::Scaled {
                    inner: Box::new(e(
                        7.0,
                        ScorerSpec::Scaled {
                            inner: Box::new(e(1.0, ScorerSpec::Kind { weights: None })),
                        },
                    )),
                },
            ),
        ],
        slicer: SlicerSpec::Quota {
            entries: vec![PercentQuota {
                kind: kind("Document"),
                min_percent: Some(10.0),
                max_percent: None,
            }],
            inner: Box::new(SlicerSpec::CountQuota {
                entries: counts.clone(),
                inner: Box::new(SlicerSpec::Quota {
                    entries: vec![PercentQuota {
                        kind: kind("Message"),
                        min_percent: None,
                        max_percent: Some(50.0),
                    }],
                    inner: Box::new(SlicerSpec::CountConstrainedKnapsack {
                        entries: counts,
                        knapsack: KnapsackSpec {
                            bucket_size: Some(10),
                            table_limit_bytes: Some(1 << 20),
                        },
                        scarcity: ScarcityBehavior::Throw,
                    }),
                }),
                scarcity: ScarcityBehavior::Degrade,
            }),
        },
        placer: PlacerType::Chronological,
        deduplication: false,
        overflow_strategy: OverflowStrategy::Proceed,
        group_value: ctxpack::GroupValue::Sum,
        pinned_first: false,
        use_variants: true,
        name: None,
        description: Some("ünïcode \u{1F600} and \"quotes\"\n".into()),
    }
}

#[test]
fn spec_example_reads_to_the_expected_policy() {
    assert_eq!(
        Policy::from_json(SPEC_EXAMPLE).unwrap(),
        spec_example_policy()
    );
}

#[test]
fn spec_example_writes_back_equal_modulo_formatting() {
    let policy = Policy::from_json(SPEC_EXAMPLE).unwrap();
    assert_eq!(
        normalized(&policy.to_json().unwrap()),
        normalized(SPEC_EXAMPLE)
    );
    assert_eq!(
        normalized(&policy.to_json_pretty().unwrap()),
        normalized(SPEC_EXAMPLE)
    );
}

#[test]
fn compact_output_follows_the_dotnet_property_order() {
    let json = spec_example_policy().to_json().unwrap();
    assert_eq!(
        json,
        concat!(
            r#"{"scorers":[{"type":"recency","weight":2},"#,
            r#"{"type":"kind","weight":1.5,"kindWeights":{"SystemPrompt":1,"Document":0.7,"Message":0.5,"ToolOutput":0.3}},"#,
            r#"{"type":"tag","weight":1,"tagWeights":{"escalation":1,"billing":0.6}},"#,
            r#"{"type":"scaled","weight":0.5,"innerScorer":{"type":"priority","weight":1}}],"#,
            r#""slicerType":"knapsack","placerType":"uShaped","deduplicationEnabled":true,"#,
            r#""overflowStrategy":"truncate","knapsackBucketSize":50,"#,
            r#""quotas":[{"kind":"Document","minPercent":20,"maxPercent":60},{"kind":"ToolOutput","maxPercent":25}],"#,
            r#""name":"SupportDesk","description":"Ticket triage with weighted recency, kind and tag signals."}"#
        )
    );
}

#[test]
fn defaults_are_always_written() {
    let json = Policy::new(vec![e(1.0, ScorerSpec::Recency)])
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"scorers":[{"type":"recency","weight":1}],"slicerType":"greedy","placerType":"chronological","deduplicationEnabled":true,"overflowStrategy":"throw"}"#
    );
}

#[test]
fn pretty_output_uses_two_space_indentation() {
    let json = Policy::new(vec![e(1.0, ScorerSpec::Recency)])
        .to_json_pretty()
        .unwrap();
    let expected = "{\n  \"scorers\": [\n    {\n      \"type\": \"recency\",\n      \"weight\": 1\n    }\n  ],\n  \"slicerType\": \"greedy\",\n  \"placerType\": \"chronological\",\n  \"deduplicationEnabled\": true,\n  \"overflowStrategy\": \"throw\"\n}";
    assert_eq!(json, expected);
    let mut p = Policy::new(vec![e(1.0, ScorerSpec::Tag { weights: vec![] })]);
    p.name = Some(String::new());
    assert!(p.to_json_pretty().unwrap().contains("\"tagWeights\": {}"));
}

/// Fuzz finding (policy_json): serde_json's default float parser can be one ulp off, so
/// a weight read, written (shortest form) and read again came back different. Numbers are
/// now parsed correctly rounded (serde_json `float_roundtrip`).
#[test]
fn numbers_read_correctly_rounded_and_round_trip_exactly() {
    for weight in [
        1.947700395895162e-169_f64,
        6.162599865641032e196,
        1.0498824276453545e74,
    ] {
        let json = format!(r#"{{"scorers":[{{"type":"recency","weight":{weight:e}}}]}}"#);
        let policy = Policy::from_json(&json).unwrap();
        assert_eq!(
            policy.scorers[0].weight.to_bits(),
            weight.to_bits(),
            "{json}"
        );
        let again = Policy::from_json(&policy.to_json().unwrap()).unwrap();
        assert_eq!(again, policy);
    }
}

#[test]
fn presets_round_trip() {
    for preset in Preset::ALL {
        let policy = preset.policy();
        let json = policy.to_json().unwrap();
        assert_eq!(Policy::from_json(&json).unwrap(), policy, "{json}");
        assert_eq!(
            Policy::from_json(&policy.to_json_pretty().unwrap()).unwrap(),
            policy
        );
    }
    // DocumentQa writes its explicit bucket size.
    assert!(Preset::DocumentQa
        .policy()
        .to_json()
        .unwrap()
        .contains(r#""knapsackBucketSize":100"#));
}

#[test]
fn extensions_round_trip() {
    let policy = extended_policy();
    let json = policy.to_json().unwrap();
    assert_eq!(Policy::from_json(&json).unwrap(), policy, "{json}");
    let pretty = policy.to_json_pretty().unwrap();
    assert_eq!(Policy::from_json(&pretty).unwrap(), policy);
    // JSON -> policy -> JSON is stable too.
    assert_eq!(Policy::from_json(&json).unwrap().to_json().unwrap(), json);
}

#[test]
fn extension_json_shape() {
    let json = r#"{
      "scorers": [
        { "type": "decay", "weight": 1, "curve": { "type": "exponential", "halfLifeNanos": 3600000000000 } },
        { "type": "metadataTrust", "weight": 1 },
        { "type": "metadataKey", "weight": 1, "key": "source", "value": "docs", "boost": 1.5 },
        { "type": "composite", "weight": 1, "children": [ { "type": "recency", "weight": 1 } ] }
      ],
      "slicerType": "countQuota",
      "countQuotas": [ { "kind": "ToolOutput", "requireCount": 1, "capCount": 2 } ],
      "innerSlicer": { "slicerType": "greedy", "quotas": [ { "kind": "Document", "maxPercent": 40 } ] }
    }"#;
    let p = Policy::from_json(json).unwrap();
    assert_eq!(
        p.scorers[0].scorer,
        ScorerSpec::Decay {
            curve: DecayCurve::Exponential {
                half_life_ns: 3_600_000_000_000
            },
            null_timestamp_score: 0.5
        }
    );
    assert_eq!(
        p.scorers[1].scorer,
        ScorerSpec::MetadataTrust { default_score: 0.5 }
    );
    assert_eq!(
        p.slicer,
        SlicerSpec::CountQuota {
            entries: vec![CountQuota {
                kind: kind("ToolOutput"),
                require_count: 1,
                cap_count: 2
            }],
            inner: Box::new(SlicerSpec::Quota {
                entries: vec![PercentQuota {
                    kind: kind("Document"),
                    min_percent: None,
                    max_percent: Some(40.0)
                }],
                inner: Box::new(SlicerSpec::Greedy),
            }),
            scarcity: ScarcityBehavior::Degrade,
        }
    );
    // Written back: defaults of the extensions are explicit, the greedy inner is nested.
    let out = p.to_json().unwrap();
    assert!(out.contains(r#""nullTimestampScore":0.5"#));
    assert!(out.contains(r#""scarcity":"degrade","innerSlicer":{"slicerType":"greedy","quotas":"#));
}

#[test]
fn reading_is_lenient_where_dotnet_is() {
    // Enum strings in any case, integer ordinals, absent and null optional properties.
    let p = Policy::from_json(
        r#"{"scorers":[{"type":"RECENCY","weight":1},{"type":6,"weight":2,"innerScorer":{"type":"Kind","weight":1}}],
            "slicerType":1,"placerType":"ushaped","overflowStrategy":2,"knapsackBucketSize":null,
            "quotas":null,"name":null}"#,
    )
    .unwrap();
    assert_eq!(p.scorers[0].scorer, ScorerSpec::Recency);
    assert!(matches!(p.scorers[1].scorer, ScorerSpec::Scaled { .. }));
    assert_eq!(p.slicer, SlicerSpec::Knapsack(KnapsackSpec::default()));
    assert_eq!(p.placer, PlacerType::UShaped);
    assert_eq!(p.overflow_strategy, OverflowStrategy::Proceed);
    assert_eq!(p.name, None);
    // Every .NET ordinal maps to its member.
    for (i, ty) in [
        "recency",
        "priority",
        "kind",
        "tag",
        "frequency",
        "reflexive",
        "scaled",
    ]
    .iter()
    .enumerate()
    {
        let extra = match *ty {
            "tag" => r#","tagWeights":{}"#,
            "scaled" => r#","innerScorer":{"type":"recency","weight":1}"#,
            _ => "",
        };
        let by_name = Policy::from_json(&entry_doc(&format!(
            r#"{{"type":"{ty}","weight":1{extra}}}"#
        )))
        .unwrap();
        let by_ordinal =
            Policy::from_json(&entry_doc(&format!(r#"{{"type":{i},"weight":1{extra}}}"#))).unwrap();
        assert_eq!(by_name, by_ordinal);
    }
    assert_eq!(
        Policy::from_json(&doc(r#""overflowStrategy":"Truncate""#))
            .unwrap()
            .overflow_strategy,
        OverflowStrategy::Truncate
    );
    assert_eq!(
        Policy::from_json(&doc(r#""slicerType":2,"streamBatchSize":8"#))
            .unwrap()
            .slicer,
        SlicerSpec::Stream {
            batch_size: Some(8)
        }
    );
    // An empty quota list wraps nothing (policy step M6 in docs/decisions.md), as in .NET, even
    // with stream.
    assert_eq!(
        Policy::from_json(&doc(r#""quotas":[]"#)).unwrap().slicer,
        SlicerSpec::Greedy
    );
    assert!(Policy::from_json(&doc(r#""slicerType":"stream","quotas":[]"#)).is_ok());
    // kindWeights / tagWeights on other types are accepted and ignored, like .NET.
    let p = Policy::from_json(&entry_doc(
        r#"{"type":"recency","weight":1,"kindWeights":{"Memory":1},"tagWeights":{"a":1}}"#,
    ))
    .unwrap();
    assert_eq!(p.scorers[0].scorer, ScorerSpec::Recency);
    // The inner weight of a scaled entry is only validated.
    let p = Policy::from_json(&entry_doc(
        r#"{"type":"scaled","weight":1,"innerScorer":{"type":"priority","weight":42}}"#,
    ))
    .unwrap();
    assert_eq!(
        p.scorers[0].scorer,
        ScorerSpec::Scaled {
            inner: Box::new(e(42.0, ScorerSpec::Priority))
        }
    );
}

#[test]
fn errors_of_spec_07_3_3() {
    let cases: &[(&str, &str)] = &[
        ("", "$: JSON input cannot be empty"),
        ("  \n", "$: JSON input cannot be empty"),
        ("null", "$: policy cannot be null (received JSON literal 'null')"),
        (r#"{"scorers":[{"type":"foo","weight":1}]}"#,
         "scorers[0].type: unknown scorer type \"foo\"; known values: recency, priority, kind, tag, frequency, reflexive, scaled, composite, decay, metadataTrust, metadataKey"),
        (&doc(r#""slicerType":"fancy""#),
         "slicerType: unknown slicer type \"fancy\"; known values: greedy, knapsack, stream, countQuota, countConstrainedKnapsack"),
        (&doc(r#""placerType":"middle""#), "placerType: unknown placer type \"middle\"; known values: chronological, uShaped"),
        (&doc(r#""overflowStrategy":"explode""#), "overflowStrategy: unknown overflow strategy \"explode\"; known values: throw, truncate, proceed"),
        ("{}", "scorers: is required"),
        (r#"{"scorers":null}"#, "scorers: must not be null"),
        (r#"{"scorers":[]}"#, "scorers: must contain at least one entry"),
        (r#"{"scorers":[{"type":"recency","weight":1},{"type":"kind","weight":1},{"type":"tag","weight":0,"tagWeights":{}}]}"#,
         "scorers[2].weight: must be positive and finite (got 0)"),
        (&entry_doc(r#"{"type":"recency","weight":-1.5}"#), "scorers[0].weight: must be positive and finite (got -1.5)"),
        (&entry_doc(r#"{"type":"tag","weight":1}"#), "scorers[0].tagWeights: must be specified when type is tag"),
        (&entry_doc(r#"{"type":"tag","weight":1,"tagWeights":null}"#), "scorers[0].tagWeights: must be specified when type is tag"),
        (&entry_doc(r#"{"type":"scaled","weight":1}"#), "scorers[0].innerScorer: must be specified when type is scaled"),
        (&entry_doc(r#"{"type":"kind","weight":1,"innerScorer":{"type":"recency","weight":1}}"#),
         "scorers[0].innerScorer: is only valid when type is scaled"),
        (&entry_doc(r#"{"type":"scaled","weight":1,"innerScorer":{"type":"recency","weight":0}}"#),
         "scorers[0].innerScorer.weight: must be positive and finite (got 0)"),
        (&doc(r#""knapsackBucketSize":10"#), "knapsackBucketSize: can only be specified when slicerType is knapsack or countConstrainedKnapsack"),
        (&doc(r#""slicerType":"knapsack","knapsackBucketSize":0"#), "knapsackBucketSize: must be > 0 (got 0)"),
        (&doc(r#""slicerType":"knapsack","knapsackBucketSize":-5"#), "knapsackBucketSize: must be > 0 (got -5)"),
        (&doc(r#""streamBatchSize":10"#), "streamBatchSize: can only be specified when slicerType is stream"),
        (&doc(r#""slicerType":"stream","streamBatchSize":0"#), "streamBatchSize: must be > 0 (got 0)"),
        (&doc(r#""slicerType":"stream","quotas":[{"kind":"Document","maxPercent":10}]"#), "quotas: cannot be combined with slicerType stream"),
        (&doc(r#""slicerType":3"#), "slicerType: unknown slicer type value 3"),
        (&doc(r#""placerType":2"#), "placerType: unknown placer type value 2"),
        (&doc(r#""overflowStrategy":-1"#), "overflowStrategy: unknown overflow strategy value -1"),
        (&entry_doc(r#"{"type":7,"weight":1}"#), "scorers[0].type: unknown scorer type value 7"),
        (&doc(r#""quotas":[{"kind":"Document","minPercent":1},{"kind":"Memory"}]"#),
         "quotas[1]: at least one of minPercent or maxPercent must be specified"),
        (&doc(r#""quotas":[{"kind":"Document","minPercent":100.5}]"#), "quotas[0].minPercent: must be in [0, 100] (got 100.5)"),
        (&doc(r#""quotas":[{"kind":"Document","maxPercent":-1}]"#), "quotas[0].maxPercent: must be in [0, 100] (got -1)"),
        (&doc(r#""quotas":[{"kind":"Document","minPercent":60,"maxPercent":20}]"#), "quotas[0]: minPercent (60) cannot exceed maxPercent (20)"),
        (&doc(r#""quotas":[{"kind":null,"minPercent":1}]"#), "quotas[0].kind: must not be null"),
        (&doc(r#""quotas":[{"minPercent":1}]"#), "quotas[0].kind: must not be null"),
        (&doc(r#""quotas":[{"kind":"  ","minPercent":1}]"#), "quotas[0].kind: must not be blank"),
    ];
    for (json, expected) in cases {
        assert_eq!(error(json), *expected, "input: {json}");
    }
    assert!(error("{\"scorers\":").starts_with("$: malformed JSON: EOF while parsing"));
    assert!(error("[1,2]").starts_with("$: expected an object, found an array"));
}

#[test]
fn unknown_and_miscased_properties_are_rejected_with_their_path_when_strict() {
    let cases: &[(&str, &str)] = &[
        (&doc(r#""budget":1"#), "budget: unknown property"),
        (
            &doc(r#""SlicerType":"greedy""#),
            "SlicerType: unknown property",
        ),
        (
            &entry_doc(r#"{"type":"recency","weight":1,"Weight":2}"#),
            "scorers[0].Weight: unknown property",
        ),
        (
            &entry_doc(
                r#"{"type":"scaled","weight":1,"innerScorer":{"type":"recency","weight":1,"x y":1}}"#,
            ),
            r#"scorers[0].innerScorer["x y"]: unknown property"#,
        ),
        (
            &doc(r#""quotas":[{"kind":"Document","minPercent":1,"percent":3}]"#),
            "quotas[0].percent: unknown property",
        ),
        (
            &doc(
                r#""slicerType":"countQuota","countQuotas":[],"innerSlicer":{"slicerType":"greedy","streamBatchSize":1}"#,
            ),
            "innerSlicer.streamBatchSize: unknown property",
        ),
        (
            &doc(
                r#""slicerType":"countQuota","countQuotas":[{"kind":"a","requireCount":0,"capCount":1,"cap":2}]"#,
            ),
            "countQuotas[0].cap: unknown property",
        ),
        (
            &entry_doc(
                r#"{"type":"decay","weight":1,"curve":{"type":"window","maxAgeNanos":1,"halfLife":2}}"#,
            ),
            "scorers[0].curve.halfLife: unknown property",
        ),
    ];
    let strict = JsonReadOptions {
        strict: true,
        ..Default::default()
    };
    for (json, expected) in cases {
        match Policy::from_json_with(json, &strict) {
            Err(Error::InvalidPolicy(m)) => assert_eq!(m, *expected, "input: {json}"),
            other => panic!("expected an InvalidPolicy error for {json}, got {other:?}"),
        }
        // Read leniently (the default), the same document loads and the property is
        // reported as ignored.
        let read = Policy::from_json_with(json, &JsonReadOptions::default()).unwrap();
        let path = expected.trim_end_matches(": unknown property");
        assert_eq!(
            read.warnings,
            vec![JsonWarning {
                kind: JsonWarningKind::UnknownProperty,
                path: path.to_string(),
                message: "unknown property; ignored".to_string(),
            }],
            "input: {json}"
        );
    }
}

#[test]
fn type_errors_name_the_path() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"scorers":{}}"#,
            "scorers: expected an array, found an object",
        ),
        (
            r#"{"scorers":[3]}"#,
            "scorers[0]: expected an object, found a number",
        ),
        (
            &entry_doc(r#"{"type":null,"weight":1}"#),
            "scorers[0].type: expected a string, found null",
        ),
        (
            &entry_doc(r#"{"type":"recency"}"#),
            "scorers[0].weight: is required",
        ),
        (
            &entry_doc(r#"{"type":"recency","weight":"1"}"#),
            "scorers[0].weight: expected a number, found a string",
        ),
        (
            &entry_doc(r#"{"type":"kind","weight":1,"kindWeights":[]}"#),
            "scorers[0].kindWeights: expected an object, found an array",
        ),
        (
            &entry_doc(r#"{"type":"kind","weight":1,"kindWeights":{"Document":"high"}}"#),
            "scorers[0].kindWeights.Document: expected a number, found a string",
        ),
        (
            &entry_doc(r#"{"type":"kind","weight":1,"kindWeights":{" ":1}}"#),
            "scorers[0].kindWeights: kind names must not be blank",
        ),
        (
            &entry_doc(r#"{"type":"tag","weight":1,"tagWeights":{"a-b":true}}"#),
            r#"scorers[0].tagWeights["a-b"]: expected a number, found a boolean"#,
        ),
        (
            &doc(r#""deduplicationEnabled":"yes""#),
            "deduplicationEnabled: expected a boolean, found a string",
        ),
        (
            &doc(r#""deduplicationEnabled":null"#),
            "deduplicationEnabled: expected a boolean, found null",
        ),
        (
            &doc(r#""slicerType":null"#),
            "slicerType: expected a string, found null",
        ),
        (
            &doc(r#""slicerType":true"#),
            "slicerType: expected a string, found a boolean",
        ),
        (
            &doc(r#""slicerType":"knapsack","knapsackBucketSize":1.5"#),
            "knapsackBucketSize: must be an integer (got 1.5)",
        ),
        (
            &doc(r#""slicerType":"knapsack","knapsackBucketSize":"5""#),
            "knapsackBucketSize: expected an integer, found a string",
        ),
        (
            &doc(r#""name":5"#),
            "name: expected a string, found a number",
        ),
        (
            &doc(r#""quotas":{}"#),
            "quotas: expected an array, found an object",
        ),
        (
            &doc(r#""quotas":[{"kind":"Document","minPercent":"5"}]"#),
            "quotas[0].minPercent: expected a number, found a string",
        ),
    ];
    for (json, expected) in cases {
        assert_eq!(error(json), *expected, "input: {json}");
    }
}

#[test]
fn extension_errors_name_the_path() {
    let cases: &[(&str, &str)] = &[
        (&entry_doc(r#"{"type":"decay","weight":1}"#), "scorers[0].curve: must be specified when type is decay"),
        (&entry_doc(r#"{"type":"decay","weight":1,"curve":{"halfLifeNanos":1}}"#), "scorers[0].curve.type: is required"),
        (&entry_doc(r#"{"type":"decay","weight":1,"curve":{"type":"linear"}}"#),
         "scorers[0].curve.type: unknown decay curve type \"linear\"; known values: exponential, window, step"),
        (&entry_doc(r#"{"type":"decay","weight":1,"curve":{"type":"exponential"}}"#),
         "scorers[0].curve.halfLifeNanos: must be specified for a exponential curve"),
        (&entry_doc(r#"{"type":"decay","weight":1,"curve":{"type":"window","maxAgeNanos":5,"windows":[]}}"#),
         "scorers[0].curve.windows: is not valid for a window curve"),
        (&entry_doc(r#"{"type":"decay","weight":1,"curve":{"type":"step","windows":[{"maxAgeNanos":5}]}}"#),
         "scorers[0].curve.windows[0].score: is required"),
        (&entry_doc(r#"{"type":"decay","weight":1,"curve":{"type":"window","maxAgeNanos":1e3}}"#),
         "scorers[0].curve.maxAgeNanos: must be an integer (got 1000.0)"),
        (&entry_doc(r#"{"type":"recency","weight":1,"curve":{"type":"window","maxAgeNanos":1}}"#),
         "scorers[0].curve: is only valid when type is decay"),
        (&entry_doc(r#"{"type":"kind","weight":1,"boost":2}"#), "scorers[0].boost: is only valid when type is metadataKey"),
        (&entry_doc(r#"{"type":"metadataKey","weight":1,"key":"k","value":"v"}"#), "scorers[0].boost: must be specified when type is metadataKey"),
        (&entry_doc(r#"{"type":"metadataKey","weight":1,"key":1,"value":"v","boost":1}"#), "scorers[0].key: expected a string, found a number"),
        (&entry_doc(r#"{"type":"composite","weight":1}"#), "scorers[0].children: must be specified when type is composite"),
        (&entry_doc(r#"{"type":"composite","weight":1,"children":[]}"#), "scorers[0].children: must contain at least one entry"),
        (&entry_doc(r#"{"type":"composite","weight":1,"children":[{"type":"tag","weight":1}]}"#),
         "scorers[0].children[0].tagWeights: must be specified when type is tag"),
        (&doc(r#""slicerType":"countQuota""#), "countQuotas: must be specified when slicerType is countQuota"),
        (&doc(r#""countQuotas":[]"#), "countQuotas: can only be specified when slicerType is countQuota or countConstrainedKnapsack"),
        (&doc(r#""scarcity":"throw""#), "scarcity: can only be specified when slicerType is countQuota or countConstrainedKnapsack"),
        (&doc(r#""slicerType":"knapsack","innerSlicer":{}"#), "innerSlicer: can only be specified when slicerType is countQuota"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[],"scarcity":"panic""#),
         "scarcity: unknown scarcity behavior \"panic\"; known values: degrade, throw"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[],"scarcity":0"#), "scarcity: expected a string, found a number"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[{"kind":"a","requireCount":-1,"capCount":1}]"#),
         "countQuotas[0].requireCount: must be a non-negative integer (got -1)"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[{"kind":"a","requireCount":1}]"#), "countQuotas[0].capCount: is required"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[],"innerSlicer":{"slicerType":"stream"}"#),
         "innerSlicer.slicerType: stream is only allowed as the policy's own slicer"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[],"innerSlicer":[]"#), "innerSlicer: expected an object, found an array"),
        (&doc(r#""slicerType":"countConstrainedKnapsack","countQuotas":[],"knapsackTableLimitBytes":0"#),
         "knapsackTableLimitBytes: must be > 0 (got 0)"),
        (&doc(r#""slicerType":"countQuota","countQuotas":[],"innerSlicer":{"slicerType":"knapsack","knapsackBucketSize":0}"#),
         "innerSlicer.knapsackBucketSize: must be > 0 (got 0)"),
    ];
    for (json, expected) in cases {
        assert_eq!(error(json), *expected, "input: {json}");
    }
}

#[test]
fn writing_rejects_invalid_policies_and_non_finite_numbers() {
    let p = Policy::new(vec![]);
    assert_eq!(
        p.to_json(),
        Err(Error::InvalidPolicy(
            "scorers: must contain at least one entry".into()
        ))
    );
    let p = Policy::new(vec![e(
        1.0,
        ScorerSpec::Kind {
            weights: Some(vec![(kind("Document"), f64::NAN)]),
        },
    )]);
    assert_eq!(
        p.to_json(),
        Err(Error::InvalidPolicy(
            "scorers[0].kindWeights.Document: cannot write a non-finite number (NaN) to JSON"
                .into()
        ))
    );
    let p = Policy::new(vec![e(
        1.0,
        ScorerSpec::MetadataKey {
            key: "k".into(),
            value: "v".into(),
            boost: f64::INFINITY,
        },
    )]);
    assert_eq!(
        p.to_json(),
        Err(Error::InvalidPolicy(
            "scorers[0].boost: cannot write a non-finite number (inf) to JSON".into()
        ))
    );
}
