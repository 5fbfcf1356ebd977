// The C test of prefix runs and states (docs/prefix-cache.md): Hold keeping the previous
// window and appending, Measure reporting full reuse of the same input, a caching rule's
// alignment, an edit found as the first difference, both serialised forms and their
// damage, conversation keys, and every argument error. Built and run by tests/c/run.sh
// (plain, under ASan+UBSan, and under valgrind).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

static ctxpack_pipeline *recency_greedy(void) {
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_scorer_new_recency(&sc, NULL);
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline *p = NULL;
    ctxpack_pipeline_new(sc, sl, pl, NULL, &p, NULL);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    return p;
}

// `n` messages of 20 tokens, one a day; content "message <i>" (with `edit` appended to
// message 0 when not NULL).
static ctxpack_items *messages(int n, const char *edit) {
    static char text[16][40];
    ctxpack_item_desc d[16];
    for (int i = 0; i < n && i < 16; i++) {
        snprintf(text[i], sizeof text[i], "message %d%s", i, (i == 0 && edit) ? edit : "");
        d[i] = desc_at(text[i], 20, i);
    }
    return items_of(d, (size_t)n);
}

typedef struct {
    ctxpack_result *result;
    ctxpack_prefix_state *state;
    ctxpack_prefix_reuse reuse;
} turn_t;

static ctxpack_status run_turn(ctxpack_pipeline *p, ctxpack_items *items, ctxpack_budget *b,
                               const ctxpack_prefix_options *o,
                               const ctxpack_prefix_state *previous, turn_t *t,
                               ctxpack_error **err) {
    t->result = NULL;
    t->state = NULL;
    ctxpack_prefix_reuse r = CTXPACK_PREFIX_REUSE_INIT;
    t->reuse = r;
    ctxpack_status s = ctxpack_pipeline_run_prefix(p, items, b, NULL, o, previous, &t->result,
                                                   &t->state, err);
    if (s == CTXPACK_OK) s = ctxpack_result_prefix_reuse(t->result, &t->reuse, NULL);
    return s;
}

static void free_turn(turn_t *t) {
    ctxpack_result_free(t->result);
    ctxpack_prefix_state_free(t->state);
}

TEST(hold_keeps_the_window_and_appends) {
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_items *four = messages(4, NULL), *five = messages(5, NULL);
    REQUIRE(p && b && four && five);
    // NULL options: Hold with the defaults. No previous state: the turn anchors.
    turn_t t1, t2;
    REQUIRE_OK(run_turn(p, four, b, NULL, NULL, &t1, NULL));
    CHECK(t1.reuse.mode == CTXPACK_PREFIX_MODE_HOLD);
    CHECK(t1.reuse.outcome == CTXPACK_TURN_OUTCOME_ANCHORED);
    CHECK(t1.reuse.turn == 1);
    CHECK(t1.reuse.previous_entries == 0);
    CHECK(t1.reuse.has_difference == 0);
    CHECK(t1.reuse.difference_item == SIZE_MAX);
    uint64_t turn = 0;
    size_t entries = 0;
    int64_t tokens = 0;
    CHECK_OK(ctxpack_prefix_state_info(t1.state, &turn, &entries, &tokens));
    // The four messages (80 tokens) fit the low watermark (80 % of 100).
    CHECK(turn == 1 && entries == 4);
    CHECK_I64(tokens, 80);
    CHECK(t1.reuse.window_entries == entries);

    // Turn 2: one more message; the previous window stays first, the new one is appended.
    REQUIRE_OK(run_turn(p, five, b, NULL, t1.state, &t2, NULL));
    CHECK(t2.reuse.outcome == CTXPACK_TURN_OUTCOME_HELD);
    CHECK(t2.reuse.turn == 2);
    CHECK(t2.reuse.previous_entries == 4);
    CHECK(t2.reuse.kept_entries == 4);
    CHECK_I64(t2.reuse.kept_tokens, 80);
    CHECK_I64(t2.reuse.cached_tokens, 80);  // no caching rule: every kept token
    CHECK(t2.reuse.has_difference == 0);
    const size_t *i1 = NULL, *i2 = NULL;
    size_t n1 = 0, n2 = 0;
    CHECK_OK(ctxpack_result_indices(t1.result, &i1, &n1));
    CHECK_OK(ctxpack_result_indices(t2.result, &i2, &n2));
    REQUIRE(n1 == 4 && n2 == 5);
    CHECK(memcmp(i1, i2, n1 * sizeof *i1) == 0);
    CHECK(i2[4] == 4);
    // The reuse report's JSON form names the outcome.
    ctxpack_string *json = NULL;
    ctxpack_str text = {NULL, 0};
    REQUIRE_OK(ctxpack_result_prefix_reuse_json(t2.result, &json, NULL));
    CHECK_OK(ctxpack_string_value(json, &text));
    CHECK(tf_str_contains(text, "\"outcome\":\"held\""));
    CHECK(text.ptr[text.len] == '\0');
    ctxpack_string_free(json);
    free_turn(&t1);
    free_turn(&t2);
    ctxpack_items_free(four);
    ctxpack_items_free(five);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(measure_the_same_input_twice_is_full_reuse) {
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_budget *b = budget_of(100, 60);
    ctxpack_items *items = messages(6, NULL);
    REQUIRE(p && b && items);
    ctxpack_prefix_options o = CTXPACK_PREFIX_OPTIONS_INIT;
    o.mode = CTXPACK_PREFIX_MODE_MEASURE;
    o.cache_rule = S("blocks:32");
    turn_t t1, t2;
    REQUIRE_OK(run_turn(p, items, b, &o, NULL, &t1, NULL));
    CHECK(t1.reuse.outcome == CTXPACK_TURN_OUTCOME_MEASURED);
    REQUIRE_OK(run_turn(p, items, b, &o, t1.state, &t2, NULL));
    CHECK(t2.reuse.outcome == CTXPACK_TURN_OUTCOME_MEASURED);
    // Three messages of 20 tokens fit the target of 60; all are kept again.
    CHECK(t2.reuse.previous_entries == 3 && t2.reuse.kept_entries == 3);
    CHECK_I64(t2.reuse.kept_tokens, 60);
    // 32-token blocks: one whole block of the 60 kept tokens.
    CHECK_I64(t2.reuse.cached_tokens, 32);
    CHECK(t2.reuse.has_difference == 0);
    CHECK_F64(t2.reuse.value_given_up, 0.0);
    free_turn(&t1);
    free_turn(&t2);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(an_edit_is_the_first_difference) {
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_budget *b = budget_of(1000, 1000);
    ctxpack_items *before = messages(4, NULL), *after = messages(4, "!");
    REQUIRE(p && b && before && after);
    ctxpack_prefix_options o = CTXPACK_PREFIX_OPTIONS_INIT;
    o.mode = CTXPACK_PREFIX_MODE_MEASURE;
    turn_t t1, t2;
    REQUIRE_OK(run_turn(p, before, b, &o, NULL, &t1, NULL));
    REQUIRE_OK(run_turn(p, after, b, &o, t1.state, &t2, NULL));
    CHECK(t2.reuse.has_difference == 1);
    CHECK(t2.reuse.difference_reason == CTXPACK_DIFFERENCE_REASON_EDITED);
    CHECK(t2.reuse.difference_index == 0);
    CHECK(t2.reuse.difference_item == 0);
    CHECK(t2.reuse.difference_previous_position == 0);
    CHECK(t2.reuse.kept_entries == 0);
    CHECK_I64(t2.reuse.kept_tokens, 0);
    free_turn(&t1);
    free_turn(&t2);
    ctxpack_items_free(before);
    ctxpack_items_free(after);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(both_forms_round_trip_and_damage_is_refused) {
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_items *items = messages(3, NULL);
    REQUIRE(p && b && items);
    turn_t t;
    REQUIRE_OK(run_turn(p, items, b, NULL, NULL, &t, NULL));
    size_t len = 0;
    CHECK_OK(ctxpack_prefix_state_to_bytes(t.state, NULL, 0, &len));
    REQUIRE(len > 8);
    uint8_t *bytes = malloc(len);
    REQUIRE(bytes);
    size_t len2 = 0;
    CHECK_STATUS(ctxpack_prefix_state_to_bytes(t.state, bytes, len - 1, &len2),
                 CTXPACK_OUT_OF_RANGE);
    CHECK(len2 == len);
    CHECK_OK(ctxpack_prefix_state_to_bytes(t.state, bytes, len, &len2));
    CHECK(memcmp(bytes, "CXPS", 4) == 0);

    // Binary: read back, written again identically.
    ctxpack_prefix_state *back = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_prefix_state_from_bytes(bytes, len, &back, &err));
    uint8_t *again = malloc(len);
    REQUIRE(again);
    CHECK_OK(ctxpack_prefix_state_to_bytes(back, again, len, &len2));
    CHECK(len2 == len && memcmp(bytes, again, len) == 0);
    free(again);
    ctxpack_prefix_state_free(back);

    // JSON: read back to the same bytes.
    ctxpack_string *json = NULL;
    ctxpack_str text = {NULL, 0};
    REQUIRE_OK(ctxpack_prefix_state_json(t.state, &json, NULL));
    CHECK_OK(ctxpack_string_value(json, &text));
    CHECK(text.ptr[text.len] == '\0');
    REQUIRE_OK(ctxpack_prefix_state_from_json(text, &back, NULL));
    again = malloc(len);
    REQUIRE(again);
    CHECK_OK(ctxpack_prefix_state_to_bytes(back, again, len, &len2));
    CHECK(len2 == len && memcmp(bytes, again, len) == 0);
    free(again);
    ctxpack_prefix_state_free(back);
    ctxpack_string_free(json);

    // Every truncation and every single bit flip is refused.
    for (size_t cut = 0; cut < len; cut++) {
        back = (ctxpack_prefix_state *)0x1;
        CHECK_STATUS(ctxpack_prefix_state_from_bytes(bytes, cut, &back, NULL),
                     CTXPACK_INVALID_STATE);
        CHECK(back == NULL);
    }
    for (size_t bit = 0; bit < len * 8; bit++) {
        bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK_STATUS(ctxpack_prefix_state_from_bytes(bytes, len, &back, NULL),
                     CTXPACK_INVALID_STATE);
        bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK_STATUS(ctxpack_prefix_state_from_bytes(bytes, len - 1, &back, &err),
                 CTXPACK_INVALID_STATE);
    CHECK_ERROR(err, CTXPACK_INVALID_STATE, "truncated or corrupt");
    bytes[len - 5] ^= 1;
    CHECK_STATUS(ctxpack_prefix_state_from_bytes(bytes, len, &back, &err), CTXPACK_INVALID_STATE);
    CHECK_ERROR(err, CTXPACK_INVALID_STATE, "checksum mismatch");
    bytes[len - 5] ^= 1;
    bytes[4] = 2;  // a newer format version
    CHECK_STATUS(ctxpack_prefix_state_from_bytes(bytes, len, &back, &err), CTXPACK_INVALID_STATE);
    CHECK_ERROR(err, CTXPACK_INVALID_STATE, "format version 2 is not supported");
    CHECK_STATUS(ctxpack_prefix_state_from_json(S("{\"format\":1}"), &back, &err),
                 CTXPACK_INVALID_STATE);
    CHECK_ERROR(err, CTXPACK_INVALID_STATE, "invalid prefix state");
    CHECK_STATUS(ctxpack_prefix_state_from_json(S("{\"form\xff"), &back, &err),
                 CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "json");
    CHECK_STATUS(ctxpack_prefix_state_from_bytes(NULL, 3, &back, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "bytes");
    CHECK_STATUS(ctxpack_prefix_state_from_bytes(bytes, len, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    free(bytes);
    free_turn(&t);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(a_state_of_another_conversation_is_refused) {
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_items *items = messages(3, NULL);
    REQUIRE(p && b && items);
    ctxpack_prefix_options o = CTXPACK_PREFIX_OPTIONS_INIT;
    o.conversation = (ctxpack_str){"conv\0one", 8};  // any bytes, NUL included
    turn_t t1, t2;
    REQUIRE_OK(run_turn(p, items, b, &o, NULL, &t1, NULL));
    REQUIRE_OK(run_turn(p, items, b, &o, t1.state, &t2, NULL));
    CHECK(t2.reuse.outcome == CTXPACK_TURN_OUTCOME_HELD);
    free_turn(&t2);
    o.conversation = (ctxpack_str){"conv\0two", 8};
    ctxpack_error *err = NULL;
    CHECK_STATUS(run_turn(p, items, b, &o, t1.state, &t2, &err), CTXPACK_INVALID_STATE);
    CHECK(t2.result == NULL && t2.state == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_STATE, "another conversation");
    o.conversation = (ctxpack_str){NULL, 0};
    CHECK_STATUS(run_turn(p, items, b, &o, t1.state, &t2, &err), CTXPACK_INVALID_STATE);
    CHECK_ERROR(err, CTXPACK_INVALID_STATE, "give the same key");
    free_turn(&t1);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(argument_errors) {
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_items *items = messages(3, NULL);
    REQUIRE(p && b && items);
    ctxpack_result *r = NULL;
    ctxpack_prefix_state *st = NULL;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, NULL, NULL, &r, NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_state");
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, NULL, NULL, NULL, &st, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, NULL, b, NULL, NULL, NULL, &r, &st, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK(r == NULL && st == NULL);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "items");
    // A handle of another type where the previous state goes.
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, NULL,
                                             (const ctxpack_prefix_state *)items, &r, &st, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "previous must be a ctxpack_prefix_state");

    ctxpack_prefix_options o = CTXPACK_PREFIX_OPTIONS_INIT;
    o.mode = 7;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "prefix_options.mode is 7");
    o.mode = CTXPACK_PREFIX_MODE_HOLD;
    o.custom_thresholds = 2;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "custom_thresholds is 2");
    o.custom_thresholds = 1;
    o.max_value_loss = 1.5;
    o.low_watermark = 0.5;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "max_value_loss must be in [0, 1], got 1.5");
    o.max_value_loss = 0.1;
    o.low_watermark = 0.0;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "low_watermark must be in (0, 1]");
    // With custom_thresholds 0 the two fields are ignored.
    o.custom_thresholds = 0;
    REQUIRE_OK(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err));
    ctxpack_result_free(r);
    ctxpack_prefix_state_free(st);
    o.cache_rule = S("gemini");
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "cache_rule is 'gemini'");
    o.cache_rule = S("blocks:0");
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "cache_rule");
    o.cache_rule = S("");
    o.reserved[1] = 1;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "prefix_options.reserved");
    o.reserved[1] = 0;
    o.struct_size = 8;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, NULL, &o, NULL, &r, &st, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_prefix_options.struct_size is 8");
    ctxpack_prefix_options z;
    CHECK_OK(ctxpack_prefix_options_init(&z, sizeof z));
    CHECK(z.struct_size == sizeof z && z.mode == 0 && z.custom_thresholds == 0);
    ctxpack_prefix_reuse zr;
    CHECK_OK(ctxpack_prefix_reuse_init(&zr, sizeof zr));
    CHECK(zr.struct_size == sizeof zr && zr.has_difference == 0);
    CHECK_STATUS(ctxpack_prefix_reuse_init(&zr, 4), CTXPACK_INVALID_ARGUMENT);

    // A plain run has no reuse report.
    ctxpack_run_options ro = CTXPACK_RUN_OPTIONS_INIT;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, b, &ro, &r, NULL));
    ctxpack_prefix_reuse reuse = CTXPACK_PREFIX_REUSE_INIT;
    CHECK_STATUS(ctxpack_result_prefix_reuse(r, &reuse, &err), CTXPACK_NO_REPORT);
    CHECK_ERROR(err, CTXPACK_NO_REPORT, "no reuse report");
    ctxpack_string *json = NULL;
    CHECK_STATUS(ctxpack_result_prefix_reuse_json(r, &json, NULL), CTXPACK_NO_REPORT);
    CHECK(json == NULL);
    ctxpack_result_free(r);
    reuse.struct_size = 4;
    CHECK_STATUS(ctxpack_result_prefix_reuse(NULL, &reuse, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_prefix_state_info(NULL, NULL, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_prefix_state_to_bytes((const ctxpack_prefix_state *)items, NULL, 0, NULL),
                 CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_prefix_state_free(NULL);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

int main(void) {
    RUN(hold_keeps_the_window_and_appends);
    RUN(measure_the_same_input_twice_is_full_reuse);
    RUN(an_edit_is_the_first_difference);
    RUN(both_forms_round_trip_and_damage_is_refused);
    RUN(a_state_of_another_conversation_is_refused);
    RUN(argument_errors);
    return tf_finish();
}
