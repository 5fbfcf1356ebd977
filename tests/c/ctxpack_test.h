// A tiny test framework for the C and C++ tests of the ctxpack C ABI.
//
// TEST(name) { ... } defines a test; RUN(name) runs it; CHECK... records a failure and
// goes on; REQUIRE... records a failure and returns from the test. CTXPACK_TEST_ONLY=name
// in the environment runs only that test. tf_finish() prints
// "N passed, M failed" as the program's last line and returns the exit status.
// Every status checked through CHECK_STATUS/REQUIRE_STATUS is remembered, so that a test
// can assert that the suite produced every status code (tf_status_seen).
#ifndef CTXPACK_TEST_H
#define CTXPACK_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctxpack.h"

static int tf_passed;
static int tf_failed;
static int tf_current_failed;
static const char *tf_current = "";
static unsigned char tf_seen[256];

static inline void tf_fail(const char *file, int line, const char *what) {
    printf("  %s:%d: %s: check failed: %s\n", file, line, tf_current, what);
    tf_current_failed = 1;
}

static inline void tf_note_status(int status) {
    if (status >= 0 && status < 256) {
        tf_seen[status] = 1;
    }
}

static inline int tf_status_seen(int status) {
    return status >= 0 && status < 256 && tf_seen[status];
}

static inline int tf_str_eq(ctxpack_str s, const char *expected) {
    size_t n = strlen(expected);
    return s.len == n && (n == 0 || (s.ptr != NULL && memcmp(s.ptr, expected, n) == 0));
}

static inline int tf_str_contains(ctxpack_str s, const char *needle) {
    size_t n = strlen(needle);
    size_t i;
    if (n == 0) {
        return 1;
    }
    for (i = 0; s.ptr != NULL && i + n <= s.len; i++) {
        if (memcmp(s.ptr + i, needle, n) == 0) {
            return 1;
        }
    }
    return 0;
}

static inline int tf_check_status(const char *file, int line, const char *expr, int got, int expected) {
    tf_note_status(got);
    if (got != expected) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s returned %s (%d), expected %s (%d)", expr,
                 ctxpack_status_name(got), got, ctxpack_status_name(expected), expected);
        tf_fail(file, line, buf);
        return 0;
    }
    return 1;
}

#define TF_STR2(x) #x
#define TF_STR(x) TF_STR2(x)

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) tf_fail(__FILE__, __LINE__, #cond);                                \
    } while (0)
#define REQUIRE(cond)                                                                   \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            tf_fail(__FILE__, __LINE__, #cond);                                         \
            return;                                                                     \
        }                                                                               \
    } while (0)
#define CHECK_STATUS(expr, expected)                                                    \
    ((void)tf_check_status(__FILE__, __LINE__, #expr, (int)(expr), (int)(expected)))
#define REQUIRE_STATUS(expr, expected)                                                  \
    do {                                                                                \
        if (!tf_check_status(__FILE__, __LINE__, #expr, (int)(expr), (int)(expected)))  \
            return;                                                                     \
    } while (0)
#define CHECK_OK(expr) CHECK_STATUS(expr, CTXPACK_OK)
#define REQUIRE_OK(expr) REQUIRE_STATUS(expr, CTXPACK_OK)
#define CHECK_I64(a, b)                                                                 \
    do {                                                                                \
        long long tf_a = (long long)(a), tf_b = (long long)(b);                         \
        if (tf_a != tf_b) {                                                             \
            char tf_buf[256];                                                           \
            snprintf(tf_buf, sizeof tf_buf, "%s == %s (%lld != %lld)", #a, #b, tf_a, tf_b); \
            tf_fail(__FILE__, __LINE__, tf_buf);                                        \
        }                                                                               \
    } while (0)
#define CHECK_F64(a, b)                                                                 \
    do {                                                                                \
        double tf_a = (double)(a), tf_b = (double)(b);                                  \
        if (!(fabs(tf_a - tf_b) <= 1e-9)) {                                             \
            char tf_buf[256];                                                           \
            snprintf(tf_buf, sizeof tf_buf, "%s == %s (%.12g != %.12g)", #a, #b, tf_a, tf_b); \
            tf_fail(__FILE__, __LINE__, tf_buf);                                        \
        }                                                                               \
    } while (0)
#define CHECK_STR(s, expected)                                                          \
    do {                                                                                \
        ctxpack_str tf_s = (s);                                                         \
        if (!tf_str_eq(tf_s, expected)) {                                               \
            char tf_buf[512];                                                           \
            snprintf(tf_buf, sizeof tf_buf, "%s == \"%s\" (got \"%.*s\")", #s, expected, \
                     (int)tf_s.len, tf_s.ptr ? tf_s.ptr : "");                          \
            tf_fail(__FILE__, __LINE__, tf_buf);                                        \
        }                                                                               \
    } while (0)

#define TEST(name) static void name(void)
#define RUN(name) tf_run(#name, name)

static inline void tf_run(const char *name, void (*fn)(void)) {
    // CTXPACK_TEST_ONLY=name runs that test alone (to isolate one that crashes).
    const char *only = getenv("CTXPACK_TEST_ONLY");
    if (only != NULL && *only != '\0' && strcmp(only, name) != 0) {
        return;
    }
    tf_current = name;
    tf_current_failed = 0;
    fn();
    if (tf_current_failed) {
        tf_failed++;
        printf("FAIL %s\n", name);
    } else {
        tf_passed++;
        printf("ok   %s\n", name);
    }
    fflush(stdout);
}

static inline int tf_finish(void) {
    printf("%d passed, %d failed\n", tf_passed, tf_failed);
    fflush(stdout);  // LeakSanitizer exits without flushing stdio
    return tf_failed == 0 ? 0 : 1;
}

#endif  // CTXPACK_TEST_H
