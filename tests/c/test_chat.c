// The C test of chat request trimming (docs/chat.md, "The C ABI"): ctxpack_chat_trim on
// the bundled sample requests at several budgets, compared byte for byte with what the
// ctxpack CLI printed for the same request, budget and options (tests/c/run.sh runs the
// CLI first and passes the directory in CTXPACK_CHAT_EXPECTED), plus structural checks
// made here: every tool call in the output has its results and every result its call,
// kept and dropped positions partition the messages, the report agrees with them. Then
// every error path: malformed JSON, a request of the other format, NULL and invalid
// UTF-8 arguments, bad options, accessor misuse, freeing. Built and run by
// tests/c/run.sh (plain, under ASan+UBSan, and under valgrind).
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// A whole file into a NUL-terminated buffer the caller frees (NULL on failure).
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        cap *= 2;
        char *bigger = realloc(buf, cap);
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
        }
        buf = bigger;
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static char *sample(const char *format, size_t *len) {
    const char *root = getenv("CTXPACK_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/data/%s-request.json", root ? root : ".", format);
    return read_file(path, len);
}

// The CLI's output for `name` (written by tests/c/run.sh), or NULL.
static char *expected(const char *name, size_t *len) {
    const char *dir = getenv("CTXPACK_CHAT_EXPECTED");
    if (dir == NULL) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return read_file(path, len);
}

// Occurrences of `"key": "value"` in s.
static size_t count_pair(ctxpack_str s, const char *key, const char *value) {
    char needle[256];
    snprintf(needle, sizeof needle, "\"%s\": \"%s\"", key, value);
    size_t n = strlen(needle), hits = 0;
    for (size_t i = 0; i + n <= s.len; i++) {
        if (memcmp(s.ptr + i, needle, n) == 0) hits++;
    }
    return hits;
}

// Every call id of the input (`"id": "…"` values): in the output, the call appears exactly
// as often as its answer (`answer_key`), once each or not at all. Returns the number of
// calls kept, or -1 after recording a failure.
static int calls_keep_their_results(ctxpack_str input, ctxpack_str output, const char *answer_key) {
    const char *key = "\"id\": \"";
    size_t klen = strlen(key);
    int kept = 0;
    for (size_t i = 0; i + klen <= input.len; i++) {
        if (memcmp(input.ptr + i, key, klen) != 0) continue;
        char id[128];
        size_t j = 0;
        while (i + klen + j < input.len && input.ptr[i + klen + j] != '"' && j < sizeof id - 1) {
            id[j] = input.ptr[i + klen + j];
            j++;
        }
        id[j] = '\0';
        size_t calls = count_pair(output, "id", id), answers = count_pair(output, answer_key, id);
        if (calls > 1 || calls != answers) {
            char buf[256];
            snprintf(buf, sizeof buf, "call %s: %zu calls, %zu answers in the output", id, calls, answers);
            tf_fail(__FILE__, __LINE__, buf);
            return -1;
        }
        kept += (int)calls;
    }
    return kept;
}

static ctxpack_pipeline *chat_pipeline(void) {
    ctxpack_pipeline *p = NULL;
    ctxpack_pipeline_new_preset(S("chat"), &p, NULL);
    return p;
}

// Trims sample `format` at `budget` with `options`, compares with the CLI's output
// `expected_name` and checks the structure. Returns the number of messages dropped (-1 on
// failure).
static int trim_and_check(int32_t format, const char *format_name, int64_t budget,
                          const ctxpack_chat_options *options, const char *expected_name) {
    size_t in_len = 0, want_len = 0;
    char *input = sample(format_name, &in_len);
    char *want = expected(expected_name, &want_len);
    ctxpack_pipeline *pipeline = chat_pipeline();
    ctxpack_budget *b = budget_of(budget, budget);
    ctxpack_chat_result *r = NULL;
    ctxpack_result *selection = NULL;
    int dropped_count = -1;
    if (input == NULL || want == NULL || pipeline == NULL || b == NULL) {
        tf_fail(__FILE__, __LINE__, "sample, CLI output (CTXPACK_CHAT_EXPECTED), pipeline or budget missing");
        goto done;
    }
    ctxpack_error *err = NULL;
    ctxpack_str request = {input, in_len};
    if (!tf_check_status(__FILE__, __LINE__, "ctxpack_chat_trim",
                         ctxpack_chat_trim(format, request, b, pipeline, options, &r, &err), CTXPACK_OK)) {
        if (err) printf("    %s\n", ctxpack_error_message(err).ptr);
        ctxpack_error_free(err);
        goto done;
    }
    CHECK(err == NULL && r != NULL);

    ctxpack_str json = {NULL, 0};
    CHECK_OK(ctxpack_chat_result_json(r, &json));
    CHECK(json.ptr != NULL && json.ptr[json.len] == '\0');
    // Byte for byte what the CLI printed.
    CHECK(json.len == want_len && memcmp(json.ptr, want, want_len) == 0);

    int calls = calls_keep_their_results(request, json, format == CTXPACK_CHAT_FORMAT_OPENAI ? "tool_call_id" : "tool_use_id");
    CHECK(calls >= 0);

    int64_t tokens = -1, input_tokens = -1;
    CHECK_OK(ctxpack_chat_result_tokens(r, &tokens));
    CHECK_OK(ctxpack_chat_result_input_tokens(r, &input_tokens));
    CHECK(tokens > 0 && tokens <= budget && tokens <= input_tokens);

    const size_t *kept = NULL, *dropped = NULL, *shortened = NULL;
    size_t nkept = 0, ndropped = 0, nshortened = 99;
    CHECK_OK(ctxpack_chat_result_kept(r, &kept, &nkept));
    CHECK_OK(ctxpack_chat_result_dropped(r, &dropped, &ndropped));
    CHECK_OK(ctxpack_chat_result_shortened(r, &shortened, &nshortened));
    CHECK(nkept > 0);
    // Shortened messages are kept ones, ascending; without the option there are none.
    bool shortening = options != NULL && (options->shorten_head_tokens | options->shorten_tail_tokens) != 0;
    CHECK(shortening || nshortened == 0);
    for (size_t s = 0, k = 0; s < nshortened; s++) {
        while (k < nkept && kept[k] < shortened[s]) k++;
        CHECK(k < nkept && kept[k] == shortened[s]);
        CHECK(s == 0 || shortened[s - 1] < shortened[s]);
    }
    // Kept and dropped partition 0..n, each ascending.
    size_t total = nkept + ndropped, k = 0, d = 0;
    for (size_t m = 0; m < total; m++) {
        if (k < nkept && kept[k] == m) {
            k++;
        } else if (d < ndropped && dropped[d] == m) {
            d++;
        } else {
            tf_fail(__FILE__, __LINE__, "kept and dropped do not partition the messages");
            break;
        }
    }
    if (ndropped == 0 && nshortened == 0) {
        CHECK(json.len == in_len && memcmp(json.ptr, input, in_len) == 0);
        CHECK(tokens == input_tokens);
    } else {
        CHECK(json.len < in_len);
    }

    // The report, mapped back through the item paths: a message is selected exactly when
    // it is kept (these samples need no adjustment after the run).
    size_t adjustments = 99;
    CHECK_OK(ctxpack_chat_result_adjustment_count(r, &adjustments));
    CHECK(adjustments == 0);
    if (!tf_check_status(__FILE__, __LINE__, "ctxpack_chat_result_selection",
                         ctxpack_chat_result_selection(r, &selection, NULL), CTXPACK_OK)) {
        goto done;
    }
    int traced = options != NULL && options->trace_detail != CTXPACK_TRACE_DETAIL_NONE;
    bool has_report = !traced;
    CHECK_OK(ctxpack_result_has_report(selection, &has_report));
    CHECK(has_report == (traced != 0));
    const size_t *indices = NULL;
    size_t nindices = 0;
    CHECK_OK(ctxpack_result_indices(selection, &indices, &nindices));
    size_t items = 0, messages_seen = 0;
    CHECK_OK(ctxpack_chat_result_item_count(r, &items));
    for (size_t i = 0; i < items; i++) {
        ctxpack_str path = {NULL, 0};
        CHECK_OK(ctxpack_chat_result_item_path(r, i, &path));
        CHECK(path.ptr[path.len] == '\0');
        int selected = 0;
        for (size_t j = 0; j < nindices; j++) selected |= indices[j] == i;
        size_t m;
        if (sscanf(path.ptr, "messages[%zu]", &m) == 1) {
            messages_seen++;
            int is_kept = 0;
            for (size_t j = 0; j < nkept; j++) is_kept |= kept[j] == m;
            CHECK(selected == is_kept);
        } else {
            // System prompts and the request's own framing are pinned.
            CHECK(tf_str_eq(path, "$") || tf_str_eq(path, "system"));
            CHECK(selected);
        }
    }
    CHECK(messages_seen == total);
    if (traced) {
        ctxpack_report_summary summary = CTXPACK_REPORT_SUMMARY_INIT;
        CHECK_OK(ctxpack_result_report_summary(selection, &summary, NULL));
        CHECK(summary.total_candidates == items);
        CHECK(summary.included_count == nindices);
        CHECK(summary.included_count + summary.excluded_count == items);
        for (size_t i = 0; i < summary.excluded_count; i++) {
            ctxpack_excluded_entry e = CTXPACK_EXCLUDED_ENTRY_INIT;
            CHECK_OK(ctxpack_result_report_excluded(selection, i, &e, NULL));
            // Every excluded item is a dropped message, with a reason of its own.
            ctxpack_str path = {NULL, 0};
            size_t m = (size_t)-1;
            CHECK_OK(ctxpack_chat_result_item_path(r, e.index, &path));
            CHECK(path.ptr != NULL && sscanf(path.ptr, "messages[%zu]", &m) == 1);
            int is_dropped = 0;
            for (size_t j = 0; j < ndropped; j++) is_dropped |= dropped[j] == m;
            CHECK(is_dropped);
            CHECK(e.name.len > 0);
        }
        ctxpack_str report = {NULL, 0};
        CHECK_OK(ctxpack_result_report_json(selection, &report));
        CHECK(tf_str_contains(report, "\"included\""));
    }
    dropped_count = (int)ndropped;

done:
    ctxpack_result_free(selection);
    ctxpack_chat_result_free(r);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(pipeline);
    free(input);
    free(want);
    return dropped_count;
}

TEST(openai_sample_at_several_budgets) {
    ctxpack_chat_options traced = CTXPACK_CHAT_OPTIONS_INIT;
    traced.trace_detail = CTXPACK_TRACE_DETAIL_ITEM;
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_OPENAI, "openai", 100000, NULL, "openai-100000.json") == 0);
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_OPENAI, "openai", 6000, &traced, "openai-6000.json") > 0);
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_OPENAI, "openai", 3000, NULL, "openai-3000.json") > 0);
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_OPENAI, "openai", 1500, &traced, "openai-1500.json") > 0);
}

TEST(anthropic_sample_at_several_budgets) {
    ctxpack_chat_options traced = CTXPACK_CHAT_OPTIONS_INIT;
    traced.trace_detail = CTXPACK_TRACE_DETAIL_STAGE;
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_ANTHROPIC, "anthropic", 100000, &traced, "anthropic-100000.json") == 0);
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_ANTHROPIC, "anthropic", 6000, NULL, "anthropic-6000.json") > 0);
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_ANTHROPIC, "anthropic", 3000, &traced, "anthropic-3000.json") > 0);
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_ANTHROPIC, "anthropic", 1500, NULL, "anthropic-1500.json") > 0);
}

TEST(options_match_the_cli) {
    // --encoding cl100k_base and --no-pin-last-turn, as the CLI applies them.
    ctxpack_chat_options o = CTXPACK_CHAT_OPTIONS_INIT;
    o.encoding = S("cl100k_base");
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_OPENAI, "openai", 3000, &o, "openai-3000-cl100k.json") > 0);
    ctxpack_chat_options u;
    CHECK_OK(ctxpack_chat_options_init(&u, sizeof u));
    u.unpin_last_turn = 1;
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_ANTHROPIC, "anthropic", 3000, &u, "anthropic-3000-unpinned.json") > 0);
}

TEST(long_tool_outputs_are_shortened_rather_than_dropped) {
    // Byte for byte what `--head-tail` makes the CLI print.
    ctxpack_chat_options o = CTXPACK_CHAT_OPTIONS_INIT;
    o.shorten_head_tokens = 60;
    o.shorten_tail_tokens = 40;
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_OPENAI, "openai", 3000, &o, "openai-3000-short.json") >= 0);
    ctxpack_chat_options a = CTXPACK_CHAT_OPTIONS_INIT;
    a.shorten_head_tokens = 30;
    a.shorten_tail_tokens = 20;
    a.trace_detail = CTXPACK_TRACE_DETAIL_ITEM;
    CHECK(trim_and_check(CTXPACK_CHAT_FORMAT_ANTHROPIC, "anthropic", 1500, &a, "anthropic-1500-short.json") >= 0);

    // The same budget keeps more messages with shortening, and says which.
    size_t len = 0;
    char *input = sample("openai", &len);
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(3000, 3000);
    REQUIRE(input && p && b);
    ctxpack_str request = {input, len};
    ctxpack_chat_result *plain = NULL, *short_ = NULL, *marked = NULL;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, NULL, &plain, NULL));
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &short_, NULL));
    const size_t *kept = NULL, *shortened = NULL;
    size_t nplain = 0, nshort = 0, nshortened = 0;
    CHECK_OK(ctxpack_chat_result_kept(plain, &kept, &nplain));
    CHECK_OK(ctxpack_chat_result_kept(short_, &kept, &nshort));
    CHECK_OK(ctxpack_chat_result_shortened(short_, &shortened, &nshortened));
    CHECK(nshort > nplain && nshortened > 0);
    ctxpack_str json = {0};
    CHECK_OK(ctxpack_chat_result_json(short_, &json));
    CHECK(tf_str_contains(json, " tokens omitted …]"));
    int64_t tokens = 0;
    CHECK_OK(ctxpack_chat_result_tokens(short_, &tokens));
    CHECK(tokens > 0 && tokens <= 3000);

    // A marker of the caller's own, with the count filled in; a fixed quality.
    o.shorten_marker = S("<<{omitted} tokens cut>>");
    o.shorten_quality = 0.5;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &marked, NULL));
    CHECK_OK(ctxpack_chat_result_json(marked, &json));
    CHECK(tf_str_contains(json, " tokens cut>>") && !tf_str_contains(json, "omitted"));

    // Bad options.
    ctxpack_chat_result *none = NULL;
    ctxpack_error *err = NULL;
    const double bad_quality[] = {1.5, -0.25, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_quality / sizeof bad_quality[0]; i++) {
        o.shorten_quality = bad_quality[i];
        CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &none, &err), CTXPACK_INVALID_ARGUMENT);
        CHECK(none == NULL && err != NULL && tf_str_contains(ctxpack_error_message(err), "options.shorten_quality"));
        ctxpack_error_free(err);
        err = NULL;
    }
    o.shorten_quality = 0;
    o.shorten_marker = (ctxpack_str){"\xff", 1};
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &none, NULL), CTXPACK_INVALID_UTF8);
    o.shorten_marker = (ctxpack_str){NULL, 3};
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &none, NULL), CTXPACK_NULL_ARGUMENT);
    o.shorten_marker = (ctxpack_str){NULL, 0};
    ctxpack_prefix_options po = CTXPACK_PREFIX_OPTIONS_INIT;
    o.prefix = &po;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &none, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK(err != NULL && tf_str_contains(ctxpack_error_message(err), "prefix state"));
    ctxpack_error_free(err);
    CHECK(none == NULL);

    // The last turn is pinned: a latest tool output longer than the budget fails the trim
    // unless it can be sent shortened.
    char *agent = malloc(8192);
    REQUIRE(agent);
    int at = snprintf(agent, 8192, "{\"messages\": [{\"role\": \"user\", \"content\": \"read it\"}, "
                      "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", "
                      "\"type\": \"function\", \"function\": {\"name\": \"read\", \"arguments\": \"{}\"}}]}, "
                      "{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"");
    for (int w = 1; w <= 600; w++) at += snprintf(agent + at, 8192 - (size_t)at, "w%d ", w);
    snprintf(agent + at, 8192 - (size_t)at, "\"}]}");
    ctxpack_budget *small = budget_of(200, 200);
    ctxpack_chat_result *pinned = NULL;
    ctxpack_chat_options defaults = CTXPACK_CHAT_OPTIONS_INIT;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, ctxpack_str_from_cstr(agent), small, p, &defaults, &pinned, NULL),
                 CTXPACK_PINNED_EXCEEDS_BUDGET);
    defaults.shorten_head_tokens = 30;
    defaults.shorten_tail_tokens = 20;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, ctxpack_str_from_cstr(agent), small, p, &defaults, &pinned, NULL));
    CHECK_OK(ctxpack_chat_result_shortened(pinned, &shortened, &nshortened));
    CHECK(nshortened == 1 && shortened[0] == 2);
    CHECK_OK(ctxpack_chat_result_tokens(pinned, &tokens));
    CHECK(tokens > 0 && tokens <= 200);
    CHECK_OK(ctxpack_chat_result_json(pinned, &json));
    CHECK(tf_str_contains(json, "w1 w2 ") && tf_str_contains(json, " w599 w600") && !tf_str_contains(json, " w300 "));
    ctxpack_chat_result_free(pinned);
    ctxpack_budget_free(small);
    free(agent);

    // Accessor misuse.
    CHECK_STATUS(ctxpack_chat_result_shortened(NULL, &shortened, &nshortened), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_shortened(short_, NULL, &nshortened), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_shortened(short_, &shortened, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_shortened((const ctxpack_chat_result *)b, &shortened, &nshortened), CTXPACK_WRONG_HANDLE_TYPE);

    ctxpack_chat_result_free(plain);
    ctxpack_chat_result_free(short_);
    ctxpack_chat_result_free(marked);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
    free(input);
}

// Tokens of a trim with the given options (-1 on failure).
static int64_t input_tokens_with(const char *request, const ctxpack_chat_options *o) {
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(100000, 100000);
    ctxpack_chat_result *r = NULL;
    int64_t n = -1;
    if (ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, ctxpack_str_from_cstr(request), b, p, o, &r, NULL) == CTXPACK_OK) {
        ctxpack_chat_result_input_tokens(r, &n);
    }
    ctxpack_chat_result_free(r);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
    return n;
}

static const char *SMALL =
    "{\"model\": \"m\", \"messages\": ["
    "{\"role\": \"system\", \"content\": \"Be brief.\"},"
    "{\"role\": \"user\", \"content\": \"Look up order 7.\"},"
    "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\","
    " \"function\": {\"name\": \"order\", \"arguments\": \"{}\"}}]},"
    "{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"shipped\"},"
    "{\"role\": \"user\", \"content\": \"Thanks.\"}]}";

TEST(overheads_and_encodings) {
    // Per-message framing is added once per message: 5 messages.
    ctxpack_chat_options zero = CTXPACK_CHAT_OPTIONS_INIT, ten = CTXPACK_CHAT_OPTIONS_INIT;
    zero.has_overheads = 1;
    ten.has_overheads = 1;
    ten.overhead_per_message = 10;
    int64_t a = input_tokens_with(SMALL, &zero), b = input_tokens_with(SMALL, &ten);
    CHECK(a > 0);
    CHECK_I64(b - a, 50);
    ten.overhead_per_request = 7;
    CHECK_I64(input_tokens_with(SMALL, &ten) - a, 57);
    // The default is o200k_base, and the texts are counted by the encoding named.
    ctxpack_chat_options o200k = CTXPACK_CHAT_OPTIONS_INIT;
    o200k.encoding = S("O200K_BASE");
    CHECK_I64(input_tokens_with(SMALL, NULL), input_tokens_with(SMALL, &o200k));
    const ctxpack_encoding *e = NULL;
    REQUIRE_OK(ctxpack_encoding_get(S("o200k_base"), &e, NULL));
    int64_t words = 0;
    CHECK_OK(ctxpack_encoding_count(e, S("Be brief."), &words, NULL));
    zero.encoding = S("o200k_base");
    CHECK(input_tokens_with(SMALL, &zero) > words);
}

TEST(a_tool_call_is_kept_or_dropped_with_its_result) {
    // At every budget from what the pinned parts need to everything, the call and its
    // result go together.
    ctxpack_pipeline *p = chat_pipeline();
    REQUIRE(p);
    int seen_kept = 0, seen_dropped = 0;
    for (int64_t budget = 1; budget <= 120; budget++) {
        ctxpack_budget *b = budget_of(budget, budget);
        ctxpack_chat_result *r = NULL;
        ctxpack_status st = ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, ctxpack_str_from_cstr(SMALL), b, p, NULL, &r, NULL);
        tf_note_status(st);
        if (st == CTXPACK_OK) {
            ctxpack_str json;
            CHECK_OK(ctxpack_chat_result_json(r, &json));
            size_t calls = count_pair(json, "id", "c1"), answers = count_pair(json, "tool_call_id", "c1");
            CHECK(calls == answers);
            seen_kept |= calls == 1;
            seen_dropped |= calls == 0;
            CHECK(tf_str_contains(json, "Be brief.") && tf_str_contains(json, "Thanks."));
        } else {
            CHECK(st == CTXPACK_PINNED_EXCEEDS_BUDGET);
            CHECK(r == NULL);
        }
        ctxpack_chat_result_free(r);
        ctxpack_budget_free(b);
    }
    CHECK(seen_kept && seen_dropped);
    ctxpack_pipeline_free(p);
}

// An Anthropic agent turn: the task, a tool call and its long result, an answer, and the
// next question. `%s` is where the first message is repeated to measure its tokens.
#define AGENT_TURN                                                                          \
    "{\"messages\": [%s{\"role\": \"user\", \"content\": \"ten words about the task we are " \
    "working on today\"},"                                                                  \
    "{\"role\": \"assistant\", \"content\": [{\"type\": \"tool_use\", \"id\": \"t1\", "     \
    "\"name\": \"search\", \"input\": {}}]},"                                               \
    "{\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": "      \
    "\"t1\", \"content\": \"result result result result result result result result result " \
    "result result result result result result result result result result result\"}]},"    \
    "{\"role\": \"assistant\", \"content\": \"short answer\"},"                             \
    "{\"role\": \"user\", \"content\": \"next question\"}]}"

// The tokens of the whole request as trimmed by `p` (`first` repeated or not).
static int64_t agent_turn_tokens(ctxpack_pipeline *p, const char *first) {
    char request[2048];
    snprintf(request, sizeof request, AGENT_TURN, first);
    ctxpack_budget *b = budget_of(1000000, 1000000);
    ctxpack_chat_result *r = NULL;
    int64_t tokens = -1;
    CHECK_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_ANTHROPIC, ctxpack_str_from_cstr(request), b, p, NULL, &r, NULL));
    if (r != NULL) CHECK_OK(ctxpack_chat_result_input_tokens(r, &tokens));
    ctxpack_chat_result_free(r);
    ctxpack_budget_free(b);
    return tokens;
}

TEST(a_user_message_is_pinned_rather_than_losing_the_leading_units) {
    ctxpack_pipeline *p = chat_pipeline();
    REQUIRE(p);
    // Two user messages in a row are one turn to Anthropic: repeating the first message
    // measures its tokens.
    int64_t all = agent_turn_tokens(p, "");
    int64_t first = agent_turn_tokens(p, "{\"role\": \"user\", \"content\": \"ten words about the task we are working on today\"},") - all;
    REQUIRE(all > 0 && first > 0);
    // Room for everything but the first message, which the pipeline leaves out: the
    // selection would start with the tool call. Pinning the first message and running
    // again keeps it, the answer and the question; dropping would keep the question alone.
    char request[2048];
    snprintf(request, sizeof request, AGENT_TURN, "");
    ctxpack_budget *b = budget_of(all - first, all - first);
    ctxpack_chat_result *r = NULL;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_ANTHROPIC, ctxpack_str_from_cstr(request), b, p, NULL, &r, NULL));
    const size_t *kept = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_chat_result_kept(r, &kept, &n));
    CHECK(n == 3 && kept[0] == 0 && kept[1] == 3 && kept[2] == 4);
    size_t count = 99;
    CHECK_OK(ctxpack_chat_result_adjustment_count(r, &count));
    CHECK(count == 0);
    CHECK_OK(ctxpack_chat_result_rule_pin_count(r, &count));
    CHECK(count == 1);
    ctxpack_str path = {0}, reason = {0};
    CHECK_OK(ctxpack_chat_result_rule_pin(r, 0, &path, &reason));
    CHECK_STR(path, "messages[0]");
    CHECK(tf_str_contains(reason, "starts with a user message"));
    CHECK(reason.ptr[reason.len] == '\0' && path.ptr[path.len] == '\0');
    // Misuse.
    CHECK_STATUS(ctxpack_chat_result_rule_pin(r, 1, &path, &reason), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_chat_result_rule_pin(r, 0, NULL, &reason), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_rule_pin(r, 0, &path, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_rule_pin(NULL, 0, &path, &reason), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_rule_pin_count(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_rule_pin_count((const ctxpack_chat_result *)b, &count), CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_chat_result_free(r);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

// Trims `request` as `format` and checks the failure.
static void check_bad_request(int line, int32_t format, ctxpack_str request, ctxpack_status code, const char *needle) {
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(100000, 100000);
    ctxpack_chat_result *r = (ctxpack_chat_result *)0x1;
    ctxpack_error *err = NULL;
    tf_check_status(__FILE__, line, "ctxpack_chat_trim", ctxpack_chat_trim(format, request, b, p, NULL, &r, &err), code);
    if (r != NULL) tf_fail(__FILE__, line, "out is not NULL after a failure");
    check_error_at(__FILE__, line, err, code, needle);
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}
#define BAD(format, request, code, needle) check_bad_request(__LINE__, format, request, code, needle)

TEST(bad_requests) {
    BAD(CTXPACK_CHAT_FORMAT_OPENAI, S("{\"messages\": ["), CTXPACK_INVALID_REQUEST, "$: malformed JSON");
    BAD(CTXPACK_CHAT_FORMAT_OPENAI, S(""), CTXPACK_INVALID_REQUEST, "$: malformed JSON");
    BAD(CTXPACK_CHAT_FORMAT_OPENAI, S("[1]"), CTXPACK_INVALID_REQUEST, "must be a JSON object");
    BAD(CTXPACK_CHAT_FORMAT_ANTHROPIC, S("{\"model\": \"m\"}"), CTXPACK_INVALID_REQUEST, "messages: is required");
    BAD(CTXPACK_CHAT_FORMAT_OPENAI,
        S("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"tool\", \"tool_call_id\": \"c9\", \"content\": \"x\"}]}"),
        CTXPACK_INVALID_REQUEST, "messages[1].tool_call_id");
    BAD(CTXPACK_CHAT_FORMAT_OPENAI, S("{\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}"),
        CTXPACK_INVALID_REQUEST, "messages[0].role: unknown role 'robot'");
    // The OpenAI sample read as an Anthropic request is refused, naming where (its first
    // message is a developer message).
    size_t len = 0;
    char *openai = sample("openai", &len);
    REQUIRE(openai);
    ctxpack_str o = {openai, len};
    BAD(CTXPACK_CHAT_FORMAT_ANTHROPIC, o, CTXPACK_INVALID_REQUEST, "messages[0].role");
    // Not UTF-8: the byte offset.
    BAD(CTXPACK_CHAT_FORMAT_OPENAI, S("{\"messages\": \"\xff\"}"), CTXPACK_INVALID_UTF8, "request is not valid UTF-8 (invalid byte at offset 14)");
    ctxpack_str null_request = {NULL, 4};
    BAD(CTXPACK_CHAT_FORMAT_OPENAI, null_request, CTXPACK_NULL_ARGUMENT, "request");
    // Formats outside the enumeration.
    BAD(2, o, CTXPACK_INVALID_ARGUMENT, "format is 2");
    BAD(-1, o, CTXPACK_INVALID_ARGUMENT, "format is -1");
    // The pinned parts do not fit: the pipeline's own status.
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *small = budget_of(50, 50);
    ctxpack_chat_result *r = NULL;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, o, small, p, NULL, &r, &err), CTXPACK_PINNED_EXCEEDS_BUDGET);
    CHECK_ERROR(err, CTXPACK_PINNED_EXCEEDS_BUDGET, "");
    free(openai);
    ctxpack_budget_free(small);
    ctxpack_pipeline_free(p);
}

TEST(bad_arguments) {
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(1000, 1000);
    REQUIRE(p && b);
    ctxpack_str req = ctxpack_str_from_cstr(SMALL);
    ctxpack_chat_result *r = NULL;
    ctxpack_error *err = NULL;
    int32_t fmt = CTXPACK_CHAT_FORMAT_OPENAI;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, NULL, p, NULL, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "budget");
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, NULL, NULL, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "pipeline");
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, NULL, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "out");
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, (const ctxpack_budget *)p, p, NULL, &r, &err), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "ctxpack_budget");
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, (const ctxpack_pipeline *)b, NULL, &r, &err), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "ctxpack_pipeline");
    // NULL out_error is fine.
    CHECK_STATUS(ctxpack_chat_trim(fmt, S("nope"), b, p, NULL, &r, NULL), CTXPACK_INVALID_REQUEST);

    // Options.
    ctxpack_chat_options o = CTXPACK_CHAT_OPTIONS_INIT;
    o.unpin_last_turn = 2;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.unpin_last_turn is 2; a flag must be 0 or 1");
    o = (ctxpack_chat_options)CTXPACK_CHAT_OPTIONS_INIT;
    o.has_overheads = 3;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.has_overheads");
    o = (ctxpack_chat_options)CTXPACK_CHAT_OPTIONS_INIT;
    o.reserved[1] = 1;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.reserved[1]");
    o = (ctxpack_chat_options)CTXPACK_CHAT_OPTIONS_INIT;
    o.trace_detail = 9;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.trace_detail is 9");
    o = (ctxpack_chat_options)CTXPACK_CHAT_OPTIONS_INIT;
    o.has_overheads = 1;
    o.overhead_media = -1;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.overhead_media must be >= 0 (got -1)");
    o = (ctxpack_chat_options)CTXPACK_CHAT_OPTIONS_INIT;
    o.encoding = S("p50k_base");
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.encoding");
    o.encoding = (ctxpack_str){"o200k\xc3", 6};
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "options.encoding");
    o.encoding = (ctxpack_str){NULL, 3};
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "options.encoding");
    o = (ctxpack_chat_options)CTXPACK_CHAT_OPTIONS_INIT;
    o.struct_size = 8;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_chat_options.struct_size is 8");
    CHECK_STATUS(ctxpack_chat_options_init(&o, 4), CTXPACK_INVALID_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_options_init(NULL, sizeof o), CTXPACK_NULL_ARGUMENT);
    // A caller built against a newer header: larger struct_size, unknown bytes zero.
    struct {
        ctxpack_chat_options o;
        uint64_t newer;
    } big;
    memset(&big, 0, sizeof big);
    CHECK_OK(ctxpack_chat_options_init(&big.o, sizeof big));
    CHECK_OK(ctxpack_chat_trim(fmt, req, b, p, &big.o, &r, &err));
    CHECK(r != NULL && err == NULL);
    ctxpack_chat_result_free(r);
    big.newer = 1;
    CHECK_STATUS(ctxpack_chat_trim(fmt, req, b, p, &big.o, &r, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "does not know");
    ctxpack_budget_free(b);
    ctxpack_pipeline_free(p);
}

TEST(accessors_and_freeing) {
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(1000, 1000);
    REQUIRE(p && b);
    ctxpack_chat_result *r = NULL;
    ctxpack_chat_options o = CTXPACK_CHAT_OPTIONS_INIT;
    o.trace_detail = CTXPACK_TRACE_DETAIL_ITEM;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, ctxpack_str_from_cstr(SMALL), b, p, &o, &r, NULL));
    // The handles the call used may go; the result keeps what it needs.
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);

    size_t n = 0;
    CHECK_OK(ctxpack_chat_result_item_count(r, &n));
    CHECK(n == 6);  // the request's framing ("$") and five messages
    ctxpack_str path;
    CHECK_OK(ctxpack_chat_result_item_path(r, 0, &path));
    CHECK_STR(path, "$");
    CHECK_OK(ctxpack_chat_result_item_path(r, 4, &path));
    CHECK_STR(path, "messages[3]");
    CHECK_STATUS(ctxpack_chat_result_item_path(r, n, &path), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_chat_result_item_path(r, 0, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_str reason;
    size_t count;
    CHECK_STATUS(ctxpack_chat_result_adjustment(r, 0, &reason, &count), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_chat_result_adjustment_path(r, 0, 0, &path), CTXPACK_OUT_OF_RANGE);
    CHECK_STATUS(ctxpack_chat_result_adjustment_count(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_json(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_tokens(r, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_input_tokens(NULL, &o.overhead_media), CTXPACK_NULL_ARGUMENT);
    const size_t *arr;
    CHECK_STATUS(ctxpack_chat_result_kept(r, &arr, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_chat_result_dropped(r, NULL, &count), CTXPACK_NULL_ARGUMENT);
    // A handle of another type is detected.
    ctxpack_str json;
    ctxpack_budget *other = budget_of(1, 1);
    CHECK_STATUS(ctxpack_chat_result_json((const ctxpack_chat_result *)other, &json), CTXPACK_WRONG_HANDLE_TYPE);
    ctxpack_chat_result_free((ctxpack_chat_result *)other);  // no-op: another type
    // Still a live budget.
    ctxpack_string *bj = NULL;
    CHECK_OK(ctxpack_budget_json(other, 0, &bj, NULL));
    ctxpack_string_free(bj);
    ctxpack_budget_free(other);
    ctxpack_result *sel = NULL;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_chat_result_selection(NULL, &sel, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "result");
    CHECK_STATUS(ctxpack_chat_result_selection(r, NULL, NULL), CTXPACK_NULL_ARGUMENT);

    // The selection outlives the chat result and names the messages.
    REQUIRE_OK(ctxpack_chat_result_selection(r, &sel, NULL));
    CHECK_OK(ctxpack_chat_result_json(r, &json));
    char *copy = malloc(json.len + 1);
    REQUIRE(copy);
    memcpy(copy, json.ptr, json.len + 1);
    ctxpack_chat_result_free(r);
    ctxpack_chat_result_free(NULL);
    ctxpack_str report;
    CHECK_OK(ctxpack_result_report_json(sel, &report));
    CHECK(tf_str_contains(report, "shipped"));
    CHECK(copy[strlen(copy) - 1] == '}');
    free(copy);
    ctxpack_result_free(sel);
}

// A trim can carry a prefix state across turns (docs/prefix-cache.md): the same request
// trimmed again with the previous turn's state gives the same output and reuses all of it;
// a state of another conversation is refused; the prefix accessors need options.prefix; a
// caller of the first version of the options struct (without the prefix fields) still works.
TEST(prefix_state_across_turns) {
    size_t len = 0;
    char *request = sample("openai", &len);
    REQUIRE(request);
    ctxpack_str body = {request, len};
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(6000, 4000);
    REQUIRE(p && b);

    ctxpack_prefix_options po = CTXPACK_PREFIX_OPTIONS_INIT;
    po.conversation = ctxpack_str_from_cstr("conversation-1");
    po.cache_rule = ctxpack_str_from_cstr("openai");
    ctxpack_chat_options o = CTXPACK_CHAT_OPTIONS_INIT;
    o.prefix = &po;
    ctxpack_chat_result *r1 = NULL, *r2 = NULL, *r3 = NULL;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, body, b, p, &o, &r1, NULL));
    ctxpack_prefix_reuse u1 = CTXPACK_PREFIX_REUSE_INIT;
    CHECK_OK(ctxpack_chat_result_prefix_reuse(r1, &u1, NULL));
    CHECK(u1.turn == 1 && u1.previous_entries == 0 && u1.window_entries > 0);
    ctxpack_prefix_state *s1 = NULL;
    REQUIRE_OK(ctxpack_chat_result_prefix_state(r1, &s1, NULL));

    // Turn 2: the same request with turn 1's state.
    o.previous_state = s1;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, body, b, p, &o, &r2, NULL));
    ctxpack_prefix_reuse u2 = CTXPACK_PREFIX_REUSE_INIT;
    CHECK_OK(ctxpack_chat_result_prefix_reuse(r2, &u2, NULL));
    CHECK(u2.turn == 2 && u2.has_difference == 0);
    CHECK(u2.previous_entries == u1.window_entries && u2.kept_entries == u2.window_entries);
    CHECK(u2.kept_tokens == u1.window_tokens && u2.cached_tokens <= u2.kept_tokens);
    ctxpack_string *rj = NULL;
    REQUIRE_OK(ctxpack_chat_result_prefix_reuse_json(r2, &rj, NULL));
    ctxpack_str rjv;
    CHECK_OK(ctxpack_string_value(rj, &rjv));
    CHECK(tf_str_contains(rjv, "\"kept_entries\""));
    ctxpack_string_free(rj);
    ctxpack_str j1, j2;
    CHECK_OK(ctxpack_chat_result_json(r1, &j1));
    CHECK_OK(ctxpack_chat_result_json(r2, &j2));
    CHECK(j1.len == j2.len && memcmp(j1.ptr, j2.ptr, j1.len) == 0);
    CHECK(j1.len < len);  // the budget trims the sample

    // Another conversation's state is refused.
    ctxpack_error *err = NULL;
    po.conversation = ctxpack_str_from_cstr("conversation-2");
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, body, b, p, &o, &r3, &err),
                 CTXPACK_INVALID_STATE);
    CHECK(r3 == NULL);
    ctxpack_error_free(err);
    err = NULL;

    // A previous state without the prefix options is an error; without options.prefix the
    // result has no reuse report and no state.
    o.prefix = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, body, b, p, &o, &r3, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "previous_state");
    o.previous_state = NULL;
    REQUIRE_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, body, b, p, &o, &r3, NULL));
    ctxpack_prefix_reuse u3 = CTXPACK_PREFIX_REUSE_INIT;
    CHECK_STATUS(ctxpack_chat_result_prefix_reuse(r3, &u3, NULL), CTXPACK_NO_REPORT);
    ctxpack_prefix_state *s3 = (ctxpack_prefix_state *)1;
    CHECK_STATUS(ctxpack_chat_result_prefix_state(r3, &s3, NULL), CTXPACK_NO_REPORT);
    CHECK(s3 == NULL);
    CHECK_STATUS(ctxpack_chat_result_prefix_state(r3, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_string *nj = NULL;
    CHECK_STATUS(ctxpack_chat_result_prefix_reuse_json(r3, &nj, NULL), CTXPACK_NO_REPORT);
    CHECK(nj == NULL);
    ctxpack_chat_result_free(r3);

    // The first version of the struct, in a block of exactly its size.
    size_t v1 = offsetof(ctxpack_chat_options, prefix);
    ctxpack_chat_options *old = malloc(v1);
    REQUIRE(old);
    memset(old, 0, v1);
    old->struct_size = v1;
    r3 = NULL;
    CHECK_OK(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, body, b, p, old, &r3, NULL));
    ctxpack_str j3;
    CHECK_OK(ctxpack_chat_result_json(r3, &j3));
    CHECK(j3.len == j1.len && memcmp(j3.ptr, j1.ptr, j1.len) == 0);
    free(old);

    // The state outlives the chat result that made it.
    ctxpack_chat_result_free(r1);
    uint64_t turn = 0;
    size_t entries = 0;
    int64_t tokens = 0;
    CHECK_OK(ctxpack_prefix_state_info(s1, &turn, &entries, &tokens));
    CHECK(turn == 1 && entries == u1.window_entries && tokens == u1.window_tokens);
    ctxpack_chat_result_free(r2);
    ctxpack_chat_result_free(r3);
    ctxpack_prefix_state_free(s1);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    free(request);
}

// A per-item scorer that cancels the token in its user data on its first call: the run
// must stop at its next check (before the next scorer call) and the trim return CANCELLED.
static int score_and_cancel(void *user_data, const ctxpack_item_view *items, size_t count,
                            size_t index, double *out, ctxpack_callback_error *error) {
    (void)items;
    (void)count;
    (void)error;
    ctxpack_cancel_token_cancel((ctxpack_cancel_token *)user_data);
    *out = 1.0 / (double)(index + 1);
    return 0;
}

TEST(a_cancel_token_stops_a_trim) {
    ctxpack_pipeline *p = chat_pipeline();
    ctxpack_budget *b = budget_of(100000, 100000);
    ctxpack_str request = ctxpack_str_from_cstr(SMALL);
    ctxpack_cancel_token *token = NULL;
    CHECK_STATUS(ctxpack_cancel_token_new(&token, NULL), CTXPACK_OK);

    // A token never cancelled changes nothing: the same bytes as without one.
    ctxpack_chat_result *plain = NULL, *with_token = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, NULL, &plain, NULL), CTXPACK_OK);
    ctxpack_chat_options o = CTXPACK_CHAT_OPTIONS_INIT;
    o.cancel = token;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &with_token, NULL), CTXPACK_OK);
    ctxpack_str a = {NULL, 0}, c = {NULL, 0};
    CHECK_STATUS(ctxpack_chat_result_json(plain, &a), CTXPACK_OK);
    CHECK_STATUS(ctxpack_chat_result_json(with_token, &c), CTXPACK_OK);
    CHECK(a.len == c.len && a.len > 0 && memcmp(a.ptr, c.ptr, a.len) == 0);
    ctxpack_chat_result_free(with_token);

    // Cancelled before the call: CANCELLED, no result, a message that says so.
    ctxpack_cancel_token_cancel(token);
    ctxpack_chat_result *r = (ctxpack_chat_result *)&o;  // must be overwritten with NULL
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &r, &err), CTXPACK_CANCELLED);
    CHECK(r == NULL && err != NULL);
    if (err != NULL) {
        CHECK(ctxpack_error_code(err) == CTXPACK_CANCELLED);
        CHECK(strstr(ctxpack_error_message(err).ptr, "cancelled") != NULL);
    }
    ctxpack_error_free(err);

    // A caller compiled before the field existed (struct_size ends before `cancel`) is
    // not cancelled, whatever the bytes after its struct hold.
    o.struct_size = offsetof(ctxpack_chat_options, cancel);
    r = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &r, NULL), CTXPACK_OK);
    ctxpack_chat_result_free(r);
    o.struct_size = sizeof o;

    // Another handle in the field is named.
    o.cancel = (const ctxpack_cancel_token *)(const void *)b;
    err = NULL;
    r = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, p, &o, &r, &err), CTXPACK_WRONG_HANDLE_TYPE);
    CHECK(r == NULL && err != NULL && strstr(ctxpack_error_message(err).ptr, "options.cancel") != NULL);
    ctxpack_error_free(err);

    // Cancelled from inside the run (a scorer callback cancels a fresh token): the run
    // stops at its next check.
    ctxpack_cancel_token *inner = NULL;
    CHECK_STATUS(ctxpack_cancel_token_new(&inner, NULL), CTXPACK_OK);
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_pipeline *cp = NULL;
    CHECK_STATUS(ctxpack_scorer_new_custom_item(score_and_cancel, inner, NULL, &sc, NULL), CTXPACK_OK);
    CHECK_STATUS(ctxpack_slicer_new_greedy(&sl, NULL), CTXPACK_OK);
    CHECK_STATUS(ctxpack_placer_new_chronological(&pl, NULL), CTXPACK_OK);
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, pl, NULL, &cp, NULL), CTXPACK_OK);
    o.cancel = inner;
    r = NULL;
    CHECK_STATUS(ctxpack_chat_trim(CTXPACK_CHAT_FORMAT_OPENAI, request, b, cp, &o, &r, NULL), CTXPACK_CANCELLED);
    uint8_t cancelled = 0;
    CHECK_STATUS(ctxpack_cancel_token_is_cancelled(inner, &cancelled), CTXPACK_OK);
    CHECK(r == NULL && cancelled == 1);

    ctxpack_pipeline_free(cp);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
    ctxpack_cancel_token_free(inner);
    ctxpack_cancel_token_free(token);
    ctxpack_chat_result_free(plain);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
}

int main(void) {
    RUN(openai_sample_at_several_budgets);
    RUN(anthropic_sample_at_several_budgets);
    RUN(options_match_the_cli);
    RUN(overheads_and_encodings);
    RUN(a_tool_call_is_kept_or_dropped_with_its_result);
    RUN(a_user_message_is_pinned_rather_than_losing_the_leading_units);
    RUN(bad_requests);
    RUN(bad_arguments);
    RUN(accessors_and_freeing);
    RUN(prefix_state_across_turns);
    RUN(a_cancel_token_stops_a_trim);
    RUN(long_tool_outputs_are_shortened_rather_than_dropped);
    return tf_finish();
}
