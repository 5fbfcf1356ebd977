// C glue between the library's callbacks and the Go functions exported by callback.go.
//
// Failure messages: a callback must leave error->message pointing at text that stays
// valid until the callback returns (the library copies it right after). Go cannot hand
// out memory that outlives its own return without leaking it, so the Go side allocates
// the message with malloc and this file keeps it in a per-thread slot until the next
// failure on the same thread, which is after the library has copied it. At most one
// message per OS thread stays allocated.
#include <stdlib.h>

#include "shim.h"
#include "_cgo_export.h"

static _Thread_local char *kept_message;

static int keep_message(int rc, ctxpack_callback_error *error) {
    if (rc != 0 && error->message.ptr != NULL) {
        free(kept_message);
        kept_message = (char *)error->message.ptr;
    }
    return rc;
}

// The Go prototypes in _cgo_export.h cannot carry `const`; the casts below only drop it.

static int score_all(void *user_data, const ctxpack_item_view *items, size_t count,
                     double *out_scores, ctxpack_callback_error *error) {
    int rc = goScoreAll((uintptr_t)user_data, (ctxpack_item_view *)items, count, out_scores, error);
    return keep_message(rc, error);
}

static int slice(void *user_data, const ctxpack_item_view *items, const double *scores,
                 size_t count, int64_t target_tokens, int64_t max_tokens,
                 size_t *out_positions, size_t *out_count, ctxpack_callback_error *error) {
    int rc = goSlice((uintptr_t)user_data, (ctxpack_item_view *)items, (double *)scores, count,
                     target_tokens, max_tokens, out_positions, out_count, error);
    return keep_message(rc, error);
}

static int place(void *user_data, const ctxpack_item_view *items, const double *scores,
                 size_t count, size_t *out_order, ctxpack_callback_error *error) {
    int rc = goPlace((uintptr_t)user_data, (ctxpack_item_view *)items, (double *)scores, count,
                     out_order, error);
    return keep_message(rc, error);
}

static void destroy(void *user_data) { goDestroy((uintptr_t)user_data); }

ctxpack_status ctxpack_go_scorer_new(uintptr_t handle, ctxpack_scorer **out, ctxpack_error **out_error) {
    return ctxpack_scorer_new_custom_batch(score_all, (void *)handle, destroy, out, out_error);
}

ctxpack_status ctxpack_go_slicer_new(uintptr_t handle, ctxpack_slicer **out, ctxpack_error **out_error) {
    return ctxpack_slicer_new_custom(slice, (void *)handle, destroy, out, out_error);
}

ctxpack_status ctxpack_go_placer_new(uintptr_t handle, ctxpack_placer **out, ctxpack_error **out_error) {
    return ctxpack_placer_new_custom(place, (void *)handle, destroy, out, out_error);
}
