// The C ABI under hostile use (issue 13): one group of regression tests per defect the
// hostile review found: allocations that aborted the host, freeing or clearing during a
// run, flag bytes other than 0/1, non-finite scores in the one-stage functions, messages
// that named the wrong position, results that depended on the caller passing the right
// budget, budgets that can never select anything, tracing that changed the outcome, and
// strings without a NUL terminator.
// Built and run by tests/c/run.sh (plain, under ASan+UBSan, and under valgrind).
#include <stdint.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// Test hooks of the `ffi-test-hooks` feature (not in the public header).
ctxpack_status ctxpack_test_items_capacity(const ctxpack_items *items, size_t *out);
void ctxpack_test_set_allocation_limit(uint64_t bytes);

#define OOM ((ctxpack_status)16)

// ---------------------------------------------------------------- helpers

static ctxpack_pipeline *pipeline_from(ctxpack_scorer *sc, ctxpack_slicer *sl,
                                       ctxpack_placer *pl, int32_t strategy) {
    ctxpack_pipeline_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.deduplication = true;
    o.overflow_strategy = strategy;
    ctxpack_pipeline *p = NULL;
    ctxpack_pipeline_new(sc, sl, pl, &o, &p, NULL);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    return p;
}

// A pipeline of the given scorer, greedy slicer and chronological placer.
static ctxpack_pipeline *with_scorer(ctxpack_scorer *sc) {
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    return pipeline_from(sc, sl, pl, CTXPACK_OVERFLOW_STRATEGY_THROW);
}

static ctxpack_pipeline *recency_greedy(void) {
    ctxpack_scorer *sc = NULL;
    ctxpack_scorer_new_recency(&sc, NULL);
    return with_scorer(sc);
}

static ctxpack_status run_traced(const ctxpack_pipeline *p, const ctxpack_items *items,
                                 const ctxpack_budget *b, int32_t trace, ctxpack_result **out,
                                 ctxpack_error **err) {
    ctxpack_run_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.trace_detail = trace;
    return ctxpack_pipeline_run(p, items, b, &o, out, err);
}

static size_t items_len(const ctxpack_items *items) {
    size_t n = SIZE_MAX;
    ctxpack_items_len(items, &n);
    return n;
}

static size_t capacity_of(const ctxpack_items *items) {
    size_t n = SIZE_MAX;
    ctxpack_test_items_capacity(items, &n);
    return n;
}

static int nul_terminated(ctxpack_str s) {
    return s.ptr != NULL && s.ptr[s.len] == '\0';
}

// ---------------------------------------------------------------- 1. out of memory

TEST(oom_knapsack_without_a_table_limit_fails_cleanly) {
    // table_limit_bytes = UINT64_MAX ("no limit") with a budget of 10^12 tokens: the DP row
    // alone (32-bit values, as the two scores' values fit) needs 4 TB. An allocation this
    // size used to abort the host ("memory allocation of 8000000000008 bytes failed", when
    // the row held 64-bit values).
    ctxpack_item_desc d[2] = {desc("a", INT64_C(600000000000)), desc("b", INT64_C(600000000000))};
    d[0].future_relevance_hint = 0.9;
    d[0].has_future_relevance_hint = true;
    d[1].future_relevance_hint = 0.8;
    d[1].has_future_relevance_hint = true;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(INT64_C(1000000000000), INT64_C(1000000000000));
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL, *knap = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_reflexive(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_knapsack(1, UINT64_MAX, &sl, NULL));
    REQUIRE_OK(ctxpack_slicer_new_knapsack(1, UINT64_MAX, &knap, NULL));
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    ctxpack_pipeline *p = pipeline_from(sc, sl, pl, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE(p != NULL);
    CHECK_STATUS(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, &err), OOM);
    CHECK_ERROR(err, OOM, "out of memory: the knapsack DP row needs 4000000000004 bytes");
    CHECK(r == NULL);
    // The same through the slicer alone.
    const double scores[2] = {0.9, 0.8};
    ctxpack_slice_result *sr = NULL;
    CHECK_STATUS(ctxpack_slicer_slice(knap, items, scores, 2, b, &sr, &err), OOM);
    CHECK_ERROR(err, OOM, "bytes");
    CHECK(sr == NULL);
    // The library is still usable.
    ctxpack_budget *small = budget_of(1000, 1000);
    CHECK_OK(ctxpack_slicer_slice(knap, items, scores, 2, small, &sr, NULL));
    ctxpack_slice_result_free(sr);
    ctxpack_budget_free(small);
    ctxpack_slicer_free(knap);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(oom_push_many_of_an_impossible_count) {
    // 2^40 descriptors cannot be held in memory: the reservation fails before anything is
    // read, with a message naming the size, and the list is unchanged.
    ctxpack_item_desc d[1] = {desc("a", 1)};
    ctxpack_items *items = items_of(d, 1);
    ctxpack_error *err = NULL;
    REQUIRE(items != NULL);
    size_t cap = capacity_of(items);
    CHECK_STATUS(ctxpack_items_push_many(items, d, (size_t)1 << 40, &err), OOM);
    CHECK_ERROR(err, OOM, "out of memory: 1099511627777 items needs");
    CHECK_I64(items_len(items), 1);
    CHECK_I64(capacity_of(items), cap);
    ctxpack_items_free(items);
}

TEST(failed_push_many_and_clear_give_back_what_was_reserved) {
    // A first descriptor that is invalid, with a large count: nothing may stay reserved.
    ctxpack_item_desc bad[1] = {desc("", 1)};
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_STATUS(ctxpack_items_push_many(items, bad, (size_t)1 << 20, &err), CTXPACK_EMPTY_CONTENT);
    CHECK_ERROR(err, CTXPACK_EMPTY_CONTENT, "item 0: content must be non-empty");
    CHECK_I64(capacity_of(items), 0);
    // After some items: a failure keeps the list and gives back the extra room.
    ctxpack_item_desc d[3] = {desc("a", 1), desc("b", 1), desc("c", 1)};
    REQUIRE_OK(ctxpack_items_push_many(items, d, 3, NULL));
    size_t cap = capacity_of(items);
    CHECK_STATUS(ctxpack_items_push_many(items, bad, (size_t)1 << 20, NULL), CTXPACK_EMPTY_CONTENT);
    CHECK_I64(items_len(items), 3);
    CHECK_I64(capacity_of(items), cap);
    // Clearing releases the storage.
    CHECK_OK(ctxpack_items_clear(items));
    CHECK_I64(items_len(items), 0);
    CHECK_I64(capacity_of(items), 0);
    ctxpack_items_free(items);
}

TEST(oom_tag_and_metadata_counts) {
    // A tag count no memory can back used to abort in a reservation before any tag was
    // read.
    ctxpack_str tag = S("t");
    ctxpack_metadata_entry md = {S("k"), S("v")};
    ctxpack_item_desc d = desc("x", 1);
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    d.tags = &tag;
    d.tag_count = (size_t)1 << 40;
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), OOM);
    CHECK_ERROR(err, OOM, "tags needs");
    d.tag_count = 1;
    d.metadata = &md;
    d.metadata_count = 1;
    CHECK_OK(ctxpack_items_push(items, &d, NULL));
    CHECK_I64(items_len(items), 1);
    ctxpack_items_free(items);
}

TEST(oom_copies_and_report_json_under_an_allocation_ceiling) {
    // With a 1 MiB ceiling (test hook), a 2 MiB content cannot be copied, and a report
    // whose JSON is larger than the ceiling cannot be written; both are statuses, and
    // both work once the ceiling is lifted.
    size_t big = (size_t)2 << 20;
    char *text = (char *)malloc(big);
    REQUIRE(text != NULL);
    memset(text, 'x', big);
    ctxpack_item_desc d = desc("x", 1);
    d.content.ptr = text;
    d.content.len = big;
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    ctxpack_test_set_allocation_limit((uint64_t)1 << 20);
    CHECK_STATUS(ctxpack_items_push(items, &d, &err), OOM);
    CHECK_ERROR(err, OOM, "content needs 2097152 bytes");
    CHECK_I64(items_len(items), 0);
    ctxpack_test_set_allocation_limit(UINT64_MAX);
    REQUIRE_OK(ctxpack_items_push(items, &d, NULL));

    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_result *r = NULL;
    REQUIRE(b && p);
    REQUIRE_OK(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_STAGE, &r, NULL));
    ctxpack_str json = {NULL, 0};
    ctxpack_test_set_allocation_limit((uint64_t)1 << 20);
    CHECK_STATUS(ctxpack_result_report_json(r, &json), OOM);
    ctxpack_test_set_allocation_limit(UINT64_MAX);
    CHECK_OK(ctxpack_result_report_json(r, &json));
    CHECK(json.len > big && nul_terminated(json));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
    free(text);
}

// ---------------------------------------------------------------- 2. free / clear during a run

// What a hostile callback does while a run is in progress.
enum {
    FREE_PIPELINE = 1,
    CLEAR_ITEMS = 2,
    FREE_ITEMS = 4,
    PUSH_ITEM = 8,
    FREE_BUDGET = 16,
    FREE_OWN_COMPONENT = 32,
    RERUN_FREED_PIPELINE = 64,
};

typedef struct {
    int actions;
    int calls;
    int destroyed;
    int destroyed_during_call;  // destroy ran while this callback was running
    int called_after_destroy;   // a callback ran after its destroy
    int in_call;
    ctxpack_pipeline *pipeline;
    ctxpack_items *items;
    ctxpack_budget *budget;
    ctxpack_scorer *scorer;
    ctxpack_slicer *slicer;
    ctxpack_placer *placer;
    ctxpack_status rerun_status;
    int rerun_says_freed;
} hostile;

static void hostile_destroy(void *user_data) {
    hostile *h = (hostile *)user_data;
    h->destroyed++;
    if (h->in_call) h->destroyed_during_call++;
}

// Does the hostile actions once (on the first call).
static void act(hostile *h) {
    h->calls++;
    if (h->calls > 1) return;
    if (h->actions & FREE_PIPELINE) {
        ctxpack_pipeline_free(h->pipeline);
    }
    if (h->actions & RERUN_FREED_PIPELINE) {
        // The handle was freed by the caller, but the running call still holds it: using
        // it again is reported as a freed handle.
        ctxpack_result *r = NULL;
        ctxpack_error *err = NULL;
        h->rerun_status = ctxpack_pipeline_run(h->pipeline, h->items, h->budget, NULL, &r, &err);
        h->rerun_says_freed = err != NULL && tf_str_contains(ctxpack_error_message(err), "freed");
        ctxpack_error_free(err);
        ctxpack_result_free(r);
    }
    if (h->actions & PUSH_ITEM) {
        ctxpack_item_desc d = desc("pushed during the run", 1);
        ctxpack_items_push(h->items, &d, NULL);
    }
    if (h->actions & CLEAR_ITEMS) {
        ctxpack_items_clear(h->items);
    }
    if (h->actions & FREE_ITEMS) {
        ctxpack_items_free(h->items);
    }
    if (h->actions & FREE_BUDGET) {
        ctxpack_budget_free(h->budget);
    }
    if (h->actions & FREE_OWN_COMPONENT) {
        ctxpack_scorer_free(h->scorer);
        ctxpack_slicer_free(h->slicer);
        ctxpack_placer_free(h->placer);
    }
}

static int hostile_score(void *user_data, const ctxpack_item_view *items, size_t count,
                         double *out, ctxpack_callback_error *error) {
    hostile *h = (hostile *)user_data;
    (void)error;
    h->in_call = 1;
    if (h->destroyed) h->called_after_destroy++;
    act(h);
    for (size_t i = 0; i < count; i++) {
        // Read every view after the hostile actions: they must still be valid.
        out[i] = (double)items[i].tokens / 100.0 + (double)items[i].content.len / 1e6;
    }
    h->in_call = 0;
    return 0;
}

static int hostile_slice(void *user_data, const ctxpack_item_view *items, const double *scores,
                         size_t count, int64_t target_tokens, int64_t max_tokens, size_t *out,
                         size_t *out_count, ctxpack_callback_error *error) {
    hostile *h = (hostile *)user_data;
    int64_t used = 0;
    size_t k = 0;
    (void)scores;
    (void)max_tokens;
    (void)error;
    h->in_call = 1;
    if (h->destroyed) h->called_after_destroy++;
    act(h);
    for (size_t i = 0; i < count; i++) {
        if (used + items[i].tokens <= target_tokens && items[i].content.len > 0) {
            used += items[i].tokens;
            out[k++] = i;
        }
    }
    *out_count = k;
    h->in_call = 0;
    return 0;
}

static int hostile_place(void *user_data, const ctxpack_item_view *items, const double *scores,
                         size_t count, size_t *out, ctxpack_callback_error *error) {
    hostile *h = (hostile *)user_data;
    (void)scores;
    (void)error;
    h->in_call = 1;
    if (h->destroyed) h->called_after_destroy++;
    act(h);
    size_t bytes = 0;
    for (size_t i = 0; i < count; i++) {
        bytes += items[i].content.len;  // read every view after the hostile actions
        out[i] = i;
    }
    h->in_call = 0;
    if (bytes == 0 && count > 0) return 1;
    return 0;
}

static void hostile_overflow(void *user_data, int64_t tokens_over_budget, const size_t *items,
                             size_t count) {
    hostile *h = (hostile *)user_data;
    (void)tokens_over_budget;
    (void)items;
    (void)count;
    act(h);
}

// Three items (40, 30, 20 tokens) and a budget of 100.
static ctxpack_items *three_items(void) {
    ctxpack_item_desc d[3] = {desc_at("a", 40, 1), desc_at("b", 30, 2), desc_at("c", 20, 3)};
    return items_of(d, 3);
}

// Builds a pipeline whose scorer, slicer and placer are all hostile with `h` (one of
// them acting: `stage` 0 scorer, 1 slicer, 2 placer), runs it and checks the run.
static void run_hostile(int stage, int actions) {
    hostile h, quiet;
    memset(&h, 0, sizeof h);
    memset(&quiet, 0, sizeof quiet);
    h.actions = actions;
    h.items = three_items();
    h.budget = budget_of(100, 100);
    REQUIRE(h.items && h.budget);
    hostile *who[3] = {&quiet, &quiet, &quiet};
    who[stage] = &h;
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(hostile_score, who[0], hostile_destroy, &sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_custom(hostile_slice, who[1], hostile_destroy, &sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_custom(hostile_place, who[2], hostile_destroy, &pl, NULL));
    h.pipeline = pipeline_from(sc, sl, pl, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(h.pipeline != NULL);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    CHECK_OK(ctxpack_pipeline_run(h.pipeline, h.items, h.budget, NULL, &r, &err));
    if (err) CHECK_ERROR(err, CTXPACK_OK, "");
    CHECK_I64(h.calls, 1);
    CHECK_I64(h.destroyed_during_call, 0);
    CHECK_I64(h.called_after_destroy + quiet.called_after_destroy, 0);
    const size_t *idx = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_indices(r, &idx, &n));
    CHECK_I64(n, 3);  // the run saw the three items it started with
    for (size_t i = 0; i < n; i++) CHECK(idx[i] < 3);
    ctxpack_result_free(r);
    if (actions & RERUN_FREED_PIPELINE) {
        CHECK_STATUS(h.rerun_status, CTXPACK_WRONG_HANDLE_TYPE);
        CHECK(h.rerun_says_freed);
    }
    if (actions & FREE_PIPELINE) {
        // Every destroy ran exactly once, after the run returned.
        CHECK_I64(h.destroyed + quiet.destroyed, 3);
    } else {
        CHECK_I64(h.destroyed + quiet.destroyed, 0);
        ctxpack_pipeline_free(h.pipeline);
        CHECK_I64(h.destroyed + quiet.destroyed, 3);
    }
    if ((actions & PUSH_ITEM) && !(actions & CLEAR_ITEMS)) CHECK_I64(items_len(h.items), 4);
    if (actions & CLEAR_ITEMS) CHECK_I64(items_len(h.items), 0);
    if (!(actions & FREE_ITEMS)) ctxpack_items_free(h.items);
    if (!(actions & FREE_BUDGET)) ctxpack_budget_free(h.budget);
}

TEST(free_pipeline_from_each_callback) {
    for (int stage = 0; stage < 3; stage++) run_hostile(stage, FREE_PIPELINE);
}

TEST(clear_push_and_free_items_from_each_callback) {
    for (int stage = 0; stage < 3; stage++) {
        run_hostile(stage, CLEAR_ITEMS);
        run_hostile(stage, PUSH_ITEM);
        run_hostile(stage, PUSH_ITEM | CLEAR_ITEMS);
        run_hostile(stage, FREE_ITEMS);
    }
}

TEST(free_everything_from_a_callback) {
    for (int stage = 0; stage < 3; stage++) {
        run_hostile(stage, FREE_PIPELINE | FREE_ITEMS | FREE_BUDGET);
    }
}

TEST(a_handle_freed_during_a_run_is_reported_as_freed) {
    run_hostile(0, FREE_PIPELINE | RERUN_FREED_PIPELINE);
    run_hostile(1, FREE_PIPELINE | RERUN_FREED_PIPELINE);
}

TEST(a_released_handle_is_usually_reported_as_freed) {
    // After the last reference is gone the memory belongs to the allocator again; the tag
    // sits past the allocator's free-list links, so it usually survives. This reads freed
    // memory on purpose, which valgrind reports: it is skipped there.
    if (getenv("CTXPACK_TEST_VALGRIND") != NULL) return;
    ctxpack_items *items = three_items();
    ctxpack_pipeline *p = recency_greedy();
    REQUIRE(items && p);
    ctxpack_items_free(items);
    ctxpack_pipeline_free(p);
    size_t n = 0;
    CHECK_STATUS(ctxpack_items_len(items, &n), CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_error *err = NULL;
    ctxpack_result *r = NULL;
    CHECK_STATUS(ctxpack_pipeline_run(p, NULL, NULL, NULL, &r, &err), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE,
                "pipeline must be a ctxpack_pipeline handle, got a freed handle");
    // A second free is a no-op.
    ctxpack_pipeline_free(p);
}

TEST(free_from_the_overflow_callback) {
    // A Proceed run over target: the overflow callback frees the pipeline, the items and
    // the budget; the placer (a custom one, destroyed once afterwards) still runs.
    hostile h, quiet;
    memset(&h, 0, sizeof h);
    memset(&quiet, 0, sizeof quiet);
    h.actions = FREE_PIPELINE | FREE_ITEMS | FREE_BUDGET;
    ctxpack_item_desc d[2] = {desc("p", 80), desc_at("q", 10, 1)};
    d[0].pinned = true;
    h.items = items_of(d, 2);
    h.budget = budget_of(100, 50);
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    REQUIRE(h.items && h.budget);
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_custom(hostile_place, &quiet, hostile_destroy, &pl, NULL));
    h.pipeline = pipeline_from(sc, sl, pl, CTXPACK_OVERFLOW_STRATEGY_PROCEED);
    REQUIRE(h.pipeline != NULL);
    ctxpack_run_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.on_overflow = hostile_overflow;
    o.overflow_user_data = &h;
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    CHECK_OK(ctxpack_pipeline_run(h.pipeline, h.items, h.budget, &o, &r, &err));
    if (err) CHECK_ERROR(err, CTXPACK_OK, "");
    CHECK_I64(h.calls, 1);
    CHECK_I64(quiet.destroyed, 1);
    CHECK_I64(quiet.destroyed_during_call, 0);
    CHECK_I64(quiet.called_after_destroy, 0);
    bool present = false;
    int64_t over = 0;
    const size_t *merged = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_overflow(r, &present, &over, &merged, &n));
    CHECK(present && over == 30 && n == 1);
    ctxpack_result_free(r);
}

// One stage alone: the component handle and the item list freed by the callback.
TEST(free_during_the_one_stage_functions) {
    ctxpack_items *items = three_items();
    ctxpack_budget *b = budget_of(100, 100);
    REQUIRE(items && b);
    const double scores[3] = {0.3, 0.2, 0.1};

    hostile h;
    memset(&h, 0, sizeof h);
    h.actions = FREE_OWN_COMPONENT | FREE_ITEMS;
    h.items = three_items();
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(hostile_score, &h, hostile_destroy, &h.scorer, NULL));
    double out[3] = {0, 0, 0};
    CHECK_OK(ctxpack_scorer_score(h.scorer, h.items, out, 3, NULL));
    CHECK_I64(h.destroyed, 1);
    CHECK_I64(h.destroyed_during_call, 0);

    memset(&h, 0, sizeof h);
    h.actions = FREE_OWN_COMPONENT | FREE_ITEMS | FREE_BUDGET;
    h.items = three_items();
    h.budget = budget_of(100, 100);
    REQUIRE_OK(ctxpack_slicer_new_custom(hostile_slice, &h, hostile_destroy, &h.slicer, NULL));
    ctxpack_slice_result *sr = NULL;
    CHECK_OK(ctxpack_slicer_slice(h.slicer, h.items, scores, 3, h.budget, &sr, NULL));
    ctxpack_slice_result_free(sr);
    CHECK_I64(h.destroyed, 1);
    CHECK_I64(h.destroyed_during_call, 0);

    memset(&h, 0, sizeof h);
    h.actions = FREE_OWN_COMPONENT | FREE_ITEMS;
    h.items = three_items();
    REQUIRE_OK(ctxpack_placer_new_custom(hostile_place, &h, hostile_destroy, &h.placer, NULL));
    size_t order[3];
    CHECK_OK(ctxpack_placer_place(h.placer, h.items, scores, 3, order, NULL));
    CHECK_I64(h.destroyed, 1);
    CHECK_I64(h.destroyed_during_call, 0);

    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Dry run, budget simulation and sensitivity with a scorer that frees the pipeline and
// the items on its first call.
TEST(free_during_analytics) {
    for (int which = 0; which < 4; which++) {
        hostile h;
        memset(&h, 0, sizeof h);
        h.actions = FREE_PIPELINE | FREE_ITEMS;
        h.items = three_items();
        h.budget = budget_of(100, 100);
        ctxpack_scorer *sc = NULL;
        REQUIRE_OK(ctxpack_scorer_new_custom_batch(hostile_score, &h, hostile_destroy, &sc, NULL));
        h.pipeline = with_scorer(sc);
        REQUIRE(h.pipeline && h.items && h.budget);
        ctxpack_result *r = NULL;
        ctxpack_error *err = NULL;
        size_t positions[3], count = 0;
        bool found = false;
        int64_t min_budget = 0;
        ctxpack_pipeline *other = recency_greedy();
        ctxpack_sensitivity *s = NULL;
        ctxpack_sensitivity_variant v[2] = {{S("hostile"), h.pipeline}, {S("other"), other}};
        switch (which) {
            case 0:
                CHECK_OK(ctxpack_pipeline_dry_run(h.pipeline, h.items, h.budget, &r, &err));
                break;
            case 1:
                CHECK_OK(ctxpack_pipeline_marginal_items(h.pipeline, h.items, h.budget, 30,
                                                         positions, 3, &count, &err));
                break;
            case 2:
                CHECK_OK(ctxpack_pipeline_min_budget_for(h.pipeline, h.items, 0, 100, &found,
                                                         &min_budget, &err));
                break;
            default:
                CHECK_OK(ctxpack_sensitivity_new(h.items, h.budget, v, 2, &s, &err));
                break;
        }
        if (err) CHECK_ERROR(err, CTXPACK_OK, "");
        CHECK_I64(h.destroyed, 1);
        CHECK_I64(h.destroyed_during_call, 0);
        ctxpack_result_free(r);
        ctxpack_sensitivity_free(s);
        ctxpack_pipeline_free(other);
        ctxpack_budget_free(h.budget);
    }
}

// ---------------------------------------------------------------- 3. flag bytes

// Writes `byte` into a flag field, whatever its declared type.
#define SET_FLAG(field, byte) memset(&(field), (byte), 1)

TEST(flag_bytes_other_than_zero_or_one_are_rejected) {
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    const char *names[5] = {"pinned", "has_priority", "has_timestamp", "has_future_relevance_hint",
                            "has_original_tokens"};
    for (int f = 0; f < 5; f++) {
        for (int byte = 2; byte <= 255; byte += 253) {
            ctxpack_item_desc d = desc("x", 1);
            switch (f) {
                case 0: SET_FLAG(d.pinned, byte); break;
                case 1: SET_FLAG(d.has_priority, byte); break;
                case 2: SET_FLAG(d.has_timestamp, byte); break;
                case 3: SET_FLAG(d.has_future_relevance_hint, byte); break;
                default: SET_FLAG(d.has_original_tokens, byte); break;
            }
            CHECK_STATUS(ctxpack_items_push(items, &d, &err), CTXPACK_INVALID_ARGUMENT);
            char needle[96];
            snprintf(needle, sizeof needle, "desc.%s is %d", names[f], byte);
            CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, needle);
            // The same through push_many names the element.
            ctxpack_item_desc arr[2] = {desc("ok", 1), d};
            CHECK_STATUS(ctxpack_items_push_many(items, arr, 2, &err), CTXPACK_INVALID_ARGUMENT);
            snprintf(needle, sizeof needle, "item 1: desc.%s is %d", names[f], byte);
            CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, needle);
        }
    }
    // Reserved bytes must be zero.
    ctxpack_item_desc r = desc("x", 1);
    r.reserved[1] = 5;
    CHECK_STATUS(ctxpack_items_push(items, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "desc.reserved[1] is 5");
    CHECK_I64(items_len(items), 0);
    ctxpack_items_free(items);

    // Pipeline options and the decay configuration.
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *p = NULL;
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    ctxpack_pipeline_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    SET_FLAG(o.deduplication, 2);
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, pl, &o, &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.deduplication is 2");
    ctxpack_decay_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.curve = CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL;
    c.half_life_ns = NS_PER_DAY;
    SET_FLAG(c.has_null_timestamp_score, 3);
    ctxpack_scorer *decay = NULL;
    CHECK_STATUS(ctxpack_scorer_new_decay(&c, &decay, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "config.has_null_timestamp_score is 3");
    // A flag argument.
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p, NULL));
    ctxpack_string *json = NULL;
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, 2, &json, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "pretty is 2");
    CHECK(json == NULL);
    ctxpack_pipeline_free(p);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
}

// ---------------------------------------------------------------- 4. one-stage validation

TEST(one_stage_functions_reject_non_finite_scores) {
    ctxpack_items *items = three_items();
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_slicer *knap = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_error *err = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_slicer_new_knapsack(10, 0, &knap, NULL));
    REQUIRE_OK(ctxpack_placer_new_u_shaped(&pl, NULL));
    double bad[3][3] = {{0.5, NAN, 0.1}, {0.5, 0.2, INFINITY}, {-INFINITY, 0.2, 0.1}};
    const char *msgs[3] = {"scores[1] is NaN", "scores[2] is inf", "scores[0] is -inf"};
    for (int i = 0; i < 3; i++) {
        ctxpack_slice_result *sr = NULL;
        CHECK_STATUS(ctxpack_slicer_slice(knap, items, bad[i], 3, b, &sr, &err),
                     CTXPACK_INVALID_ARGUMENT);
        CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, msgs[i]);
        CHECK(sr == NULL);
        size_t order[3];
        CHECK_STATUS(ctxpack_placer_place(pl, items, bad[i], 3, order, &err),
                     CTXPACK_INVALID_ARGUMENT);
        CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, msgs[i]);
    }
    ctxpack_slicer_free(knap);
    ctxpack_placer_free(pl);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- 5. messages name positions

static int nan_for_b(void *user_data, const ctxpack_item_view *items, size_t count, double *out,
                     ctxpack_callback_error *error) {
    (void)user_data;
    (void)error;
    for (size_t i = 0; i < count; i++) {
        out[i] = tf_str_eq(items[i].content, "b") ? NAN : 0.5;
    }
    return 0;
}

static int slice_size_max(void *user_data, const ctxpack_item_view *items, const double *scores,
                          size_t count, int64_t target_tokens, int64_t max_tokens, size_t *out,
                          size_t *out_count, ctxpack_callback_error *error) {
    (void)user_data;
    (void)items;
    (void)scores;
    (void)target_tokens;
    (void)max_tokens;
    (void)error;
    out[0] = SIZE_MAX;
    *out_count = count > 0 ? 1 : 0;
    return 0;
}

TEST(callback_messages_name_the_callers_positions) {
    // Item 0 is pinned and item 1 has negative tokens: the scorer sees "b" first, but the
    // message names its position in the caller's list, 2.
    ctxpack_item_desc d[3] = {desc("pinned", 1), desc("negative", -1), desc("b", 5)};
    d[0].pinned = true;
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_scorer *sc = NULL;
    ctxpack_error *err = NULL;
    ctxpack_result *r = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(nan_for_b, NULL, NULL, &sc, NULL));
    ctxpack_pipeline *p = with_scorer(sc);
    REQUIRE(p != NULL);
    CHECK_STATUS(ctxpack_pipeline_run(p, items, b, NULL, &r, &err), CTXPACK_CALLBACK);
    CHECK_ERROR(err, CTXPACK_CALLBACK,
                "callback failed: custom scorer returned NaN for the item at position 2 (\"b\")");
    ctxpack_pipeline_free(p);

    // A slicer that returns SIZE_MAX: out of range, not "left a position unset".
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_custom(slice_size_max, NULL, NULL, &sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    p = pipeline_from(sc, sl, pl, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(p != NULL);
    CHECK_STATUS(ctxpack_pipeline_run(p, items, b, NULL, &r, &err), CTXPACK_CALLBACK);
    char expected[160];
    snprintf(expected, sizeof expected,
             "callback failed: custom slicer returned position %zu, but there are 1 items",
             (size_t)SIZE_MAX);
    CHECK_ERROR(err, CTXPACK_CALLBACK, expected);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- 6. results keep their context

TEST(report_helpers_use_the_runs_budget_and_slicer) {
    // Budget of 200 tokens and a count-quota slicer, both freed before the helpers are
    // called: the result keeps them. (The helpers used to take a budget and a pipeline
    // from the caller and computed nonsense with the wrong ones.)
    ctxpack_item_desc d[2] = {desc_at("a", 50, 1), desc_at("b", 30, 2)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(200, 100);
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *greedy = NULL, *cq = NULL;
    ctxpack_placer *pl = NULL;
    REQUIRE(items && b);
    ctxpack_count_quota_entry e = {S("Message"), 0, 4};
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&greedy, NULL));
    REQUIRE_OK(ctxpack_slicer_new_count_quota(&e, 1, greedy, CTXPACK_SCARCITY_DEGRADE, &cq, NULL));
    ctxpack_slicer_free(greedy);
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    ctxpack_pipeline *p = pipeline_from(sc, cq, pl, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_pipeline *plain = recency_greedy();
    REQUIRE(p && plain);
    ctxpack_result *results[3] = {NULL, NULL, NULL};
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, b, &results[0], NULL));
    REQUIRE_OK(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_STAGE, &results[1], NULL));
    // A sensitivity variant's result keeps its own pipeline's slicer.
    ctxpack_sensitivity_variant v[2] = {{S("quota"), p}, {S("plain"), plain}};
    ctxpack_sensitivity *s = NULL;
    REQUIRE_OK(ctxpack_sensitivity_new(items, b, v, 2, &s, NULL));
    REQUIRE_OK(ctxpack_sensitivity_variant_result(s, 0, &results[2], NULL));
    ctxpack_result *plain_variant = NULL;
    REQUIRE_OK(ctxpack_sensitivity_variant_result(s, 1, &plain_variant, NULL));
    ctxpack_sensitivity_free(s);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
    ctxpack_pipeline_free(plain);
    for (int i = 0; i < 3; i++) {
        double u = -1;
        CHECK_OK(ctxpack_result_budget_utilization(results[i], &u));
        CHECK_F64(u, 80.0 / 200.0);
        ctxpack_quota_utilization *q = NULL;
        REQUIRE_OK(ctxpack_result_quota_utilization(results[i], &q, NULL));
        size_t n = 0;
        CHECK_OK(ctxpack_quota_utilization_count(q, &n));
        CHECK_I64(n, 1);
        ctxpack_kind_quota_utilization k = CTXPACK_KIND_QUOTA_UTILIZATION_INIT;
        CHECK_OK(ctxpack_quota_utilization_entry(q, 0, &k, NULL));
        CHECK_F64(k.actual, 2.0);
        CHECK_F64(k.cap, 4.0);
        CHECK_F64(k.utilization, 0.5);
        ctxpack_quota_utilization_free(q);
        ctxpack_result_free(results[i]);
    }
    ctxpack_quota_utilization *q = NULL;
    size_t n = 9;
    REQUIRE_OK(ctxpack_result_quota_utilization(plain_variant, &q, NULL));
    CHECK_OK(ctxpack_quota_utilization_count(q, &n));
    CHECK_I64(n, 0);
    ctxpack_quota_utilization_free(q);
    ctxpack_result_free(plain_variant);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- 7. budgets

TEST(budgets_that_can_never_select_anything_are_rejected) {
    ctxpack_budget *b = NULL;
    ctxpack_error *err = NULL;
    ctxpack_reserved_slot huge[2] = {{S("Memory"), INT64_MAX}, {S("Tool"), INT64_MAX}};
    CHECK_STATUS(new_budget(50, 50, 0, huge, 2, 0.0, &b, &err), CTXPACK_INVALID_BUDGET);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET,
                "invalid budget: reserved slots (18446744073709551614 tokens in total) must be "
                "<= target_tokens (50)");
    CHECK(b == NULL);
    ctxpack_reserved_slot slots[2] = {{S("Memory"), 30}, {S("Tool"), 20}};
    CHECK_STATUS(new_budget(100, 40, 0, slots, 2, 0.0, &b, &err), CTXPACK_INVALID_BUDGET);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET,
                "reserved slots (50 tokens in total) must be <= target_tokens (40)");
    CHECK_STATUS(new_budget(100, 90, 60, slots, 2, 0.0, &b, &err), CTXPACK_INVALID_BUDGET);
    CHECK_ERROR(err, CTXPACK_INVALID_BUDGET,
                "output_reserve (60) plus reserved slots (50 tokens in total) must be <= "
                "max_tokens (100)");
    // Exactly full is still a budget.
    CHECK_OK(new_budget(100, 50, 50, slots, 2, 0.0, &b, NULL));
    ctxpack_budget_free(b);
}

// ---------------------------------------------------------------- 8. tracing

TEST(tracing_never_changes_the_outcome) {
    // Two items of INT64_MAX tokens: one fits the budget; the total of every input does
    // not fit in 64 bits, which used to fail the traced run.
    ctxpack_item_desc d[2] = {desc_at("a", INT64_MAX, 1), desc_at("b", INT64_MAX, 2)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(INT64_MAX, INT64_MAX);
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_error *err = NULL;
    REQUIRE(items && b && p);
    ctxpack_result *plain = NULL, *traced = NULL, *dry = NULL;
    REQUIRE_OK(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &plain, NULL));
    CHECK_OK(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_ITEM, &traced, &err));
    if (err) CHECK_ERROR(err, CTXPACK_OK, "");
    CHECK_OK(ctxpack_pipeline_dry_run(p, items, b, &dry, &err));
    if (err) CHECK_ERROR(err, CTXPACK_OK, "");
    const size_t *a = NULL, *t = NULL;
    size_t na = 0, nt = 0;
    CHECK_OK(ctxpack_result_indices(plain, &a, &na));
    CHECK_OK(ctxpack_result_indices(traced, &t, &nt));
    CHECK(na == 1 && nt == 1 && a[0] == t[0] && a[0] == 1);
    ctxpack_str json = {NULL, 0};
    CHECK_OK(ctxpack_result_report_json(traced, &json));
    CHECK(tf_str_contains(json, "\"total_tokens_considered\":18446744073709551614"));
    ctxpack_report_summary sum = CTXPACK_REPORT_SUMMARY_INIT;
    CHECK_OK(ctxpack_result_report_summary(traced, &sum, NULL));
    CHECK(sum.total_tokens_considered == INT64_MAX && sum.total_tokens_saturated);
    CHECK_OK(ctxpack_result_report_summary(dry, &sum, NULL));
    CHECK(sum.total_tokens_saturated);
    bool found = false;
    int64_t min_budget = 0;
    CHECK_OK(ctxpack_pipeline_min_budget_for(p, items, 1, INT64_MAX, &found, &min_budget, &err));
    if (err) CHECK_ERROR(err, CTXPACK_OK, "");
    CHECK(found && min_budget == INT64_MAX);
    ctxpack_result_free(plain);
    ctxpack_result_free(traced);
    ctxpack_result_free(dry);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- 9. strings and outputs

TEST(static_strings_are_nul_terminated) {
    for (size_t i = 0; i < ctxpack_preset_count(); i++) {
        ctxpack_str name = {NULL, 0};
        CHECK_OK(ctxpack_preset_name(i, &name));
        CHECK(nul_terminated(name));
    }
}

static int views_nul_ok;

static int check_view_strings(void *user_data, const ctxpack_item_view *items, size_t count,
                              double *out, ctxpack_callback_error *error) {
    (void)user_data;
    (void)error;
    for (size_t i = 0; i < count; i++) {
        const ctxpack_item_view *v = &items[i];
        int ok = nul_terminated(v->content) && nul_terminated(v->kind) && nul_terminated(v->source);
        for (size_t t = 0; t < v->tag_count; t++) ok = ok && nul_terminated(v->tags[t]);
        for (size_t m = 0; m < v->metadata_count; m++) {
            ok = ok && nul_terminated(v->metadata[m].key) && nul_terminated(v->metadata[m].value);
        }
        if (!ok) views_nul_ok = 0;
        out[i] = 0.5;
    }
    return 0;
}

TEST(every_returned_string_is_nul_terminated) {
    // Items whose strings are followed by more text in the caller's memory.
    const char *text = "contentkindsourcetagkeyvalue";
    ctxpack_str tag = {text + 17, 3};
    ctxpack_metadata_entry md = {{text + 20, 3}, {text + 23, 5}};
    ctxpack_item_desc d[3] = {desc_at("dup", 30, 1), desc_at("dup", 30, 2), desc_at("big", 500, 3)};
    d[0].content = (ctxpack_str){text, 7};
    d[0].kind = (ctxpack_str){text + 7, 4};
    d[0].source = (ctxpack_str){text + 11, 6};
    d[0].tags = &tag;
    d[0].tag_count = 1;
    d[0].metadata = &md;
    d[0].metadata_count = 1;
    d[1].content = d[0].content;  // a duplicate: a Deduplicated exclusion with a string
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_scorer *sc = NULL;
    REQUIRE(items && b);
    views_nul_ok = 1;
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(check_view_strings, NULL, NULL, &sc, NULL));
    ctxpack_pipeline *p = with_scorer(sc);
    ctxpack_result *r = NULL;
    REQUIRE(p != NULL);
    REQUIRE_OK(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_ITEM, &r, NULL));
    CHECK(views_nul_ok);
    ctxpack_report_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    REQUIRE_OK(ctxpack_result_report_summary(r, &sum, NULL));
    CHECK(sum.excluded_count >= 2);
    for (size_t i = 0; i < sum.excluded_count; i++) {
        ctxpack_excluded_entry e;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        CHECK_OK(ctxpack_result_report_excluded(r, i, &e, NULL));
        CHECK(nul_terminated(e.name) && nul_terminated(e.deduplicated_against) &&
              nul_terminated(e.kind) && nul_terminated(e.displaced_by_kind) &&
              nul_terminated(e.displaced_by) && nul_terminated(e.filter_name));
    }
    for (size_t i = 0; i < sum.event_count; i++) {
        ctxpack_trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.struct_size = sizeof ev;
        CHECK_OK(ctxpack_result_report_event(r, i, &ev, NULL));
        CHECK(nul_terminated(ev.message));
    }
    // Sensitivity labels.
    ctxpack_pipeline *other = recency_greedy();
    const char *labels = "firstsecond";
    ctxpack_sensitivity_variant v[2] = {{{labels, 5}, p}, {{labels + 5, 6}, other}};
    ctxpack_sensitivity *s = NULL;
    REQUIRE_OK(ctxpack_sensitivity_new(items, b, v, 2, &s, NULL));
    for (size_t i = 0; i < 2; i++) {
        ctxpack_str label = {NULL, 0};
        CHECK_OK(ctxpack_sensitivity_variant_label(s, i, &label));
        CHECK(nul_terminated(label));
    }
    ctxpack_sensitivity_free(s);
    ctxpack_pipeline_free(other);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(overflow_accessor_writes_nothing_before_failing) {
    ctxpack_item_desc d[1] = {desc("a", 1)};
    ctxpack_items *items = items_of(d, 1);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = recency_greedy();
    ctxpack_result *r = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(run_traced(p, items, b, CTXPACK_TRACE_DETAIL_NONE, &r, NULL));
    bool present = true;
    int64_t over = 77;
    const size_t *merged = (const size_t *)&over;
    size_t count = 88;
    CHECK_STATUS(ctxpack_result_overflow(r, NULL, &over, &merged, &count), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_overflow(r, &present, NULL, &merged, &count), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_overflow(r, &present, &over, &merged, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK(present && over == 77 && merged == (const size_t *)&over && count == 88);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(utilization_is_never_negative_zero) {
    // Nothing of the quota's kind (nor anything at all) is included.
    ctxpack_item_desc d[1] = {desc_at("too big", 500, 1)};
    ctxpack_items *items = items_of(d, 1);
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *greedy = NULL, *quota = NULL;
    ctxpack_placer *pl = NULL;
    REQUIRE(items && b);
    ctxpack_quota_entry q = {S("Document"), 10.0, 50.0};
    REQUIRE_OK(ctxpack_scorer_new_recency(&sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_greedy(&greedy, NULL));
    REQUIRE_OK(ctxpack_slicer_new_quota(&q, 1, greedy, &quota, NULL));
    ctxpack_slicer_free(greedy);
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    ctxpack_pipeline *p = pipeline_from(sc, quota, pl, CTXPACK_OVERFLOW_STRATEGY_THROW);
    ctxpack_result *r = NULL;
    REQUIRE(p != NULL);
    REQUIRE_OK(ctxpack_pipeline_dry_run(p, items, b, &r, NULL));
    double u = -1.0;
    CHECK_OK(ctxpack_result_budget_utilization(r, &u));
    CHECK(u == 0.0 && !signbit(u));
    ctxpack_quota_utilization *qu = NULL;
    REQUIRE_OK(ctxpack_result_quota_utilization(r, &qu, NULL));
    ctxpack_kind_quota_utilization e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    REQUIRE_OK(ctxpack_quota_utilization_entry(qu, 0, &e, NULL));
    CHECK(e.actual == 0.0 && !signbit(e.actual));
    CHECK(e.utilization == 0.0 && !signbit(e.utilization));
    ctxpack_quota_utilization_free(qu);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(error_messages_contain_no_nul_bytes) {
    // A reserved-slot kind and a preset name with a NUL inside: the messages quote them
    // with the NUL escaped, so C string functions see the whole message.
    ctxpack_budget *b = NULL;
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    ctxpack_reserved_slot dup[2] = {{{"a\0b", 3}, 1}, {{"A\0B", 3}, 1}};
    CHECK_STATUS(new_budget(10, 5, 0, dup, 2, 0.0, &b, &err), CTXPACK_INVALID_BUDGET);
    REQUIRE(err != NULL);
    ctxpack_str m = ctxpack_error_message(err);
    CHECK(memchr(m.ptr, '\0', m.len) == NULL);
    CHECK(strlen(m.ptr) == m.len);
    CHECK(tf_str_contains(m, "kind 'A\\0B' appears more than once"));
    ctxpack_error_free(err);
    CHECK_STATUS(ctxpack_pipeline_new_preset((ctxpack_str){"Chat\0x", 6}, &p, &err),
                 CTXPACK_INVALID_ARGUMENT);
    REQUIRE(err != NULL);
    m = ctxpack_error_message(err);
    CHECK(memchr(m.ptr, '\0', m.len) == NULL && strlen(m.ptr) == m.len);
    ctxpack_error_free(err);
}

int main(void) {
    RUN(oom_knapsack_without_a_table_limit_fails_cleanly);
    RUN(oom_push_many_of_an_impossible_count);
    RUN(failed_push_many_and_clear_give_back_what_was_reserved);
    RUN(oom_tag_and_metadata_counts);
    RUN(oom_copies_and_report_json_under_an_allocation_ceiling);
    RUN(flag_bytes_other_than_zero_or_one_are_rejected);
    RUN(one_stage_functions_reject_non_finite_scores);
    RUN(callback_messages_name_the_callers_positions);
    RUN(report_helpers_use_the_runs_budget_and_slicer);
    RUN(budgets_that_can_never_select_anything_are_rejected);
    RUN(tracing_never_changes_the_outcome);
    RUN(static_strings_are_nul_terminated);
    RUN(every_returned_string_is_nul_terminated);
    RUN(overflow_accessor_writes_nothing_before_failing);
    RUN(utilization_is_never_negative_zero);
    RUN(error_messages_contain_no_nul_bytes);
    RUN(free_pipeline_from_each_callback);
    RUN(clear_push_and_free_items_from_each_callback);
    RUN(free_everything_from_a_callback);
    RUN(a_handle_freed_during_a_run_is_reported_as_freed);
    RUN(a_released_handle_is_usually_reported_as_freed);
    RUN(free_from_the_overflow_callback);
    RUN(free_during_the_one_stage_functions);
    RUN(free_during_analytics);
    return tf_finish();
}
