// Concurrency: one pipeline (with a custom scorer whose callback runs concurrently), one
// item list and one budget shared by 8 threads; every run must equal a single-threaded
// run. Then one-shot runs of differing sizes from 8 threads on one pipeline, which keeps
// the memory of its one-shot runs while one thread keeps releasing it: every result must
// equal the list run of the same descriptors. Built and run by tests/c/run.sh.
#include <pthread.h>
#include <stdint.h>

#include "ctxpack_test.h"

#define THREADS 8
#define RUNS_PER_THREAD 12
#define ITEMS 150

typedef struct {
    pthread_mutex_t lock;
    long calls;
    int destroyed;
} shared_probe;

// A thread-safe batch scorer: the longer the content, the higher the score.
static int score_length(void *user_data, const ctxpack_item_view *items, size_t count,
                        double *out, ctxpack_callback_error *error) {
    shared_probe *p = (shared_probe *)user_data;
    (void)error;
    pthread_mutex_lock(&p->lock);
    p->calls++;
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < count; i++) {
        out[i] = (double)(items[i].content.len % 17) / 17.0;
    }
    return 0;
}

static void probe_destroy(void *user_data) {
    ((shared_probe *)user_data)->destroyed++;
}

typedef struct {
    size_t n;
    size_t indices[ITEMS];
    double scores[ITEMS];
    int32_t reasons[ITEMS];
    size_t excluded;
} outcome;

static const ctxpack_pipeline *g_pipeline;
static const ctxpack_items *g_items;
static const ctxpack_budget *g_budget;
static outcome g_reference;

// The indices, scores and reasons of `r` in `o` (no excluded count); 0 when an accessor
// fails.
static int read_outcome(const ctxpack_result *r, outcome *o) {
    const size_t *idx;
    const double *sc;
    const int32_t *rs;
    size_t n, n2, n3;
    int ok = ctxpack_result_indices(r, &idx, &n) == CTXPACK_OK && ctxpack_result_scores(r, &sc, &n2) == CTXPACK_OK &&
             ctxpack_result_reasons(r, &rs, &n3) == CTXPACK_OK && n == n2 && n == n3 && n <= ITEMS;
    if (ok) {
        o->n = n;
        o->excluded = 0;
        memcpy(o->indices, idx, n * sizeof *idx);
        memcpy(o->scores, sc, n * sizeof *sc);
        memcpy(o->reasons, rs, n * sizeof *rs);
    }
    return ok;
}

static int run_once(outcome *o) {
    ctxpack_run_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    opts.trace_detail = CTXPACK_TRACE_DETAIL_STAGE;
    ctxpack_result *r = NULL;
    if (ctxpack_pipeline_run(g_pipeline, g_items, g_budget, &opts, &r, NULL) != CTXPACK_OK) {
        return 0;
    }
    ctxpack_report_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    int ok = read_outcome(r, o) && ctxpack_result_report_summary(r, &sum, NULL) == CTXPACK_OK;
    if (ok) o->excluded = sum.excluded_count;
    ctxpack_result_free(r);
    return ok;
}

static int same(const outcome *a, const outcome *b) {
    return a->n == b->n && a->excluded == b->excluded &&
           memcmp(a->indices, b->indices, a->n * sizeof a->indices[0]) == 0 &&
           memcmp(a->scores, b->scores, a->n * sizeof a->scores[0]) == 0 &&
           memcmp(a->reasons, b->reasons, a->n * sizeof a->reasons[0]) == 0;
}

static void *worker(void *arg) {
    int *mismatches = (int *)arg;
    outcome o;
    for (int k = 0; k < RUNS_PER_THREAD; k++) {
        if (!run_once(&o) || !same(&o, &g_reference)) {
            (*mismatches)++;
        }
    }
    return NULL;
}

// ITEMS descriptors over `contents`: item i's content is "item k" and k % 23 x's, with
// k = i % repeat (so contents repeat every `repeat` items); tokens, kinds and timestamps
// vary, every fifth item has no timestamp, item 3 is pinned.
static void fill_descs(ctxpack_item_desc *d, char (*contents)[48], int repeat) {
    static const char *kinds[4] = {"Message", "Document", "ToolOutput", "Memory"};
    for (int i = 0; i < ITEMS; i++) {
        int k = i % repeat;
        snprintf(contents[i], sizeof contents[i], "item %d %.*s", k, k % 23, "xxxxxxxxxxxxxxxxxxxxxxx");
        memset(&d[i], 0, sizeof d[i]);
        d[i].struct_size = sizeof d[i];
        d[i].content = ctxpack_str_from_cstr(contents[i]);
        d[i].tokens = 10 + (i * 37) % 90;
        d[i].kind = ctxpack_str_from_cstr(kinds[i % 4]);
        d[i].timestamp_ns = INT64_C(1700000000000000000) + (int64_t)((i * 7919) % ITEMS) * 1000;
        d[i].has_timestamp = i % 5 != 0;
        d[i].pinned = i == 3;
    }
}

// Recency (2) + kind (1), and `custom` (0.5) when it is not NULL; greedy; U-shaped;
// deduplicating. NULL on failure (reported).
static ctxpack_pipeline *new_pipeline(const ctxpack_scorer *custom) {
    ctxpack_scorer *recency = NULL, *kind = NULL, *composite = NULL;
    ctxpack_slicer *greedy = NULL;
    ctxpack_placer *ushaped = NULL;
    ctxpack_pipeline *pipeline = NULL;
    CHECK_OK(ctxpack_scorer_new_recency(&recency, NULL));
    CHECK_OK(ctxpack_scorer_new_kind(&kind, NULL));
    ctxpack_composite_child children[3] = {{recency, 2.0}, {kind, 1.0}, {custom, 0.5}};
    CHECK_OK(ctxpack_scorer_new_composite(children, custom ? 3 : 2, &composite, NULL));
    CHECK_OK(ctxpack_slicer_new_greedy(&greedy, NULL));
    CHECK_OK(ctxpack_placer_new_u_shaped(&ushaped, NULL));
    CHECK_OK(ctxpack_pipeline_new(composite, greedy, ushaped, NULL, &pipeline, NULL));
    ctxpack_scorer_free(recency);
    ctxpack_scorer_free(kind);
    ctxpack_scorer_free(composite);
    ctxpack_slicer_free(greedy);
    ctxpack_placer_free(ushaped);
    return pipeline;
}

TEST(one_pipeline_from_eight_threads) {
    char contents[ITEMS][48];
    ctxpack_item_desc d[ITEMS];
    fill_descs(d, contents, ITEMS);
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    REQUIRE_OK(ctxpack_items_push_many(items, d, ITEMS, NULL));
    ctxpack_budget *budget = NULL;
    ctxpack_budget_desc bd = CTXPACK_BUDGET_DESC_INIT;
    bd.max_tokens = 8000;
    bd.target_tokens = 3000;
    bd.output_reserve = 200;
    bd.estimation_safety_margin_percent = 5.0;
    REQUIRE_OK(ctxpack_budget_new(&bd, &budget, NULL));

    shared_probe probe;
    pthread_mutex_init(&probe.lock, NULL);
    probe.calls = 0;
    probe.destroyed = 0;
    ctxpack_scorer *custom = NULL;
    REQUIRE_OK(ctxpack_scorer_new_custom_batch(score_length, &probe, probe_destroy, &custom, NULL));
    ctxpack_pipeline *pipeline = new_pipeline(custom);
    ctxpack_scorer_free(custom);
    REQUIRE(pipeline != NULL);

    g_pipeline = pipeline;
    g_items = items;
    g_budget = budget;
    REQUIRE(run_once(&g_reference));
    CHECK(g_reference.n > 10);

    pthread_t threads[THREADS];
    int mismatches[THREADS] = {0};
    for (int t = 0; t < THREADS; t++) {
        REQUIRE(pthread_create(&threads[t], NULL, worker, &mismatches[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_I64(mismatches[t], 0);
    }
    CHECK_I64(probe.calls, 1 + THREADS * RUNS_PER_THREAD);
    CHECK_I64(probe.destroyed, 0);
    ctxpack_pipeline_free(pipeline);
    CHECK_I64(probe.destroyed, 1);
    pthread_mutex_destroy(&probe.lock);
    ctxpack_budget_free(budget);
    ctxpack_items_free(items);
}

// ---------------------------------------------------------------- one-shot runs

static ctxpack_item_desc g_descs[ITEMS];
// g_by_size[n]: the list run's outcome over the first n descriptors.
static outcome g_by_size[ITEMS + 1];

typedef struct {
    int thread;
    int mismatches;
    int releases;
} oneshot_worker;

static void *oneshot_worker_main(void *arg) {
    oneshot_worker *w = (oneshot_worker *)arg;
    outcome o;
    for (int k = 0; k < RUNS_PER_THREAD * 4; k++) {
        size_t n = (size_t)(w->thread * 13 + k * 29) % (ITEMS + 1);
        ctxpack_result *r = NULL;
        if (ctxpack_pipeline_run_descs(g_pipeline, g_descs, n, g_budget, NULL, &r, NULL) != CTXPACK_OK ||
            !read_outcome(r, &o) || !same(&o, &g_by_size[n])) {
            w->mismatches++;
        }
        ctxpack_result_free(r);
        // Thread 0 frees the kept memory after each of its runs, while others run.
        if (w->thread == 0 && ctxpack_pipeline_release_memory(g_pipeline) == CTXPACK_OK) w->releases++;
    }
    return NULL;
}

TEST(one_shot_runs_from_eight_threads_share_the_kept_memory) {
    char contents[ITEMS][48];
    // Contents repeat every 50 items: Deduplicate removes some.
    fill_descs(g_descs, contents, 50);
    ctxpack_budget *budget = NULL;
    ctxpack_budget_desc bd = CTXPACK_BUDGET_DESC_INIT;
    bd.max_tokens = 8000;
    bd.target_tokens = 3000;
    REQUIRE_OK(ctxpack_budget_new(&bd, &budget, NULL));
    // Built-in components only: the one-shot run's columnar path.
    ctxpack_pipeline *pipeline = new_pipeline(NULL);
    REQUIRE(pipeline != NULL);

    size_t placed = 0;
    for (size_t n = 0; n <= ITEMS; n++) {
        ctxpack_items *items = NULL;
        ctxpack_result *r = NULL;
        REQUIRE_OK(ctxpack_items_new(&items, NULL));
        REQUIRE_OK(ctxpack_items_push_many(items, g_descs, n, NULL));
        REQUIRE_OK(ctxpack_pipeline_run(pipeline, items, budget, NULL, &r, NULL));
        ctxpack_items_free(items);
        int read = read_outcome(r, &g_by_size[n]);
        ctxpack_result_free(r);
        REQUIRE(read);
        placed += g_by_size[n].n;
    }
    CHECK(placed > ITEMS * 10);
    g_pipeline = pipeline;
    g_budget = budget;
    pthread_t threads[THREADS];
    oneshot_worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (oneshot_worker){t, 0, 0};
        REQUIRE(pthread_create(&threads[t], NULL, oneshot_worker_main, &workers[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_I64(workers[t].mismatches, 0);
    }
    CHECK_I64(workers[0].releases, RUNS_PER_THREAD * 4);
    // The release function's refusals.
    CHECK_STATUS(ctxpack_pipeline_release_memory(NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_pipeline_release_memory((const ctxpack_pipeline *)(const void *)budget),
                 CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_pipeline_free(pipeline);
    ctxpack_budget_free(budget);
}

int main(void) {
    RUN(one_pipeline_from_eight_threads);
    RUN(one_shot_runs_from_eight_threads_share_the_kept_memory);
    return tf_finish();
}
