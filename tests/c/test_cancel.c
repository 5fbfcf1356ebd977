// Cancellation tokens (ctxpack_cancel_token_*, ctxpack_run_options.cancel) and caller
// references (ctxpack_*_retain). Built and run by tests/c/run.sh (plain, ASan + UBSan,
// valgrind).
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static ctxpack_status run_with_token(const ctxpack_pipeline *p, const ctxpack_items *items,
                                     const ctxpack_budget *b, const ctxpack_cancel_token *token,
                                     ctxpack_result **out, ctxpack_error **err) {
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    o.cancel = token;
    return ctxpack_pipeline_run(p, items, b, &o, out, err);
}

static ctxpack_pipeline *greedy_pipeline(void) {
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *p = NULL;
    ctxpack_scorer_new_recency(&sc, NULL);
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline_new(sc, sl, pl, NULL, &p, NULL);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    return p;
}

TEST(token_functions_and_their_errors) {
    ctxpack_cancel_token *t = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_cancel_token_new(&t, &err));
    CHECK(err == NULL);
    uint8_t cancelled = 7;
    CHECK_OK(ctxpack_cancel_token_is_cancelled(t, &cancelled));
    CHECK_I64(cancelled, 0);
    CHECK_OK(ctxpack_cancel_token_cancel(t));
    CHECK_OK(ctxpack_cancel_token_cancel(t));  // idempotent
    CHECK_OK(ctxpack_cancel_token_is_cancelled(t, &cancelled));
    CHECK_I64(cancelled, 1);
    CHECK_STATUS(ctxpack_cancel_token_is_cancelled(t, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_cancel_token_cancel(NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_cancel_token_new(NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out must not be NULL");
    // Another handle type where a token is expected, and a token where a pipeline is.
    ctxpack_pipeline *p = greedy_pipeline();
    REQUIRE(p);
    CHECK_STATUS(ctxpack_cancel_token_cancel((const ctxpack_cancel_token *)p),
                 CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_items *items = NULL;
    ctxpack_items_new(&items, NULL);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_result *r = NULL;
    CHECK_STATUS(run_with_token(p, items, b, (const ctxpack_cancel_token *)b, &r, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "options.cancel must be a ctxpack_cancel_token");
    CHECK(r == NULL);
    ctxpack_cancel_token_free((ctxpack_cancel_token *)p);  // wrong type: a no-op
    ctxpack_cancel_token_free(NULL);
    ctxpack_cancel_token_free(t);
    ctxpack_items_free(items);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(a_token_cancelled_before_the_run_stops_it_before_it_starts) {
    ctxpack_item_desc d[2] = {desc_at("a", 1, 1), desc_at("b", 1, 2)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = greedy_pipeline();
    ctxpack_cancel_token *t = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(ctxpack_cancel_token_new(&t, NULL));
    ctxpack_cancel_token_cancel(t);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    CHECK_STATUS(run_with_token(p, items, b, t, &r, &err), CTXPACK_CANCELLED);
    CHECK_ERROR(err, CTXPACK_CANCELLED, "cancelled: the run was cancelled before it started");
    CHECK(r == NULL);
    CHECK_STR(ctxpack_str_from_cstr(ctxpack_status_name(CTXPACK_CANCELLED)), "CTXPACK_CANCELLED");
    // The one-shot run over the same descriptors (for this pipeline, its columnar path)
    // is stopped the same way.
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    o.cancel = t;
    CHECK_STATUS(ctxpack_pipeline_run_descs(p, d, 2, b, &o, &r, &err), CTXPACK_CANCELLED);
    CHECK_ERROR(err, CTXPACK_CANCELLED, "cancelled: the run was cancelled before it started");
    CHECK(r == NULL);
    ctxpack_cancel_token_free(t);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(a_cancelled_token_stops_a_prefix_run_too) {
    // ctxpack_pipeline_run_prefix reads the same run options: its token is honoured, and
    // an uncancelled one changes nothing.
    ctxpack_item_desc d[2] = {desc_at("a", 1, 1), desc_at("b", 1, 2)};
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = greedy_pipeline();
    ctxpack_cancel_token *t = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(ctxpack_cancel_token_new(&t, NULL));
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    o.cancel = t;
    ctxpack_result *r = NULL;
    ctxpack_prefix_state *st = NULL;
    REQUIRE_OK(ctxpack_pipeline_run_prefix(p, items, b, &o, NULL, NULL, &r, &st, NULL));
    CHECK(r != NULL && st != NULL);
    ctxpack_result_free(r);
    ctxpack_prefix_state_free(st);
    r = NULL;
    st = NULL;
    ctxpack_cancel_token_cancel(t);
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_pipeline_run_prefix(p, items, b, &o, NULL, NULL, &r, &st, &err),
                 CTXPACK_CANCELLED);
    CHECK_ERROR(err, CTXPACK_CANCELLED, "cancelled: the run was cancelled before it started");
    CHECK(r == NULL && st == NULL);
    ctxpack_cancel_token_free(t);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(a_token_never_cancelled_changes_nothing_and_old_struct_sizes_have_none) {
    ctxpack_item_desc d[4] = {desc_at("a", 4, 1), desc_at("b", 4, 3), desc_at("c", 4, 2),
                              desc_at("d", 4, 4)};
    ctxpack_items *items = items_of(d, 4);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = greedy_pipeline();
    ctxpack_cancel_token *t = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(ctxpack_cancel_token_new(&t, NULL));
    ctxpack_result *plain = NULL, *with = NULL, *old = NULL;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, b, NULL, &plain, NULL));
    REQUIRE_OK(run_with_token(p, items, b, t, &with, NULL));
    const size_t *want = NULL;
    size_t n = 0;
    ctxpack_result_indices(plain, &want, &n);
    CHECK(n == 2);
    CHECK(indices_are(with, want, n));
    // So does the one-shot run's columnar path.
    ctxpack_result *once = NULL;
    ctxpack_run_options live = CTXPACK_RUN_OPTIONS_INIT;
    live.cancel = t;
    REQUIRE_OK(ctxpack_pipeline_run_descs(p, d, 4, b, &live, &once, NULL));
    CHECK(indices_are(once, want, n));
    ctxpack_result_free(once);
    // A caller compiled before the field existed: its struct ends at `reserved`, so a
    // (cancelled) token stored past that size is never read.
    ctxpack_cancel_token_cancel(t);
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    o.struct_size = offsetof(ctxpack_run_options, cancel);
    o.cancel = t;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, b, &o, &old, NULL));
    CHECK(indices_are(old, want, n));
    ctxpack_result_free(plain);
    ctxpack_result_free(with);
    ctxpack_result_free(old);
    ctxpack_cancel_token_free(t);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// A struct_size that ends inside the token pointer (no compiler's sizeof does) is refused:
// the library would otherwise read a pointer made of some of the token's bytes and zeros.
TEST(a_struct_size_inside_the_token_pointer_is_refused) {
    ctxpack_item_desc d[1] = {desc("a", 4)};
    ctxpack_items *items = items_of(d, 1);
    ctxpack_budget *b = budget_of(10, 10);
    ctxpack_pipeline *p = greedy_pipeline();
    ctxpack_cancel_token *t = NULL;
    REQUIRE(items && b && p);
    REQUIRE_OK(ctxpack_cancel_token_new(&t, NULL));
    for (size_t cut = 1; cut < sizeof(void *); cut++) {
        ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
        o.struct_size = offsetof(ctxpack_run_options, cancel) + cut;
        o.cancel = t;
        ctxpack_result *r = NULL;
        ctxpack_error *err = NULL;
        CHECK_STATUS(ctxpack_pipeline_run(p, items, b, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
        CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_run_options.struct_size is");
        CHECK(r == NULL);
        err = NULL;
        CHECK_STATUS(ctxpack_pipeline_run_descs(p, d, 1, b, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
        CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_run_options.struct_size is");
        CHECK_STATUS(ctxpack_run_options_init(&o, offsetof(ctxpack_run_options, cancel) + cut),
                     CTXPACK_INVALID_ARGUMENT);
    }
    ctxpack_cancel_token_free(t);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// A per-item scorer that records that it scored the last item (the canceller waits for it).
typedef struct {
    pthread_mutex_t lock;
    int started;
    double cancelled_at;
    ctxpack_cancel_token *token;  // the canceller's reference: it frees it after cancelling
} cancel_probe;

static int score_and_signal(void *user_data, const ctxpack_item_view *items, size_t count,
                            size_t index, double *out, ctxpack_callback_error *error) {
    cancel_probe *probe = (cancel_probe *)user_data;
    (void)count;
    (void)error;
    if (index + 1 == count) {  // scoring is over: the knapsack DP comes next
        pthread_mutex_lock(&probe->lock);
        probe->started = 1;
        pthread_mutex_unlock(&probe->lock);
    }
    *out = (double)(items[index].tokens % 97) / 97.0;
    return 0;
}

// How long the canceller waits after scoring before it cancels, so that deduplication
// and sorting are over and the knapsack DP runs: they take far longer under valgrind
// (whose preloaded library is in LD_PRELOAD), which also slows the DP down as much.
static int under_valgrind(void) {
    const char *preload = getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

static long settle_ms(void) { return under_valgrind() ? 2000 : 100; }

static void *canceller(void *arg) {
    cancel_probe *probe = (cancel_probe *)arg;
    for (;;) {
        pthread_mutex_lock(&probe->lock);
        int started = probe->started;
        pthread_mutex_unlock(&probe->lock);
        if (started) break;
        sleep_ms(1);
    }
    sleep_ms(settle_ms());  // deduplication and sorting are over: the knapsack DP is running
    pthread_mutex_lock(&probe->lock);
    probe->cancelled_at = now_seconds();
    pthread_mutex_unlock(&probe->lock);
    ctxpack_cancel_token_cancel(probe->token);
    // The run holds its own reference: freeing the token now is allowed.
    ctxpack_cancel_token_free(probe->token);
    return NULL;
}

#define LONG_ITEMS 12000

TEST(another_thread_cancels_a_long_knapsack_run_quickly) {
    // 12 000 items against a 50 000-token target with one-token buckets: a DP of 6 * 10^8
    // cells, about a second plain and far longer under valgrind, unless cancelled. The
    // run checks the token once per DP row (50 001 cells), which bounds the latency.
    static char contents[LONG_ITEMS][16];
    static ctxpack_item_desc d[LONG_ITEMS];  // static: 12 000 descriptors are megabytes
    uint64_t seed = 12345;
    for (int i = 0; i < LONG_ITEMS; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        snprintf(contents[i], sizeof contents[i], "item %d", i);
        d[i] = desc(contents[i], 5 + (int64_t)((seed >> 33) % 40));
    }
    ctxpack_items *items = items_of(d, LONG_ITEMS);
    ctxpack_budget *b = budget_of(50000, 50000);
    cancel_probe probe = {PTHREAD_MUTEX_INITIALIZER, 0, 0.0, NULL};
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *p = NULL;
    REQUIRE(items && b);
    REQUIRE_OK(ctxpack_scorer_new_custom_item(score_and_signal, &probe, NULL, &sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_knapsack(1, 0, &sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_chronological(&pl, NULL));
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p, NULL));
    REQUIRE_OK(ctxpack_cancel_token_new(&probe.token, NULL));
    const ctxpack_cancel_token *token = probe.token;
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, canceller, &probe) == 0);
    ctxpack_result *r = NULL;
    ctxpack_error *err = NULL;
    ctxpack_status s = run_with_token(p, items, b, token, &r, &err);
    double returned_at = now_seconds();
    pthread_join(thread, NULL);
    CHECK_STATUS(s, CTXPACK_CANCELLED);
    CHECK_ERROR(err, CTXPACK_CANCELLED, "cancelled: the run was cancelled while slicing (knapsack)");
    CHECK(r == NULL);
    double latency = returned_at - probe.cancelled_at;
    // One DP row (50 001 cells) is the longest stretch without a check: well under a
    // second plain or under ASan, up to seconds under valgrind on a loaded machine (where
    // the whole DP would take many minutes).
    if (latency > (under_valgrind() ? 5.0 : 1.0)) {
        char buf[96];
        snprintf(buf, sizeof buf, "the run returned %.3f s after the cancel", latency);
        tf_fail(__FILE__, __LINE__, buf);
    }
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Custom components that count their destroy calls.
static int destroyed_scorer, destroyed_slicer, destroyed_placer;
static void destroy_scorer(void *u) { (void)u; destroyed_scorer++; }
static void destroy_slicer(void *u) { (void)u; destroyed_slicer++; }
static void destroy_placer(void *u) { (void)u; destroyed_placer++; }

static int score_one(void *u, const ctxpack_item_view *items, size_t count, size_t index,
                     double *out, ctxpack_callback_error *e) {
    (void)u;
    (void)items;
    (void)count;
    (void)e;
    *out = 1.0 / (double)(index + 1);
    return 0;
}

static int slice_all(void *u, const ctxpack_item_view *items, const double *scores, size_t count,
                     int64_t target, int64_t max, size_t *out, size_t *out_len,
                     ctxpack_callback_error *e) {
    (void)u;
    (void)items;
    (void)scores;
    (void)target;
    (void)max;
    (void)e;
    for (size_t i = 0; i < count; i++) out[i] = i;
    *out_len = count;
    return 0;
}

static int place_same(void *u, const ctxpack_item_view *items, const double *scores, size_t count,
                      size_t *out, ctxpack_callback_error *e) {
    (void)u;
    (void)items;
    (void)scores;
    (void)e;
    for (size_t i = 0; i < count; i++) out[i] = i;
    return 0;
}

TEST(retain_gives_one_more_reference_and_each_free_releases_one) {
    destroyed_scorer = destroyed_slicer = destroyed_placer = 0;
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *p = NULL;
    REQUIRE_OK(ctxpack_scorer_new_custom_item(score_one, NULL, destroy_scorer, &sc, NULL));
    REQUIRE_OK(ctxpack_slicer_new_custom(slice_all, NULL, destroy_slicer, &sl, NULL));
    REQUIRE_OK(ctxpack_placer_new_custom(place_same, NULL, destroy_placer, &pl, NULL));
    CHECK(ctxpack_scorer_retain(sc) == sc);
    CHECK(ctxpack_slicer_retain(sl) == sl);
    CHECK(ctxpack_placer_retain(pl) == pl);
    // NULL and other handle types give NULL and take nothing.
    CHECK(ctxpack_scorer_retain(NULL) == NULL);
    CHECK(ctxpack_scorer_retain((ctxpack_scorer *)sl) == NULL);
    CHECK(ctxpack_pipeline_retain((ctxpack_pipeline *)pl) == NULL);
    // One free of each: the second reference keeps every handle usable.
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &p, NULL));
    ctxpack_pipeline *p2 = ctxpack_pipeline_retain(p);
    CHECK(p2 == p);
    ctxpack_item_desc d[3] = {desc("a", 1), desc("b", 1), desc("c", 1)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(10, 10);
    REQUIRE(items && b);
    ctxpack_pipeline_free(p);
    ctxpack_result *r = NULL;
    CHECK_OK(ctxpack_pipeline_run(p2, items, b, NULL, &r, NULL));
    ctxpack_result_free(r);
    // One caller reference left: the scorer still works as a handle of its own.
    double scores[3] = {0};
    CHECK_OK(ctxpack_scorer_score(sc, items, scores, 3, NULL));
    CHECK_F64(scores[0], 1.0);
    // The last caller references: the handles go, the pipeline keeps the components
    // themselves (no destroy yet) ...
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    CHECK_I64(destroyed_scorer + destroyed_slicer + destroyed_placer, 0);
    // ... and the pipeline's last reference destroys each exactly once.
    ctxpack_pipeline_free(p2);
    CHECK_I64(destroyed_scorer, 1);
    CHECK_I64(destroyed_slicer, 1);
    CHECK_I64(destroyed_placer, 1);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

#define RETAIN_THREADS 8
#define RETAINS_PER_THREAD 2000

static ctxpack_pipeline *g_shared;
static const ctxpack_items *g_items;
static const ctxpack_budget *g_budget;

static void *retain_free_and_run(void *arg) {
    long *failures = (long *)arg;
    for (int i = 0; i < RETAINS_PER_THREAD; i++) {
        ctxpack_pipeline *mine = ctxpack_pipeline_retain(g_shared);
        if (mine != g_shared) (*failures)++;
        if (i % 200 == 0) {
            ctxpack_result *r = NULL;
            if (ctxpack_pipeline_run(mine, g_items, g_budget, NULL, &r, NULL) != CTXPACK_OK) {
                (*failures)++;
            }
            ctxpack_result_free(r);
        }
        ctxpack_pipeline_free(mine);
    }
    return NULL;
}

TEST(references_are_taken_and_released_from_many_threads_at_once) {
    destroyed_scorer = 0;
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    REQUIRE_OK(ctxpack_scorer_new_custom_item(score_one, NULL, destroy_scorer, &sc, NULL));
    ctxpack_slicer_new_greedy(&sl, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    REQUIRE_OK(ctxpack_pipeline_new(sc, sl, pl, NULL, &g_shared, NULL));
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    ctxpack_item_desc d[3] = {desc("a", 1), desc("b", 1), desc("c", 1)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(10, 10);
    REQUIRE(items && b);
    g_items = items;
    g_budget = b;
    pthread_t threads[RETAIN_THREADS];
    long failures[RETAIN_THREADS] = {0};
    for (int t = 0; t < RETAIN_THREADS; t++) {
        REQUIRE(pthread_create(&threads[t], NULL, retain_free_and_run, &failures[t]) == 0);
    }
    for (int t = 0; t < RETAIN_THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_I64(failures[t], 0);
    }
    CHECK_I64(destroyed_scorer, 0);
    ctxpack_pipeline_free(g_shared);
    CHECK_I64(destroyed_scorer, 1);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

int main(void) {
    RUN(token_functions_and_their_errors);
    RUN(a_token_cancelled_before_the_run_stops_it_before_it_starts);
    RUN(a_cancelled_token_stops_a_prefix_run_too);
    RUN(a_token_never_cancelled_changes_nothing_and_old_struct_sizes_have_none);
    RUN(a_struct_size_inside_the_token_pointer_is_refused);
    RUN(another_thread_cancels_a_long_knapsack_run_quickly);
    RUN(retain_gives_one_more_reference_and_each_free_releases_one);
    RUN(references_are_taken_and_released_from_many_threads_at_once);
    return tf_finish();
}
