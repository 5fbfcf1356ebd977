// A host of the shared library, to measure what a C host sees: the agent workload's inputs
// (issue 16: 1-3 of 8 tags, 5 kinds, priorities 0-9, a hint, timestamps in whole seconds
// 0-2 s apart, target half the tokens), built the way a C host builds a request (each
// content its own malloc, tags and kinds shared constants), run through
// ctxpack_pipeline_run_descs (run + read + free) and ctxpack_pipeline_run_descs_into (run +
// read into a kept result), alternately. Prints the median thread CPU time of each.
//
//   cc -O2 -Iinclude scripts/host-bench.c -Ltarget/release -lctxpack -o host-bench
//   LD_LIBRARY_PATH=target/release ./host-bench 100000 150
//
// scripts/host-bench.sh builds it and compares the libraries of several revisions.
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctxpack.h"

static uint64_t state = 42;

// SplitMix64.
static uint64_t next(void) {
    uint64_t z = (state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

// A uniform double in [0, 1).
static double unit(void) { return (double)(next() >> 11) * 0x1p-53; }

static const char *const TAGS[8] = {"user-pref", "plan", "bug", "code", "api", "test", "docs", "deploy"};
static const double TAG_WEIGHTS[8] = {1.0, 0.9, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2};
static const char *const KINDS[5] = {"Message", "ToolOutput", "Document", "Memory", "SystemPrompt"};
static const char *const WORDS[8] = {"context", "window", "token", "budget", "tool", "result", "plan", "memory"};

static ctxpack_str str(const char *s) { return (ctxpack_str){s, strlen(s)}; }

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check(ctxpack_status status, ctxpack_error *error, const char *what) {
    if (status == CTXPACK_OK) return;
    ctxpack_str message = ctxpack_error_message(error);
    fprintf(stderr, "%s: %.*s\n", what, (int)message.len, message.ptr);
    exit(1);
}

// One item: its content (malloc'd, `len` bytes) and its descriptor; returns its tokens.
static int64_t generate(size_t i, ctxpack_item_desc *d, ctxpack_str *tags, int64_t *second) {
    char text[1024];
    int len = snprintf(text, sizeof text, "turn %zu:", i);
    size_t words = 10 + (size_t)(next() % 50);
    for (size_t w = 0; w < words; w++) {
        len += snprintf(text + len, sizeof text - (size_t)len, " %s", WORDS[next() % 8]);
    }
    char *content = malloc((size_t)len + 1);
    if (content == NULL) exit(1);
    memcpy(content, text, (size_t)len + 1);
    ctxpack_item_desc x = CTXPACK_ITEM_DESC_INIT;
    x.content = (ctxpack_str){content, (size_t)len};
    x.tokens = len / 4;
    double u = unit();
    x.kind = str(KINDS[u < 0.45 ? 0 : u < 0.70 ? 1 : u < 0.83 ? 2 : u < 0.95 ? 3 : 4]);
    size_t count = 1 + (size_t)(next() % 3), taken = 0;
    while (taken < count) {
        const char *tag = TAGS[next() % 8];
        int seen = 0;
        for (size_t t = 0; t < taken; t++) seen |= tags[t].ptr == tag;
        if (!seen) tags[taken++] = str(tag);
    }
    x.tags = tags;
    x.tag_count = count;
    x.priority = (int64_t)(next() % 10);
    x.has_priority = 1;
    *second += (int64_t)(next() % 3);
    x.timestamp_ns = *second * INT64_C(1000000000);
    x.has_timestamp = 1;
    x.future_relevance_hint = unit();
    x.has_future_relevance_hint = 1;
    *d = x;
    return x.tokens;
}

// Composite recency 2 + priority 1 + kind 1 + tag 1 + reflexive 1, greedy, chronological.
static ctxpack_pipeline *agent_pipeline(void) {
    ctxpack_error *e = NULL;
    ctxpack_scorer *leaves[5];
    check(ctxpack_scorer_new_recency(&leaves[0], &e), e, "recency");
    check(ctxpack_scorer_new_priority(&leaves[1], &e), e, "priority");
    check(ctxpack_scorer_new_kind(&leaves[2], &e), e, "kind");
    ctxpack_tag_weight weights[8];
    for (int t = 0; t < 8; t++) weights[t] = (ctxpack_tag_weight){str(TAGS[t]), TAG_WEIGHTS[t]};
    check(ctxpack_scorer_new_tag(weights, 8, &leaves[3], &e), e, "tag");
    check(ctxpack_scorer_new_reflexive(&leaves[4], &e), e, "reflexive");
    const double raw[5] = {2, 1, 1, 1, 1};
    ctxpack_composite_child children[5];
    for (int c = 0; c < 5; c++) children[c] = (ctxpack_composite_child){leaves[c], raw[c]};
    ctxpack_scorer *scorer;
    check(ctxpack_scorer_new_composite(children, 5, &scorer, &e), e, "composite");
    ctxpack_slicer *slicer;
    ctxpack_placer *placer;
    check(ctxpack_slicer_new_greedy(&slicer, &e), e, "greedy");
    check(ctxpack_placer_new_chronological(&placer, &e), e, "chronological");
    ctxpack_pipeline *pipeline;
    check(ctxpack_pipeline_new(scorer, slicer, placer, NULL, &pipeline, &e), e, "pipeline");
    for (int c = 0; c < 5; c++) ctxpack_scorer_free(leaves[c]);
    ctxpack_scorer_free(scorer);
    ctxpack_slicer_free(slicer);
    ctxpack_placer_free(placer);
    return pipeline;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 100;
    if (n == 0 || reps <= 0) return 2;
    ctxpack_item_desc *descs = calloc(n, sizeof *descs);
    ctxpack_str(*tags)[3] = malloc(n * sizeof *tags);
    double *one_shot = malloc((size_t)reps * sizeof *one_shot);
    double *kept = malloc((size_t)reps * sizeof *kept);
    if (descs == NULL || tags == NULL || one_shot == NULL || kept == NULL) return 1;
    int64_t total = 0, second = INT64_C(1700000000);
    for (size_t i = 0; i < n; i++) total += generate(i, &descs[i], tags[i], &second);
    ctxpack_pipeline *pipeline = agent_pipeline();
    ctxpack_error *e = NULL;
    ctxpack_budget_desc limits = CTXPACK_BUDGET_DESC_INIT;
    limits.max_tokens = total;
    limits.target_tokens = total / 2;
    ctxpack_budget *budget;
    check(ctxpack_budget_new(&limits, &budget, &e), e, "budget");
    ctxpack_result *reused = NULL;
    size_t placed = 0;
    for (int r = 0; r < reps; r++) {
        const size_t *indices;
        size_t len;
        double t0 = cpu_seconds();
        ctxpack_result *result;
        check(ctxpack_pipeline_run_descs(pipeline, descs, n, budget, NULL, &result, &e), e, "run");
        check(ctxpack_result_indices(result, &indices, &len), NULL, "indices");
        placed = len;
        ctxpack_result_free(result);
        one_shot[r] = cpu_seconds() - t0;
        t0 = cpu_seconds();
        check(ctxpack_pipeline_run_descs_into(pipeline, descs, n, budget, NULL, &reused, &e), e, "run into");
        check(ctxpack_result_indices(reused, &indices, &len), NULL, "indices");
        kept[r] = cpu_seconds() - t0;
        if (len != placed) return 1;
    }
    qsort(one_shot, (size_t)reps, sizeof *one_shot, by_value);
    qsort(kept, (size_t)reps, sizeof *kept, by_value);
    printf("N = %zu: one-shot %.1f us, into a kept result %.1f us (%zu placed, %d runs each)\n", n,
           one_shot[reps / 2] * 1e6, kept[reps / 2] * 1e6, placed, reps);
    ctxpack_result_free(reused);
    ctxpack_budget_free(budget);
    ctxpack_pipeline_free(pipeline);
    for (size_t i = 0; i < n; i++) free((void *)descs[i].content.ptr);
    free(descs);
    free(tags);
    free(one_shot);
    free(kept);
    return 0;
}
