// Helpers shared by the C test programs (test_api.c, test_policy.c, test_json.c): item
// descriptors, item lists, budgets, result indices, and checking an error object. Include
// after ctxpack_test.h.
#ifndef CTXPACK_HELPERS_H
#define CTXPACK_HELPERS_H

#include <stdint.h>

#include "ctxpack_test.h"

#define S(lit) ((ctxpack_str){(lit), sizeof(lit) - 1})
#define NS_PER_DAY INT64_C(86400000000000)
#define JAN_2024 (INT64_C(1704067200) * INT64_C(1000000000))

// A zero-initialised descriptor with content and tokens.
static inline ctxpack_item_desc desc(const char *content, int64_t tokens) {
    ctxpack_item_desc d = CTXPACK_ITEM_DESC_INIT;
    d.content = ctxpack_str_from_cstr(content);
    d.tokens = tokens;
    return d;
}

// As desc, with a timestamp `day` days after 2024-01-01.
static inline ctxpack_item_desc desc_at(const char *content, int64_t tokens, int day) {
    ctxpack_item_desc d = desc(content, tokens);
    d.timestamp_ns = JAN_2024 + day * NS_PER_DAY;
    d.has_timestamp = true;
    return d;
}

// Checks an error object (code and a message fragment) and frees it.
static inline void check_error_at(const char *file, int line, ctxpack_error *err,
                                  ctxpack_status code, const char *needle) {
    if (err == NULL) {
        tf_fail(file, line, "an error object was expected");
        return;
    }
    if (ctxpack_error_code(err) != code) {
        tf_fail(file, line, "error code differs from the returned status");
    }
    ctxpack_str msg = ctxpack_error_message(err);
    if (!tf_str_contains(msg, needle)) {
        char buf[600];
        snprintf(buf, sizeof buf, "message \"%.*s\" lacks \"%s\"", (int)msg.len, msg.ptr, needle);
        tf_fail(file, line, buf);
    }
    if (msg.ptr[msg.len] != '\0') {
        tf_fail(file, line, "message is not NUL-terminated");
    }
    ctxpack_error_free(err);
}
#define CHECK_ERROR(err, code, needle) check_error_at(__FILE__, __LINE__, (err), (code), (needle))

// A new item list holding `descs` (NULL on failure).
static inline ctxpack_items *items_of(const ctxpack_item_desc *descs, size_t n) {
    ctxpack_items *items = NULL;
    if (ctxpack_items_new(&items, NULL) != CTXPACK_OK) return NULL;
    if (ctxpack_items_push_many(items, descs, n, NULL) != CTXPACK_OK) {
        ctxpack_items_free(items);
        return NULL;
    }
    return items;
}

// Whether the result's indices are exactly `expected` (placed order).
static inline int indices_are(const ctxpack_result *r, const size_t *expected, size_t n) {
    const size_t *idx = NULL;
    size_t len = 0;
    if (ctxpack_result_indices(r, &idx, &len) != CTXPACK_OK || len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        if (idx[i] != expected[i]) return 0;
    }
    return 1;
}

// ctxpack_budget_new with every field of the descriptor as an argument (the tests' short
// form).
static inline ctxpack_status new_budget(int64_t max_tokens, int64_t target_tokens,
                                        int64_t output_reserve, const ctxpack_reserved_slot *slots,
                                        size_t slot_count, double margin, ctxpack_budget **out,
                                        ctxpack_error **err) {
    ctxpack_budget_desc d = CTXPACK_BUDGET_DESC_INIT;
    d.max_tokens = max_tokens;
    d.target_tokens = target_tokens;
    d.output_reserve = output_reserve;
    d.slots = slots;
    d.slot_count = slot_count;
    d.estimation_safety_margin_percent = margin;
    return ctxpack_budget_new(&d, out, err);
}

// A budget without reserve, slots or margin (NULL on failure).
static inline ctxpack_budget *budget_of(int64_t max_tokens, int64_t target_tokens) {
    ctxpack_budget *b = NULL;
    new_budget(max_tokens, target_tokens, 0, NULL, 0, 0.0, &b, NULL);
    return b;
}

#endif  // CTXPACK_HELPERS_H
