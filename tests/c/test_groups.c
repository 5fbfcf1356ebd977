// The C test of item groups and library-counted items (docs/groups.md, docs/tokenizer.md):
// the `group` and `encoding` fields of ctxpack_item_desc, the group options of
// ctxpack_pipeline_options, the GROUP_EXCLUDED reason and the report's group list, the
// grouped stage functions, and callers compiled against the first version of each struct
// (a smaller struct_size, in a buffer of exactly that size so that ASan and valgrind see
// any read or write past it). Built and run by tests/c/run.sh (plain, under ASan+UBSan,
// and under valgrind).
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// `sizeof` each struct in the first version of the header: everything before the fields
// that were appended later.
#define ITEM_DESC_V1 offsetof(ctxpack_item_desc, group)
#define PIPELINE_OPTIONS_V1 offsetof(ctxpack_pipeline_options, group_value)
#define EXCLUDED_ENTRY_V1 offsetof(ctxpack_excluded_entry, group)
#define REPORT_SUMMARY_V1 offsetof(ctxpack_report_summary, group_count)

// An item scored `hint` by the reflexive scorer, in group `group` (NULL: none).
static ctxpack_item_desc hinted(const char *content, int64_t tokens, double hint, const char *group) {
    ctxpack_item_desc d = desc(content, tokens);
    d.future_relevance_hint = hint;
    d.has_future_relevance_hint = 1;
    if (group != NULL) d.group = ctxpack_str_from_cstr(group);
    return d;
}

// reflexive + `slicer` + `placer`, with the given options (NULL: the defaults).
static ctxpack_pipeline *pipeline_with(ctxpack_slicer *sl, ctxpack_placer *pl,
                                       const ctxpack_pipeline_options *o, ctxpack_error **err) {
    ctxpack_scorer *sc = NULL;
    ctxpack_pipeline *p = NULL;
    ctxpack_scorer_new_reflexive(&sc, NULL);
    ctxpack_pipeline_new(sc, sl, pl, o, &p, err);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    return p;
}

static ctxpack_slicer *greedy(void) {
    ctxpack_slicer *s = NULL;
    ctxpack_slicer_new_greedy(&s, NULL);
    return s;
}

static ctxpack_slicer *knapsack(void) {
    ctxpack_slicer *s = NULL;
    ctxpack_slicer_new_knapsack(1, 0, &s, NULL);
    return s;
}

static ctxpack_placer *chronological(void) {
    ctxpack_placer *p = NULL;
    ctxpack_placer_new_chronological(&p, NULL);
    return p;
}

// Runs traced (Item detail); NULL on failure.
static ctxpack_result *run_traced(const ctxpack_pipeline *p, const ctxpack_items *items,
                                  const ctxpack_budget *b) {
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    ctxpack_result *r = NULL;
    o.trace_detail = CTXPACK_TRACE_DETAIL_ITEM;
    if (ctxpack_pipeline_run(p, items, b, &o, &r, NULL) != CTXPACK_OK) return NULL;
    return r;
}

// Whether position `i` is among the result's indices.
static int selected(const ctxpack_result *r, size_t i) {
    const size_t *idx = NULL;
    size_t n = 0;
    ctxpack_result_indices(r, &idx, &n);
    for (size_t k = 0; k < n; k++) {
        if (idx[k] == i) return 1;
    }
    return 0;
}

// The items of the tests below: a tool call and its result (group "c1"), and two
// messages. Alone, the call is the densest item; its result is the least dense.
static const char *const CALL = "call get_weather(Oslo)";
static const char *const RESULT = "result: 4 C, rain";

static ctxpack_items *tool_chat(int grouped) {
    const char *g = grouped ? "c1" : NULL;
    ctxpack_item_desc d[4] = {
        hinted(CALL, 10, 0.9, g),
        hinted(RESULT, 50, 0.1, g),
        hinted("message A", 20, 0.5, NULL),
        hinted("message B", 20, 0.4, NULL),
    };
    return items_of(d, 4);
}

// Without groups the greedy slicer keeps the call and drops its result; with the group
// neither is kept (the unit is 60 tokens, worth 1.0: less dense than either message).
TEST(group_all_or_nothing) {
    ctxpack_pipeline *p = pipeline_with(greedy(), chronological(), NULL, NULL);
    ctxpack_budget *b = budget_of(100, 60);
    ctxpack_items *plain = tool_chat(0), *grouped = tool_chat(1);
    REQUIRE(p && b && plain && grouped);
    ctxpack_result *r = run_traced(p, plain, b);
    REQUIRE(r);
    CHECK(selected(r, 0) && !selected(r, 1)); // the split groups prevent
    ctxpack_result_free(r);

    r = run_traced(p, grouped, b);
    REQUIRE(r);
    CHECK(!selected(r, 0) && !selected(r, 1));
    CHECK(selected(r, 2) && selected(r, 3));
    ctxpack_result_free(r);

    // With room for everything, the members are placed next to each other, in input order.
    ctxpack_budget *roomy = budget_of(100, 100);
    REQUIRE(roomy);
    r = run_traced(p, grouped, roomy);
    REQUIRE(r);
    const size_t *idx = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_indices(r, &idx, &n));
    CHECK_I64(n, 4);
    size_t at = n;
    for (size_t k = 0; k < n; k++) {
        if (idx[k] == 0) at = k;
    }
    CHECK(at + 1 < n && idx[at + 1] == 1);
    ctxpack_report_summary s = CTXPACK_REPORT_SUMMARY_INIT;
    CHECK_OK(ctxpack_result_report_summary(r, &s, NULL));
    CHECK_I64(s.group_count, 1);
    ctxpack_group_entry g = CTXPACK_GROUP_ENTRY_INIT;
    CHECK_OK(ctxpack_result_report_group(r, 0, &g, NULL));
    CHECK_I64(g.decision, CTXPACK_GROUP_DECISION_INCLUDED);
    CHECK(g.has_value);
    CHECK_F64(g.value, 1.0); // sum of 0.9 and 0.1
    ctxpack_result_free(r);
    ctxpack_budget_free(roomy);

    ctxpack_items_free(plain);
    ctxpack_items_free(grouped);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

// One member carries its own reason; the other is GROUP_EXCLUDED naming it, with the
// group's key, and the group list says the same. The JSON form agrees.
TEST(group_exclusion_accessors) {
    ctxpack_pipeline *p = pipeline_with(greedy(), chronological(), NULL, NULL);
    ctxpack_budget *b = budget_of(100, 60);
    ctxpack_items *items = tool_chat(1);
    REQUIRE(p && b && items);
    ctxpack_result *r = run_traced(p, items, b);
    REQUIRE(r);
    ctxpack_report_summary s = CTXPACK_REPORT_SUMMARY_INIT;
    REQUIRE_OK(ctxpack_result_report_summary(r, &s, NULL));
    CHECK_I64(s.excluded_count, 2);
    CHECK_I64(s.group_count, 1);
    ctxpack_excluded_entry e[2] = {CTXPACK_EXCLUDED_ENTRY_INIT, CTXPACK_EXCLUDED_ENTRY_INIT};
    for (size_t i = 0; i < 2 && i < s.excluded_count; i++) {
        CHECK_OK(ctxpack_result_report_excluded(r, i, &e[i], NULL));
    }
    // Exactly one of the two is GROUP_EXCLUDED.
    int lead = e[0].reason == CTXPACK_EXCLUSION_REASON_GROUP_EXCLUDED ? 1 : 0;
    const ctxpack_excluded_entry *member = &e[lead], *other = &e[1 - lead];
    CHECK_I64(other->reason, CTXPACK_EXCLUSION_REASON_GROUP_EXCLUDED);
    CHECK_I64(member->reason, CTXPACK_EXCLUSION_REASON_BUDGET_EXCEEDED);
    CHECK_STR(member->name, "BudgetExceeded");
    CHECK_STR(other->name, "GroupExcluded");
    CHECK(other->name.ptr[other->name.len] == '\0');
    CHECK_STR(other->group, "c1");
    CHECK(other->group.ptr[other->group.len] == '\0');
    CHECK_I64(other->member_index, member->index);
    CHECK_STR(other->member_content, member->index == 0 ? CALL : RESULT);
    CHECK(other->member_content.ptr[other->member_content.len] == '\0');
    CHECK_STR(other->member_reason, "BudgetExceeded");
    CHECK(other->member_reason.ptr[other->member_reason.len] == '\0');
    // The fields of other reasons stay empty.
    CHECK(other->item_tokens == 0 && other->kind.len == 0);

    ctxpack_group_entry g = CTXPACK_GROUP_ENTRY_INIT;
    REQUIRE_OK(ctxpack_result_report_group(r, 0, &g, NULL));
    CHECK_STR(g.key, "c1");
    CHECK(g.key.ptr[g.key.len] == '\0');
    REQUIRE(g.member_count == 2);
    CHECK(g.members[0] == 0 && g.members[1] == 1);
    CHECK_I64(g.tokens, 60);
    CHECK_I64(g.decision, CTXPACK_GROUP_DECISION_EXCLUDED);
    CHECK_I64(g.stage, CTXPACK_PIPELINE_STAGE_SLICE);
    CHECK_I64(g.member_index, member->index);
    CHECK(g.has_value && !g.has_pinned_by && !g.partial_selection);

    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_result_report_group(r, 1, &g, &err), CTXPACK_OUT_OF_RANGE);
    CHECK_ERROR(err, CTXPACK_OUT_OF_RANGE, "group index 1");
    CHECK_STATUS(ctxpack_result_report_group(r, 0, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_report_group(NULL, 0, &g, NULL), CTXPACK_NULL_ARGUMENT);

    ctxpack_str json = {NULL, 0};
    CHECK_OK(ctxpack_result_report_json(r, &json));
    CHECK(tf_str_contains(json, "\"reason\":\"GroupExcluded\""));
    CHECK(tf_str_contains(json, "\"groups\":[{\"key\":\"c1\",\"members\":[0,1],\"tokens\":60"));
    ctxpack_result_free(r);

    // An untraced run has no group list.
    ctxpack_result *plain = NULL;
    CHECK_OK(ctxpack_pipeline_run(p, items, b, NULL, &plain, NULL));
    CHECK_STATUS(ctxpack_result_report_group(plain, 0, &g, NULL), CTXPACK_NO_REPORT);
    ctxpack_result_free(plain);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(group_key_invalid_utf8) {
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    ctxpack_item_desc d = desc("x", 1);
    ctxpack_str bad = {"tool\xff", 5};
    d.group = bad;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "group is not valid UTF-8 (invalid byte at offset 4)");
    ctxpack_item_desc many[2] = {desc("a", 1), desc("b", 1)};
    many[1].group = bad;
    CHECK_STATUS(ctxpack_items_push_many(items, many, 2, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "item 1: group");
    ctxpack_str null_key = {NULL, 2};
    d.group = null_key;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "group");
    size_t n = 9;
    CHECK_OK(ctxpack_items_len(items, &n));
    CHECK_I64(n, 0); // nothing was pushed
    // {NULL, 0} is no group.
    ctxpack_str none = {NULL, 0};
    d.group = none;
    CHECK_OK(ctxpack_items_push(items, &d, NULL));
    ctxpack_items_free(items);
}

// A caller compiled against the first header: its structs end before the appended
// fields. Each lives in a heap block of exactly that size.
TEST(old_struct_size) {
    // Item descriptors, one at a time and as an array whose stride is the old size.
    unsigned char *one = malloc(ITEM_DESC_V1);
    unsigned char *arr = malloc(2 * ITEM_DESC_V1);
    REQUIRE(one && arr);
    ctxpack_item_desc d = hinted(CALL, 10, 0.9, NULL);
    d.struct_size = ITEM_DESC_V1;
    memcpy(one, &d, ITEM_DESC_V1);
    ctxpack_item_desc d2 = hinted(RESULT, 50, 0.1, NULL);
    d2.struct_size = ITEM_DESC_V1;
    memcpy(arr, &d, ITEM_DESC_V1);
    memcpy(arr + ITEM_DESC_V1, &d2, ITEM_DESC_V1);
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_OK(ctxpack_items_push(items, (const ctxpack_item_desc *)one, NULL));
    CHECK_OK(ctxpack_items_push_many(items, (const ctxpack_item_desc *)arr, 2, NULL));
    size_t n = 0;
    CHECK_OK(ctxpack_items_len(items, &n));
    CHECK_I64(n, 3);

    // Pipeline options of the old size: today's behaviour (no group options).
    unsigned char *opts = malloc(PIPELINE_OPTIONS_V1);
    REQUIRE(opts);
    ctxpack_pipeline_options o = CTXPACK_PIPELINE_OPTIONS_INIT;
    o.struct_size = PIPELINE_OPTIONS_V1;
    o.overflow_strategy = CTXPACK_OVERFLOW_STRATEGY_TRUNCATE;
    memcpy(opts, &o, PIPELINE_OPTIONS_V1);
    ctxpack_pipeline *p = pipeline_with(greedy(), chronological(),
                                        (const ctxpack_pipeline_options *)opts, NULL);
    REQUIRE(p);
    ctxpack_budget *b = budget_of(100, 100);
    REQUIRE(b);
    ctxpack_result *r = run_traced(p, items, b);
    REQUIRE(r);
    CHECK(selected(r, 0) && selected(r, 1) && selected(r, 2));
    ctxpack_result_free(r);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
    ctxpack_pipeline_free(p);
    free(one);
    free(arr);
    free(opts);
}

// An old caller can still meet a group exclusion (from policy JSON or chat requests):
// with its old excluded entry it reads UNKNOWN named "GroupExcluded", as that version
// documents; an old report summary is filled up to its size.
TEST(old_report_structs) {
    ctxpack_pipeline *p = pipeline_with(greedy(), chronological(), NULL, NULL);
    ctxpack_budget *b = budget_of(100, 60);
    ctxpack_items *items = tool_chat(1);
    REQUIRE(p && b && items);
    ctxpack_result *r = run_traced(p, items, b);
    REQUIRE(r);
    ctxpack_report_summary *s = malloc(REPORT_SUMMARY_V1);
    ctxpack_excluded_entry *e = malloc(EXCLUDED_ENTRY_V1);
    REQUIRE(s && e);
    s->struct_size = REPORT_SUMMARY_V1;
    CHECK_OK(ctxpack_result_report_summary(r, s, NULL));
    CHECK_I64(s->excluded_count, 2);
    int seen_unknown = 0;
    for (size_t i = 0; i < 2; i++) {
        e->struct_size = EXCLUDED_ENTRY_V1;
        CHECK_OK(ctxpack_result_report_excluded(r, i, e, NULL));
        CHECK(e->reason != CTXPACK_EXCLUSION_REASON_GROUP_EXCLUDED);
        if (e->reason == CTXPACK_EXCLUSION_REASON_UNKNOWN) {
            seen_unknown = 1;
            CHECK_STR(e->name, "GroupExcluded");
        }
    }
    CHECK(seen_unknown);
    free(s);
    free(e);
    ctxpack_result_free(r);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

static int64_t count_with(const char *encoding, const char *text) {
    const ctxpack_encoding *e = NULL;
    int64_t n = -1;
    if (ctxpack_encoding_get(ctxpack_str_from_cstr(encoding), &e, NULL) != CTXPACK_OK) return -2;
    if (ctxpack_encoding_count(e, ctxpack_str_from_cstr(text), &n, NULL) != CTXPACK_OK) return -3;
    return n;
}

// Items counted by the library carry the same counts as ctxpack_encoding_count: with a
// target of 0 every item is excluded as BUDGET_EXCEEDED with its own tokens.
TEST(encoding_counted_items) {
    static const char *const texts[3] = {
        "tiktoken is great!",
        "\xe3\x81\x8a\xe8\xaa\x95\xe7\x94\x9f\xe6\x97\xa5\xe3\x81\x8a\xe3\x82\x81\xe3\x81\xa7\xe3\x81\xa8\xe3\x81\x86",
        "{\"tool\": \"get_weather\", \"args\": {\"city\": \"Oslo\"}}",
    };
    static const char *const encodings[3] = {"o200k_base", "cl100k_base", "O200K_BASE"};
    ctxpack_item_desc d[3];
    int64_t expected[3], total = 0;
    for (int i = 0; i < 3; i++) {
        d[i] = hinted(texts[i], 0, 0.5, NULL);
        d[i].encoding = ctxpack_str_from_cstr(encodings[i]);
        expected[i] = count_with(encodings[i], texts[i]);
        CHECK(expected[i] > 0);
        total += expected[i];
    }
    ctxpack_items *items = items_of(d, 3);
    ctxpack_pipeline *p = pipeline_with(greedy(), chronological(), NULL, NULL);
    ctxpack_budget *b = budget_of(100, 0);
    REQUIRE(items && p && b);
    ctxpack_result *r = run_traced(p, items, b);
    REQUIRE(r);
    ctxpack_report_summary s = CTXPACK_REPORT_SUMMARY_INIT;
    CHECK_OK(ctxpack_result_report_summary(r, &s, NULL));
    CHECK_I64(s.total_tokens_considered, total);
    CHECK_I64(s.excluded_count, 3);
    for (size_t i = 0; i < s.excluded_count && i < 3; i++) {
        ctxpack_excluded_entry e = CTXPACK_EXCLUDED_ENTRY_INIT;
        CHECK_OK(ctxpack_result_report_excluded(r, i, &e, NULL));
        CHECK_I64(e.reason, CTXPACK_EXCLUSION_REASON_BUDGET_EXCEEDED);
        if (e.index < 3) CHECK_I64(e.item_tokens, expected[e.index]);
    }
    ctxpack_result_free(r);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(encoding_errors) {
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    ctxpack_error *err = NULL;
    ctxpack_item_desc d = desc("hello world", 0);
    d.encoding = ctxpack_str_from_cstr("p50k_base");
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "unknown encoding \"p50k_base\"; known encodings: o200k_base, cl100k_base");
    ctxpack_str bad = {"o200k\xc3", 6};
    d.encoding = bad;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "encoding is not valid UTF-8");
    // A caller count next to an encoding is refused rather than silently replaced.
    d = desc("hello world", 7);
    d.encoding = ctxpack_str_from_cstr("o200k_base");
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "desc.tokens is 7 but desc.encoding is set");
    ctxpack_item_desc many[2] = {desc("a", 1), desc("b", 0)};
    many[1].encoding = ctxpack_str_from_cstr("gpt2");
    CHECK_STATUS(ctxpack_items_push_many(items, many, 2, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "item 1: invalid argument: unknown encoding \"gpt2\"");
    size_t n = 9;
    CHECK_OK(ctxpack_items_len(items, &n));
    CHECK_I64(n, 0);
    ctxpack_items_free(items);
}

TEST(pipeline_group_options) {
    ctxpack_error *err = NULL;
    ctxpack_pipeline_options o = CTXPACK_PIPELINE_OPTIONS_INIT;
    o.group_value = 3;
    CHECK(pipeline_with(greedy(), chronological(), &o, &err) == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.group_value is 3");
    o.group_value = CTXPACK_GROUP_VALUE_MEAN;
    o.pinned_first = 2;
    CHECK(pipeline_with(greedy(), chronological(), &o, &err) == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.pinned_first is 2");
    o.pinned_first = 1;
    o.reserved2[2] = 1;
    CHECK(pipeline_with(greedy(), chronological(), &o, &err) == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.reserved2[2] is 1");
}

// A pinned, undated system prompt: the chronological placer puts it last; pinned-first
// puts it first.
TEST(pinned_first) {
    ctxpack_item_desc d[3] = {desc("You are a helpful assistant.", 5), desc_at("hi", 2, 1),
                              desc_at("hello!", 2, 2)};
    d[0].pinned = 1;
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_pipeline_options o = CTXPACK_PIPELINE_OPTIONS_INIT;
    ctxpack_pipeline *spec = pipeline_with(greedy(), chronological(), &o, NULL);
    o.pinned_first = 1;
    ctxpack_pipeline *first = pipeline_with(greedy(), chronological(), &o, NULL);
    REQUIRE(items && b && spec && first);
    ctxpack_result *r = NULL;
    REQUIRE_OK(ctxpack_pipeline_run(spec, items, b, NULL, &r, NULL));
    static const size_t last[3] = {1, 2, 0}, at_front[3] = {0, 1, 2};
    CHECK(indices_are(r, last, 3));
    ctxpack_result_free(r);
    REQUIRE_OK(ctxpack_pipeline_run(first, items, b, NULL, &r, NULL));
    CHECK(indices_are(r, at_front, 3));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(spec);
    ctxpack_pipeline_free(first);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Two members worth 0.5 each against one item worth 0.8, 20 tokens of room: the group
// wins by its sum (1.0) and loses by its best member (0.5).
static ctxpack_items *sum_or_max_items(void) {
    ctxpack_item_desc d[3] = {hinted("member one", 10, 0.5, "g"), hinted("member two", 10, 0.5, "g"),
                              hinted("single", 20, 0.8, NULL)};
    return items_of(d, 3);
}

TEST(group_value_in_the_pipeline) {
    ctxpack_items *items = sum_or_max_items();
    ctxpack_budget *b = budget_of(20, 20);
    ctxpack_pipeline_options o = CTXPACK_PIPELINE_OPTIONS_INIT;
    ctxpack_pipeline *sum = pipeline_with(knapsack(), chronological(), &o, NULL);
    o.group_value = CTXPACK_GROUP_VALUE_MAX;
    ctxpack_pipeline *max = pipeline_with(knapsack(), chronological(), &o, NULL);
    REQUIRE(items && b && sum && max);
    ctxpack_result *r = NULL;
    REQUIRE_OK(ctxpack_pipeline_run(sum, items, b, NULL, &r, NULL));
    CHECK(selected(r, 0) && selected(r, 1) && !selected(r, 2));
    ctxpack_result_free(r);
    REQUIRE_OK(ctxpack_pipeline_run(max, items, b, NULL, &r, NULL));
    CHECK(!selected(r, 0) && !selected(r, 1) && selected(r, 2));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(sum);
    ctxpack_pipeline_free(max);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Policy JSON reaches the same settings through the C ABI: "groupValue" and
// "pinnedFirst" (docs/groups.md).
TEST(group_value_in_policy_json) {
    static const char *const policy =
        "{\"scorers\": [{\"type\": \"reflexive\", \"weight\": 1}], \"slicerType\": \"knapsack\","
        " \"knapsackBucketSize\": 1, \"placerType\": \"chronological\", \"groupValue\": \"%s\","
        " \"pinnedFirst\": true}";
    char json[512];
    ctxpack_items *items = sum_or_max_items();
    ctxpack_budget *b = budget_of(20, 20);
    REQUIRE(items && b);
    for (int max = 0; max < 2; max++) {
        snprintf(json, sizeof json, policy, max ? "max" : "sum");
        ctxpack_pipeline *p = NULL;
        ctxpack_error *err = NULL;
        CHECK_OK(ctxpack_pipeline_new_policy_json(ctxpack_str_from_cstr(json), &p, &err));
        REQUIRE(p && err == NULL);
        ctxpack_result *r = NULL;
        REQUIRE_OK(ctxpack_pipeline_run(p, items, b, NULL, &r, NULL));
        CHECK(selected(r, 0) == !max && selected(r, 1) == !max && selected(r, 2) == max);
        ctxpack_result_free(r);
        ctxpack_pipeline_free(p);
    }
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    snprintf(json, sizeof json, policy, "median");
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(ctxpack_str_from_cstr(json), &p, &err),
                 CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY, "median");
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// The stage functions treat groups as units too.
TEST(grouped_stage_functions) {
    ctxpack_items *items = sum_or_max_items();
    ctxpack_budget *b = budget_of(20, 20);
    ctxpack_slicer *ks = knapsack();
    REQUIRE(items && b && ks);
    const double scores[3] = {0.5, 0.5, 0.8};
    ctxpack_slice_result *sr = NULL;
    const size_t *sel = NULL;
    size_t n = 0;
    REQUIRE_OK(ctxpack_slicer_slice(ks, items, scores, 3, b, &sr, NULL));
    CHECK_OK(ctxpack_slice_result_selected(sr, &sel, &n));
    CHECK(n == 2 && sel[0] + sel[1] == 1); // the group, under the default (sum)
    ctxpack_slice_result_free(sr);
    REQUIRE_OK(ctxpack_slicer_slice_with_group_value(ks, items, scores, 3, b, CTXPACK_GROUP_VALUE_MAX,
                                                     &sr, NULL));
    CHECK_OK(ctxpack_slice_result_selected(sr, &sel, &n));
    CHECK(n == 1 && sel[0] == 2);
    ctxpack_slice_result_free(sr);
    ctxpack_error *err = NULL;
    sr = (ctxpack_slice_result *)0x1;
    CHECK_STATUS(ctxpack_slicer_slice_with_group_value(ks, items, scores, 3, b, -1, &sr, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK(sr == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "group_value is -1");

    // Placing: the group's members are dated days 1 and 3, the other item day 2; the
    // group is placed as one unit at its earliest member, members together.
    ctxpack_item_desc d[3] = {desc_at("early member", 1, 1), desc_at("between", 1, 2),
                              desc_at("late member", 1, 3)};
    d[0].group = S("g");
    d[2].group = S("g");
    ctxpack_items *dated = items_of(d, 3);
    ctxpack_placer *chrono = chronological();
    REQUIRE(dated && chrono);
    size_t order[3] = {9, 9, 9};
    static const size_t grouped_order[3] = {0, 2, 1};
    CHECK_OK(ctxpack_placer_place(chrono, dated, scores, 3, order, NULL));
    CHECK(memcmp(order, grouped_order, sizeof order) == 0);
    memset(order, 9, sizeof order);
    CHECK_OK(ctxpack_placer_place_with_group_value(chrono, dated, scores, 3, CTXPACK_GROUP_VALUE_MEAN,
                                                   order, NULL));
    CHECK(memcmp(order, grouped_order, sizeof order) == 0);
    CHECK_STATUS(ctxpack_placer_place_with_group_value(chrono, dated, scores, 3, 7, order, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "group_value is 7");
    ctxpack_placer_free(chrono);
    ctxpack_items_free(dated);
    ctxpack_slicer_free(ks);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// A custom slicer that keeps only the item whose content is CALL (half of group c1).
static int keep_the_call(void *user_data, const ctxpack_item_view *items, const double *scores,
                         size_t count, int64_t target, int64_t max, size_t *out, size_t *out_count,
                         ctxpack_callback_error *error) {
    (void)user_data, (void)scores, (void)target, (void)max, (void)error;
    *out_count = 0;
    for (size_t i = 0; i < count; i++) {
        if (tf_str_eq(items[i].content, CALL)) out[(*out_count)++] = i;
    }
    return 0;
}

TEST(custom_slicer_half_a_group) {
    ctxpack_slicer *custom = NULL;
    REQUIRE_OK(ctxpack_slicer_new_custom(keep_the_call, NULL, NULL, &custom, NULL));
    ctxpack_pipeline *p = pipeline_with(custom, chronological(), NULL, NULL);
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_items *items = tool_chat(1);
    REQUIRE(p && b && items);
    ctxpack_result *r = run_traced(p, items, b);
    REQUIRE(r);
    size_t n = 9;
    const size_t *idx = NULL;
    CHECK_OK(ctxpack_result_indices(r, &idx, &n));
    CHECK_I64(n, 0); // the call is dropped with its group, nothing is added
    ctxpack_group_entry g = CTXPACK_GROUP_ENTRY_INIT;
    CHECK_OK(ctxpack_result_report_group(r, 0, &g, NULL));
    CHECK_I64(g.decision, CTXPACK_GROUP_DECISION_EXCLUDED);
    CHECK(g.partial_selection);
    ctxpack_result_free(r);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

int main(void) {
    RUN(group_all_or_nothing);
    RUN(group_exclusion_accessors);
    RUN(group_key_invalid_utf8);
    RUN(old_struct_size);
    RUN(old_report_structs);
    RUN(encoding_counted_items);
    RUN(encoding_errors);
    RUN(pipeline_group_options);
    RUN(pinned_first);
    RUN(group_value_in_the_pipeline);
    RUN(group_value_in_policy_json);
    RUN(grouped_stage_functions);
    RUN(custom_slicer_half_a_group);
    return tf_finish();
}
