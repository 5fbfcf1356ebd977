// The C test of token counting (docs/tokenizer.md): the built-in encodings, counting,
// counting with a limit and truncating, with every error path and 8 threads racing for
// the first use. Expected counts and ids are the ones OpenAI publishes (tiktoken's tests
// and the cookbook), not values computed here. Built and run by tests/c/run.sh (plain,
// under ASan+UBSan, and under valgrind).
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

static const ctxpack_encoding *encoding(const char *name) {
    const ctxpack_encoding *e = NULL;
    ctxpack_encoding_get(ctxpack_str_from_cstr(name), &e, NULL);
    return e;
}

static int64_t count(const ctxpack_encoding *e, const char *text) {
    int64_t n = -1;
    if (ctxpack_encoding_count(e, ctxpack_str_from_cstr(text), &n, NULL) != CTXPACK_OK) return -1;
    return n;
}

TEST(get_by_name) {
    const ctxpack_encoding *o200k = NULL, *cl100k = NULL, *again = NULL;
    ctxpack_error *err = NULL;
    CHECK_OK(ctxpack_encoding_get(ctxpack_str_from_cstr("o200k_base"), &o200k, &err));
    CHECK(err == NULL);
    CHECK_OK(ctxpack_encoding_get(ctxpack_str_from_cstr("cl100k_base"), &cl100k, NULL));
    CHECK(o200k != NULL && cl100k != NULL && o200k != cl100k);
    // Any ASCII case; the same object every time.
    CHECK_OK(ctxpack_encoding_get(ctxpack_str_from_cstr("O200K_Base"), &again, NULL));
    CHECK(again == o200k);

    ctxpack_str name = {NULL, 0};
    CHECK_OK(ctxpack_encoding_name(o200k, &name));
    CHECK_STR(name, "o200k_base");
    CHECK(name.ptr[name.len] == '\0');
    CHECK_OK(ctxpack_encoding_name(cl100k, &name));
    CHECK_STR(name, "cl100k_base");
    CHECK(name.ptr[name.len] == '\0');
}

TEST(get_errors) {
    const ctxpack_encoding *e = (const ctxpack_encoding *)0x1;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_encoding_get(ctxpack_str_from_cstr("p50k_base"), &e, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK(e == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "o200k_base, cl100k_base");
    CHECK_STATUS(ctxpack_encoding_get(ctxpack_str_from_cstr(""), &e, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "unknown encoding");
    ctxpack_str bad = {"o200k\xff", 6};
    CHECK_STATUS(ctxpack_encoding_get(bad, &e, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "offset 5");
    ctxpack_str null_text = {NULL, 3};
    CHECK_STATUS(ctxpack_encoding_get(null_text, &e, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "name");
    CHECK_STATUS(ctxpack_encoding_get(ctxpack_str_from_cstr("o200k_base"), NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_encoding");
    // NULL out_error is fine.
    CHECK_STATUS(ctxpack_encoding_get(ctxpack_str_from_cstr("gpt2"), &e, NULL), CTXPACK_INVALID_ARGUMENT);

    ctxpack_str name;
    CHECK_STATUS(ctxpack_encoding_name(NULL, &name), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_encoding_name(encoding("o200k_base"), NULL), CTXPACK_NULL_ARGUMENT);
    // A handle of another type is detected by its tag.
    ctxpack_budget *b = budget_of(10, 10);
    REQUIRE(b);
    CHECK_STATUS(ctxpack_encoding_name((const ctxpack_encoding *)b, &name), CTXPACK_WRONG_HANDLE_TYPE);
    int64_t n;
    CHECK_STATUS(ctxpack_encoding_count((const ctxpack_encoding *)b, ctxpack_str_from_cstr("x"), &n, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "ctxpack_encoding");
    ctxpack_budget_free(b);
    // An encoding is not freed by the free functions of other types (they check tags).
    ctxpack_budget_free((ctxpack_budget *)encoding("o200k_base"));
    CHECK(count(encoding("o200k_base"), "hello") == 1);
}

TEST(documented_counts) {
    const ctxpack_encoding *cl = encoding("cl100k_base");
    const ctxpack_encoding *o = encoding("o200k_base");
    REQUIRE(cl && o);
    CHECK_I64(count(cl, "hello world"), 2);
    CHECK_I64(count(cl, "tiktoken is great!"), 6);
    CHECK_I64(count(cl, "antidisestablishmentarianism"), 6);
    CHECK_I64(count(o, "antidisestablishmentarianism"), 6);
    CHECK_I64(count(cl, "2 + 2 = 4"), 7);
    CHECK_I64(count(o, "2 + 2 = 4"), 7);
    CHECK_I64(count(cl, "\xe3\x81\x8a\xe8\xaa\x95\xe7\x94\x9f\xe6\x97\xa5\xe3\x81\x8a\xe3\x82\x81\xe3\x81\xa7\xe3\x81\xa8\xe3\x81\x86"), 9);
    CHECK_I64(count(o, "\xe3\x81\x8a\xe8\xaa\x95\xe7\x94\x9f\xe6\x97\xa5\xe3\x81\x8a\xe3\x82\x81\xe3\x81\xa7\xe3\x81\xa8\xe3\x81\x86"), 8);
    CHECK_I64(count(cl, "today\n \n"), 2);
    CHECK_I64(count(cl, "\xf0\x9f\x91\x8d"), 3); // U+1F44D, three byte-level tokens
    CHECK_I64(count(cl, ""), 0);
    // Special tokens are ordinary text: "<|endoftext|>" is several tokens, not one.
    CHECK(count(cl, "<|endoftext|>") > 1);
    // {NULL, 0} is the empty string.
    int64_t n = -1;
    ctxpack_str empty = {NULL, 0};
    CHECK_OK(ctxpack_encoding_count(o, empty, &n, NULL));
    CHECK_I64(n, 0);
}

TEST(count_errors) {
    const ctxpack_encoding *o = encoding("o200k_base");
    REQUIRE(o);
    int64_t n = 7;
    ctxpack_error *err = NULL;
    ctxpack_str bad = {"ok \xc3\x28 then", 10};
    CHECK_STATUS(ctxpack_encoding_count(o, bad, &n, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "offset 3");
    CHECK_I64(n, 7); // untouched on failure
    ctxpack_str truncated_char = {"\xe4\xb8", 2};
    CHECK_STATUS(ctxpack_encoding_count(o, truncated_char, &n, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "offset 0");
    ctxpack_str null_text = {NULL, 1};
    CHECK_STATUS(ctxpack_encoding_count(o, null_text, &n, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "text");
    CHECK_STATUS(ctxpack_encoding_count(NULL, ctxpack_str_from_cstr("x"), &n, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "encoding");
    CHECK_STATUS(ctxpack_encoding_count(o, ctxpack_str_from_cstr("x"), NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_tokens");
}

TEST(count_with_limit) {
    const ctxpack_encoding *cl = encoding("cl100k_base");
    REQUIRE(cl);
    ctxpack_str hw = ctxpack_str_from_cstr("hello world"); // 2 tokens
    int64_t n = -1;
    ctxpack_error *err = NULL;
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, hw, 0, &n, &err));
    CHECK_I64(n, 1); // more than 0: limit + 1
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, hw, 1, &n, NULL));
    CHECK_I64(n, 2);
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, hw, 2, &n, NULL));
    CHECK_I64(n, 2); // exact
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, hw, INT64_MAX, &n, NULL));
    CHECK_I64(n, 2);
    ctxpack_str empty = {NULL, 0};
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, empty, 0, &n, NULL));
    CHECK_I64(n, 0);
    CHECK_STATUS(ctxpack_encoding_count_with_limit(cl, hw, -1, &n, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "limit must be >= 0");
    CHECK_STATUS(ctxpack_encoding_count_with_limit(cl, hw, 5, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_tokens");
    ctxpack_str bad = {"\x80", 1};
    CHECK_STATUS(ctxpack_encoding_count_with_limit(cl, bad, 5, &n, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "offset 0");

    // A 4 MB text of "tiktoken is great! " (6 tokens per copy) against a small limit.
    const char *unit = "tiktoken is great! ";
    size_t unit_len = strlen(unit), copies = (4u << 20) / unit_len;
    char *big = malloc(copies * unit_len);
    REQUIRE(big);
    for (size_t i = 0; i < copies; i++) memcpy(big + i * unit_len, unit, unit_len);
    ctxpack_str huge = {big, copies * unit_len};
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, huge, 10, &n, NULL));
    CHECK_I64(n, 11);
    CHECK_OK(ctxpack_encoding_count_with_limit(cl, huge, 0, &n, NULL));
    CHECK_I64(n, 1);
    free(big);
}

// Truncates `text` to `max` tokens and checks the kept length and count.
static void check_truncate(const ctxpack_encoding *e, const char *text, int64_t max, size_t want_len,
                           int64_t want_tokens, int line) {
    size_t len = 12345;
    int64_t tokens = -1;
    ctxpack_status s = ctxpack_encoding_truncate(e, ctxpack_str_from_cstr(text), max, &len, &tokens, NULL);
    if (s != CTXPACK_OK || len != want_len || tokens != want_tokens) {
        char buf[200];
        snprintf(buf, sizeof buf, "truncate(%s, %lld) = status %d, len %zu, tokens %lld", text,
                 (long long)max, (int)s, len, (long long)tokens);
        tf_fail(__FILE__, line, buf);
    }
}

TEST(truncate) {
    const ctxpack_encoding *cl = encoding("cl100k_base");
    const ctxpack_encoding *o = encoding("o200k_base");
    REQUIRE(cl && o);
    // "tiktoken is great!" = t | ik | token | " is" | " great" | "!" (cl100k_base).
    check_truncate(cl, "tiktoken is great!", 0, 0, 0, __LINE__);
    check_truncate(cl, "tiktoken is great!", 3, 8, 3, __LINE__);
    check_truncate(cl, "tiktoken is great!", 4, 11, 4, __LINE__);
    check_truncate(cl, "tiktoken is great!", 6, 18, 6, __LINE__);
    check_truncate(cl, "tiktoken is great!", INT64_MAX, 18, 6, __LINE__);
    check_truncate(cl, "hello world", 1, 5, 1, __LINE__);
    // U+1F44D is three tokens that each end inside the character: nothing fits in 1 or 2.
    check_truncate(cl, "\xf0\x9f\x91\x8d", 1, 0, 0, __LINE__);
    check_truncate(cl, "\xf0\x9f\x91\x8d", 2, 0, 0, __LINE__);
    check_truncate(cl, "\xf0\x9f\x91\x8d", 3, 4, 3, __LINE__);
    // o200k_base: お | 誕 split over two tokens | 生日 | お | め | で | とう
    const char *jp = "\xe3\x81\x8a\xe8\xaa\x95\xe7\x94\x9f\xe6\x97\xa5\xe3\x81\x8a\xe3\x82\x81\xe3\x81\xa7\xe3\x81\xa8\xe3\x81\x86";
    check_truncate(o, jp, 1, 3, 1, __LINE__);
    check_truncate(o, jp, 2, 3, 1, __LINE__);
    check_truncate(o, jp, 3, 6, 3, __LINE__);
    check_truncate(o, jp, 4, 12, 4, __LINE__);
    check_truncate(o, jp, 8, 27, 8, __LINE__);

    size_t len = 99;
    ctxpack_error *err = NULL;
    ctxpack_str empty = {NULL, 0};
    CHECK_OK(ctxpack_encoding_truncate(o, empty, 5, &len, NULL, &err)); // out_tokens may be NULL
    CHECK(len == 0);
    CHECK_OK(ctxpack_encoding_truncate(o, ctxpack_str_from_cstr("hello world"), 1, &len, NULL, NULL));
    CHECK(len == 5);
    CHECK_STATUS(ctxpack_encoding_truncate(o, ctxpack_str_from_cstr("x"), -3, &len, NULL, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "max_tokens must be >= 0");
    CHECK_STATUS(ctxpack_encoding_truncate(o, ctxpack_str_from_cstr("x"), 3, NULL, NULL, &err),
                 CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out_len");
    ctxpack_str bad = {"abc\xed\xa0\x80", 6}; // an encoded surrogate is not UTF-8
    CHECK_STATUS(ctxpack_encoding_truncate(o, bad, 3, &len, NULL, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "offset 3");
    CHECK_STATUS(ctxpack_encoding_truncate(NULL, bad, 3, &len, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "encoding");

    // The kept prefix of a long text re-counts to the reported number.
    const char *unit = "Tokens, counted: 42 of them; \xe4\xb8\xad\xe6\x96\x87 too.\n";
    size_t unit_len = strlen(unit);
    char *big = malloc(200 * unit_len + 1);
    REQUIRE(big);
    for (size_t i = 0; i < 200; i++) memcpy(big + i * unit_len, unit, unit_len);
    big[200 * unit_len] = '\0';
    int64_t tokens = -1, recount = -1;
    CHECK_OK(ctxpack_encoding_truncate(o, ctxpack_str_from_cstr(big), 777, &len, &tokens, NULL));
    CHECK(tokens <= 777 && tokens > 700);
    ctxpack_str prefix = {big, len};
    CHECK_OK(ctxpack_encoding_count(o, prefix, &recount, NULL));
    CHECK_I64(recount, tokens);
    free(big);
}

// 8 threads get and use both encodings at once; every result equals the main thread's.
static void *worker(void *arg) {
    int64_t *out = arg;
    const char *names[2] = {"o200k_base", "cl100k_base"};
    for (int i = 0; i < 2; i++) {
        const ctxpack_encoding *e = encoding(names[i]);
        out[i] = e ? count(e, "Threads share one encoding; \xe4\xb8\xad\xe6\x96\x87 and emoji \xf0\x9f\xa6\x80.") : -2;
    }
    return NULL;
}

TEST(threads) {
    pthread_t t[8];
    int64_t results[8][2];
    for (int i = 0; i < 8; i++) REQUIRE(pthread_create(&t[i], NULL, worker, results[i]) == 0);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    int64_t want[2];
    worker(want);
    CHECK(want[0] > 0 && want[1] > 0);
    for (int i = 0; i < 8; i++) {
        CHECK_I64(results[i][0], want[0]);
        CHECK_I64(results[i][1], want[1]);
    }
}

int main(void) {
    RUN(threads); // first, so that the threads race for the first use
    RUN(get_by_name);
    RUN(get_errors);
    RUN(documented_counts);
    RUN(count_errors);
    RUN(count_with_limit);
    RUN(truncate);
    return tf_finish();
}
