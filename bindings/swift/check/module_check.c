// Checks the SwiftPM system-library module CCtxpack (Sources/CCtxpack/module.modulemap)
// with the host's clang, before the Swift toolchain sees it: Swift's ClangImporter loads
// a module map the same way clang -fmodules does. This file imports the module (never the header directly), then runs
// a tiny selection through it. bindings/swift/run.sh compiles it as C (with
// `#pragma clang module import`) and as Objective-C (with `@import`), with
// -fno-implicit-module-maps -fmodule-map-file=..., so only that module map can supply
// the declarations, and checks the `link "ctxpack"` autolink entry in the object file.
#ifdef __OBJC__
@import CCtxpack;
#else
#pragma clang module import CCtxpack
#endif

#include <stdio.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what) {
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

static ctxpack_str str(const char *s) { return ctxpack_str_from_cstr(s); }

int main(void) {
    // Macros come through the module too.
    expect(strcmp(ctxpack_version(), CTXPACK_VERSION_STRING) == 0, "version macro matches the library");

    const char *contents[] = {"old", "new", "system"};
    ctxpack_items *items = NULL;
    ctxpack_error *err = NULL;
    expect(ctxpack_items_new(&items, &err) == CTXPACK_OK, "items_new");
    for (int i = 0; i < 3; i++) {
        ctxpack_item_desc d = CTXPACK_ITEM_DESC_INIT;
        d.content = str(contents[i]);
        d.tokens = 150 - 50 * (i == 2);
        d.kind = str(i == 2 ? "SystemPrompt" : "Message");
        d.timestamp_ns = (int64_t)i * 1000000000;
        d.has_timestamp = i < 2;
        d.pinned = i == 2;
        expect(ctxpack_items_push(items, &d, &err) == CTXPACK_OK, "items_push");
    }

    ctxpack_scorer *scorer = NULL;
    ctxpack_slicer *slicer = NULL;
    ctxpack_placer *placer = NULL;
    ctxpack_pipeline *pipeline = NULL;
    ctxpack_budget *budget = NULL;
    ctxpack_result *result = NULL;
    expect(ctxpack_scorer_new_recency(&scorer, &err) == CTXPACK_OK, "scorer");
    expect(ctxpack_slicer_new_greedy(&slicer, &err) == CTXPACK_OK, "slicer");
    expect(ctxpack_placer_new_chronological(&placer, &err) == CTXPACK_OK, "placer");
    expect(ctxpack_pipeline_new(scorer, slicer, placer, NULL, &pipeline, &err) == CTXPACK_OK, "pipeline");
    ctxpack_scorer_free(scorer);
    ctxpack_slicer_free(slicer);
    ctxpack_placer_free(placer);
    ctxpack_budget_desc bd = CTXPACK_BUDGET_DESC_INIT;
    bd.max_tokens = 1000;
    bd.target_tokens = 400;
    expect(ctxpack_budget_new(&bd, &budget, &err) == CTXPACK_OK, "budget");
    expect(ctxpack_pipeline_run(pipeline, items, budget, NULL, &result, &err) == CTXPACK_OK, "run");

    // The pinned-items vector's selection: old, new (by time), then the undated pinned item.
    const size_t *indices = NULL;
    size_t count = 0;
    expect(ctxpack_result_indices(result, &indices, &count) == CTXPACK_OK, "indices");
    expect(count == 3 && indices[0] == 0 && indices[1] == 1 && indices[2] == 2, "selection old, new, system");
    printf("selected:");
    for (size_t i = 0; i < count; i++) printf(" %s", contents[indices[i]]);
    printf("\n");

    // An error object through the module: status name and message.
    ctxpack_budget *bad = NULL;
    bd.max_tokens = 10;
    bd.target_tokens = 20;
    expect(ctxpack_budget_new(&bd, &bad, &err) == CTXPACK_INVALID_BUDGET, "invalid budget");
    expect(err != NULL && ctxpack_error_code(err) == CTXPACK_INVALID_BUDGET, "error object");
    expect(strcmp(ctxpack_status_name(CTXPACK_INVALID_BUDGET), "CTXPACK_INVALID_BUDGET") == 0, "status name");
    ctxpack_error_free(err);

    ctxpack_result_free(result);
    ctxpack_budget_free(budget);
    ctxpack_pipeline_free(pipeline);
    ctxpack_items_free(items);
    printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
    return failures == 0 ? 0 : 1;
}
