// The C test of the ctxpack ABI: every exported function, every status code, every
// ownership path (including the user_data destructors of custom components).
// Built and run by tests/c/run.sh (plain, under ASan+UBSan, and under valgrind).
#include <stdint.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// Test hook of the `ffi-test-hooks` feature (not in the public header): a scorer whose
// runs panic (code 0) or fail with the core error of `code` (any core code).
ctxpack_status ctxpack_test_scorer_new_faulty(int32_t code, ctxpack_scorer **out,
                                              ctxpack_error **out_error);

// ---------------------------------------------------------------- helpers

// Builds a pipeline from the three components, consuming the caller's references.
static ctxpack_pipeline *pipeline_of(ctxpack_scorer *scorer, ctxpack_slicer *slicer,
                                     ctxpack_placer *placer, bool dedup, int32_t strategy) {
    ctxpack_pipeline_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.deduplication = dedup;
    o.overflow_strategy = strategy;
    ctxpack_pipeline *p = NULL;
    ctxpack_pipeline_new(scorer, slicer, placer, &o, &p, NULL);
    ctxpack_scorer_free(scorer);
    ctxpack_slicer_free(slicer);
    ctxpack_placer_free(placer);
    return p;
}

// recency + greedy + chronological, the vectors' usual pipeline.
static ctxpack_pipeline *recency_greedy(bool dedup, int32_t strategy) {
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_scorer_new_recency(&sc, NULL);
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    return pipeline_of(sc, sl, pl, dedup, strategy);
}

static ctxpack_run_options run_opts(int32_t trace) {
    ctxpack_run_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.trace_detail = trace;
    return o;
}

// Runs `p` and returns the status; the result (if any) in *out.
static ctxpack_status run(const ctxpack_pipeline *p, const ctxpack_items *items,
                          const ctxpack_budget *b, int32_t trace, ctxpack_result **out,
                          ctxpack_error **err) {
    ctxpack_run_options o = run_opts(trace);
    return ctxpack_pipeline_run(p, items, b, &o, out, err);
}

static ctxpack_excluded_entry excluded_at(const ctxpack_result *r, size_t i, ctxpack_status *st) {
    ctxpack_excluded_entry e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    *st = ctxpack_result_report_excluded(r, i, &e, NULL);
    return e;
}

// A probe shared with callbacks: counts calls and destructor calls, selects behaviour.
typedef struct {
    int calls;
    int destroyed;
    int mode;
    int views_ok;
} probe;

static void probe_destroy(void *user_data) {
    ((probe *)user_data)->destroyed++;
}

// ---------------------------------------------------------------- basics

TEST(version_matches_header) {
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", CTXPACK_VERSION_MAJOR, CTXPACK_VERSION_MINOR,
             CTXPACK_VERSION_PATCH);
    CHECK(strcmp(ctxpack_version(), expected) == 0);
    CHECK(strcmp(ctxpack_version(), CTXPACK_VERSION_STRING) == 0);
}

TEST(version_number) {
    CHECK_I64(CTXPACK_VERSION_NUMBER, CTXPACK_VERSION_MAJOR * 10000 + CTXPACK_VERSION_MINOR * 100 +
                                          CTXPACK_VERSION_PATCH);
    CHECK_I64(ctxpack_version_number(), CTXPACK_VERSION_NUMBER);
}

// Checks one versioned struct's initialisers: the macro and the function give the same
// bytes (zero, struct_size set); a larger caller struct is zeroed whole; a bad size or a
// NULL pointer is an error that writes nothing.
#define CHECK_INITIALISERS(type, macro, fn)                                               \
    do {                                                                                  \
        type from_macro = macro;                                                          \
        struct {                                                                          \
            type v1;                                                                      \
            unsigned char tail[16];                                                       \
        } big;                                                                            \
        memset(&big, 0xAB, sizeof big);                                                   \
        CHECK_OK(fn(&big.v1, sizeof big.v1));                                             \
        CHECK(memcmp(&big.v1, &from_macro, sizeof from_macro) == 0);                      \
        CHECK_I64(big.v1.struct_size, sizeof(type));                                      \
        CHECK(big.tail[0] == 0xAB && big.tail[15] == 0xAB);                               \
        CHECK_OK(fn(&big.v1, sizeof big));                                                \
        CHECK_I64(big.v1.struct_size, sizeof big);                                        \
        CHECK(big.tail[0] == 0 && big.tail[15] == 0);                                     \
        memset(&big, 0xAB, sizeof big);                                                   \
        CHECK_STATUS(fn(&big.v1, 8), CTXPACK_INVALID_ARGUMENT);                           \
        CHECK_STATUS(fn(&big.v1, 4097), CTXPACK_INVALID_ARGUMENT);                        \
        CHECK(((unsigned char *)&big)[0] == 0xAB);                                        \
        CHECK_STATUS(fn(NULL, sizeof(type)), CTXPACK_NULL_ARGUMENT);                      \
    } while (0)

TEST(initialisers_of_every_versioned_struct) {
    CHECK_INITIALISERS(ctxpack_item_desc, CTXPACK_ITEM_DESC_INIT, ctxpack_item_desc_init);
    CHECK_INITIALISERS(ctxpack_budget_desc, CTXPACK_BUDGET_DESC_INIT, ctxpack_budget_desc_init);
    CHECK_INITIALISERS(ctxpack_pipeline_options, CTXPACK_PIPELINE_OPTIONS_INIT,
                       ctxpack_pipeline_options_init);
    CHECK_INITIALISERS(ctxpack_run_options, CTXPACK_RUN_OPTIONS_INIT, ctxpack_run_options_init);
    CHECK_INITIALISERS(ctxpack_decay_config, CTXPACK_DECAY_CONFIG_INIT, ctxpack_decay_config_init);
    CHECK_INITIALISERS(ctxpack_report_summary, CTXPACK_REPORT_SUMMARY_INIT,
                       ctxpack_report_summary_init);
    CHECK_INITIALISERS(ctxpack_included_entry, CTXPACK_INCLUDED_ENTRY_INIT,
                       ctxpack_included_entry_init);
    CHECK_INITIALISERS(ctxpack_group_entry, CTXPACK_GROUP_ENTRY_INIT, ctxpack_group_entry_init);
    CHECK_INITIALISERS(ctxpack_excluded_entry, CTXPACK_EXCLUDED_ENTRY_INIT,
                       ctxpack_excluded_entry_init);
    CHECK_INITIALISERS(ctxpack_trace_event, CTXPACK_TRACE_EVENT_INIT, ctxpack_trace_event_init);
    CHECK_INITIALISERS(ctxpack_shortfall, CTXPACK_SHORTFALL_INIT, ctxpack_shortfall_init);
    CHECK_INITIALISERS(ctxpack_kind_quota_utilization, CTXPACK_KIND_QUOTA_UTILIZATION_INIT,
                       ctxpack_kind_quota_utilization_init);
}

TEST(status_names) {
    CHECK(strcmp(ctxpack_status_name(CTXPACK_OK), "CTXPACK_OK") == 0);
    CHECK(strcmp(ctxpack_status_name(CTXPACK_EMPTY_CONTENT), "CTXPACK_EMPTY_CONTENT") == 0);
    CHECK(strcmp(ctxpack_status_name(CTXPACK_INVALID_ARGUMENT), "CTXPACK_INVALID_ARGUMENT") == 0);
    CHECK(strcmp(ctxpack_status_name(CTXPACK_NULL_ARGUMENT), "CTXPACK_NULL_ARGUMENT") == 0);
    CHECK(strcmp(ctxpack_status_name(CTXPACK_PANIC), "CTXPACK_PANIC") == 0);
    CHECK(strcmp(ctxpack_status_name(CTXPACK_OUT_OF_MEMORY), "CTXPACK_OUT_OF_MEMORY") == 0);
    CHECK(strcmp(ctxpack_status_name(99), "CTXPACK_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(ctxpack_status_name(-1), "CTXPACK_UNKNOWN_STATUS") == 0);
    // Stable numbers.
    CHECK_I64(CTXPACK_OK, 0);
    CHECK_I64(CTXPACK_INVALID_ARGUMENT, 15);
    CHECK_I64(CTXPACK_OUT_OF_MEMORY, 16);
    CHECK_I64(CTXPACK_NULL_ARGUMENT, 100);
    CHECK_I64(CTXPACK_PANIC, 105);
}

TEST(str_from_cstr) {
    ctxpack_str s = ctxpack_str_from_cstr("héllo");
    CHECK_I64(s.len, 6);
    s = ctxpack_str_from_cstr(NULL);
    CHECK_I64(s.len, 0);
}

TEST(error_objects) {
    ctxpack_budget *b = NULL;
    ctxpack_error *err = (ctxpack_error *)&b;  // garbage the library must overwrite
    // Success stores NULL in *out_error.
    REQUIRE_OK(new_budget(10, 5, 0, NULL, 0, 0.0, &b, &err));
    CHECK(err == NULL);
    ctxpack_budget_free(b);
    // Failure: status, code and message agree; *out is NULL.
    b = (ctxpack_budget *)&err;
    CHECK_STATUS(new_budget(10, 11, 0, NULL, 0, 0.0, &b, &err), CTXPACK_INVALID_BUDGET);
    CHECK(b == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET, "target_tokens (11) must be <= max_tokens (10)");
    // Without out_error only the status is reported.
    CHECK_STATUS(new_budget(-1, 0, 0, NULL, 0, 0.0, &b, NULL), CTXPACK_INVALID_BUDGET);
    // Accessors on NULL or a non-error handle.
    CHECK_STATUS(ctxpack_error_code(NULL), CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_str m = ctxpack_error_message(NULL);
    CHECK(m.ptr != NULL && m.len == 0);
    b = budget_of(10, 5);
    CHECK_STATUS(ctxpack_error_code((const ctxpack_error *)b), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK(ctxpack_error_message((const ctxpack_error *)b).len == 0);
    ctxpack_error_free((ctxpack_error *)b);  // wrong type: a no-op
    ctxpack_budget_free(b);
    ctxpack_error_free(NULL);
}

// ---------------------------------------------------------------- budget

TEST(budget_every_field) {
    ctxpack_reserved_slot slots[2] = {{S("Memory"), 10}, {S("ToolOutput"), 5}};
    ctxpack_budget *b = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(new_budget(1000, 800, 100, slots, 2, 10.0, &b, &err));
    ctxpack_budget_free(b);

    CHECK_STATUS(new_budget(10, 5, 0, NULL, 1, 0.0, &b, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "slots");
    ctxpack_reserved_slot dup[2] = {{S("Memory"), 1}, {S("memory"), 2}};
    CHECK_STATUS(new_budget(10, 5, 0, dup, 2, 0.0, &b, &err), CTXPACK_INVALID_BUDGET);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET, "more than once");
    ctxpack_reserved_slot blank[1] = {{S(" "), 1}};
    CHECK_STATUS(new_budget(10, 5, 0, blank, 1, 0.0, &b, &err), CTXPACK_EMPTY_KIND);
    CHECK_ERROR(err, CTXPACK_EMPTY_KIND, "kind");
    ctxpack_reserved_slot bad_utf8[1] = {{S("\xff"), 1}};
    CHECK_STATUS(new_budget(10, 5, 0, bad_utf8, 1, 0.0, &b, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "slots[0].kind");
    CHECK_STATUS(new_budget(10, 5, 0, NULL, 0, NAN, &b, &err), CTXPACK_INVALID_BUDGET);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET, "estimation_safety_margin_percent");
    CHECK_STATUS(new_budget(10, 5, 0, NULL, 0, 0.0, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    ctxpack_budget_free(NULL);
}

// ---------------------------------------------------------------- items

TEST(items_push_every_field) {
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, &err));
    ctxpack_str tags[2] = {S("x"), S("y")};
    ctxpack_metadata_entry md[2] = {{S("cupel:trust"), S("0.9")}, {S("k"), S("v")}};
    ctxpack_item_desc d = desc("full", 10);
    d.kind = S("Document");
    d.source = S("Rag");
    d.priority = 3;
    d.has_priority = true;
    d.tags = tags;
    d.tag_count = 2;
    d.metadata = md;
    d.metadata_count = 2;
    d.timestamp_ns = JAN_2024;
    d.has_timestamp = true;
    d.future_relevance_hint = 0.5;
    d.has_future_relevance_hint = true;
    d.pinned = true;
    d.original_tokens = 20;
    d.has_original_tokens = true;
    CHECK_OK(ctxpack_items_push(items, &d, &err));
    ctxpack_item_desc plain = desc("plain", -3);  // negative tokens are accepted
    CHECK_OK(ctxpack_items_push(items, &plain, NULL));
    size_t len = 99;
    CHECK_OK(ctxpack_items_len(items, &len));
    CHECK_I64(len, 2);
    CHECK_OK(ctxpack_items_clear(items));
    CHECK_OK(ctxpack_items_len(items, &len));
    CHECK_I64(len, 0);
    ctxpack_items_free(items);
    ctxpack_items_free(NULL);
}

TEST(items_reject_bad_descriptors) {
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    ctxpack_item_desc d = desc("", 1);
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_EMPTY_CONTENT);
    CHECK_ERROR(err, CTXPACK_EMPTY_CONTENT, "content must be non-empty");
    d = desc("x", 1);
    d.kind = S(" \t");
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_EMPTY_KIND);
    CHECK_ERROR(err, CTXPACK_EMPTY_KIND, "kind");
    d = desc("x", 1);
    d.source = S("  ");
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_EMPTY_SOURCE);
    CHECK_ERROR(err, CTXPACK_EMPTY_SOURCE, "source");
    d = desc("x", 1);
    d.content = S("bad \xc3\x28 utf8");
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "content is not valid UTF-8 (invalid byte at offset 4)");
    d = desc("x", 1);
    d.content.ptr = NULL;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "content");
    d = desc("x", 1);
    d.tag_count = 2;  // tags NULL
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "tags");
    ctxpack_metadata_entry md[1] = {{S("k"), S("\xfe")}};
    d = desc("x", 1);
    d.metadata = md;
    d.metadata_count = 1;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "metadata[0].value");
    CHECK_STATUS(ctxpack_items_push(items, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "desc");
    CHECK_STATUS(ctxpack_items_push(NULL, &d, NULL), CTXPACK_NULL_ARGUMENT);
    // struct_size: too small is an error.
    d = desc("x", 1);
    d.struct_size = 8;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "struct_size");
    // ... and an absurd one (an uninitialised struct) is rejected before any read.
    d.struct_size = (size_t)1 << 20;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "struct_size is 1048576");
    size_t len = 1;
    CHECK_OK(ctxpack_items_len(items, &len));
    CHECK_I64(len, 0);  // nothing was pushed
    ctxpack_items_free(items);
}

TEST(items_struct_size_growth_rule) {
    // A caller compiled against a newer header: a bigger struct whose unknown tail is
    // zero is accepted; a non-zero tail is rejected.
    struct newer {
        ctxpack_item_desc v1;
        int64_t future_field;
    } n;
    memset(&n, 0, sizeof n);
    n.v1 = desc("x", 1);
    n.v1.struct_size = sizeof n;
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_OK(ctxpack_items_push(items, &n.v1, NULL));
    n.future_field = 7;
    CHECK_STATUS(ctxpack_items_push(items, &n.v1, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "does not know");
    ctxpack_items_free(items);
}

TEST(items_push_many_is_all_or_nothing) {
    ctxpack_item_desc d[4] = {desc("a", 1), desc("b", 2), desc("", 3), desc("d", 4)};
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    size_t len = 9;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_STATUS(ctxpack_items_push_many(items, d, 4, &err), CTXPACK_EMPTY_CONTENT);
    CHECK_ERROR(err, CTXPACK_EMPTY_CONTENT, "item 2: content must be non-empty");
    CHECK_OK(ctxpack_items_len(items, &len));
    CHECK_I64(len, 0);
    d[2] = desc("c", 3);
    d[3].struct_size = sizeof d[3] + 8;  // inconsistent stride
    CHECK_STATUS(ctxpack_items_push_many(items, d, 4, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "descs[3].struct_size");
    d[3].struct_size = sizeof d[3];
    CHECK_OK(ctxpack_items_push_many(items, d, 4, &err));
    CHECK_OK(ctxpack_items_push_many(items, NULL, 0, &err));
    CHECK_STATUS(ctxpack_items_push_many(items, NULL, 1, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "descs");
    CHECK_OK(ctxpack_items_len(items, &len));
    CHECK_I64(len, 4);
    CHECK_STATUS(ctxpack_items_len(items, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_items_len(NULL, &len), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_items_clear(NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_items_free(items);
}

TEST(wrong_handle_types_are_detected) {
    ctxpack_budget *b = budget_of(10, 5);
    ctxpack_error *err = NULL;
    size_t len;
    REQUIRE(b != NULL);
    CHECK_STATUS(ctxpack_items_len((const ctxpack_items *)b, &len), CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_item_desc d = desc("x", 1);
    CHECK_STATUS(ctxpack_items_push((ctxpack_items *)b, &d, &err), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "items must be a ctxpack_items handle");
    const size_t *idx;
    CHECK_STATUS(ctxpack_result_indices((const ctxpack_result *)b, &idx, &len),
                 CTXPACK_WRONG_HANDLE_TYPE);
    // Every _free ignores a handle of another type.
    ctxpack_items_free((ctxpack_items *)b);
    ctxpack_scorer_free((ctxpack_scorer *)b);
    ctxpack_slicer_free((ctxpack_slicer *)b);
    ctxpack_placer_free((ctxpack_placer *)b);
    ctxpack_pipeline_free((ctxpack_pipeline *)b);
    ctxpack_result_free((ctxpack_result *)b);
    // The budget is still alive and usable.
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_STATUS(new_budget(1, 1, 0, NULL, 0, 0.0, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_budget_free((ctxpack_budget *)items);  // wrong type again
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
}

// ---------------------------------------------------------------- components

TEST(scorer_constructors) {
    ctxpack_scorer *s = NULL, *inner = NULL, *kind = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_scorer_new_recency(&inner, &err));
    CHECK_OK(ctxpack_scorer_new_priority(&s, &err));
    ctxpack_scorer_free(s);
    CHECK_OK(ctxpack_scorer_new_frequency(&s, &err));
    ctxpack_scorer_free(s);
    CHECK_OK(ctxpack_scorer_new_reflexive(&s, &err));
    ctxpack_scorer_free(s);
    CHECK_OK(ctxpack_scorer_new_kind(&kind, &err));
    ctxpack_kind_weight kw[2] = {{S("Memory"), 2.0}, {S("Message"), 0.5}};
    CHECK_OK(ctxpack_scorer_new_kind_weights(kw, 2, &s, &err));
    ctxpack_scorer_free(s);
    kw[1].weight = -1.0;
    CHECK_STATUS(ctxpack_scorer_new_kind_weights(kw, 2, &s, &err), CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    ctxpack_tag_weight tw[2] = {{S("urgent"), 1.0}, {S("later"), 0.25}};
    CHECK_OK(ctxpack_scorer_new_tag(tw, 2, &s, &err));
    ctxpack_scorer_free(s);
    tw[0].weight = NAN;
    CHECK_STATUS(ctxpack_scorer_new_tag(tw, 2, &s, &err), CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    CHECK_OK(ctxpack_scorer_new_scaled(inner, &s, &err));
    ctxpack_scorer_free(s);
    CHECK_STATUS(ctxpack_scorer_new_scaled(NULL, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "inner");
    ctxpack_composite_child ch[2] = {{inner, 1.0}, {kind, 3.0}};
    CHECK_OK(ctxpack_scorer_new_composite(ch, 2, &s, &err));
    ctxpack_scorer_free(s);
    ch[1].weight = 0.0;
    CHECK_STATUS(ctxpack_scorer_new_composite(ch, 2, &s, &err), CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    ch[1].weight = 1.0;
    ch[1].scorer = NULL;
    CHECK_STATUS(ctxpack_scorer_new_composite(ch, 2, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "children[1].scorer");
    ctxpack_budget *b = budget_of(1, 1);
    ch[1].scorer = (const ctxpack_scorer *)b;
    CHECK_STATUS(ctxpack_scorer_new_composite(ch, 2, &s, &err), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "ctxpack_scorer");
    ctxpack_budget_free(b);
    CHECK_OK(ctxpack_scorer_new_metadata_trust(CTXPACK_METADATA_TRUST_DEFAULT_SCORE, &s, &err));
    ctxpack_scorer_free(s);
    CHECK_STATUS(ctxpack_scorer_new_metadata_trust(1.5, &s, &err), CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    CHECK_OK(ctxpack_scorer_new_metadata_key(S("team"), S("core"), 2.0, &s, &err));
    ctxpack_scorer_free(s);
    CHECK_STATUS(ctxpack_scorer_new_metadata_key(S("team"), S("core"), 0.0, &s, &err),
                 CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    CHECK_STATUS(ctxpack_scorer_new_recency(NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    ctxpack_scorer_free(inner);
    ctxpack_scorer_free(kind);
    ctxpack_scorer_free(NULL);
}

TEST(decay_scorer_configs) {
    ctxpack_scorer *s = NULL;
    ctxpack_error *err = NULL;
    ctxpack_decay_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.curve = CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL;
    c.half_life_ns = NS_PER_DAY;
    c.clock = CTXPACK_CLOCK_KIND_FIXED;
    c.fixed_now_ns = JAN_2024;
    CHECK_OK(ctxpack_scorer_new_decay(&c, &s, &err));
    ctxpack_scorer_free(s);
    c.clock = CTXPACK_CLOCK_KIND_SYSTEM;
    c.curve = CTXPACK_DECAY_CURVE_KIND_WINDOW;
    c.max_age_ns = 7 * NS_PER_DAY;
    c.null_timestamp_score = 0.0;
    c.has_null_timestamp_score = true;
    CHECK_OK(ctxpack_scorer_new_decay(&c, &s, &err));
    ctxpack_scorer_free(s);
    ctxpack_decay_window w[2] = {{NS_PER_DAY, 1.0}, {7 * NS_PER_DAY, 0.5}};
    c.curve = CTXPACK_DECAY_CURVE_KIND_STEP;
    c.windows = w;
    c.window_count = 2;
    CHECK_OK(ctxpack_scorer_new_decay(&c, &s, &err));
    ctxpack_scorer_free(s);
    c.curve = CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL;
    c.half_life_ns = 0;
    CHECK_STATUS(ctxpack_scorer_new_decay(&c, &s, &err), CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    c.curve = 7;
    CHECK_STATUS(ctxpack_scorer_new_decay(&c, &s, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "config.curve is 7");
    c.curve = CTXPACK_DECAY_CURVE_KIND_WINDOW;
    c.clock = 2;
    CHECK_STATUS(ctxpack_scorer_new_decay(&c, &s, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "config.clock");
    c.clock = CTXPACK_CLOCK_KIND_SYSTEM;
    c.null_timestamp_score = 2.0;
    CHECK_STATUS(ctxpack_scorer_new_decay(&c, &s, &err), CTXPACK_SCORER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SCORER_CONFIG, "");
    CHECK_STATUS(ctxpack_scorer_new_decay(NULL, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "config");
}

TEST(slicer_constructors) {
    ctxpack_slicer *s = NULL, *greedy = NULL, *knap = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_slicer_new_greedy(&greedy, &err));
    CHECK_OK(ctxpack_slicer_new_knapsack(CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE, 0, &knap, &err));
    CHECK_STATUS(ctxpack_slicer_new_knapsack(0, 0, &s, &err), CTXPACK_SLICER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SLICER_CONFIG, "");
    ctxpack_quota_entry q[2] = {{S("Message"), 10.0, 60.0}, {S("Document"), 20.0, 50.0}};
    CHECK_OK(ctxpack_slicer_new_quota(q, 2, greedy, &s, &err));
    ctxpack_slicer_free(s);
    q[1].require = 70.0;  // require > cap
    CHECK_STATUS(ctxpack_slicer_new_quota(q, 2, greedy, &s, &err), CTXPACK_SLICER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SLICER_CONFIG, "");
    q[1].require = 20.0;
    CHECK_STATUS(ctxpack_slicer_new_quota(q, 2, NULL, &s, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "inner");
    ctxpack_count_quota_entry cq[1] = {{S("Memory"), 1, 2}};
    CHECK_OK(ctxpack_slicer_new_count_quota(cq, 1, greedy, CTXPACK_SCARCITY_DEGRADE, &s, &err));
    ctxpack_slicer_free(s);
    CHECK_STATUS(ctxpack_slicer_new_count_quota(cq, 1, knap, CTXPACK_SCARCITY_THROW, &s, &err),
                 CTXPACK_SLICER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SLICER_CONFIG, "");
    CHECK_STATUS(ctxpack_slicer_new_count_quota(cq, 1, greedy, 9, &s, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "scarcity is 9");
    CHECK_OK(ctxpack_slicer_new_count_constrained_knapsack(cq, 1, 10, 1 << 20,
                                                           CTXPACK_SCARCITY_DEGRADE, &s, &err));
    ctxpack_slicer_free(s);
    cq[0].require_count = 3;  // require > cap
    CHECK_STATUS(ctxpack_slicer_new_count_constrained_knapsack(cq, 1, 10, 0,
                                                               CTXPACK_SCARCITY_DEGRADE, &s, &err),
                 CTXPACK_SLICER_CONFIG);
    CHECK_ERROR(err, CTXPACK_SLICER_CONFIG, "");
    ctxpack_slicer_free(greedy);
    ctxpack_slicer_free(knap);
    ctxpack_slicer_free(NULL);
}

TEST(placer_constructors) {
    ctxpack_placer *p = NULL;
    CHECK_OK(ctxpack_placer_new_chronological(&p, NULL));
    ctxpack_placer_free(p);
    CHECK_OK(ctxpack_placer_new_u_shaped(&p, NULL));
    ctxpack_placer_free(p);
    ctxpack_placer_free(NULL);
    CHECK_STATUS(ctxpack_placer_new_u_shaped(NULL, NULL), CTXPACK_NULL_ARGUMENT);
}

TEST(pipeline_constructor) {
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_u_shaped(&pl, NULL));
    CHECK_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p, &err));
    ctxpack_pipeline_free(p);
    CHECK_STATUS(ctxpack_pipeline_new(NULL, sl, pl, NULL, &p, &err), CTXPACK_PIPELINE_CONFIG);
    CHECK(p == NULL);
    CHECK_ERROR(err, CTXPACK_PIPELINE_CONFIG, "scorer is required");
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, NULL, NULL, &p, &err), CTXPACK_PIPELINE_CONFIG);
    CHECK_ERROR(err, CTXPACK_PIPELINE_CONFIG, "placer is required");
    CHECK_STATUS(ctxpack_pipeline_new((const ctxpack_scorer *)sl, sl, pl, NULL, &p, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "scorer must be a ctxpack_scorer handle");
    ctxpack_pipeline_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.overflow_strategy = 3;
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, pl, &o, &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.overflow_strategy is 3");
    o.overflow_strategy = CTXPACK_OVERFLOW_STRATEGY_PROCEED;
    o.struct_size = 4;
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, pl, &o, &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_pipeline_options.struct_size is 4");
    o.struct_size = sizeof o;
    CHECK_OK(ctxpack_pipeline_new(sc, sl, pl, &o, &p, &err));
    // The pipeline keeps its own references: free the components first.
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    ctxpack_pipeline_free(p);
    ctxpack_pipeline_free(NULL);
}

// ---------------------------------------------------------------- runs

TEST(run_greedy_chronological_vector) {
    // conformance/required/pipeline/greedy-chronological.toml
    ctxpack_item_desc d[4] = {desc_at("jan", 200, 14), desc_at("mar", 200, 74),
                              desc_at("aug", 150, 226), desc_at("dec", 150, 349)};
    ctxpack_items *items = items_of(d, 4);
    ctxpack_budget *b = budget_of(1000, 400);
    ctxpack_pipeline *p = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b && p);
    CHECK_OK(ctxpack_pipeline_run(p, items, b, NULL, &r, &err));
    if (err) CHECK_ERROR(err, CTXPACK_OK, "");
    REQUIRE(r != NULL);
    size_t expected[2] = {2, 3};
    CHECK(indices_are(r, expected, 2));
    const double *scores;
    const int32_t *reasons;
    size_t n;
    CHECK_OK(ctxpack_result_scores(r, &scores, &n));
    REQUIRE(n == 2);
    CHECK_F64(scores[0], 2.0 / 3.0);
    CHECK_F64(scores[1], 1.0);
    CHECK_OK(ctxpack_result_reasons(r, &reasons, &n));
    REQUIRE(n == 2);
    CHECK_I64(reasons[0], CTXPACK_INCLUSION_REASON_SCORED);
    CHECK_I64(reasons[1], CTXPACK_INCLUSION_REASON_SCORED);
    bool present = true, has_report = true;
    int64_t over = -1;
    const size_t *merged;
    CHECK_OK(ctxpack_result_overflow(r, &present, &over, &merged, &n));
    CHECK(!present && over == 0 && n == 0);
    CHECK_OK(ctxpack_result_has_report(r, &has_report));
    CHECK(!has_report);
    ctxpack_report_summary sum;
    sum.struct_size = sizeof sum;
    CHECK_STATUS(ctxpack_result_report_summary(r, &sum, NULL), CTXPACK_NO_REPORT);
    ctxpack_str json;
    CHECK_STATUS(ctxpack_result_report_json(r, &json), CTXPACK_NO_REPORT);
    // Accessor misuse.
    CHECK_STATUS(ctxpack_result_indices(r, NULL, &n), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_scores(r, &scores, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_reasons(NULL, &reasons, &n), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_has_report(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_overflow(r, NULL, &over, &merged, &n), CTXPACK_NULL_ARGUMENT);
    // Run argument checks.
    ctxpack_result *r2 = NULL;
    CHECK_STATUS(ctxpack_pipeline_run(p, NULL, b, NULL, &r2, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "items");
    CHECK_STATUS(ctxpack_pipeline_run(p, items, (const ctxpack_budget *)items, NULL, &r2, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "budget");
    ctxpack_run_options o = run_opts(3);
    CHECK_STATUS(ctxpack_pipeline_run(p, items, b, &o, &r2, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.trace_detail is 3");
    CHECK_STATUS(ctxpack_pipeline_run(p, items, b, NULL, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    CHECK(r2 == NULL);
    ctxpack_result_free(r);
    ctxpack_result_free(NULL);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(traced_run_pinned_override_vector) {
    // conformance/required/pipeline/diag-pinned-override.toml
    ctxpack_item_desc d[2] = {desc("pinned-item", 120), desc_at("regular-item", 80, 152)};
    d[0].kind = S("SystemPrompt");
    d[0].pinned = true;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(1000, 150);
    ctxpack_pipeline *p = recency_greedy(false, CTXPACK_OVERFLOW_STRATEGY_TRUNCATE);
    ctxpack_result *r = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_STAGE, &r, NULL));
    // The result keeps what it reports on: the caller's list may go.
    ctxpack_items_free(items);
    size_t expected[1] = {0};
    CHECK(indices_are(r, expected, 1));
    bool has_report = false;
    CHECK_OK(ctxpack_result_has_report(r, &has_report));
    CHECK(has_report);

    ctxpack_report_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    REQUIRE_OK(ctxpack_result_report_summary(r, &sum, NULL));
    CHECK_I64(sum.total_candidates, 2);
    CHECK_I64(sum.total_tokens_considered, 200);
    CHECK(!sum.total_tokens_saturated);
    CHECK_I64(sum.included_count, 1);
    CHECK_I64(sum.excluded_count, 1);
    CHECK_I64(sum.event_count, 5);
    CHECK_I64(sum.shortfall_count, 0);

    ctxpack_included_entry inc;
    inc.struct_size = sizeof inc;
    REQUIRE_OK(ctxpack_result_report_included(r, 0, &inc, NULL));
    CHECK_I64(inc.index, 0);
    CHECK_F64(inc.score, 1.0);
    CHECK_I64(inc.reason, CTXPACK_INCLUSION_REASON_PINNED);
    CHECK_STATUS(ctxpack_result_report_included(r, 1, &inc, NULL), CTXPACK_OUT_OF_RANGE);

    ctxpack_status st;
    ctxpack_excluded_entry ex = excluded_at(r, 0, &st);
    CHECK_OK(st);
    CHECK_I64(ex.index, 1);
    CHECK_F64(ex.score, 1.0);
    CHECK_I64(ex.reason, CTXPACK_EXCLUSION_REASON_PINNED_OVERRIDE);
    CHECK_STR(ex.name, "PinnedOverride");
    CHECK_STR(ex.displaced_by, "pinned-item");
    CHECK_STR(ex.deduplicated_against, "");
    excluded_at(r, 1, &st);
    CHECK_STATUS(st, CTXPACK_OUT_OF_RANGE);

    const int32_t stages[5] = {CTXPACK_PIPELINE_STAGE_CLASSIFY, CTXPACK_PIPELINE_STAGE_SCORE,
                               CTXPACK_PIPELINE_STAGE_DEDUPLICATE, CTXPACK_PIPELINE_STAGE_SLICE,
                               CTXPACK_PIPELINE_STAGE_PLACE};
    for (size_t i = 0; i < 5; i++) {
        ctxpack_trace_event ev;
        ev.struct_size = sizeof ev;
        CHECK_OK(ctxpack_result_report_event(r, i, &ev, NULL));
        CHECK_I64(ev.stage, stages[i]);
        CHECK(!ev.has_message && !ev.has_item_index && ev.duration_ms >= 0.0);
    }
    ctxpack_trace_event ev;
    ev.struct_size = sizeof ev;
    CHECK_STATUS(ctxpack_result_report_event(r, 5, &ev, NULL), CTXPACK_OUT_OF_RANGE);
    ctxpack_shortfall sf;
    sf.struct_size = sizeof sf;
    CHECK_STATUS(ctxpack_result_report_shortfall(r, 0, &sf, NULL), CTXPACK_OUT_OF_RANGE);

    ctxpack_str json, again;
    REQUIRE_OK(ctxpack_result_report_json(r, &json));
    CHECK(tf_str_contains(json, "\"PinnedOverride\""));
    CHECK(tf_str_contains(json, "\"displaced_by\""));
    CHECK(tf_str_contains(json, "regular-item"));  // the items were kept by the result
    CHECK(json.ptr[json.len] == '\0');
    CHECK_OK(ctxpack_result_report_json(r, &again));
    CHECK(again.ptr == json.ptr && again.len == json.len);
    CHECK_STATUS(ctxpack_result_report_json(r, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
}

TEST(traced_run_reasons_and_item_events) {
    // negative tokens, budget exceeded (diag vectors) and deduplication in one run.
    ctxpack_item_desc d[4] = {desc_at("neg-item", -5, 0), desc_at("fits", 150, 152),
                              desc_at("too-big", 400, 1), desc_at("fits", 150, 10)};
    ctxpack_items *items = items_of(d, 4);
    ctxpack_budget *b = budget_of(1000, 200);
    ctxpack_pipeline *p = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_ITEM, &r, NULL));
    size_t expected[1] = {1};
    CHECK(indices_are(r, expected, 1));
    ctxpack_report_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    REQUIRE_OK(ctxpack_result_report_summary(r, &sum, NULL));
    CHECK_I64(sum.total_candidates, 4);
    CHECK_I64(sum.total_tokens_considered, 695);
    REQUIRE(sum.excluded_count == 3);
    int seen_neg = 0, seen_budget = 0, seen_dedup = 0;
    for (size_t i = 0; i < sum.excluded_count; i++) {
        ctxpack_status st;
        ctxpack_excluded_entry e = excluded_at(r, i, &st);
        CHECK_OK(st);
        if (e.reason == CTXPACK_EXCLUSION_REASON_NEGATIVE_TOKENS) {
            seen_neg = 1;
            CHECK_I64(e.index, 0);
            CHECK_I64(e.tokens, -5);
            CHECK_F64(e.score, 0.0);
        } else if (e.reason == CTXPACK_EXCLUSION_REASON_BUDGET_EXCEEDED) {
            seen_budget = 1;
            CHECK_I64(e.index, 2);
            CHECK_I64(e.item_tokens, 400);
            CHECK_I64(e.available_tokens, 50);
            CHECK_STR(e.name, "BudgetExceeded");
        } else if (e.reason == CTXPACK_EXCLUSION_REASON_DEDUPLICATED) {
            seen_dedup = 1;
            CHECK_I64(e.index, 3);
            CHECK_STR(e.deduplicated_against, "fits");
        }
    }
    CHECK(seen_neg && seen_budget && seen_dedup);
    // Item detail: one item event per inclusion and exclusion, with the item's index.
    size_t item_events = 0;
    for (size_t i = 0; i < sum.event_count; i++) {
        ctxpack_trace_event ev;
        ev.struct_size = sizeof ev;
        CHECK_OK(ctxpack_result_report_event(r, i, &ev, NULL));
        if (ev.has_item_index) {
            item_events++;
            CHECK(ev.item_index < 4);
            CHECK_I64(ev.item_count, 1);
        }
    }
    CHECK_I64(item_events, 4);
    CHECK_I64(sum.event_count, 9);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

static void overflow_observer(void *user_data, int64_t tokens_over_budget, const size_t *items,
                              size_t count) {
    probe *pr = (probe *)user_data;
    pr->calls++;
    pr->views_ok = tokens_over_budget == 30 && count == 1 && items[0] == 0;
}

TEST(overflow_strategies) {
    ctxpack_item_desc d[2] = {desc("p", 80), desc("q", 10)};
    d[0].pinned = true;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(100, 50);
    ctxpack_pipeline *thr = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_pipeline *tru = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_TRUNCATE);
    ctxpack_pipeline *pro = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_PROCEED);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b && thr && tru && pro);
    CHECK_STATUS(run(thr, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_OVERFLOW);
    CHECK_ERROR(err, CTXPACK_OVERFLOW, "merged tokens (80) exceed target tokens (50)");
    CHECK(r == NULL);

    CHECK_OK(run(tru, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    size_t pinned_only[1] = {0};
    CHECK(indices_are(r, pinned_only, 1));
    ctxpack_result_free(r);
    r = NULL;

    probe pr = {0, 0, 0, 0};
    ctxpack_run_options o = run_opts(CTXPACK_TRACE_DETAIL_STAGE);
    o.on_overflow = overflow_observer;
    o.overflow_user_data = &pr;
    REQUIRE_OK(ctxpack_pipeline_run(pro, items, b, &o, &r, NULL));
    CHECK(indices_are(r, pinned_only, 1));
    CHECK_I64(pr.calls, 1);
    CHECK(pr.views_ok);
    bool present = false;
    int64_t over = 0;
    const size_t *merged = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_overflow(r, &present, &over, &merged, &n));
    CHECK(present);
    CHECK_I64(over, 30);
    REQUIRE(n == 1);
    CHECK_I64(merged[0], 0);
    const int32_t *reasons;
    CHECK_OK(ctxpack_result_reasons(r, &reasons, &n));
    CHECK(n == 1 && reasons[0] == CTXPACK_INCLUSION_REASON_PINNED);
    ctxpack_result_free(r);

    // Pinned items above max_tokens - output_reserve.
    ctxpack_budget *small = budget_of(60, 50);
    CHECK_STATUS(run(thr, items, small, CTXPACK_TRACE_DETAIL_NONE, &r, &err),
                 CTXPACK_PINNED_EXCEEDS_BUDGET);
    CHECK_ERROR(err, CTXPACK_PINNED_EXCEEDS_BUDGET, "pinned tokens (80) exceed available budget (60)");
    ctxpack_budget_free(small);
    ctxpack_pipeline_free(thr);
    ctxpack_pipeline_free(tru);
    ctxpack_pipeline_free(pro);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(token_overflow) {
    ctxpack_item_desc d[2] = {desc("a", INT64_MAX), desc("b", 1)};
    d[0].pinned = true;
    d[1].pinned = true;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(INT64_MAX, INT64_MAX);
    ctxpack_pipeline *p = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_PROCEED);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b && p);
    CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_TOKEN_OVERFLOW);
    CHECK_ERROR(err, CTXPACK_TOKEN_OVERFLOW, "64 bits");
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(knapsack_table_limit) {
    ctxpack_item_desc d[3] = {desc_at("a", 60, 1), desc_at("b", 60, 2), desc_at("c", 60, 3)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(1000, 100);
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_scorer_new_recency(&sc, NULL);
    ctxpack_slicer_new_knapsack(1, 1, &sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline *p = pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b && p);
    CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_TABLE_TOO_LARGE);
    CHECK_ERROR(err, CTXPACK_TABLE_TOO_LARGE, "limit");
    ctxpack_pipeline_free(p);
    // The same items with the default limit select the best pair... or any optimum.
    ctxpack_scorer_new_recency(&sc, NULL);
    ctxpack_slicer_new_knapsack(CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE, 0, &sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    p = pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    CHECK_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

static ctxpack_pipeline *count_quota_pipeline(ctxpack_count_quota_entry *e, int32_t scarcity) {
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *greedy = NULL, *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_scorer_new_recency(&sc, NULL);
    ctxpack_slicer_new_greedy(&greedy, NULL);
    ctxpack_slicer_new_count_quota(e, 1, greedy, scarcity, &sl, NULL);
    ctxpack_slicer_free(greedy);
    ctxpack_placer_new_chronological(&pl, NULL);
    return pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
}

TEST(count_quotas) {
    ctxpack_item_desc d[2] = {desc_at("m1", 10, 1), desc_at("m2", 10, 2)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(1000, 500);
    ctxpack_count_quota_entry need_memory = {S("Memory"), 1, 2};
    ctxpack_pipeline *thr = count_quota_pipeline(&need_memory, CTXPACK_SCARCITY_THROW);
    ctxpack_pipeline *deg = count_quota_pipeline(&need_memory, CTXPACK_SCARCITY_DEGRADE);
    ctxpack_count_quota_entry cap_messages = {S("Message"), 0, 1};
    ctxpack_pipeline *cap = count_quota_pipeline(&cap_messages, CTXPACK_SCARCITY_DEGRADE);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b && thr && deg && cap);
    CHECK_STATUS(run(thr, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err),
                 CTXPACK_COUNT_REQUIREMENT_UNMET);
    CHECK_ERROR(err, CTXPACK_COUNT_REQUIREMENT_UNMET, "Memory");

    REQUIRE_OK(run(deg, items, b, CTXPACK_TRACE_DETAIL_STAGE, &r, NULL));
    ctxpack_shortfall sf;
    sf.struct_size = sizeof sf;
    CHECK_OK(ctxpack_result_report_shortfall(r, 0, &sf, NULL));
    CHECK_STR(sf.kind, "Memory");
    CHECK_I64(sf.required_count, 1);
    CHECK_I64(sf.satisfied_count, 0);
    ctxpack_result_free(r);

    REQUIRE_OK(run(cap, items, b, CTXPACK_TRACE_DETAIL_STAGE, &r, NULL));
    ctxpack_status st;
    ctxpack_excluded_entry e = excluded_at(r, 0, &st);
    CHECK_OK(st);
    CHECK_I64(e.reason, CTXPACK_EXCLUSION_REASON_COUNT_CAP_EXCEEDED);
    CHECK_STR(e.kind, "Message");
    CHECK_I64(e.count_cap, 1);
    CHECK_I64(e.count, 1);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(thr);
    ctxpack_pipeline_free(deg);
    ctxpack_pipeline_free(cap);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(every_builtin_scorer_and_slicer_runs) {
    ctxpack_str tags[1] = {S("t")};
    ctxpack_metadata_entry md[2] = {{S("cupel:trust"), S("0.9")}, {S("team"), S("core")}};
    ctxpack_item_desc d[3] = {desc_at("a", 30, 1), desc_at("b", 40, 2), desc("c", 50)};
    d[0].tags = tags;
    d[0].tag_count = 1;
    d[1].tags = tags;
    d[1].tag_count = 1;
    d[1].metadata = md;
    d[1].metadata_count = 2;
    d[2].kind = S("Memory");
    d[2].priority = 4;
    d[2].has_priority = true;
    d[2].future_relevance_hint = 0.7;
    d[2].has_future_relevance_hint = true;
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(1000, 80);
    REQUIRE(items && b);
    ctxpack_scorer *sc[11] = {NULL};
    ctxpack_scorer_new_recency(&sc[0], NULL);
    ctxpack_scorer_new_priority(&sc[1], NULL);
    ctxpack_scorer_new_frequency(&sc[2], NULL);
    ctxpack_scorer_new_reflexive(&sc[3], NULL);
    ctxpack_scorer_new_kind(&sc[4], NULL);
    ctxpack_tag_weight tw[1] = {{S("t"), 1.0}};
    ctxpack_scorer_new_tag(tw, 1, &sc[5], NULL);
    ctxpack_scorer_new_metadata_trust(0.5, &sc[6], NULL);
    ctxpack_scorer_new_metadata_key(S("team"), S("core"), 2.0, &sc[7], NULL);
    ctxpack_decay_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.curve = CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL;
    c.half_life_ns = NS_PER_DAY;
    c.clock = CTXPACK_CLOCK_KIND_FIXED;
    c.fixed_now_ns = JAN_2024 + 3 * NS_PER_DAY;
    ctxpack_scorer_new_decay(&c, &sc[8], NULL);
    ctxpack_scorer_new_scaled(sc[1], &sc[9], NULL);
    ctxpack_composite_child ch[2] = {{sc[0], 1.0}, {sc[4], 1.0}};
    ctxpack_scorer_new_composite(ch, 2, &sc[10], NULL);
    ctxpack_slicer *greedy = NULL;
    ctxpack_slicer_new_greedy(&greedy, NULL);
    for (int i = 0; i < 11; i++) {
        ctxpack_slicer *sl = NULL;
        ctxpack_placer *pl = NULL;
        ctxpack_result *r = NULL;
        REQUIRE(sc[i] != NULL);
        ctxpack_slicer_new_greedy(&sl, NULL);
        ctxpack_placer_new_u_shaped(&pl, NULL);
        ctxpack_pipeline *p = pipeline_of(sc[i], sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
        CHECK_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
        ctxpack_result_free(r);
        ctxpack_pipeline_free(p);
    }
    // Every slicer kind, with the recency scorer.
    ctxpack_slicer *sl[5] = {NULL};
    ctxpack_quota_entry q[1] = {{S("Message"), 10.0, 90.0}};
    ctxpack_count_quota_entry cq[1] = {{S("Memory"), 1, 1}};
    ctxpack_slicer_new_knapsack(10, 0, &sl[0], NULL);
    ctxpack_slicer_new_quota(q, 1, greedy, &sl[1], NULL);
    ctxpack_slicer_new_count_quota(cq, 1, greedy, CTXPACK_SCARCITY_DEGRADE, &sl[2], NULL);
    ctxpack_slicer_new_count_constrained_knapsack(cq, 1, 10, 0, CTXPACK_SCARCITY_DEGRADE, &sl[3],
                                                  NULL);
    sl[4] = greedy;
    for (int i = 0; i < 5; i++) {
        ctxpack_scorer *s = NULL;
        ctxpack_placer *pl = NULL;
        ctxpack_result *r = NULL;
        REQUIRE(sl[i] != NULL);
        ctxpack_scorer_new_recency(&s, NULL);
        ctxpack_placer_new_chronological(&pl, NULL);
        ctxpack_pipeline *p = pipeline_of(s, sl[i], pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
        CHECK_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_STAGE, &r, NULL));
        ctxpack_result_free(r);
        ctxpack_pipeline_free(p);
    }
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- custom components

// Batch scorer: score = tokens / 1000, or a failure chosen by the probe's mode.
static int score_by_tokens(void *user_data, const ctxpack_item_view *items, size_t count,
                           double *out, ctxpack_callback_error *error) {
    probe *pr = (probe *)user_data;
    pr->calls++;
    for (size_t i = 0; i < count; i++) {
        if (pr->mode == 4 && i == 1) continue;  // leave the NaN pre-fill
        out[i] = (double)items[i].tokens / 1000.0;
    }
    switch (pr->mode) {
        case 1:
            error->message = S("scorer says no");
            return 1;
        case 2:
            if (count > 1) out[1] = NAN;
            return 0;
        case 3:
            return -7;  // no message
        case 5:
            error->message = S("bad \xff message");
            return 1;
        default:
            return 0;
    }
}

// Checks every field of the views of the items pushed by custom_scorer_sees_item_views.
static int inspect_views(void *user_data, const ctxpack_item_view *v, size_t count, double *out,
                         ctxpack_callback_error *error) {
    probe *pr = (probe *)user_data;
    (void)error;
    pr->calls++;
    int ok = count == 2;
    if (ok) {
        ok = tf_str_eq(v[0].content, "full") && v[0].tokens == 10 &&
             tf_str_eq(v[0].kind, "Document") && tf_str_eq(v[0].source, "Rag") &&
             v[0].has_priority && v[0].priority == 3 && v[0].tag_count == 2 &&
             tf_str_eq(v[0].tags[0], "x") && tf_str_eq(v[0].tags[1], "y") &&
             v[0].metadata_count == 2 && tf_str_eq(v[0].metadata[0].key, "a") &&
             tf_str_eq(v[0].metadata[0].value, "1") && tf_str_eq(v[0].metadata[1].key, "k") &&
             tf_str_eq(v[0].metadata[1].value, "v") && v[0].has_timestamp &&
             v[0].timestamp_ns == JAN_2024 && v[0].has_future_relevance_hint &&
             v[0].future_relevance_hint == 0.25 && !v[0].pinned && v[0].has_original_tokens &&
             v[0].original_tokens == 12;
        ok = ok && tf_str_eq(v[1].content, "plain") && tf_str_eq(v[1].kind, "Message") &&
             tf_str_eq(v[1].source, "Chat") && !v[1].has_priority && v[1].tag_count == 0 &&
             v[1].metadata_count == 0 && !v[1].has_timestamp &&
             !v[1].has_future_relevance_hint && !v[1].has_original_tokens;
    }
    pr->views_ok = ok;
    for (size_t i = 0; i < count; i++) out[i] = 0.5;
    return 0;
}

TEST(custom_scorer_sees_item_views) {
    ctxpack_str tags[2] = {S("x"), S("y")};
    ctxpack_metadata_entry md[2] = {{S("k"), S("v")}, {S("a"), S("1")}};
    ctxpack_item_desc d[2] = {desc("full", 10), desc("plain", 5)};
    d[0].kind = S("Document");
    d[0].source = S("Rag");
    d[0].priority = 3;
    d[0].has_priority = true;
    d[0].tags = tags;
    d[0].tag_count = 2;
    d[0].metadata = md;
    d[0].metadata_count = 2;
    d[0].timestamp_ns = JAN_2024;
    d[0].has_timestamp = true;
    d[0].future_relevance_hint = 0.25;
    d[0].has_future_relevance_hint = true;
    d[0].original_tokens = 12;
    d[0].has_original_tokens = true;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(100, 100);
    probe pr = {0, 0, 0, 0};
    ctxpack_scorer *sc = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(inspect_views, &pr, probe_destroy, &sc, NULL));
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline *p = pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    CHECK_I64(pr.destroyed, 0);  // the pipeline still holds the scorer
    CHECK_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    CHECK_I64(pr.calls, 1);
    CHECK(pr.views_ok);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    CHECK_I64(pr.destroyed, 1);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(custom_batch_scorer_and_failures) {
    ctxpack_item_desc d[3] = {desc("a", 100), desc("b", 200), desc("c", 300)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(1000, 1000);
    probe pr = {0, 0, 0, 0};
    ctxpack_scorer *sc = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(score_by_tokens, &pr, probe_destroy, &sc, &err));
    // Two pipelines share the scorer; the caller's handle goes first.
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_u_shaped(&pl, NULL);
    ctxpack_pipeline *p1 = NULL, *p2 = NULL;
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p1, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p2, NULL));
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run(p1, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    CHECK_I64(pr.calls, 1);  // one crossing per run
    const double *scores;
    size_t n;
    CHECK_OK(ctxpack_result_scores(r, &scores, &n));
    CHECK_I64(n, 3);
    // U-shaped: best (c, 0.3) first, second (b, 0.2) last.
    size_t expected[3] = {2, 0, 1};
    CHECK(indices_are(r, expected, 3));
    ctxpack_result_free(r);
    r = NULL;

    pr.mode = 1;
    CHECK_STATUS(run(p1, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "custom scorer: scorer says no");
    pr.mode = 2;
    CHECK_STATUS(run(p1, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "NaN for the item at position 1 (\"b\")");
    pr.mode = 3;
    CHECK_STATUS(run(p1, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "custom scorer returned -7");
    pr.mode = 4;
    CHECK_STATUS(run(p2, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "must be finite");
    pr.mode = 5;
    CHECK_STATUS(run(p2, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "bad \xef\xbf\xbd message");
    CHECK(r == NULL);
    ctxpack_pipeline_free(p1);
    CHECK_I64(pr.destroyed, 0);
    ctxpack_pipeline_free(p2);
    CHECK_I64(pr.destroyed, 1);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Per-item scorer: 1 / (index + 1) within the scorer's input.
static int score_one(void *user_data, const ctxpack_item_view *items, size_t count, size_t index,
                     double *out, ctxpack_callback_error *error) {
    probe *pr = (probe *)user_data;
    (void)items;
    pr->calls++;
    if (index >= count) return 1;
    if (pr->mode == 1 && index == 1) {
        error->message = S("item scorer failed");
        return 2;
    }
    if (pr->mode == 2) {
        *out = INFINITY;
        return 0;
    }
    *out = 1.0 / (double)(index + 1);
    return 0;
}

TEST(custom_item_scorer) {
    ctxpack_item_desc d[3] = {desc("a", 1), desc("b", 1), desc("c", 1)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(100, 100);
    probe pr = {0, 0, 0, 0};
    ctxpack_scorer *sc = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_custom_item(score_one, &pr, probe_destroy, &sc, NULL));
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_u_shaped(&pl, NULL);
    ctxpack_pipeline *p = pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    CHECK_I64(pr.calls, 3);
    size_t expected[3] = {0, 2, 1};  // scores 1, 1/2, 1/3 -> U-shape
    CHECK(indices_are(r, expected, 3));
    ctxpack_result_free(r);
    r = NULL;
    pr.mode = 1;
    CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "item scorer failed");
    pr.mode = 2;
    CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK, "inf for the item at position 0");
    ctxpack_pipeline_free(p);
    CHECK_I64(pr.destroyed, 1);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Custom slicer: keeps every item with tokens <= 250 (mode 0), or misbehaves.
static int slice_small(void *user_data, const ctxpack_item_view *items, const double *scores,
                       size_t count, int64_t target_tokens, int64_t max_tokens, size_t *out,
                       size_t *out_count, ctxpack_callback_error *error) {
    probe *pr = (probe *)user_data;
    size_t k = 0;
    pr->calls++;
    pr->views_ok = count == 3 && target_tokens == 1000 && max_tokens == 1000 &&
                   scores[0] >= scores[1] && scores[1] >= scores[2];
    for (size_t i = 0; i < count; i++) {
        if (items[i].tokens <= 250) out[k++] = i;
    }
    *out_count = k;
    switch (pr->mode) {
        case 1:
            if (k > 0) out[k++] = out[0];  // duplicate
            *out_count = k;
            return 0;
        case 2:
            out[0] = count + 5;  // out of range
            return 0;
        case 3:
            *out_count = count + 1;  // more than the capacity
            return 0;
        case 4:
            error->message = S("slicer refuses");
            return 1;
        default:
            return 0;
    }
}

// Custom placer: reverses its input (mode 0), or returns a non-permutation.
static int place_reversed(void *user_data, const ctxpack_item_view *items, const double *scores,
                          size_t count, size_t *out, ctxpack_callback_error *error) {
    probe *pr = (probe *)user_data;
    (void)items;
    (void)scores;
    pr->calls++;
    for (size_t i = 0; i < count; i++) out[i] = count - 1 - i;
    if (pr->mode == 1 && count > 1) out[1] = out[0];
    if (pr->mode == 2 && count > 0) out[0] = count;
    if (pr->mode == 3) {
        error->message = S("placer refuses");
        return 3;
    }
    return 0;
}

TEST(custom_slicer_and_placer) {
    ctxpack_item_desc d[3] = {desc("a", 100), desc("b", 200), desc("c", 300)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(1000, 1000);
    probe sp = {0, 0, 0, 0}, pp = {0, 0, 0, 0}, ss = {0, 0, 0, 0};
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(score_by_tokens, &ss, NULL, &sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_custom(slice_small, &sp, probe_destroy, &sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_custom(place_reversed, &pp, probe_destroy, &pl, NULL));
    ctxpack_pipeline *p = pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE(p != NULL);
    REQUIRE_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    CHECK(sp.views_ok);
    // Sorted: c, b, a; the slicer keeps b, a; merged in sort order [b, a]; reversed.
    size_t expected[2] = {0, 1};
    CHECK(indices_are(r, expected, 2));
    ctxpack_result_free(r);
    r = NULL;
    const char *slicer_msgs[5] = {"", "position 1 twice", "returned position 8, but there are 3",
                                  "returned 4 positions, but there are 3 items", "slicer refuses"};
    for (int mode = 1; mode <= 4; mode++) {
        sp.mode = mode;
        CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
        CHECK_ERROR(err, CTXPACK_CALLBACK, slicer_msgs[mode]);
    }
    sp.mode = 0;
    const char *placer_msgs[4] = {"", "must return a permutation", "position 2, but there are 2",
                                  "custom placer: placer refuses"};
    for (int mode = 1; mode <= 3; mode++) {
        pp.mode = mode;
        CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), CTXPACK_CALLBACK);
        CHECK_ERROR(err, CTXPACK_CALLBACK, placer_msgs[mode]);
    }
    CHECK(r == NULL);
    CHECK_I64(sp.destroyed + pp.destroyed, 0);
    ctxpack_pipeline_free(p);
    CHECK_I64(sp.destroyed, 1);
    CHECK_I64(pp.destroyed, 1);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(failed_custom_constructors_leave_user_data_to_the_caller) {
    probe pr = {0, 0, 0, 0};
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_scorer_new_custom_batch(NULL, &pr, probe_destroy, &sc, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "score_all");
    CHECK_STATUS(ctxpack_scorer_new_custom_item(NULL, &pr, probe_destroy, &sc, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "score_item");
    CHECK_STATUS(ctxpack_scorer_new_custom_batch(score_by_tokens, &pr, probe_destroy, NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    CHECK_STATUS(ctxpack_slicer_new_custom(NULL, &pr, probe_destroy, &sl, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "slice");
    CHECK_STATUS(ctxpack_placer_new_custom(NULL, &pr, probe_destroy, &pl, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "place");
    CHECK(sc == NULL && sl == NULL && pl == NULL);
    CHECK_I64(pr.destroyed, 0);
    // A successful constructor with no pipeline: freeing the handle destroys once.
    REQUIRE_OK(ctxpack_placer_new_custom(place_reversed, &pr, probe_destroy, &pl, NULL));
    ctxpack_placer_free(pl);
    CHECK_I64(pr.destroyed, 1);
    // destroy may be NULL.
    REQUIRE_OK(ctxpack_slicer_new_custom(slice_small, &pr, NULL, &sl, NULL));
    ctxpack_slicer_free(sl);
    CHECK_I64(pr.destroyed, 1);
}

TEST(composite_keeps_children_alive) {
    probe pr = {0, 0, 0, 0};
    ctxpack_scorer *custom = NULL, *kind = NULL, *comp = NULL, *scaled = NULL;
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(score_by_tokens, &pr, probe_destroy, &custom, NULL));
    REQUIRE_OK(ctxpack_scorer_new_kind(&kind, NULL));
    ctxpack_composite_child ch[2] = {{custom, 2.0}, {kind, 1.0}};
    REQUIRE_OK(ctxpack_scorer_new_composite(ch, 2, &comp, NULL));
    REQUIRE_OK(ctxpack_scorer_new_scaled(comp, &scaled, NULL));
    ctxpack_scorer_free(custom);
    ctxpack_scorer_free(kind);
    ctxpack_scorer_free(comp);
    CHECK_I64(pr.destroyed, 0);
    ctxpack_item_desc d[2] = {desc("a", 10), desc("b", 20)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline *p = pipeline_of(scaled, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE(items && b && p);
    CHECK_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    CHECK_I64(pr.calls, 1);
    ctxpack_pipeline_free(p);
    CHECK_I64(pr.destroyed, 1);
    // The result outlives its pipeline. No timestamps: placed in merge (score) order.
    size_t expected[2] = {1, 0};
    CHECK(indices_are(r, expected, 2));
    ctxpack_result_free(r);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(output_struct_size_rule) {
    ctxpack_item_desc d[1] = {desc("a", 1)};
    ctxpack_items *items = items_of(d, 1);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_STAGE, &r, NULL));
    // A newer caller's bigger struct: only the known prefix is written.
    struct bigger {
        ctxpack_included_entry v1;
        unsigned char tail[16];
    } big;
    memset(&big, 0xAB, sizeof big);
    big.v1.struct_size = sizeof big;
    CHECK_OK(ctxpack_result_report_included(r, 0, &big.v1, NULL));
    CHECK_I64(big.v1.struct_size, sizeof big);
    CHECK_I64(big.v1.index, 0);
    CHECK(big.tail[0] == 0xAB && big.tail[15] == 0xAB);
    // Too small is an error with a message, and nothing is written.
    ctxpack_included_entry small = CTXPACK_INCLUDED_ENTRY_INIT;
    small.struct_size = 8;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_result_report_included(r, 0, &small, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "ctxpack_included_entry.struct_size is 8; set it to sizeof(ctxpack_included_entry)");
    CHECK_I64(small.index, 0);
    // Success stores NULL in out_error.
    err = (ctxpack_error *)&small;
    CHECK_OK(ctxpack_result_report_included(r, 0, &big.v1, &err));
    CHECK(err == NULL);
    CHECK_STATUS(ctxpack_result_report_included(r, 0, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    // Input option structs follow the input rule.
    struct newer_opts {
        ctxpack_run_options v1;
        int64_t unknown;
    } o;
    memset(&o, 0, sizeof o);
    o.v1.struct_size = sizeof o;
    ctxpack_result *r2 = NULL;
    CHECK_OK(ctxpack_pipeline_run(p, items, b, &o.v1, &r2, NULL));
    ctxpack_result_free(r2);
    o.unknown = 1;
    CHECK_STATUS(ctxpack_pipeline_run(p, items, b, &o.v1, &r2, NULL), CTXPACK_INVALID_ARGUMENT);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- stages alone

TEST(stages_alone) {
    ctxpack_item_desc d[3] = {desc_at("a", 100, 1), desc_at("b", 200, 2), desc_at("c", 300, 3)};
    d[2].kind = S("Document");
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(1000, 300);
    ctxpack_scorer *recency = NULL;
    ctxpack_slicer *greedy = NULL, *cq = NULL, *cap = NULL;
    ctxpack_placer *ushaped = NULL, *chrono = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_recency(&recency, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&greedy, NULL));
    REQUIRE_OK(ctxpack_placer_new_u_shaped(&ushaped, NULL));
    REQUIRE_OK(ctxpack_placer_new_chronological(&chrono, NULL));

    // Score: every item against the whole list, in list order.
    double scores[3] = {-1, -1, -1};
    CHECK_OK(ctxpack_scorer_score(recency, items, scores, 3, &err));
    CHECK_F64(scores[0], 0.0);
    CHECK_F64(scores[1], 0.5);
    CHECK_F64(scores[2], 1.0);
    CHECK_STATUS(ctxpack_scorer_score(recency, items, scores, 2, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "out_scores holds 2 elements but 3 are needed");
    CHECK_STATUS(ctxpack_scorer_score(recency, items, NULL, 3, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_scores");
    CHECK_STATUS(ctxpack_scorer_score((const ctxpack_scorer *)greedy, items, scores, 3, NULL),
                 CTXPACK_WRONG_HANDLE_TYPE);

    // Slice: given scores, list order, the budget as given.
    const double given[3] = {0.9, 0.5, 0.1};
    ctxpack_slice_result *sr = NULL;
    REQUIRE_OK(ctxpack_slicer_slice(greedy, items, given, 3, b, &sr, &err));
    const size_t *sel = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_slice_result_selected(sr, &sel, &n));
    CHECK(n == 2 && ((sel[0] == 0 && sel[1] == 1) || (sel[0] == 1 && sel[1] == 0)));
    CHECK_OK(ctxpack_slice_result_cap_excluded(sr, &sel, &n));
    CHECK_I64(n, 0);
    CHECK_OK(ctxpack_slice_result_shortfall_count(sr, &n));
    CHECK_I64(n, 0);
    ctxpack_shortfall sf;
    sf.struct_size = sizeof sf;
    CHECK_STATUS(ctxpack_slice_result_shortfall(sr, 0, &sf, NULL), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_slice_result_selected(sr, NULL, &n), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_slice_result_shortfall_count(NULL, &n), CTXPACK_NULL_ARGUMENT);
    ctxpack_slice_result_free(sr);
    ctxpack_slice_result_free(NULL);
    sr = NULL;
    CHECK_STATUS(ctxpack_slicer_slice(greedy, items, given, 2, b, &sr, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "one score per item");
    CHECK(sr == NULL);

    // Count quotas alone: a shortfall, and a cap exclusion.
    ctxpack_count_quota_entry need_memory = {S("Memory"), 1, 1};
    REQUIRE_OK(ctxpack_slicer_new_count_quota(&need_memory, 1, greedy, CTXPACK_SCARCITY_DEGRADE,
                                              &cq, NULL));
    REQUIRE_OK(ctxpack_slicer_slice(cq, items, given, 3, b, &sr, NULL));
    CHECK_OK(ctxpack_slice_result_shortfall_count(sr, &n));
    CHECK_I64(n, 1);
    CHECK_OK(ctxpack_slice_result_shortfall(sr, 0, &sf, NULL));
    CHECK_STR(sf.kind, "Memory");
    CHECK_I64(sf.required_count, 1);
    CHECK_I64(sf.satisfied_count, 0);
    ctxpack_slice_result_free(sr);
    ctxpack_count_quota_entry one_message = {S("Message"), 0, 1};
    REQUIRE_OK(ctxpack_slicer_new_count_quota(&one_message, 1, greedy, CTXPACK_SCARCITY_DEGRADE,
                                              &cap, NULL));
    REQUIRE_OK(ctxpack_slicer_slice(cap, items, given, 3, b, &sr, NULL));
    CHECK_OK(ctxpack_slice_result_selected(sr, &sel, &n));
    CHECK(n == 1 && sel[0] == 0);
    CHECK_OK(ctxpack_slice_result_cap_excluded(sr, &sel, &n));
    CHECK(n == 1 && sel[0] == 1);
    ctxpack_slice_result_free(sr);

    // Place: a permutation of the list, given scores.
    size_t order[3] = {9, 9, 9};
    CHECK_OK(ctxpack_placer_place(ushaped, items, given, 3, order, &err));
    CHECK(order[0] == 0 && order[1] == 2 && order[2] == 1);
    const double reversed[3] = {0.1, 0.5, 0.9};
    CHECK_OK(ctxpack_placer_place(chrono, items, reversed, 3, order, &err));
    CHECK(order[0] == 0 && order[1] == 1 && order[2] == 2);
    CHECK_STATUS(ctxpack_placer_place(chrono, items, reversed, 3, NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_order");
    CHECK_STATUS(ctxpack_placer_place(chrono, items, NULL, 3, order, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "scores");

    ctxpack_scorer_free(recency);
    ctxpack_slicer_free(greedy);
    ctxpack_slicer_free(cq);
    ctxpack_slicer_free(cap);
    ctxpack_placer_free(ushaped);
    ctxpack_placer_free(chrono);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(faulty_scorer_statuses) {
    // Every core error kind crosses the whole run path with its own status; a panic
    // becomes CTXPACK_PANIC and leaves every handle usable. CTXPACK_INVALID_POLICY is
    // left to a real policy call (invalid_policy_json below).
    ctxpack_item_desc d[2] = {desc_at("a", 1, 1), desc_at("b", 1, 2)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    for (int32_t code = 0; code <= CTXPACK_INVALID_REQUEST; code++) {
        // Every core kind; CTXPACK_UNSUPPORTED (17) comes from real calls only in a build
        // without the tokenizer feature, CTXPACK_OUT_OF_MEMORY (16) only from impossible
        // sizes, CTXPACK_CANCELLED (18) from cancelled runs and CTXPACK_INVALID_STATE (19)
        // from prefix-state calls, so the hook carries them here.
        if (code == CTXPACK_INVALID_POLICY) continue;
        ctxpack_scorer *sc = NULL;
        ctxpack_slicer *sl = NULL;
        ctxpack_placer *pl = NULL;
        ctxpack_result *r = NULL;
        REQUIRE_OK(ctxpack_test_scorer_new_faulty(code, &sc, NULL));
        ctxpack_slicer_new_greedy(&sl, NULL);
        ctxpack_placer_new_chronological(&pl, NULL);
        ctxpack_pipeline *p = pipeline_of(sc, sl, pl, true, CTXPACK_OVERFLOW_STRATEGY_THROW);
        ctxpack_status want = code == 0 ? CTXPACK_PANIC : (ctxpack_status)code;
        CHECK_STATUS(run(p, items, b, CTXPACK_TRACE_DETAIL_ITEM, &r, &err), want);
        CHECK_ERROR(err, want, code == 0 ? "injected panic" : "");
        CHECK(r == NULL);
        ctxpack_pipeline_free(p);
    }
    ctxpack_scorer *sc = NULL;
    CHECK_STATUS(ctxpack_test_scorer_new_faulty(99, &sc, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "99");
    // Still usable after the panic.
    ctxpack_pipeline *p = recency_greedy(true, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    CHECK_OK(run(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(invalid_policy_json) {
    // CTXPACK_INVALID_POLICY from a real call: a policy whose third scorer has a bad
    // weight (test_policy.c covers the policy functions in full).
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    ctxpack_str json = S("{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}, "
                         "{\"type\": \"kind\", \"weight\": 2}, "
                         "{\"type\": \"priority\", \"weight\": -1}]}");
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(json, &p, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "scorers[2].weight: must be positive and finite (got -1)");
    CHECK(p == NULL);
}

TEST(every_status_was_produced) {
    // Runs last: every status the library defines was returned by some call above.
    for (int s = 0; s < 256; s++) {
        if (strcmp(ctxpack_status_name(s), "CTXPACK_UNKNOWN_STATUS") != 0 && !tf_status_seen(s)) {
            char buf[128];
            snprintf(buf, sizeof buf, "no test produced %s", ctxpack_status_name(s));
            tf_fail(__FILE__, __LINE__, buf);
        }
    }
}

int main(void) {
    RUN(version_matches_header);
    RUN(version_number);
    RUN(initialisers_of_every_versioned_struct);
    RUN(status_names);
    RUN(str_from_cstr);
    RUN(error_objects);
    RUN(budget_every_field);
    RUN(items_push_every_field);
    RUN(items_reject_bad_descriptors);
    RUN(items_struct_size_growth_rule);
    RUN(items_push_many_is_all_or_nothing);
    RUN(wrong_handle_types_are_detected);
    RUN(scorer_constructors);
    RUN(decay_scorer_configs);
    RUN(slicer_constructors);
    RUN(placer_constructors);
    RUN(pipeline_constructor);
    RUN(run_greedy_chronological_vector);
    RUN(traced_run_pinned_override_vector);
    RUN(traced_run_reasons_and_item_events);
    RUN(overflow_strategies);
    RUN(token_overflow);
    RUN(knapsack_table_limit);
    RUN(count_quotas);
    RUN(every_builtin_scorer_and_slicer_runs);
    RUN(custom_scorer_sees_item_views);
    RUN(custom_batch_scorer_and_failures);
    RUN(custom_item_scorer);
    RUN(custom_slicer_and_placer);
    RUN(failed_custom_constructors_leave_user_data_to_the_caller);
    RUN(composite_keeps_children_alive);
    RUN(output_struct_size_rule);
    RUN(stages_alone);
    RUN(faulty_scorer_statuses);
    RUN(invalid_policy_json);
    RUN(every_status_was_produced);
    return tf_finish();
}
