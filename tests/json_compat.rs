//! Reading what the .NET library reads (issue 19): unknown properties ignored with
//! warnings (strict reading rejects them), a scorer entry without `type`, kinds repeated
//! with other letter case, the budget JSON, and host-registered scorer types.
//!
//! Every document here is written from the .NET serializer's rules; the expected texts
//! are written by hand from those rules, never produced by the code under test.

use std::sync::Arc;

use ctxpack::policy::{
    JsonRead, JsonReadOptions, JsonWarning, JsonWarningKind, Policy, ScorerEntry, ScorerRegistry,
    ScorerSpec,
};
use ctxpack::scorer::{PerItemScorer, PriorityScorer, Scorer};
use ctxpack::{ContextBudget, ContextItem, ContextKind, Error, ErrorCode};

const STRICT: JsonReadOptions<'static> = JsonReadOptions {
    strict: true,
    registry: None,
};

fn lenient(json: &str) -> JsonRead<Policy> {
    Policy::from_json_with(json, &JsonReadOptions::default())
        .unwrap_or_else(|e| panic!("{json}: {e}"))
}

fn strict_error(json: &str) -> String {
    match Policy::from_json_with(json, &STRICT) {
        Err(Error::InvalidPolicy(m)) => m,
        other => panic!("expected InvalidPolicy for {json}, got {other:?}"),
    }
}

fn warning(kind: JsonWarningKind, path: &str, message: &str) -> JsonWarning {
    JsonWarning {
        kind,
        path: path.into(),
        message: message.into(),
    }
}

fn unknown(path: &str) -> JsonWarning {
    warning(
        JsonWarningKind::UnknownProperty,
        path,
        "unknown property; ignored",
    )
}

fn kind(s: &str) -> ContextKind {
    ContextKind::new(s).unwrap()
}

// ---- 1. unknown properties -----------------------------------------------------------

#[test]
fn unknown_properties_at_every_level_are_ignored_and_reported_in_document_order() {
    let with_extras = r#"{
      "scorers": [
        { "type": "recency", "weight": 2, "note": "newest first" },
        { "type": "scaled", "weight": 1,
          "innerScorer": { "type": "priority", "weight": 1, "since": "v2" } },
        { "type": "composite", "weight": 1,
          "children": [ { "type": "kind", "weight": 1, "kindWeights": { "Document": 1 }, "x y": [1, {"deep": null}] } ] },
        { "type": "decay", "weight": 1, "curve": { "type": "step", "windows": [
            { "maxAgeNanos": 5, "score": 1, "label": "fresh" } ], "unit": "ns" } }
      ],
      "slicerType": "countQuota",
      "countQuotas": [ { "kind": "ToolOutput", "requireCount": 1, "capCount": 2, "priority": 9 } ],
      "innerSlicer": { "slicerType": "greedy", "streamBatchSize": 4,
                       "quotas": [ { "kind": "Memory", "maxPercent": 40, "minCount": 1 } ] },
      "placerType": "uShaped",
      "unknownProperty": "should be ignored",
      "anotherUnknown": 42,
      "overflowStrategy": "truncate",
      "SlicerType": "knapsack"
    }"#;
    let without = r#"{
      "scorers": [
        { "type": "recency", "weight": 2 },
        { "type": "scaled", "weight": 1, "innerScorer": { "type": "priority", "weight": 1 } },
        { "type": "composite", "weight": 1,
          "children": [ { "type": "kind", "weight": 1, "kindWeights": { "Document": 1 } } ] },
        { "type": "decay", "weight": 1, "curve": { "type": "step", "windows": [
            { "maxAgeNanos": 5, "score": 1 } ] } }
      ],
      "slicerType": "countQuota",
      "countQuotas": [ { "kind": "ToolOutput", "requireCount": 1, "capCount": 2 } ],
      "innerSlicer": { "slicerType": "greedy",
                       "quotas": [ { "kind": "Memory", "maxPercent": 40 } ] },
      "placerType": "uShaped",
      "overflowStrategy": "truncate"
    }"#;
    let read = lenient(with_extras);
    assert_eq!(read.value, Policy::from_json(without).unwrap());
    assert_eq!(
        read.warnings,
        vec![
            // The top level first (its members before the walk goes into them), then
            // each nested object as it is read.
            unknown("unknownProperty"),
            unknown("anotherUnknown"),
            unknown("SlicerType"),
            unknown("scorers[0].note"),
            unknown("scorers[1].innerScorer.since"),
            unknown("scorers[2].children[0][\"x y\"]"),
            unknown("scorers[3].curve.unit"),
            unknown("scorers[3].curve.windows[0].label"),
            unknown("innerSlicer.streamBatchSize"),
            unknown("innerSlicer.quotas[0].minCount"),
            unknown("countQuotas[0].priority"),
        ]
    );
    assert_eq!(
        strict_error(with_extras),
        "unknownProperty: unknown property"
    );
    // The .NET test document, verbatim in substance.
    let dotnet = r#"{"scorers":[{"type":"recency","weight":1.0}],"slicerType":"greedy",
        "placerType":"chronological","deduplicationEnabled":true,"overflowStrategy":"throw",
        "unknownProperty":"should be ignored","anotherUnknown":42}"#;
    let read = lenient(dotnet);
    assert_eq!(
        read.value.scorers,
        vec![ScorerEntry::new(1.0, ScorerSpec::Recency)]
    );
    assert_eq!(read.warnings.len(), 2);
    assert_eq!(
        read.warnings[1].to_string(),
        "anotherUnknown: unknown property; ignored"
    );
    // Policy::from_json is the lenient read.
    assert!(Policy::from_json(dotnet).is_ok());
}

#[test]
fn an_ignored_property_is_not_validated() {
    // Values of unknown properties are never looked at, even when they would be invalid
    // for a property of the same name elsewhere.
    let json = r#"{"scorers":[{"type":"recency","weight":1,"innerScorer2":{"type":7}}],
                   "knapsackBucketsize":-5}"#;
    let read = lenient(json);
    assert_eq!(read.warnings.len(), 2);
    assert_eq!(read.value.slicer, ctxpack::policy::SlicerSpec::Greedy);
}

#[test]
fn known_rules_still_apply_when_reading_leniently() {
    for (json, message) in [
        (
            r#"{"scorers":[{"type":"recency","weight":1,"innerScorer":{"type":"recency","weight":1}}]}"#,
            "scorers[0].innerScorer: is only valid when type is scaled",
        ),
        (
            r#"{"scorers":[{"type":"recency","weight":1}],"knapsackBucketSize":5}"#,
            "knapsackBucketSize: can only be specified when slicerType is knapsack or countConstrainedKnapsack",
        ),
        (
            r#"{"scorers":[{"type":"recency","weight":0}]}"#,
            "scorers[0].weight: must be positive and finite (got 0)",
        ),
        (
            r#"{"scorers":[],"extra":1}"#,
            "scorers: must contain at least one entry",
        ),
    ] {
        match Policy::from_json(json) {
            Err(Error::InvalidPolicy(m)) => assert_eq!(m, message),
            other => panic!("{json}: {other:?}"),
        }
    }
    // An undefined ordinal stays an error (.NET accepts it and fails later, or not at all).
    match Policy::from_json(r#"{"scorers":[{"type":"recency","weight":1}],"overflowStrategy":7}"#) {
        Err(Error::InvalidPolicy(m)) => {
            assert_eq!(m, "overflowStrategy: unknown overflow strategy value 7")
        }
        other => panic!("{other:?}"),
    }
}

// ---- 2. a scorer entry without `type` -------------------------------------------------

#[test]
fn an_entry_without_type_is_recency_as_in_dotnet() {
    let json = r#"{"scorers":[{"weight":2},{"type":"scaled","weight":1,"innerScorer":{"weight":3}},
        {"type":"composite","weight":1,"children":[{"weight":1,"type":"kind"},{"weight":4}]}]}"#;
    let read = lenient(json);
    let recency = |w: f64| ScorerEntry::new(w, ScorerSpec::Recency);
    assert_eq!(
        read.value.scorers,
        vec![
            recency(2.0),
            ScorerEntry::new(
                1.0,
                ScorerSpec::Scaled {
                    inner: Box::new(recency(3.0))
                }
            ),
            ScorerEntry::new(
                1.0,
                ScorerSpec::Composite {
                    children: vec![
                        ScorerEntry::new(1.0, ScorerSpec::Kind { weights: None }),
                        recency(4.0)
                    ]
                }
            ),
        ]
    );
    let missing = |path: &str| {
        warning(
            JsonWarningKind::MissingScorerType,
            path,
            "absent; read as recency, as .NET reads it",
        )
    };
    assert_eq!(
        read.warnings,
        vec![
            missing("scorers[0].type"),
            missing("scorers[1].innerScorer.type"),
            missing("scorers[2].children[1].type"),
        ]
    );
    assert_eq!(strict_error(json), "scorers[0].type: is required");
    // It builds and runs like an explicit recency entry.
    let items = vec![
        ContextItem::builder("old", 10)
            .timestamp(1)
            .build()
            .unwrap(),
        ContextItem::builder("new", 10)
            .timestamp(2)
            .build()
            .unwrap(),
    ];
    let budget = ContextBudget::new(10, 10).unwrap();
    let run = |json: &str| {
        Policy::from_json(json)
            .unwrap()
            .build_pipeline()
            .unwrap()
            .run(&items, &budget)
            .unwrap()
            .indices
    };
    assert_eq!(run(r#"{"scorers":[{"weight":1}]}"#), vec![1]);
    // `null` is not absence for a non-nullable enum, and `weight` stays required.
    assert_eq!(
        Policy::from_json(r#"{"scorers":[{"type":null,"weight":1}]}"#).unwrap_err(),
        Error::InvalidPolicy("scorers[0].type: expected a string, found null".into())
    );
    assert_eq!(
        Policy::from_json(r#"{"scorers":[{}]}"#).unwrap_err(),
        Error::InvalidPolicy("scorers[0].weight: is required".into())
    );
}

// ---- 3. kinds repeated with other letter case ------------------------------------------

#[test]
fn kind_weights_repeated_in_other_case_keep_the_last_value_under_the_first_spelling() {
    let json = r#"{"scorers":[{"type":"kind","weight":1,
        "kindWeights":{"Message":1,"Document":0.5,"message":2,"MESSAGE":3}}]}"#;
    let read = lenient(json);
    assert_eq!(
        read.value.scorers[0].scorer,
        ScorerSpec::Kind {
            weights: Some(vec![(kind("Message"), 3.0), (kind("Document"), 0.5)])
        }
    );
    let repeated = |path: &str| {
        warning(
            JsonWarningKind::RepeatedKind,
            path,
            "repeats the kind \"Message\" (kinds compare ASCII case-insensitively); the last value is kept",
        )
    };
    assert_eq!(
        read.warnings,
        vec![
            repeated("scorers[0].kindWeights.message"),
            repeated("scorers[0].kindWeights.MESSAGE"),
        ]
    );
    // The policy builds (before, the duplicate failed the KindScorer) and writes back
    // what .NET writes for the dictionary it read.
    read.value.build_pipeline().unwrap();
    assert_eq!(
        read.value.to_json().unwrap(),
        r#"{"scorers":[{"type":"kind","weight":1,"kindWeights":{"Message":3,"Document":0.5}}],"slicerType":"greedy","placerType":"chronological","deduplicationEnabled":true,"overflowStrategy":"throw"}"#
    );
    assert_eq!(
        strict_error(json),
        "scorers[0].kindWeights.message: repeats the kind \"Message\" (kinds compare ASCII case-insensitively)"
    );
    // tagWeights keys are case-sensitive strings: no repetition there.
    let tags = lenient(r#"{"scorers":[{"type":"tag","weight":1,"tagWeights":{"a":1,"A":2}}]}"#);
    assert!(tags.warnings.is_empty());
    assert_eq!(
        tags.value.scorers[0].scorer,
        ScorerSpec::Tag {
            weights: vec![("a".into(), 1.0), ("A".into(), 2.0)]
        }
    );
}

// ---- 4. budgets ------------------------------------------------------------------------

/// The three budgets of the .NET round-trip tests, with the text .NET writes for each
/// (compact, and `WriteIndented`).
const DOTNET_BUDGETS: [(&str, &str); 3] = [
    (
        r#"{"maxTokens":8000,"targetTokens":6000,"outputReserve":1000,"reservedSlots":{"Message":100,"SystemPrompt":200},"estimationSafetyMarginPercent":10}"#,
        "{\n  \"maxTokens\": 8000,\n  \"targetTokens\": 6000,\n  \"outputReserve\": 1000,\n  \"reservedSlots\": {\n    \"Message\": 100,\n    \"SystemPrompt\": 200\n  },\n  \"estimationSafetyMarginPercent\": 10\n}",
    ),
    (
        r#"{"maxTokens":4000,"targetTokens":3000,"outputReserve":0,"reservedSlots":{},"estimationSafetyMarginPercent":0}"#,
        "{\n  \"maxTokens\": 4000,\n  \"targetTokens\": 3000,\n  \"outputReserve\": 0,\n  \"reservedSlots\": {},\n  \"estimationSafetyMarginPercent\": 0\n}",
    ),
    (
        r#"{"maxTokens":4096,"targetTokens":4096,"outputReserve":0,"reservedSlots":{},"estimationSafetyMarginPercent":0}"#,
        "{\n  \"maxTokens\": 4096,\n  \"targetTokens\": 4096,\n  \"outputReserve\": 0,\n  \"reservedSlots\": {},\n  \"estimationSafetyMarginPercent\": 0\n}",
    ),
];

#[test]
fn budgets_round_trip_byte_for_byte_in_the_dotnet_form() {
    let built = [
        ContextBudget::with_all(
            8000,
            6000,
            1000,
            vec![(kind("Message"), 100), (kind("SystemPrompt"), 200)],
            10.0,
        )
        .unwrap(),
        ContextBudget::with_all(4000, 3000, 0, vec![], 0.0).unwrap(),
        ContextBudget::new(4096, 4096).unwrap(),
    ];
    for (budget, (compact, indented)) in built.iter().zip(DOTNET_BUDGETS) {
        assert_eq!(budget.to_json(), compact);
        assert_eq!(budget.to_json_pretty(), indented);
        for text in [compact, indented] {
            let read = ContextBudget::from_json_with(text, &STRICT).unwrap();
            assert_eq!(&read.value, budget);
            assert!(read.warnings.is_empty());
            assert_eq!(read.value.to_json(), compact);
            assert_eq!(read.value.to_json_pretty(), indented);
        }
    }
    // Margins and kinds as .NET writes them: shortest round-trip digits, exponent below
    // 1e-4; non-ASCII and HTML-sensitive characters as \uXXXX.
    for (margin, text) in [(12.5, "12.5"), (0.00001, "1E-05"), (99.99, "99.99")] {
        let b = ContextBudget::with_all(10, 10, 0, vec![], margin).unwrap();
        let json = b.to_json();
        assert!(
            json.ends_with(&format!("\"estimationSafetyMarginPercent\":{text}}}")),
            "{json}"
        );
        assert_eq!(ContextBudget::from_json(&json).unwrap(), b);
    }
    let b = ContextBudget::with_all(10, 10, 0, vec![(kind("Café<1>"), 2)], 0.0).unwrap();
    assert_eq!(
        b.to_json(),
        r#"{"maxTokens":10,"targetTokens":10,"outputReserve":0,"reservedSlots":{"Caf\u00E9\u003C1\u003E":2},"estimationSafetyMarginPercent":0}"#
    );
    assert_eq!(ContextBudget::from_json(&b.to_json()).unwrap(), b);
}

#[test]
fn budgets_read_like_dotnet() {
    // Optional members default; null reservedSlots is absent; member order is free.
    let b = ContextBudget::from_json(r#"{"reservedSlots":null,"targetTokens":50,"maxTokens":100}"#)
        .unwrap();
    assert_eq!(b, ContextBudget::new(100, 50).unwrap());
    // Numbers above the 32-bit range of .NET's int are accepted.
    let big =
        ContextBudget::from_json(r#"{"maxTokens":5000000000,"targetTokens":4000000000}"#).unwrap();
    assert_eq!(
        (big.max_tokens(), big.target_tokens()),
        (5_000_000_000, 4_000_000_000)
    );
    // Repeated reserved-slot kinds in other case: last value, first spelling, warning.
    let read = ContextBudget::from_json_with(
        r#"{"maxTokens":100,"targetTokens":90,"reservedSlots":{"Memory":5,"Tool":1,"memory":7},"extra":true}"#,
        &JsonReadOptions::default(),
    )
    .unwrap();
    assert_eq!(
        read.value.reserved_slots(),
        &[(kind("Memory"), 7), (kind("Tool"), 1)]
    );
    assert_eq!(read.value.reserved_slots()[0].0.as_str(), "Memory");
    assert_eq!(
        read.warnings,
        vec![
            unknown("extra"),
            warning(
                JsonWarningKind::RepeatedKind,
                "reservedSlots.memory",
                "repeats the kind \"Memory\" (kinds compare ASCII case-insensitively); the last value is kept",
            ),
        ]
    );
    // Absent maxTokens/targetTokens are 0 as in .NET, with warnings; strict rejects them.
    let read =
        ContextBudget::from_json_with(r#"{"maxTokens":100}"#, &JsonReadOptions::default()).unwrap();
    assert_eq!(read.value, ContextBudget::new(100, 0).unwrap());
    assert_eq!(
        read.warnings,
        vec![warning(
            JsonWarningKind::MissingBudgetField,
            "targetTokens",
            "absent; read as 0, as .NET reads it"
        )]
    );
    assert_eq!(
        ContextBudget::from_json("{}").unwrap(),
        ContextBudget::new(0, 0).unwrap()
    );
    assert_eq!(
        ContextBudget::from_json_with(r#"{"targetTokens":1}"#, &STRICT).unwrap_err(),
        Error::InvalidBudget("maxTokens: is required".into())
    );
}

#[test]
fn budget_errors_name_the_json_field_and_are_invalid_budget() {
    let cases: &[(&str, &str)] = &[
        // The .NET validation test: TargetTokens cannot exceed MaxTokens.
        (
            r#"{"maxTokens":1000,"targetTokens":2000}"#,
            "targetTokens: 2000 cannot exceed maxTokens (1000)",
        ),
        (
            r#"{"maxTokens":-1,"targetTokens":0}"#,
            "maxTokens: must be >= 0 (got -1)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":-2}"#,
            "targetTokens: must be >= 0 (got -2)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"outputReserve":-3}"#,
            "outputReserve: must be >= 0 (got -3)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"outputReserve":11}"#,
            "outputReserve: 11 cannot exceed maxTokens (10)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"estimationSafetyMarginPercent":100.5}"#,
            "estimationSafetyMarginPercent: must be in [0, 100] (got 100.5)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"estimationSafetyMarginPercent":-1}"#,
            "estimationSafetyMarginPercent: must be in [0, 100] (got -1)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"reservedSlots":{"Memory":1,"Tool use":-4}}"#,
            r#"reservedSlots["Tool use"]: must be >= 0 (got -4)"#,
        ),
        // ctxpack's own slot rules (decision D20 in docs/decisions.md), as for a budget
        // built from its fields.
        (
            r#"{"maxTokens":100,"targetTokens":40,"reservedSlots":{"Memory":30,"Tool":20}}"#,
            "reservedSlots: their total (50) cannot exceed targetTokens (40)",
        ),
        (
            r#"{"maxTokens":100,"targetTokens":90,"outputReserve":60,"reservedSlots":{"Memory":30,"Tool":20}}"#,
            "reservedSlots: their total (50) plus outputReserve (60) cannot exceed maxTokens (100)",
        ),
        (
            r#"{"maxTokens":50,"targetTokens":50,"reservedSlots":{"a":9223372036854775807,"b":9223372036854775807}}"#,
            "reservedSlots: their total (18446744073709551614) cannot exceed targetTokens (50)",
        ),
        // A budget missing its sizes reads them as 0 (leniently), so any slot is too much.
        (
            r#"{"reservedSlots":{"Memory":1}}"#,
            "reservedSlots: their total (1) cannot exceed targetTokens (0)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"reservedSlots":{" ":1}}"#,
            "reservedSlots: kind names must not be blank",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"reservedSlots":{"Memory":1.5}}"#,
            "reservedSlots.Memory: must be an integer (got 1.5)",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"reservedSlots":[]}"#,
            "reservedSlots: expected an object, found an array",
        ),
        (
            r#"{"maxTokens":"10","targetTokens":5}"#,
            "maxTokens: expected an integer, found a string",
        ),
        (
            r#"{"maxTokens":10.0,"targetTokens":5}"#,
            "maxTokens: must be an integer (got 10.0)",
        ),
        (
            r#"{"maxTokens":null,"targetTokens":5}"#,
            "maxTokens: expected an integer, found null",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"outputReserve":null}"#,
            "outputReserve: expected an integer, found null",
        ),
        (
            r#"{"maxTokens":10,"targetTokens":5,"estimationSafetyMarginPercent":"5"}"#,
            "estimationSafetyMarginPercent: expected a number, found a string",
        ),
        ("", "$: JSON input cannot be empty"),
        (
            "null",
            "$: budget cannot be null (received JSON literal 'null')",
        ),
        ("[]", "$: expected an object, found an array"),
    ];
    for (json, expected) in cases {
        let err = ContextBudget::from_json(json).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidBudget, "{json}");
        assert_eq!(err, Error::InvalidBudget(expected.to_string()), "{json}");
    }
    // Slots that fill the room exactly are accepted.
    let exact = ContextBudget::from_json(
        r#"{"maxTokens":100,"targetTokens":50,"outputReserve":50,"reservedSlots":{"Memory":30,"Tool":20}}"#,
    )
    .unwrap();
    assert_eq!(exact.reserved_slots().len(), 2);
    let err = ContextBudget::from_json(r#"{"maxTokens":1,"#).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidBudget);
    assert!(err
        .to_string()
        .starts_with("invalid budget: $: malformed JSON: "));
}

// ---- 5. registered scorers -------------------------------------------------------------

/// Three items of 10 tokens: priorities 1, 5, 3; the last is the newest; content lengths
/// 1, 2, 3.
fn three_items() -> Vec<ContextItem> {
    [("a", 1, 1), ("bb", 5, 2), ("ccc", 3, 3)]
        .into_iter()
        .map(|(content, priority, ts)| {
            ContextItem::builder(content, 10)
                .priority(priority)
                .timestamp(ts)
                .build()
                .unwrap()
        })
        .collect()
}

fn selected(policy: &Policy, items: &[ContextItem], target: i64) -> Vec<usize> {
    let budget = ContextBudget::new(100, target).unwrap();
    let pipeline = policy.build_pipeline().unwrap();
    pipeline.run(items, &budget).unwrap().indices
}

#[test]
fn registered_scorers_are_named_by_policies_and_run() {
    let mut registry = ScorerRegistry::new();
    let urgency: Arc<dyn Scorer> = Arc::new(PriorityScorer::new());
    // A host scorer: longer content scores higher.
    let length: Arc<dyn Scorer> = Arc::new(PerItemScorer::new(|i, items: &[&ContextItem]| {
        Ok(items[i].content().len() as f64 / 10.0)
    }));
    registry.register("urgency", urgency.clone()).unwrap();
    registry.register("contentLength", length.clone()).unwrap();
    let options = JsonReadOptions {
        registry: Some(&registry),
        ..Default::default()
    };
    let items = three_items();

    // Alone, each registered scorer decides which single item fits.
    let read = |json: &str| Policy::from_json_with(json, &options).unwrap();
    let p = read(r#"{"scorers":[{"type":"urgency","weight":1}]}"#);
    assert!(p.warnings.is_empty());
    match &p.value.scorers[0].scorer {
        ScorerSpec::Registered(r) => {
            assert_eq!(r.name(), "urgency");
            assert!(Arc::ptr_eq(r.scorer(), &urgency));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(selected(&p.value, &items, 10), vec![1]); // priority 5
    let p = read(r#"{"scorers":[{"type":"CONTENTLENGTH","weight":1}]}"#);
    assert_eq!(selected(&p.value, &items, 10), vec![2]); // the longest
                                                         // Inside a scaled and a composite entry too, with the recency built-in alongside.
    let p = read(
        r#"{"scorers":[{"type":"scaled","weight":1,"innerScorer":{"type":"urgency","weight":1}},
            {"type":"composite","weight":1,"children":[{"type":"contentLength","weight":1}]}]}"#,
    );
    p.value.build_pipeline().unwrap();
    // It writes back under the registry's spelling, as a plain entry .NET can read
    // when it has the same registration.
    let p = read(
        r#"{"scorers":[{"type":"contentlength","weight":2.5},{"type":"recency","weight":1}]}"#,
    );
    assert_eq!(
        p.value.to_json().unwrap(),
        r#"{"scorers":[{"type":"contentLength","weight":2.5},{"type":"recency","weight":1}],"slicerType":"greedy","placerType":"chronological","deduplicationEnabled":true,"overflowStrategy":"throw"}"#
    );
    assert_eq!(
        Policy::from_json_with(&p.value.to_json().unwrap(), &options)
            .unwrap()
            .value,
        p.value
    );
    // Properties of built-in types are rejected on a registered type; unknown ones are
    // ignored with a warning like anywhere else.
    match Policy::from_json_with(
        r#"{"scorers":[{"type":"urgency","weight":1,"innerScorer":{"type":"recency","weight":1}}]}"#,
        &options,
    ) {
        Err(Error::InvalidPolicy(m)) => {
            assert_eq!(
                m,
                "scorers[0].innerScorer: is only valid when type is scaled"
            )
        }
        other => panic!("{other:?}"),
    }
    let p = read(r#"{"scorers":[{"type":"urgency","weight":1,"threshold":0.5}]}"#);
    assert_eq!(p.warnings, vec![unknown("scorers[0].threshold")]);
}

#[test]
fn the_unknown_type_message_lists_built_in_and_registered_names() {
    let json = r#"{"scorers":[{"type":"unknownOther","weight":1}]}"#;
    let built_ins = "recency, priority, kind, tag, frequency, reflexive, scaled, composite, decay, metadataTrust, metadataKey";
    assert_eq!(
        Policy::from_json(json).unwrap_err(),
        Error::InvalidPolicy(format!(
            "scorers[0].type: unknown scorer type \"unknownOther\"; known values: {built_ins}"
        ))
    );
    let mut registry = ScorerRegistry::new();
    let s: Arc<dyn Scorer> = Arc::new(PriorityScorer::new());
    registry.register("semanticSimilarity", s.clone()).unwrap();
    registry.register("freshness", s).unwrap();
    let options = JsonReadOptions {
        registry: Some(&registry),
        strict: true,
    };
    assert_eq!(
        Policy::from_json_with(json, &options).unwrap_err(),
        Error::InvalidPolicy(format!(
            "scorers[0].type: unknown scorer type \"unknownOther\"; known values: {built_ins}; registered: semanticSimilarity, freshness"
        ))
    );
    // A registered name is unknown without the registry.
    assert!(Policy::from_json(r#"{"scorers":[{"type":"freshness","weight":1}]}"#).is_err());
    // Built-in names cannot be registered.
    let err = registry
        .register("Decay", Arc::new(PriorityScorer::new()))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

// ---- writing as .NET writes ---------------------------------------------------------------

#[test]
fn policies_write_strings_and_numbers_as_dotnet() {
    let mut policy = Policy::new(vec![
        ScorerEntry::new(0.00001, ScorerSpec::Recency),
        ScorerEntry::new(
            1e15,
            ScorerSpec::Tag {
                weights: vec![("naïve".into(), 0.5)],
            },
        ),
    ]);
    policy.name = Some("Ops' <triage> & more".into());
    assert_eq!(
        policy.to_json().unwrap(),
        r#"{"scorers":[{"type":"recency","weight":1E-05},{"type":"tag","weight":1E+15,"tagWeights":{"na\u00EFve":0.5}}],"slicerType":"greedy","placerType":"chronological","deduplicationEnabled":true,"overflowStrategy":"throw","name":"Ops\u0027 \u003Ctriage\u003E \u0026 more"}"#
    );
    assert_eq!(
        Policy::from_json(&policy.to_json().unwrap()).unwrap(),
        policy
    );
}
