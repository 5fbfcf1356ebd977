// The C test of the policy and analytics ABI (issue 4): presets, policy JSON in and out,
// the dry run, budget simulation, sensitivity comparisons and the report helpers, with
// every error path. Built and run by tests/c/run.sh (plain, under ASan+UBSan, and under
// valgrind).
#include <stdint.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// ---------------------------------------------------------------- helpers

// A pipeline from a policy JSON literal (NULL on failure).
static ctxpack_pipeline *policy_pipeline(const char *json) {
    ctxpack_pipeline *p = NULL;
    ctxpack_pipeline_new_policy_json(ctxpack_str_from_cstr(json), &p, NULL);
    return p;
}

// The policy JSON of `p` compared with `expected`; returns 1 when equal.
static int policy_json_is(const ctxpack_pipeline *p, bool pretty, const char *expected) {
    ctxpack_string *s = NULL;
    ctxpack_str v = {NULL, 0};
    int ok = ctxpack_pipeline_policy_json(p, pretty, &s, NULL) == CTXPACK_OK &&
             ctxpack_string_value(s, &v) == CTXPACK_OK && tf_str_eq(v, expected) &&
             v.ptr[v.len] == '\0';
    if (!ok) {
        printf("  policy JSON: \"%.*s\"\n", (int)v.len, v.ptr ? v.ptr : "");
    }
    ctxpack_string_free(s);
    return ok;
}

static int positions_are(const size_t *got, size_t n, const size_t *expected, size_t m) {
    if (n != m) return 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] != expected[i]) return 0;
    }
    return 1;
}

// Whether the result selected exactly the positions `expected` (ascending), in any order.
static int result_selects(const ctxpack_result *r, const size_t *expected, size_t n) {
    const size_t *idx = NULL;
    size_t len = 0;
    if (ctxpack_result_indices(r, &idx, &len) != CTXPACK_OK || len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        size_t below = 0;
        for (size_t j = 0; j < n; j++) below += idx[j] < idx[i];
        if (expected[below] != idx[i]) return 0;
    }
    return 1;
}

// A custom batch scorer: every item scores its token count.
static int score_tokens(void *user_data, const ctxpack_item_view *items, size_t count,
                        double *out_scores, ctxpack_callback_error *error) {
    (void)user_data;
    (void)error;
    for (size_t i = 0; i < count; i++) out_scores[i] = (double)items[i].tokens;
    return 0;
}

// A custom slicer: selects nothing.
static int slice_none(void *user_data, const ctxpack_item_view *items, const double *scores,
                      size_t count, int64_t target_tokens, int64_t max_tokens,
                      size_t *out_positions, size_t *out_count, ctxpack_callback_error *error) {
    (void)user_data;
    (void)items;
    (void)scores;
    (void)count;
    (void)target_tokens;
    (void)max_tokens;
    (void)out_positions;
    (void)error;
    *out_count = 0;
    return 0;
}

// A custom placer: keeps the given order.
static int place_identity(void *user_data, const ctxpack_item_view *items, const double *scores,
                          size_t count, size_t *out_order, ctxpack_callback_error *error) {
    (void)user_data;
    (void)items;
    (void)scores;
    (void)error;
    for (size_t i = 0; i < count; i++) out_order[i] = i;
    return 0;
}

#define RECENCY "{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}]}"
#define PRIORITY "{\"scorers\": [{\"type\": \"priority\", \"weight\": 1}]}"
#define QUOTA                                                                                 \
    "{\"scorers\": [{\"type\": \"priority\", \"weight\": 1}], \"quotas\": ["                  \
    "{\"kind\": \"Document\", \"maxPercent\": 50}, "                                          \
    "{\"kind\": \"Message\", \"minPercent\": 10, \"maxPercent\": 80}]}"
#define COUNT_QUOTA                                                                           \
    "{\"scorers\": [{\"type\": \"priority\", \"weight\": 1}], \"slicerType\": \"countQuota\", " \
    "\"countQuotas\": [{\"kind\": \"ToolOutput\", \"requireCount\": 1, \"capCount\": 2}]}"

// Four items of 10 tokens, a day apart: recency ranks 3 > 2 > 1 > 0, priority the other
// way round.
static ctxpack_items *four_days(void) {
    ctxpack_item_desc d[4] = {desc_at("a", 10, 1), desc_at("b", 10, 2), desc_at("c", 10, 3),
                              desc_at("d", 10, 4)};
    for (int i = 0; i < 4; i++) {
        d[i].priority = 4 - i;
        d[i].has_priority = true;
    }
    return items_of(d, 4);
}

// Items for the report helpers: priorities 5, 4, 3, 1; kinds Document, Message, message,
// ToolOutput; item 1 has no timestamp.
static ctxpack_items *mixed_items(void) {
    ctxpack_item_desc d[4] = {desc_at("p0", 10, 1), desc("p1", 10), desc_at("p2", 10, 3),
                              desc_at("p3", 10, 4)};
    const char *kinds[4] = {"Document", "Message", "message", "ToolOutput"};
    const int64_t prio[4] = {5, 4, 3, 1};
    for (int i = 0; i < 4; i++) {
        d[i].kind = ctxpack_str_from_cstr(kinds[i]);
        d[i].priority = prio[i];
        d[i].has_priority = true;
    }
    return items_of(d, 4);
}

static ctxpack_kind_quota_utilization quota_entry_at(const ctxpack_quota_utilization *q, size_t i,
                                                     ctxpack_status *st) {
    ctxpack_kind_quota_utilization e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    *st = ctxpack_quota_utilization_entry(q, i, &e, NULL);
    return e;
}

// ---------------------------------------------------------------- presets

TEST(preset_names) {
    static const char *const expected[7] = {"Chat",    "CodeReview",  "Rag",      "DocumentQa",
                                            "ToolUse", "LongRunning", "Debugging"};
    REQUIRE(ctxpack_preset_count() == 7);
    for (size_t i = 0; i < ctxpack_preset_count(); i++) {
        ctxpack_str name = {NULL, 0};
        CHECK_OK(ctxpack_preset_name(i, &name));
        CHECK_STR(name, expected[i]);
        // Every listed name builds its pipeline.
        ctxpack_pipeline *p = NULL;
        CHECK_OK(ctxpack_pipeline_new_preset(name, &p, NULL));
        CHECK(p != NULL);
        ctxpack_pipeline_free(p);
    }
    ctxpack_str name = {NULL, 0};
    CHECK_STATUS(ctxpack_preset_name(7, &name), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_preset_name(SIZE_MAX, &name), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_preset_name(0, NULL), CTXPACK_NULL_ARGUMENT);
}

TEST(preset_pipelines) {
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    // Spellings: any ASCII case, with or without separators.
    const char *spellings[5] = {"chat", "code-review", "document_qa", "TOOL USE", "LongRunning"};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(ctxpack_pipeline_new_preset(ctxpack_str_from_cstr(spellings[i]), &p, &err));
        CHECK(p != NULL && err == NULL);
        ctxpack_pipeline_free(p);
    }
    // The preset's pipeline is its policy: Chat is recency 3 + kind 1, greedy,
    // chronological (a pipeline keeps no name or description).
    REQUIRE_OK(ctxpack_pipeline_new_preset(S("Chat"), &p, NULL));
    CHECK(policy_json_is(p, false,
                         "{\"scorers\":[{\"type\":\"recency\",\"weight\":3},{\"type\":\"kind\","
                         "\"weight\":1}],\"slicerType\":\"greedy\",\"placerType\":"
                         "\"chronological\",\"deduplicationEnabled\":true,\"overflowStrategy\":"
                         "\"throw\"}"));
    ctxpack_pipeline_free(p);
    // DocumentQa: knapsack (bucket size 100, written explicitly), U-shaped.
    REQUIRE_OK(ctxpack_pipeline_new_preset(S("DocumentQa"), &p, NULL));
    ctxpack_string *s = NULL;
    ctxpack_str v;
    REQUIRE_OK(ctxpack_pipeline_policy_json(p, false, &s, NULL));
    REQUIRE_OK(ctxpack_string_value(s, &v));
    CHECK(tf_str_contains(v, "\"slicerType\":\"knapsack\""));
    CHECK(tf_str_contains(v, "\"placerType\":\"uShaped\""));
    CHECK(tf_str_contains(v, "\"knapsackBucketSize\":100"));
    ctxpack_string_free(s);
    ctxpack_pipeline_free(p);

    // Errors.
    CHECK_STATUS(ctxpack_pipeline_new_preset(S("Chatty"), &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "unknown preset 'Chatty'; known presets: Chat, CodeReview, Rag, DocumentQa, "
                "ToolUse, LongRunning, Debugging");
    CHECK(p == NULL);
    CHECK_STATUS(ctxpack_pipeline_new_preset(S(""), &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "unknown preset ''");
    ctxpack_str bad = {"Ch\xff", 3};
    CHECK_STATUS(ctxpack_pipeline_new_preset(bad, &p, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "name is not valid UTF-8 (invalid byte at offset 2)");
    ctxpack_str null_long = {NULL, 4};
    CHECK_STATUS(ctxpack_pipeline_new_preset(null_long, &p, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "name is NULL but its length is 4");
    CHECK_STATUS(ctxpack_pipeline_new_preset(S("Chat"), NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");
}

// ---------------------------------------------------------------- policy JSON

TEST(policy_json_builds_pipelines) {
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    // The example of docs/policy-json.md, extensions included.
    const char *full =
        "{\"scorers\": [{\"type\": \"composite\", \"weight\": 2, \"children\": ["
        "{\"type\": \"recency\", \"weight\": 3}, {\"type\": \"kind\", \"weight\": 1}]},"
        "{\"type\": \"decay\", \"weight\": 1, \"curve\": {\"type\": \"exponential\", "
        "\"halfLifeNanos\": 3600000000000}, \"nullTimestampScore\": 0.5},"
        "{\"type\": \"metadataKey\", \"weight\": 0.5, \"key\": \"source\", \"value\": "
        "\"runbook\", \"boost\": 2}],"
        "\"slicerType\": \"countConstrainedKnapsack\", \"placerType\": \"uShaped\","
        "\"deduplicationEnabled\": true, \"overflowStrategy\": \"truncate\","
        "\"knapsackBucketSize\": 20, \"countQuotas\": [{\"kind\": \"ToolOutput\", "
        "\"requireCount\": 1, \"capCount\": 2}], \"scarcity\": \"degrade\", \"name\": \"OnCall\"}";
    CHECK_OK(ctxpack_pipeline_new_policy_json(ctxpack_str_from_cstr(full), &p, &err));
    CHECK(p != NULL && err == NULL);
    // It runs like any pipeline.
    ctxpack_items *items = four_days();
    ctxpack_budget *b = budget_of(100, 100);
    REQUIRE(items && b && p);
    ctxpack_result *r = NULL;
    CHECK_OK(ctxpack_pipeline_run(p, items, b, NULL, &r, NULL));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);

    // A JSON pipeline equals the hand-built one: recency, greedy, chronological.
    p = policy_pipeline(RECENCY);
    REQUIRE(p != NULL);
    ctxpack_budget *b20 = budget_of(20, 20);
    REQUIRE(b20 != NULL);
    static const size_t newest_two[2] = {2, 3};
    CHECK_OK(ctxpack_pipeline_run(p, items, b20, NULL, &r, NULL));
    CHECK(indices_are(r, newest_two, 2));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b20);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(policy_json_errors) {
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    // Structural problems: CTXPACK_INVALID_POLICY; after the kind ("invalid policy: ") the
    // message starts with the JSON path.
    static const struct {
        const char *json;
        const char *message;
    } invalid[] = {
        {"", "$: JSON input cannot be empty"},
        {"null", "$: policy cannot be null (received JSON literal 'null')"},
        {"{\"scorers\": [", "$: malformed JSON"},
        {"[]", "$: expected an object, found an array"},
        {"{}", "scorers: is required"},
        {"{\"scorers\": []}", "scorers: must contain at least one entry"},
        {"{\"scorers\": [{\"type\": \"recency\", \"weight\": 0}]}",
         "scorers[0].weight: must be positive and finite (got 0)"},
        // Read leniently, a misspelt property is ignored: the weight is then missing.
        {"{\"scorers\": [{\"type\": \"recency\", \"wieght\": 1}]}",
         "scorers[0].weight: is required"},
        {"{\"scorers\": [{\"type\": \"foo\", \"weight\": 1}]}",
         "scorers[0].type: unknown scorer type \"foo\""},
        {"{\"scorers\": [{\"type\": \"tag\", \"weight\": 1}]}",
         "scorers[0].tagWeights: must be specified when type is tag"},
        {"{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}], \"placerType\": \"middle\"}",
         "placerType: unknown placer type \"middle\"; known values: chronological, uShaped"},
        {"{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}], \"knapsackBucketSize\": 5}",
         "knapsackBucketSize: can only be specified when slicerType is knapsack"},
        {"{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}], \"quotas\": [{\"kind\": "
         "\"A\", \"minPercent\": 60, \"maxPercent\": 20}]}",
         "quotas[0]: minPercent (60) cannot exceed maxPercent (20)"},
        {"{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}], \"deduplicationEnabled\": "
         "\"yes\"}",
         "deduplicationEnabled: expected a boolean, found a string"},
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        ctxpack_str json = ctxpack_str_from_cstr(invalid[i].json);
        CHECK_STATUS(ctxpack_pipeline_new_policy_json(json, &p, &err), CTXPACK_INVALID_POLICY);
        ctxpack_str msg = ctxpack_error_message(err);
        static const char prefix[] = "invalid policy: ";
        size_t k = sizeof prefix - 1, n = strlen(invalid[i].message);
        if (!(msg.len >= k + n && memcmp(msg.ptr, prefix, k) == 0 &&
              memcmp(msg.ptr + k, invalid[i].message, n) == 0)) {
            printf("  message \"%.*s\" does not start with \"%s%s\"\n", (int)msg.len, msg.ptr,
                   prefix, invalid[i].message);
            CHECK(0);
        }
        CHECK_ERROR(err, CTXPACK_INVALID_POLICY, "");
        CHECK(p == NULL);
    }
    // {NULL, 0} is the empty string.
    ctxpack_str empty = {NULL, 0};
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(empty, &p, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY, "$: JSON input cannot be empty");

    // Values the components check when built keep the component's status.
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(
                     S("{\"scorers\": [{\"type\": \"kind\", \"weight\": 1, \"kindWeights\": "
                       "{\"Message\": -1}}]}"),
                     &p, &err),
                 CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(
                     S("{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}], \"quotas\": ["
                       "{\"kind\": \"A\", \"minPercent\": 60}, {\"kind\": \"B\", "
                       "\"minPercent\": 60}]}"),
                     &p, &err),
                 CTXPACK_SLICER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SLICER_CONFIG, "");
    CHECK(p == NULL);

    // Argument errors.
    ctxpack_str bad = {"{\"\xc3", 3};
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(bad, &p, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "json is not valid UTF-8");
    ctxpack_str null_long = {NULL, 2};
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(null_long, &p, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "json is NULL");
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(S(RECENCY), NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");
    // Without out_error only the status is reported.
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(S("{}"), &p, NULL), CTXPACK_INVALID_POLICY);
    CHECK(p == NULL);
}

TEST(policy_json_written_back) {
    ctxpack_error *err = NULL;
    // A hand-built pipeline of built-in components has a policy: one entry of weight 1.
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *p = NULL;
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p, NULL));
    const char *compact = "{\"scorers\":[{\"type\":\"recency\",\"weight\":1}],\"slicerType\":"
                          "\"greedy\",\"placerType\":\"chronological\",\"deduplicationEnabled\":"
                          "true,\"overflowStrategy\":\"throw\"}";
    CHECK(policy_json_is(p, false, compact));
    CHECK(policy_json_is(p, true,
                         "{\n  \"scorers\": [\n    {\n      \"type\": \"recency\",\n      "
                         "\"weight\": 1\n    }\n  ],\n  \"slicerType\": \"greedy\",\n  "
                         "\"placerType\": \"chronological\",\n  \"deduplicationEnabled\": true,\n"
                         "  \"overflowStrategy\": \"throw\"\n}"));
    ctxpack_pipeline_free(p);

    // Round trip: every preset's JSON builds a pipeline that writes the same JSON.
    for (size_t i = 0; i < ctxpack_preset_count(); i++) {
        ctxpack_str name;
        ctxpack_pipeline *a = NULL, *b = NULL;
        ctxpack_string *ja = NULL;
        ctxpack_str va;
        REQUIRE_OK(ctxpack_preset_name(i, &name));
        REQUIRE_OK(ctxpack_pipeline_new_preset(name, &a, NULL));
        REQUIRE_OK(ctxpack_pipeline_policy_json(a, i % 2 == 1, &ja, &err));
        CHECK(err == NULL);
        REQUIRE_OK(ctxpack_string_value(ja, &va));
        REQUIRE_OK(ctxpack_pipeline_new_policy_json(va, &b, NULL));
        // va.ptr is NUL-terminated, so it is also a C string.
        CHECK(policy_json_is(b, i % 2 == 1, va.ptr));
        ctxpack_string_free(ja);
        ctxpack_pipeline_free(a);
        ctxpack_pipeline_free(b);
    }

    // Custom components cannot be written: CTXPACK_INVALID_POLICY naming the component.
    ctxpack_scorer *custom = NULL;
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(score_tokens, NULL, NULL, &custom, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(custom, sl, pl, NULL, &p, NULL));
    ctxpack_string *s = (ctxpack_string *)&s;  // overwritten with NULL
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, false, &s, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "scorer: custom components cannot be expressed as a policy");
    CHECK(s == NULL);
    ctxpack_pipeline_free(p);
    ctxpack_placer *custom_placer = NULL;
    REQUIRE_OK(ctxpack_placer_new_custom(place_identity, NULL, NULL, &custom_placer, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, custom_placer, NULL, &p, NULL));
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, true, &s, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "placer: custom components cannot be expressed as a policy");
    ctxpack_pipeline_free(p);

    // A composite with a custom child names the entry.
    ctxpack_composite_child children[2] = {{sc, 1.0}, {custom, 2.0}};
    ctxpack_scorer *composite = NULL;
    REQUIRE_OK(ctxpack_scorer_new_composite(children, 2, &composite, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(composite, sl, pl, NULL, &p, NULL));
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, false, &s, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "scorers[1]: custom components cannot be expressed as a policy");
    ctxpack_pipeline_free(p);

    // A custom slicer inside a count quota names the inner slicer.
    ctxpack_slicer *custom_slicer = NULL, *count_quota = NULL;
    ctxpack_count_quota_entry cq = {S("ToolOutput"), 1, 2};
    REQUIRE_OK(ctxpack_slicer_new_custom(slice_none, NULL, NULL, &custom_slicer, NULL));
    REQUIRE_OK(ctxpack_slicer_new_count_quota(&cq, 1, custom_slicer, CTXPACK_SCARCITY_DEGRADE,
                                              &count_quota, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(sc, count_quota, pl, NULL, &p, NULL));
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, false, &s, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "slicer.innerSlicer: custom components cannot be expressed as a policy");
    ctxpack_pipeline_free(p);
    ctxpack_slicer_free(count_quota);
    ctxpack_slicer_free(custom_slicer);

    // A decay scorer on a fixed clock has no policy form either.
    ctxpack_decay_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.curve = CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL;
    c.half_life_ns = NS_PER_DAY;
    c.clock = CTXPACK_CLOCK_KIND_FIXED;
    c.fixed_now_ns = JAN_2024;
    ctxpack_scorer *decay = NULL;
    REQUIRE_OK(ctxpack_scorer_new_decay(&c, &decay, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(decay, sl, pl, NULL, &p, NULL));
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, false, &s, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "scorer: a DecayScorer on a clock other than the system clock cannot be "
                "expressed as a policy");
    ctxpack_pipeline_free(p);
    ctxpack_scorer_free(decay);

    // Argument errors.
    CHECK_STATUS(ctxpack_pipeline_policy_json(NULL, false, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "pipeline must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_policy_json((const ctxpack_pipeline *)sc, false, &s, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "pipeline must be a ctxpack_pipeline handle");
    p = policy_pipeline(RECENCY);
    REQUIRE(p != NULL);
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, false, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");

    // The string handle.
    ctxpack_str v;
    REQUIRE_OK(ctxpack_pipeline_policy_json(p, false, &s, NULL));
    CHECK_STATUS(ctxpack_string_value(s, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_string_value(NULL, &v), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_string_value((const ctxpack_string *)p, &v), CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_string_free((ctxpack_string *)p);  // wrong type: a no-op
    ctxpack_pipeline_free((ctxpack_pipeline *)s);  // wrong type: a no-op
    CHECK_OK(ctxpack_string_value(s, &v));
    CHECK_STR(v, compact);
    ctxpack_string_free(s);
    ctxpack_string_free(NULL);
    ctxpack_pipeline_free(p);

    ctxpack_scorer_free(composite);
    ctxpack_scorer_free(custom);
    ctxpack_placer_free(custom_placer);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
}

// ---------------------------------------------------------------- dry run

TEST(dry_run) {
    ctxpack_items *items = four_days();
    ctxpack_budget *b = budget_of(30, 30);
    ctxpack_pipeline *p = policy_pipeline(RECENCY);
    ctxpack_error *err = NULL;
    REQUIRE(items && b && p);
    ctxpack_result *dry = NULL, *run = NULL;
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, b, &dry, &err));
    CHECK(err == NULL);
    ctxpack_run_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.trace_detail = CTXPACK_TRACE_DETAIL_ITEM;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, b, &o, &run, NULL));

    // The dry run is the ITEM-traced run: same selection, same report.
    static const size_t newest_three[3] = {1, 2, 3};
    CHECK(indices_are(dry, newest_three, 3));
    CHECK(indices_are(run, newest_three, 3));
    const double *sd, *sr;
    const int32_t *rd, *rr;
    size_t nd, nr;
    CHECK_OK(ctxpack_result_scores(dry, &sd, &nd));
    CHECK_OK(ctxpack_result_scores(run, &sr, &nr));
    CHECK(nd == 3 && nr == 3 && memcmp(sd, sr, 3 * sizeof *sd) == 0);
    CHECK_OK(ctxpack_result_reasons(dry, &rd, &nd));
    CHECK_OK(ctxpack_result_reasons(run, &rr, &nr));
    CHECK(nd == 3 && nr == 3 && memcmp(rd, rr, 3 * sizeof *rd) == 0);
    bool has = false;
    CHECK_OK(ctxpack_result_has_report(dry, &has));
    CHECK(has);
    ctxpack_report_summary sum_d, sum_r;
    memset(&sum_d, 0, sizeof sum_d);
    memset(&sum_r, 0, sizeof sum_r);
    sum_d.struct_size = sum_r.struct_size = sizeof sum_d;
    CHECK_OK(ctxpack_result_report_summary(dry, &sum_d, NULL));
    CHECK_OK(ctxpack_result_report_summary(run, &sum_r, NULL));
    CHECK_I64(sum_d.included_count, 3);
    CHECK_I64(sum_d.excluded_count, 1);
    CHECK_I64(sum_d.total_candidates, 4);
    CHECK_I64(sum_d.total_tokens_considered, 40);
    CHECK_I64(sum_d.event_count, sum_r.event_count);
    // Item detail: item events name the items.
    int item_events = 0;
    for (size_t i = 0; i < sum_d.event_count; i++) {
        ctxpack_trace_event e;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        CHECK_OK(ctxpack_result_report_event(dry, i, &e, NULL));
        item_events += e.has_item_index;
    }
    CHECK(item_events > 0);
    ctxpack_excluded_entry x;
    memset(&x, 0, sizeof x);
    x.struct_size = sizeof x;
    CHECK_OK(ctxpack_result_report_excluded(dry, 0, &x, NULL));
    CHECK_I64(x.index, 0);
    CHECK_I64(x.reason, CTXPACK_EXCLUSION_REASON_BUDGET_EXCEEDED);
    ctxpack_str json;
    CHECK_OK(ctxpack_result_report_json(dry, &json));
    CHECK(tf_str_contains(json, "\"content\":\"a\""));
    bool present = true;
    int64_t over = -1;
    const size_t *merged;
    size_t merged_len = 9;
    CHECK_OK(ctxpack_result_overflow(dry, &present, &over, &merged, &merged_len));
    CHECK(!present && over == 0 && merged_len == 0);
    // The result outlives the pipeline, the list and the budget.
    ctxpack_pipeline_free(p);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    CHECK_OK(ctxpack_result_report_json(dry, &json));
    CHECK(tf_str_contains(json, "\"content\":\"d\""));
    ctxpack_result_free(dry);
    ctxpack_result_free(run);
}

TEST(dry_run_overflow_and_errors) {
    ctxpack_items *items = four_days();
    ctxpack_budget *b = budget_of(30, 10);
    ctxpack_error *err = NULL;
    ctxpack_result *r = NULL;
    REQUIRE(items && b);
    // A Proceed run over target: the overflow event is in the dry run's result too.
    ctxpack_item_desc pinned[2] = {desc("x", 8), desc("y", 8)};
    pinned[0].pinned = pinned[1].pinned = true;
    ctxpack_items *two_pinned = items_of(pinned, 2);
    ctxpack_pipeline *proceed = policy_pipeline(
        "{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}], \"overflowStrategy\": "
        "\"proceed\"}");
    REQUIRE(two_pinned && proceed);
    REQUIRE_OK(ctxpack_pipeline_dry_run(proceed, two_pinned, b, &r, NULL));
    bool present = false;
    int64_t over = 0;
    const size_t *merged;
    size_t merged_len = 0;
    CHECK_OK(ctxpack_result_overflow(r, &present, &over, &merged, &merged_len));
    CHECK(present);
    CHECK_I64(over, 6);
    CHECK_I64(merged_len, 2);
    ctxpack_result_free(r);

    // Errors of the run come back as they are.
    ctxpack_pipeline *p = policy_pipeline(RECENCY);
    ctxpack_budget *small = budget_of(10, 10);
    REQUIRE(p && small);
    CHECK_STATUS(ctxpack_pipeline_dry_run(p, two_pinned, small, &r, &err),
                 CTXPACK_PINNED_EXCEEDS_BUDGET);
    CHECK_ERROR(err, CTXPACK_PINNED_EXCEEDS_BUDGET, "");
    CHECK(r == NULL);
    CHECK_STATUS(ctxpack_pipeline_dry_run(NULL, items, b, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "pipeline must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_dry_run(p, NULL, b, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "items must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_dry_run(p, items, NULL, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "budget must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_dry_run(p, items, b, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_dry_run(p, (const ctxpack_items *)b, b, &r, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "items must be a ctxpack_items handle");
    ctxpack_pipeline_free(p);
    ctxpack_pipeline_free(proceed);
    ctxpack_budget_free(small);
    ctxpack_budget_free(b);
    ctxpack_items_free(two_pinned);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- budget simulation

TEST(marginal_items) {
    ctxpack_items *items = four_days();
    ctxpack_budget *b = budget_of(30, 30);
    ctxpack_pipeline *p = policy_pipeline(RECENCY);
    ctxpack_error *err = NULL;
    REQUIRE(items && b && p);
    size_t out[4] = {99, 99, 99, 99};
    size_t n = 99;
    // Budget 30 includes 1, 2, 3; at 20 item 1 drops out, at 10 items 1 and 2.
    static const size_t drop_one[1] = {1};
    static const size_t drop_two[2] = {1, 2};
    CHECK_OK(ctxpack_pipeline_marginal_items(p, items, b, 10, out, 4, &n, &err));
    CHECK(err == NULL);
    CHECK(positions_are(out, n, drop_one, 1));
    CHECK_OK(ctxpack_pipeline_marginal_items(p, items, b, 20, out, 4, &n, NULL));
    CHECK(positions_are(out, n, drop_two, 2));
    // Slack 0: none; a negative slack grows the budget, so nothing drops out.
    CHECK_OK(ctxpack_pipeline_marginal_items(p, items, b, 0, out, 4, &n, NULL));
    CHECK_I64(n, 0);
    CHECK_OK(ctxpack_pipeline_marginal_items(p, items, b, -10, out, 4, &n, NULL));
    CHECK_I64(n, 0);

    // The smaller budget must be valid.
    CHECK_STATUS(ctxpack_pipeline_marginal_items(p, items, b, 31, out, 4, &n, &err),
                 CTXPACK_INVALID_BUDGET);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET, "");
    // The guard: a percentage quota slicer is refused with the specification's message.
    ctxpack_pipeline *quota = policy_pipeline(QUOTA);
    REQUIRE(quota != NULL);
    CHECK_STATUS(ctxpack_pipeline_marginal_items(quota, items, b, 10, out, 4, &n, &err),
                 CTXPACK_PIPELINE_CONFIG);
    CHECK_ERROR(err, CTXPACK_PIPELINE_CONFIG,
                "GetMarginalItems requires monotonic item inclusion. QuotaSlice produces "
                "non-monotonic inclusion as budget changes shift percentage allocations.");
    // Count quotas are not guarded (spec 07 §5.1): the two runs are compared.
    ctxpack_pipeline *count = policy_pipeline(COUNT_QUOTA);
    REQUIRE(count != NULL);
    CHECK_OK(ctxpack_pipeline_marginal_items(count, items, b, 10, out, 4, &n, NULL));

    // Buffers and arguments.
    CHECK_STATUS(ctxpack_pipeline_marginal_items(p, items, b, 10, out, 3, &n, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "out_positions holds 3 elements but 4 are needed");
    CHECK_STATUS(ctxpack_pipeline_marginal_items(p, items, b, 10, NULL, 4, &n, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_positions must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_marginal_items(p, items, b, 10, out, 4, NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_count must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_marginal_items(p, NULL, b, 10, out, 4, &n, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "items must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_marginal_items(p, items, (const ctxpack_budget *)p, 10, out, 4,
                                                 &n, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "budget must be a ctxpack_budget handle");
    // An empty list needs no buffer.
    ctxpack_items *none = NULL;
    REQUIRE_OK(ctxpack_items_new(&none, NULL));
    CHECK_OK(ctxpack_pipeline_marginal_items(p, none, b, 10, NULL, 0, &n, NULL));
    CHECK_I64(n, 0);
    ctxpack_items_free(none);

    ctxpack_pipeline_free(count);
    ctxpack_pipeline_free(quota);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(min_budget_for) {
    ctxpack_items *items = four_days();
    ctxpack_pipeline *p = policy_pipeline(RECENCY);
    ctxpack_error *err = NULL;
    REQUIRE(items && p);
    bool found = false;
    int64_t budget = -1;
    // The newest item needs its own 10 tokens; the oldest needs room for all four.
    CHECK_OK(ctxpack_pipeline_min_budget_for(p, items, 3, 1000, &found, &budget, &err));
    CHECK(err == NULL);
    CHECK(found);
    CHECK_I64(budget, 10);
    CHECK_OK(ctxpack_pipeline_min_budget_for(p, items, 0, 1000, &found, &budget, NULL));
    CHECK(found);
    CHECK_I64(budget, 40);
    // The lower-bound probe: the ceiling itself and the item's own tokens are probed.
    CHECK_OK(ctxpack_pipeline_min_budget_for(p, items, 0, 40, &found, &budget, NULL));
    CHECK(found);
    CHECK_I64(budget, 40);
    CHECK_OK(ctxpack_pipeline_min_budget_for(p, items, 3, 10, &found, &budget, NULL));
    CHECK(found);
    CHECK_I64(budget, 10);
    // None found below the ceiling: the flag says so.
    CHECK_OK(ctxpack_pipeline_min_budget_for(p, items, 0, 39, &found, &budget, NULL));
    CHECK(!found);
    CHECK_I64(budget, 0);

    // Guards, with the core's messages.
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(p, items, 4, 100, &found, &budget, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "target (4) must be the position of an element of items (0..4)");
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(p, items, 0, 9, &found, &budget, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "search ceiling (9) must be >= the target item's tokens (10)");
    static const char *guarded[2] = {QUOTA, COUNT_QUOTA};
    for (int i = 0; i < 2; i++) {
        ctxpack_pipeline *q = policy_pipeline(guarded[i]);
        REQUIRE(q != NULL);
        // The slicer guard comes before the argument checks.
        CHECK_STATUS(ctxpack_pipeline_min_budget_for(q, items, 99, 0, &found, &budget, &err),
                     CTXPACK_PIPELINE_CONFIG);
        CHECK_ERROR(err, CTXPACK_PIPELINE_CONFIG,
                    "FindMinBudgetFor requires monotonic item inclusion. QuotaSlice and "
                    "CountQuotaSlice produce non-monotonic inclusion as budget changes shift "
                    "allocations. Use a GreedySlice or KnapsackSlice inner slicer for budget "
                    "simulation.");
        ctxpack_pipeline_free(q);
    }
    // Errors of a probe come back as they are: pinned items above a probe budget (with
    // the ceiling one above the item's tokens, the item's own tokens are probed).
    ctxpack_item_desc d[2] = {desc("pin", 50), desc_at("x", 10, 1)};
    d[0].pinned = true;
    ctxpack_items *with_pin = items_of(d, 2);
    REQUIRE(with_pin != NULL);
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(p, with_pin, 1, 11, &found, &budget, &err),
                 CTXPACK_PINNED_EXCEEDS_BUDGET);
    CHECK_ERROR(err, CTXPACK_PINNED_EXCEEDS_BUDGET, "");
    ctxpack_items_free(with_pin);

    // Arguments.
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(p, items, 0, 100, NULL, &budget, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_found must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(p, items, 0, 100, &found, NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_budget must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(NULL, items, 0, 100, &found, &budget, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "pipeline must not be NULL");
    CHECK_STATUS(ctxpack_pipeline_min_budget_for(p, (const ctxpack_items *)p, 0, 100, &found,
                                                 &budget, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "items must be a ctxpack_items handle");
    ctxpack_pipeline_free(p);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- sensitivity

TEST(sensitivity) {
    // Recency keeps the newest, priority the oldest; the pinned item 4 never swings.
    ctxpack_item_desc d[5] = {desc_at("a", 10, 1), desc_at("b", 10, 2), desc_at("c", 10, 3),
                              desc_at("d", 10, 4), desc("pin", 10)};
    for (int i = 0; i < 4; i++) {
        d[i].priority = 4 - i;
        d[i].has_priority = true;
    }
    d[4].pinned = true;
    ctxpack_items *items = items_of(d, 5);
    ctxpack_budget *b = budget_of(30, 30);
    ctxpack_pipeline *recency = policy_pipeline(RECENCY);
    ctxpack_pipeline *priority = policy_pipeline(PRIORITY);
    ctxpack_pipeline *chat = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_pipeline_new_preset(S("Chat"), &chat, NULL));
    REQUIRE(items && b && recency && priority);
    ctxpack_sensitivity_variant v[3] = {
        {S("recency"), recency}, {S("priority"), priority}, {S("chat"), chat}};
    ctxpack_sensitivity *s = NULL;
    REQUIRE_OK(ctxpack_sensitivity_new(items, b, v, 3, &s, &err));
    CHECK(err == NULL);
    // The pipelines are not needed any more.
    ctxpack_pipeline_free(recency);
    ctxpack_pipeline_free(priority);
    ctxpack_pipeline_free(chat);

    size_t count = 0;
    CHECK_OK(ctxpack_sensitivity_variant_count(s, &count));
    CHECK_I64(count, 3);
    ctxpack_str label;
    CHECK_OK(ctxpack_sensitivity_variant_label(s, 0, &label));
    CHECK_STR(label, "recency");
    CHECK_OK(ctxpack_sensitivity_variant_label(s, 2, &label));
    CHECK_STR(label, "chat");
    CHECK_STATUS(ctxpack_sensitivity_variant_label(s, 3, &label), CTXPACK_OUT_OF_RANGE);

    // Per-variant results: the report accessors work on them.
    ctxpack_result *rv = NULL, *pv = NULL;
    REQUIRE_OK(ctxpack_sensitivity_variant_result(s, 0, &rv, &err));
    REQUIRE_OK(ctxpack_sensitivity_variant_result(s, 1, &pv, NULL));
    static const size_t by_recency[3] = {2, 3, 4};
    static const size_t by_priority[3] = {0, 1, 4};
    CHECK(result_selects(rv, by_recency, 3));
    ctxpack_report_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    CHECK_OK(ctxpack_result_report_summary(pv, &sum, NULL));
    CHECK_I64(sum.included_count, 3);
    CHECK_I64(sum.excluded_count, 2);
    size_t seen[5] = {0};
    for (size_t i = 0; i < sum.included_count; i++) {
        ctxpack_included_entry e;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        CHECK_OK(ctxpack_result_report_included(pv, i, &e, NULL));
        if (e.index < 5) seen[e.index] = 1;
    }
    for (int i = 0; i < 3; i++) CHECK(seen[by_priority[i]]);
    ctxpack_str json;
    CHECK_OK(ctxpack_result_report_json(pv, &json));
    CHECK(tf_str_contains(json, "\"content\":\"pin\""));

    // The swing-only diff: items 0..3, in list order, one status per variant.
    size_t diffs = 0;
    CHECK_OK(ctxpack_sensitivity_diff_count(s, &diffs));
    CHECK_I64(diffs, 4);
    for (size_t i = 0; i < diffs; i++) {
        size_t index = 99;
        const int32_t *st = NULL;
        size_t n = 0;
        CHECK_OK(ctxpack_sensitivity_diff(s, i, &index, &st, &n));
        CHECK_I64(index, i);
        REQUIRE(n == 3);
        int32_t want_recency = i >= 2 ? CTXPACK_ITEM_STATUS_INCLUDED : CTXPACK_ITEM_STATUS_EXCLUDED;
        int32_t want_priority = i < 2 ? CTXPACK_ITEM_STATUS_INCLUDED : CTXPACK_ITEM_STATUS_EXCLUDED;
        CHECK_I64(st[0], want_recency);
        CHECK_I64(st[1], want_priority);
        CHECK(st[2] == CTXPACK_ITEM_STATUS_INCLUDED || st[2] == CTXPACK_ITEM_STATUS_EXCLUDED);
    }
    size_t index;
    const int32_t *st;
    size_t n;
    CHECK_STATUS(ctxpack_sensitivity_diff(s, 4, &index, &st, &n), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_sensitivity_diff(s, 0, NULL, &st, &n), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_sensitivity_diff(s, 0, &index, NULL, &n), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_sensitivity_diff(s, 0, &index, &st, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_sensitivity_diff_count(s, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_sensitivity_variant_count(s, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_sensitivity_variant_label(s, 0, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_result *r = (ctxpack_result *)&r;
    CHECK_STATUS(ctxpack_sensitivity_variant_result(s, 3, &r, &err), CTXPACK_OUT_OF_RANGE);
    CHECK_ERROR(err, CTXPACK_OUT_OF_RANGE, "variant index 3 is out of range (count 3)");
    CHECK(r == NULL);
    CHECK_STATUS(ctxpack_sensitivity_variant_result(s, 0, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");

    // Wrong handle types, both ways.
    CHECK_STATUS(ctxpack_sensitivity_diff_count((const ctxpack_sensitivity *)rv, &n),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_STATUS(ctxpack_sensitivity_variant_count((const ctxpack_sensitivity *)b, &n),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_STATUS(ctxpack_sensitivity_variant_result(NULL, 0, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "sensitivity must not be NULL");
    const size_t *idx;
    CHECK_STATUS(ctxpack_result_indices((const ctxpack_result *)s, &idx, &n),
                 CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_sensitivity_free((ctxpack_sensitivity *)rv);  // wrong type: a no-op
    ctxpack_result_free((ctxpack_result *)s);              // wrong type: a no-op

    // The variant results outlive the sensitivity (and the list).
    ctxpack_sensitivity_free(s);
    ctxpack_sensitivity_free(NULL);
    ctxpack_items_free(items);
    CHECK(result_selects(pv, by_priority, 3));
    CHECK_OK(ctxpack_result_report_json(rv, &json));
    ctxpack_result_free(rv);
    ctxpack_result_free(pv);
    ctxpack_budget_free(b);
}

TEST(sensitivity_errors) {
    ctxpack_items *items = four_days();
    ctxpack_budget *b = budget_of(20, 20);
    ctxpack_pipeline *p = policy_pipeline(RECENCY);
    ctxpack_error *err = NULL;
    ctxpack_sensitivity *s = NULL;
    REQUIRE(items && b && p);
    ctxpack_sensitivity_variant one[1] = {{S("only"), p}};
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, one, 1, &s, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "a sensitivity comparison requires at least 2 variants (got 1)");
    CHECK(s == NULL);
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, NULL, 0, &s, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "(got 0)");
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, NULL, 2, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "variants is NULL but its length is 2");
    ctxpack_sensitivity_variant no_pipeline[2] = {{S("a"), p}, {S("b"), NULL}};
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, no_pipeline, 2, &s, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "variants[1].pipeline must not be NULL");
    ctxpack_sensitivity_variant wrong[2] = {{S("a"), (const ctxpack_pipeline *)b}, {S("b"), p}};
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, wrong, 2, &s, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE,
                "variants[0].pipeline must be a ctxpack_pipeline handle");
    ctxpack_str bad = {"\xff", 1};
    ctxpack_sensitivity_variant bad_label[2] = {{S("a"), p}, {bad, p}};
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, bad_label, 2, &s, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "variants[1].label is not valid UTF-8");
    ctxpack_sensitivity_variant two[2] = {{S("same"), p}, {S("same"), p}};
    CHECK_STATUS(ctxpack_sensitivity_new(NULL, b, two, 2, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "items must not be NULL");
    CHECK_STATUS(ctxpack_sensitivity_new(items, NULL, two, 2, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "budget must not be NULL");
    CHECK_STATUS(ctxpack_sensitivity_new(items, b, two, 2, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");
    // A failing variant run fails the comparison with its own status.
    ctxpack_pipeline *throw_ = policy_pipeline(RECENCY);
    ctxpack_item_desc pin = desc("pin", 30);
    pin.pinned = true;
    ctxpack_items *pinned = items_of(&pin, 1);
    REQUIRE(throw_ && pinned);
    ctxpack_sensitivity_variant fail[2] = {{S("a"), p}, {S("b"), throw_}};
    CHECK_STATUS(ctxpack_sensitivity_new(pinned, b, fail, 2, &s, &err),
                 CTXPACK_PINNED_EXCEEDS_BUDGET);
    CHECK_ERROR(err, CTXPACK_PINNED_EXCEEDS_BUDGET, "");
    // Identical variants (labels need not be unique): no swing.
    REQUIRE_OK(ctxpack_sensitivity_new(items, b, two, 2, &s, NULL));
    size_t n = 9;
    CHECK_OK(ctxpack_sensitivity_diff_count(s, &n));
    CHECK_I64(n, 0);
    ctxpack_sensitivity_free(s);
    ctxpack_items_free(pinned);
    ctxpack_pipeline_free(throw_);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- report helpers

TEST(report_helpers) {
    ctxpack_items *items = mixed_items();
    ctxpack_budget *b = NULL;
    REQUIRE_OK(new_budget(40, 30, 0, NULL, 0, 0.0, &b, NULL));
    ctxpack_pipeline *p = policy_pipeline(PRIORITY);
    REQUIRE(items && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, b, &r, NULL));
    static const size_t top_three[3] = {0, 1, 2};
    CHECK(result_selects(r, top_three, 3));
    double value = -1;
    size_t kinds = 99;
    // 30 included tokens of max 40; Document and Message (ASCII case-insensitive);
    // item 1 has no timestamp.
    CHECK_OK(ctxpack_result_budget_utilization(r, &value));
    CHECK_F64(value, 0.75);
    CHECK_OK(ctxpack_result_kind_diversity(r, &kinds));
    CHECK_I64(kinds, 2);
    CHECK_OK(ctxpack_result_timestamp_coverage(r, &value));
    CHECK_F64(value, 2.0 / 3.0);
    // Not a quota slicer: no constraints.
    ctxpack_quota_utilization *q = NULL;
    size_t n = 99;
    REQUIRE_OK(ctxpack_result_quota_utilization(r, &q, NULL));
    CHECK_OK(ctxpack_quota_utilization_count(q, &n));
    CHECK_I64(n, 0);
    ctxpack_status st;
    (void)quota_entry_at(q, 0, &st);
    CHECK_STATUS(st, CTXPACK_OUT_OF_RANGE);
    ctxpack_quota_utilization_free(q);

    // Documented results instead of a division by zero.
    ctxpack_budget *zero = budget_of(0, 0);
    ctxpack_result *empty = NULL;
    REQUIRE(zero != NULL);
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, zero, &empty, NULL));
    CHECK_OK(ctxpack_result_budget_utilization(empty, &value));
    CHECK_F64(value, 0.0);
    CHECK_OK(ctxpack_result_timestamp_coverage(empty, &value));
    CHECK_F64(value, 0.0);
    CHECK_OK(ctxpack_result_kind_diversity(empty, &kinds));
    CHECK_I64(kinds, 0);
    ctxpack_result_free(empty);
    ctxpack_budget_free(zero);

    // Untraced results have no report.
    ctxpack_result *plain = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, b, NULL, &plain, NULL));
    CHECK_STATUS(ctxpack_result_budget_utilization(plain, &value), CTXPACK_NO_REPORT);
    CHECK_STATUS(ctxpack_result_kind_diversity(plain, &kinds), CTXPACK_NO_REPORT);
    CHECK_STATUS(ctxpack_result_timestamp_coverage(plain, &value), CTXPACK_NO_REPORT);
    CHECK_STATUS(ctxpack_result_quota_utilization(plain, &q, &err), CTXPACK_NO_REPORT);
    CHECK_ERROR(err, CTXPACK_NO_REPORT, "the run was not traced");
    CHECK(q == NULL);
    ctxpack_result_free(plain);

    // Arguments.
    CHECK_STATUS(ctxpack_result_budget_utilization(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_budget_utilization(NULL, &value), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_budget_utilization((const ctxpack_result *)b, &value),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_STATUS(ctxpack_result_kind_diversity(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_kind_diversity((const ctxpack_result *)b, &kinds),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_STATUS(ctxpack_result_timestamp_coverage(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_quota_utilization(NULL, &q, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "result must not be NULL");
    CHECK_STATUS(ctxpack_result_quota_utilization(r, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");

    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(quota_utilization) {
    ctxpack_items *items = mixed_items();
    ctxpack_budget *b = NULL;
    REQUIRE_OK(new_budget(40, 30, 0, NULL, 0, 0.0, &b, NULL));
    REQUIRE(items != NULL);
    ctxpack_status st;

    // Percentage quotas: entries sorted by kind, in percent of the target.
    ctxpack_pipeline *p = policy_pipeline(QUOTA);
    ctxpack_result *r = NULL;
    ctxpack_quota_utilization *q = NULL;
    REQUIRE(p != NULL);
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, b, &r, NULL));
    REQUIRE_OK(ctxpack_result_quota_utilization(r, &q, NULL));
    size_t n = 0;
    CHECK_OK(ctxpack_quota_utilization_count(q, &n));
    REQUIRE(n == 2);
    // What the run included, by kind, decides the actual shares.
    const size_t *idx;
    size_t len;
    REQUIRE_OK(ctxpack_result_indices(r, &idx, &len));
    int64_t doc_tokens = 0, msg_tokens = 0;
    for (size_t i = 0; i < len; i++) {
        if (idx[i] == 0) doc_tokens += 10;
        if (idx[i] == 1 || idx[i] == 2) msg_tokens += 10;
    }
    ctxpack_kind_quota_utilization e = quota_entry_at(q, 0, &st);
    CHECK_STATUS(st, CTXPACK_OK);
    CHECK_STR(e.kind, "Document");
    CHECK_I64(e.mode, CTXPACK_QUOTA_MODE_PERCENTAGE);
    CHECK_F64(e.require, 0.0);
    CHECK_F64(e.cap, 50.0);
    CHECK_F64(e.actual, doc_tokens * 100.0 / 30.0);
    CHECK_F64(e.utilization, e.actual / 50.0);
    e = quota_entry_at(q, 1, &st);
    CHECK_STATUS(st, CTXPACK_OK);
    CHECK_STR(e.kind, "Message");
    CHECK_F64(e.require, 10.0);
    CHECK_F64(e.cap, 80.0);
    CHECK_F64(e.actual, msg_tokens * 100.0 / 30.0);
    CHECK_F64(e.utilization, e.actual / 80.0 > 1.0 ? 1.0 : e.actual / 80.0);
    CHECK(doc_tokens + msg_tokens > 0);
    (void)quota_entry_at(q, 2, &st);
    CHECK_STATUS(st, CTXPACK_OUT_OF_RANGE);
    // The output struct_size rule.
    ctxpack_kind_quota_utilization small;
    memset(&small, 0, sizeof small);
    small.struct_size = 8;
    CHECK_STATUS(ctxpack_quota_utilization_entry(q, 0, &small, NULL), CTXPACK_INVALID_ARGUMENT);
    CHECK_STATUS(ctxpack_quota_utilization_entry(q, 0, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_quota_utilization_count(q, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_quota_utilization_count((const ctxpack_quota_utilization *)r, &n),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_STATUS(ctxpack_quota_utilization_entry(NULL, 0, &e, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_quota_utilization_free((ctxpack_quota_utilization *)r);  // wrong type: a no-op
    // The entries' strings live as long as the utilization, not the result.
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    e = quota_entry_at(q, 0, &st);
    CHECK_STR(e.kind, "Document");
    ctxpack_quota_utilization_free(q);
    ctxpack_quota_utilization_free(NULL);

    // Count quotas: counts of items. ToolOutput is required once (capped at 2).
    p = policy_pipeline(COUNT_QUOTA);
    REQUIRE(p != NULL);
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, b, &r, NULL));
    static const size_t with_tool[3] = {0, 1, 3};
    CHECK(result_selects(r, with_tool, 3));
    REQUIRE_OK(ctxpack_result_quota_utilization(r, &q, NULL));
    CHECK_OK(ctxpack_quota_utilization_count(q, &n));
    REQUIRE(n == 1);
    e = quota_entry_at(q, 0, &st);
    CHECK_STATUS(st, CTXPACK_OK);
    CHECK_STR(e.kind, "ToolOutput");
    CHECK_I64(e.mode, CTXPACK_QUOTA_MODE_COUNT);
    CHECK_F64(e.require, 1.0);
    CHECK_F64(e.cap, 2.0);
    CHECK_F64(e.actual, 1.0);
    CHECK_F64(e.utilization, 0.5);
    ctxpack_quota_utilization_free(q);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

int main(void) {
    RUN(preset_names);
    RUN(preset_pipelines);
    RUN(policy_json_builds_pipelines);
    RUN(policy_json_errors);
    RUN(policy_json_written_back);
    RUN(dry_run);
    RUN(dry_run_overflow_and_errors);
    RUN(marginal_items);
    RUN(min_budget_for);
    RUN(sensitivity);
    RUN(sensitivity_errors);
    RUN(report_helpers);
    RUN(quota_utilization);
    return tf_finish();
}
