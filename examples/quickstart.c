// ctxpack quickstart: choose what fits into a model's context window.
//
// A short chat is scored by recency and kind, sliced greedily into the budget, and
// placed chronologically. Build and run from the repository root, after `cargo build`:
//   cc -std=c99 -Iinclude examples/quickstart.c -Ltarget/debug -lctxpack
//      -Wl,-rpath,target/debug -o quickstart && ./quickstart
#include <stdio.h>

#include "ctxpack.h"

static int fail(ctxpack_status status, ctxpack_error *err) {
    ctxpack_str msg = ctxpack_error_message(err);
    fprintf(stderr, "ctxpack: %s: %.*s\n", ctxpack_status_name(status), (int)msg.len, msg.ptr);
    ctxpack_error_free(err);
    return 1;
}

#define TRY(call)                                       \
    do {                                                \
        ctxpack_status status_ = (call);                \
        if (status_ != CTXPACK_OK) return fail(status_, err); \
    } while (0)

int main(void) {
    static const struct {
        const char *content, *kind;
        int64_t tokens;
        int minute;
    } chat[] = {
        {"You are a concise travel assistant.", "SystemPrompt", 12, 0},
        {"User: I want to visit Lisbon in May.", "Message", 14, 1},
        {"Assistant: Great choice! May is mild and sunny, ideal for walking tours.", "Message", 40, 2},
        {"Tool: flights to LIS from 89 EUR", "ToolOutput", 25, 3},
        {"Memory: the user prefers trains to planes.", "Memory", 10, 4},
        {"User: and how do I get there by train?", "Message", 12, 5},
    };
    const size_t n = sizeof chat / sizeof chat[0];
    const int64_t start_ns = INT64_C(1746093600) * 1000000000;  // 2025-05-01 10:00 UTC
    ctxpack_error *err = NULL;

    // 1. The candidates. The library copies each item; the system prompt is pinned.
    ctxpack_items *items = NULL;
    TRY(ctxpack_items_new(&items, &err));
    for (size_t i = 0; i < n; i++) {
        ctxpack_item_desc d = CTXPACK_ITEM_DESC_INIT;  // every field zero, struct_size set
        d.content = ctxpack_str_from_cstr(chat[i].content);
        d.kind = ctxpack_str_from_cstr(chat[i].kind);
        d.tokens = chat[i].tokens;
        d.timestamp_ns = start_ns + chat[i].minute * INT64_C(60000000000);
        d.has_timestamp = 1;
        d.pinned = i == 0;
        TRY(ctxpack_items_push(items, &d, &err));
    }

    // 2. The pipeline: recency and kind (2:1), greedy slicing, chronological placement.
    //    Components are reference-counted: the pipeline keeps what it needs.
    ctxpack_scorer *recency = NULL, *kind = NULL, *scorer = NULL;
    ctxpack_slicer *slicer = NULL;
    ctxpack_placer *placer = NULL;
    ctxpack_pipeline *pipeline = NULL;
    TRY(ctxpack_scorer_new_recency(&recency, &err));
    TRY(ctxpack_scorer_new_kind(&kind, &err));
    ctxpack_composite_child children[2] = {{recency, 2.0}, {kind, 1.0}};
    TRY(ctxpack_scorer_new_composite(children, 2, &scorer, &err));
    TRY(ctxpack_slicer_new_greedy(&slicer, &err));
    TRY(ctxpack_placer_new_chronological(&placer, &err));
    TRY(ctxpack_pipeline_new(scorer, slicer, placer, NULL, &pipeline, &err));
    ctxpack_scorer_free(recency);
    ctxpack_scorer_free(kind);
    ctxpack_scorer_free(scorer);
    ctxpack_slicer_free(slicer);
    ctxpack_placer_free(placer);

    // 3. A 100-token window: aim for 70 and keep 20 for the model's answer.
    ctxpack_budget_desc b = CTXPACK_BUDGET_DESC_INIT;
    b.max_tokens = 100;
    b.target_tokens = 70;
    b.output_reserve = 20;
    ctxpack_budget *budget = NULL;
    TRY(ctxpack_budget_new(&b, &budget, &err));

    // 4. Run, and print the selection in placed order.
    ctxpack_result *result = NULL;
    TRY(ctxpack_pipeline_run(pipeline, items, budget, NULL, &result, &err));
    const size_t *selected = NULL;
    const double *scores = NULL;
    size_t count = 0;
    TRY(ctxpack_result_indices(result, &selected, &count));
    TRY(ctxpack_result_scores(result, &scores, &count));
    printf("ctxpack %s selected %zu of %zu items:\n", ctxpack_version(), count, n);
    for (size_t i = 0; i < count; i++) {
        printf("  [%zu] %.3f  %s\n", selected[i], scores[i], chat[selected[i]].content);
    }

    ctxpack_result_free(result);
    ctxpack_budget_free(budget);
    ctxpack_pipeline_free(pipeline);
    ctxpack_items_free(items);
    return 0;
}
