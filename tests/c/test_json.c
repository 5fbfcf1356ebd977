// The C test of policy and budget JSON as the .NET library reads them (issue 19): lenient
// reading with its warnings, strict reading, the budget JSON in .NET's exact form, and
// host scorers registered under type names — a C callback scorer named by a policy runs
// in a pipeline; registry adds racing policy reads from other threads. Built and run by tests/c/run.sh (plain, under ASan+UBSan, and under
// valgrind). Every expected text is written by hand from the .NET serializer's rules.
#include <pthread.h>
#include <stdint.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// ---------------------------------------------------------------- helpers

static ctxpack_json_read_options options(bool strict, const ctxpack_scorer_registry *registry) {
    ctxpack_json_read_options o = CTXPACK_JSON_READ_OPTIONS_INIT;
    o.strict = strict;
    o.registry = registry;
    return o;
}

// Warning `i` of `w` (struct_size set; status in *st).
static ctxpack_json_warning warning_at(const ctxpack_json_warnings *w, size_t i, ctxpack_status *st) {
    ctxpack_json_warning e = CTXPACK_JSON_WARNING_INIT;
    *st = ctxpack_json_warnings_entry(w, i, &e, NULL);
    return e;
}

// Checks warning `i`: kind, path, message, the joined text, and NUL terminators.
static void check_warning_at(const char *file, int line, const ctxpack_json_warnings *w,
                             size_t i, int kind, const char *path, const char *message) {
    ctxpack_status st;
    ctxpack_json_warning e = warning_at(w, i, &st);
    char text[512];
    snprintf(text, sizeof text, "%s: %s", path, message);
    if (st != CTXPACK_OK || e.kind != kind || !tf_str_eq(e.path, path) ||
        !tf_str_eq(e.message, message) || !tf_str_eq(e.text, text) ||
        e.path.ptr[e.path.len] != '\0' || e.message.ptr[e.message.len] != '\0' ||
        e.text.ptr[e.text.len] != '\0') {
        char buf[700];
        snprintf(buf, sizeof buf, "warning %zu: status %d, kind %d, text \"%.*s\"; expected \"%s\"",
                 i, (int)st, (int)e.kind, (int)e.text.len, e.text.ptr ? e.text.ptr : "", text);
        tf_fail(file, line, buf);
    }
}
#define CHECK_WARNING(w, i, kind, path, message) \
    check_warning_at(__FILE__, __LINE__, (w), (i), (kind), (path), (message))

static size_t warning_count(const ctxpack_json_warnings *w) {
    size_t n = (size_t)-1;
    if (ctxpack_json_warnings_count(w, &n) != CTXPACK_OK) return (size_t)-1;
    return n;
}

// The text of a library-owned string compared with `expected`, NUL terminator included.
static int string_is(ctxpack_string *s, const char *expected) {
    ctxpack_str v = {NULL, 0};
    int ok = ctxpack_string_value(s, &v) == CTXPACK_OK && tf_str_eq(v, expected) &&
             v.ptr[v.len] == '\0';
    if (!ok) printf("  string: \"%.*s\"\n", (int)v.len, v.ptr ? v.ptr : "");
    ctxpack_string_free(s);
    return ok;
}

static int budget_json_is(const ctxpack_budget *b, bool pretty, const char *expected) {
    ctxpack_string *s = NULL;
    if (ctxpack_budget_json(b, pretty, &s, NULL) != CTXPACK_OK) return 0;
    return string_is(s, expected);
}

// ---------------------------------------------------------------- a host scorer

// The state of the host scorer: it scores each item by its content length, times `scale`.
// The state is heap-allocated and freed by `free_length_state`, so a missing or doubled
// destroy shows up as a leak or a double free under the sanitizers and valgrind.
typedef struct {
    double scale;
    int calls;
} length_state;

static int destroyed;

static int score_length(void *user_data, const ctxpack_item_view *items, size_t count,
                        double *out_scores, ctxpack_callback_error *error) {
    (void)error;
    length_state *state = (length_state *)user_data;
    state->calls++;
    for (size_t i = 0; i < count; i++) out_scores[i] = state->scale * (double)items[i].content.len;
    return 0;
}

static void free_length_state(void *user_data) {
    destroyed++;
    free(user_data);
}

static ctxpack_scorer *length_scorer(length_state **state_out) {
    length_state *state = (length_state *)malloc(sizeof *state);
    if (state == NULL) return NULL;
    state->scale = 0.1;
    state->calls = 0;
    ctxpack_scorer *s = NULL;
    if (ctxpack_scorer_new_custom_batch(score_length, state, free_length_state, &s, NULL) !=
        CTXPACK_OK) {
        free(state);
        return NULL;
    }
    *state_out = state;
    return s;
}

// ---------------------------------------------------------------- lenient and strict

#define LENIENT_POLICY                                                                      \
    "{\"scorers\": [{\"weight\": 2, \"note\": \"x\"},"                                     \
    " {\"type\": \"kind\", \"weight\": 1, \"kindWeights\": {\"Message\": 1, \"message\": 3}}]," \
    " \"placerType\": \"uShaped\", \"futureOption\": {\"a\": [1, 2]}}"

TEST(lenient_policy_reading_reports_warnings) {
    ctxpack_pipeline *p = NULL;
    ctxpack_json_warnings *w = NULL;
    ctxpack_error *err = NULL;
    ctxpack_json_read_options o = options(false, NULL);
    REQUIRE_OK(ctxpack_pipeline_new_policy_json_with(S(LENIENT_POLICY), &o, &p, &w, &err));
    CHECK(err == NULL);
    REQUIRE(w != NULL);
    CHECK(warning_count(w) == 4);
    CHECK_WARNING(w, 0, CTXPACK_JSON_WARNING_KIND_UNKNOWN_PROPERTY, "futureOption",
                  "unknown property; ignored");
    CHECK_WARNING(w, 1, CTXPACK_JSON_WARNING_KIND_UNKNOWN_PROPERTY, "scorers[0].note",
                  "unknown property; ignored");
    CHECK_WARNING(w, 2, CTXPACK_JSON_WARNING_KIND_MISSING_SCORER_TYPE, "scorers[0].type",
                  "absent; read as recency, as .NET reads it");
    CHECK_WARNING(w, 3, CTXPACK_JSON_WARNING_KIND_REPEATED_KIND, "scorers[1].kindWeights.message",
                  "repeats the kind \"Message\" (kinds compare ASCII case-insensitively); the last "
                  "value is kept");
    ctxpack_status st;
    (void)warning_at(w, 4, &st);
    CHECK_STATUS(st, CTXPACK_OUT_OF_RANGE);
    // The pipeline is what the document means: recency for the entry without type, the
    // last Message weight under the first spelling, unknown members gone.
    ctxpack_string *json = NULL;
    REQUIRE_OK(ctxpack_pipeline_policy_json(p, false, &json, NULL));
    CHECK(string_is(json, "{\"scorers\":[{\"type\":\"recency\",\"weight\":2},{\"type\":\"kind\","
                          "\"weight\":1,\"kindWeights\":{\"Message\":3}}],\"slicerType\":"
                          "\"greedy\",\"placerType\":\"uShaped\",\"deduplicationEnabled\":true,"
                          "\"overflowStrategy\":\"throw\"}"));
    ctxpack_json_warnings_free(w);
    ctxpack_pipeline_free(p);

    // The plain constructor and NULL options read leniently too; warnings are optional.
    CHECK_OK(ctxpack_pipeline_new_policy_json(S(LENIENT_POLICY), &p, NULL));
    ctxpack_pipeline_free(p);
    CHECK_OK(ctxpack_pipeline_new_policy_json_with(S(LENIENT_POLICY), NULL, &p, NULL, NULL));
    ctxpack_pipeline_free(p);
    // A clean document gives an empty warnings handle.
    REQUIRE_OK(ctxpack_pipeline_new_policy_json_with(
        S("{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}]}"), NULL, &p, &w, NULL));
    CHECK(warning_count(w) == 0);
    ctxpack_json_warnings_free(w);
    ctxpack_pipeline_free(p);
}

TEST(strict_policy_reading_rejects_what_lenient_reading_warns_about) {
    ctxpack_pipeline *p = (ctxpack_pipeline *)1;
    ctxpack_json_warnings *w = (ctxpack_json_warnings *)1;
    ctxpack_error *err = NULL;
    ctxpack_json_read_options o = options(true, NULL);
    static const struct {
        const char *json;
        const char *message;
    } cases[] = {
        {LENIENT_POLICY, "invalid policy: futureOption: unknown property"},
        {"{\"scorers\": [{\"weight\": 1}]}", "invalid policy: scorers[0].type: is required"},
        {"{\"scorers\": [{\"type\": \"kind\", \"weight\": 1, \"kindWeights\": {\"Tool\": 1, "
         "\"TOOL\": 2}}]}",
         "invalid policy: scorers[0].kindWeights.TOOL: repeats the kind \"Tool\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(ctxpack_str_from_cstr(cases[i].json), &o,
                                                           &p, &w, &err),
                     CTXPACK_INVALID_POLICY);
        CHECK(p == NULL && w == NULL);
        CHECK_ERROR(err, CTXPACK_INVALID_POLICY, cases[i].message);
    }
}

TEST(read_option_and_argument_errors) {
    ctxpack_pipeline *p = NULL;
    ctxpack_json_warnings *w = (ctxpack_json_warnings *)1;
    ctxpack_error *err = NULL;
    ctxpack_json_read_options o = options(false, NULL);
    // A bad struct_size.
    o.struct_size = 3;
    CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(S("{}"), &o, &p, &w, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK(w == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_json_read_options.struct_size is 3");
    // A handle of another type as the registry.
    ctxpack_budget *b = budget_of(10, 10);
    o = options(false, (const ctxpack_scorer_registry *)(const void *)b);
    CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(
                     S("{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}]}"), &o, &p, &w, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "options.registry must be a ctxpack_scorer_registry");
    ctxpack_budget_free(b);
    // NULL out, invalid UTF-8.
    CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(S("{}"), NULL, NULL, &w, NULL),
                 CTXPACK_NULL_ARGUMENT);
    CHECK(w == NULL);
    CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(S("{\"\xff\"}"), NULL, &p, &w, NULL),
                 CTXPACK_INVALID_UTF8);
    // Accessors on NULL and on a wrong handle type.
    size_t n;
    CHECK_STATUS(ctxpack_json_warnings_count(NULL, &n), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_json_warnings_entry(NULL, 0, NULL, NULL), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_scorer_registry_count(NULL, &n), CTXPACK_NULL_ARGUMENT);
    ctxpack_json_warnings_free(NULL);
    ctxpack_scorer_registry_free(NULL);
}

TEST(flag_bytes_reserved_bytes_and_initialisers) {
    // The initialiser function gives what the macro gives: every byte zero, struct_size set.
    ctxpack_json_read_options by_macro = CTXPACK_JSON_READ_OPTIONS_INIT, by_function;
    memset(&by_function, 0xAB, sizeof by_function);
    CHECK_OK(ctxpack_json_read_options_init(&by_function, sizeof by_function));
    CHECK(memcmp(&by_macro, &by_function, sizeof by_macro) == 0);
    CHECK(by_function.struct_size == sizeof by_function && by_function.strict == 0 &&
          by_function.registry == NULL);
    ctxpack_json_warning w_macro = CTXPACK_JSON_WARNING_INIT, w_function;
    memset(&w_function, 0xAB, sizeof w_function);
    CHECK_OK(ctxpack_json_warning_init(&w_function, sizeof w_function));
    CHECK(memcmp(&w_macro, &w_function, sizeof w_macro) == 0);
    CHECK_STATUS(ctxpack_json_read_options_init(&by_function, 4), CTXPACK_INVALID_ARGUMENT);
    CHECK_STATUS(ctxpack_json_warning_init(NULL, sizeof w_function), CTXPACK_NULL_ARGUMENT);

    // strict is a flag byte: 0 or 1, anything else is rejected naming the field.
    ctxpack_pipeline *p = NULL;
    ctxpack_budget *b = NULL;
    ctxpack_json_warnings *w = (ctxpack_json_warnings *)1;
    ctxpack_error *err = NULL;
    ctxpack_json_read_options o = CTXPACK_JSON_READ_OPTIONS_INIT;
    o.strict = 2;
    CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(
                     S("{\"scorers\": [{\"type\": \"recency\", \"weight\": 1}]}"), &o, &p, &w,
                     &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK(p == NULL && w == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.strict is 2; a flag must be 0 or 1");
    o.strict = 1;
    o.reserved[6] = 9;
    CHECK_STATUS(ctxpack_budget_new_json(S("{\"maxTokens\": 1, \"targetTokens\": 1}"), &o, &b,
                                         NULL, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK(b == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.reserved[6] is 9; reserved bytes must be zero");

    // pretty is a flag byte too.
    b = budget_of(10, 10);
    REQUIRE(b != NULL);
    ctxpack_string *s = (ctxpack_string *)1;
    CHECK_STATUS(ctxpack_budget_json(b, 2, &s, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "pretty is 2; a flag must be 0 or 1");
    ctxpack_budget_free(b);

    // A warning struct with a wrong struct_size fails with a message; nothing is written.
    REQUIRE_OK(ctxpack_budget_new_json(S("{\"maxTokens\": 5, \"targetTokens\": 5, \"x\": 1}"),
                                       NULL, &b, &w, NULL));
    ctxpack_json_warning e = CTXPACK_JSON_WARNING_INIT;
    e.struct_size = 8;
    CHECK_STATUS(ctxpack_json_warnings_entry(w, 0, &e, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_json_warning.struct_size is 8");
    CHECK(e.kind == 0 && e.path.ptr == NULL);
    e.struct_size = sizeof e;
    CHECK_OK(ctxpack_json_warnings_entry(w, 0, &e, &err));
    CHECK(err == NULL && e.kind == CTXPACK_JSON_WARNING_KIND_UNKNOWN_PROPERTY);
    ctxpack_json_warnings_free(w);
    ctxpack_budget_free(b);
}

// ---------------------------------------------------------------- budgets

static const char *const DOTNET_COMPACT =
    "{\"maxTokens\":8000,\"targetTokens\":6000,\"outputReserve\":1000,\"reservedSlots\":"
    "{\"Message\":100,\"SystemPrompt\":200},\"estimationSafetyMarginPercent\":10}";
static const char *const DOTNET_INDENTED =
    "{\n  \"maxTokens\": 8000,\n  \"targetTokens\": 6000,\n  \"outputReserve\": 1000,\n"
    "  \"reservedSlots\": {\n    \"Message\": 100,\n    \"SystemPrompt\": 200\n  },\n"
    "  \"estimationSafetyMarginPercent\": 10\n}";

TEST(budget_json_round_trips_in_the_dotnet_form) {
    // Built through ctxpack_budget_new, written as .NET writes it.
    ctxpack_reserved_slot slots[2] = {{S("Message"), 100}, {S("SystemPrompt"), 200}};
    ctxpack_budget *b = NULL;
    REQUIRE_OK(new_budget(8000, 6000, 1000, slots, 2, 10.0, &b, NULL));
    CHECK(budget_json_is(b, false, DOTNET_COMPACT));
    CHECK(budget_json_is(b, true, DOTNET_INDENTED));
    ctxpack_budget_free(b);
    // Read from either text (strictly: nothing is missing or unknown) and written back.
    const char *texts[2] = {DOTNET_COMPACT, DOTNET_INDENTED};
    ctxpack_json_read_options strict = options(true, NULL);
    for (int i = 0; i < 2; i++) {
        ctxpack_json_warnings *w = NULL;
        REQUIRE_OK(ctxpack_budget_new_json(ctxpack_str_from_cstr(texts[i]), &strict, &b, &w, NULL));
        CHECK(warning_count(w) == 0);
        CHECK(budget_json_is(b, false, DOTNET_COMPACT));
        CHECK(budget_json_is(b, true, DOTNET_INDENTED));
        ctxpack_json_warnings_free(w);
        ctxpack_budget_free(b);
    }
    // The minimal .NET budget, and an empty slot map indented.
    REQUIRE_OK(ctxpack_budget_new_json(S("{\"maxTokens\": 4096, \"targetTokens\": 4096}"), NULL, &b,
                                       NULL, NULL));
    CHECK(budget_json_is(b, false,
                         "{\"maxTokens\":4096,\"targetTokens\":4096,\"outputReserve\":0,"
                         "\"reservedSlots\":{},\"estimationSafetyMarginPercent\":0}"));
    CHECK(budget_json_is(b, true,
                         "{\n  \"maxTokens\": 4096,\n  \"targetTokens\": 4096,\n  \"outputReserve\": "
                         "0,\n  \"reservedSlots\": {},\n  \"estimationSafetyMarginPercent\": 0\n}"));
    ctxpack_budget_free(b);
}

TEST(budget_json_warnings_and_errors) {
    ctxpack_budget *b = NULL;
    ctxpack_json_warnings *w = NULL;
    ctxpack_error *err = NULL;
    // Lenient: unknown members, a repeated slot kind, a missing target. A missing target
    // reads as 0, and then no slot fits (decision D20), so the slots are zero here.
    REQUIRE_OK(ctxpack_budget_new_json(
        S("{\"maxTokens\": 100, \"reservedSlots\": {\"Memory\": 5, \"memory\": 0}, \"x\": 1}"), NULL,
        &b, &w, &err));
    CHECK(warning_count(w) == 3);
    CHECK_WARNING(w, 0, CTXPACK_JSON_WARNING_KIND_UNKNOWN_PROPERTY, "x", "unknown property; ignored");
    CHECK_WARNING(w, 1, CTXPACK_JSON_WARNING_KIND_MISSING_BUDGET_FIELD, "targetTokens",
                  "absent; read as 0, as .NET reads it");
    CHECK_WARNING(w, 2, CTXPACK_JSON_WARNING_KIND_REPEATED_KIND, "reservedSlots.memory",
                  "repeats the kind \"Memory\" (kinds compare ASCII case-insensitively); the last "
                  "value is kept");
    CHECK(budget_json_is(b, false,
                         "{\"maxTokens\":100,\"targetTokens\":0,\"outputReserve\":0,"
                         "\"reservedSlots\":{\"Memory\":0},\"estimationSafetyMarginPercent\":0}"));
    ctxpack_json_warnings_free(w);
    ctxpack_budget_free(b);
    // The repeated kind keeps the last value under the first spelling.
    REQUIRE_OK(ctxpack_budget_new_json(
        S("{\"maxTokens\": 100, \"targetTokens\": 50, \"reservedSlots\": {\"Memory\": 5, "
          "\"memory\": 7}}"),
        NULL, &b, &w, &err));
    CHECK(warning_count(w) == 1);
    CHECK(budget_json_is(b, false,
                         "{\"maxTokens\":100,\"targetTokens\":50,\"outputReserve\":0,"
                         "\"reservedSlots\":{\"Memory\":7},\"estimationSafetyMarginPercent\":0}"));
    ctxpack_json_warnings_free(w);
    ctxpack_budget_free(b);

    // Every failure is CTXPACK_INVALID_BUDGET, the message starting with the JSON path.
    ctxpack_json_read_options strict = options(true, NULL);
    static const struct {
        const char *json;
        bool strict;
        const char *message;
    } cases[] = {
        {"{\"maxTokens\": 1000, \"targetTokens\": 2000}", false,
         "invalid budget: targetTokens: 2000 cannot exceed maxTokens (1000)"},
        {"{\"maxTokens\": 10, \"targetTokens\": 5, \"outputReserve\": 11}", false,
         "invalid budget: outputReserve: 11 cannot exceed maxTokens (10)"},
        {"{\"maxTokens\": 10, \"targetTokens\": 5, \"estimationSafetyMarginPercent\": 101}", false,
         "invalid budget: estimationSafetyMarginPercent: must be in [0, 100] (got 101)"},
        {"{\"maxTokens\": 10, \"targetTokens\": 5, \"reservedSlots\": {\"Memory\": -1}}", false,
         "invalid budget: reservedSlots.Memory: must be >= 0 (got -1)"},
        // Reserved slots that can never be honoured, as ctxpack_budget_new rejects them.
        {"{\"maxTokens\": 100, \"targetTokens\": 40, \"reservedSlots\": {\"Memory\": 30, "
         "\"Tool\": 20}}",
         false, "invalid budget: reservedSlots: their total (50) cannot exceed targetTokens (40)"},
        {"{\"maxTokens\": 100, \"targetTokens\": 90, \"outputReserve\": 60, \"reservedSlots\": "
         "{\"Memory\": 30, \"Tool\": 20}}",
         false,
         "invalid budget: reservedSlots: their total (50) plus outputReserve (60) cannot exceed "
         "maxTokens (100)"},
        {"{\"maxTokens\": 100, \"reservedSlots\": {\"Memory\": 7}}", false,
         "invalid budget: reservedSlots: their total (7) cannot exceed targetTokens (0)"},
        {"{\"maxTokens\": \"10\"}", false, "invalid budget: maxTokens: expected an integer, found a string"},
        {"{\"maxTokens\": 1", false, "invalid budget: $: malformed JSON"},
        {"null", false, "invalid budget: $: budget cannot be null"},
        {"{\"targetTokens\": 1}", true, "invalid budget: maxTokens: is required"},
        {"{\"maxTokens\": 1, \"targetTokens\": 1, \"max\": 2}", true,
         "invalid budget: max: unknown property"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        w = (ctxpack_json_warnings *)1;
        CHECK_STATUS(ctxpack_budget_new_json(ctxpack_str_from_cstr(cases[i].json),
                                             cases[i].strict ? &strict : NULL, &b, &w, &err),
                     CTXPACK_INVALID_BUDGET);
        CHECK(b == NULL && w == NULL);
        CHECK_ERROR(err, CTXPACK_INVALID_BUDGET, cases[i].message);
    }
    CHECK_STATUS(ctxpack_budget_json(NULL, false, NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "must not be NULL");
}

// ---------------------------------------------------------------- registered scorers

TEST(a_registered_callback_scorer_named_in_a_policy_runs) {
    destroyed = 0;
    length_state *state = NULL;
    ctxpack_scorer *length = length_scorer(&state);
    REQUIRE(length != NULL);
    ctxpack_scorer_registry *registry = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_scorer_registry_new(&registry, NULL));
    REQUIRE_OK(ctxpack_scorer_registry_add(registry, S("contentLength"), length, &err));
    CHECK(err == NULL);
    // A built-in scorer may be registered under a new name as well.
    ctxpack_scorer *priority = NULL;
    REQUIRE_OK(ctxpack_scorer_new_priority(&priority, NULL));
    REQUIRE_OK(ctxpack_scorer_registry_add(registry, S("urgency"), priority, NULL));
    ctxpack_scorer_free(priority);
    // The registry keeps its own reference: the caller's handle can go now.
    ctxpack_scorer_free(length);
    CHECK(destroyed == 0);

    size_t n = 0;
    ctxpack_str name = {NULL, 0};
    CHECK_OK(ctxpack_scorer_registry_count(registry, &n));
    CHECK(n == 2);
    CHECK_OK(ctxpack_scorer_registry_name(registry, 1, &name));
    CHECK_STR(name, "urgency");
    CHECK(name.ptr[name.len] == '\0');
    CHECK_STATUS(ctxpack_scorer_registry_name(registry, 2, &name), CTXPACK_OUT_OF_RANGE);

    // Three items: content lengths 1, 4, 2; the newest is item 2. With a 4-token target
    // only one item fits: the host scorer picks the longest content (item 1), where
    // recency alone would pick item 2.
    ctxpack_item_desc d[3] = {desc_at("a", 4, 1), desc_at("bbbb", 4, 2), desc_at("cc", 4, 3)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *budget = budget_of(100, 4);
    REQUIRE(items != NULL && budget != NULL);
    ctxpack_json_read_options o = options(true, registry);
    ctxpack_pipeline *p = NULL;
    ctxpack_json_warnings *w = NULL;
    REQUIRE_OK(ctxpack_pipeline_new_policy_json_with(
        S("{\"scorers\": [{\"type\": \"CONTENTLENGTH\", \"weight\": 3},"
          " {\"type\": \"recency\", \"weight\": 1}]}"),
        &o, &p, &w, &err));
    CHECK(warning_count(w) == 0);
    ctxpack_json_warnings_free(w);
    // A host callback has no policy form: the pipeline cannot be written back as JSON.
    ctxpack_string *s = NULL;
    CHECK_STATUS(ctxpack_pipeline_policy_json(p, false, &s, &err), CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "scorers[0]: custom components cannot be expressed as a policy");
    // The pipeline keeps the scorer alive after the registry is gone.
    ctxpack_scorer_registry_free(registry);
    CHECK(destroyed == 0);
    ctxpack_result *r = NULL;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, budget, NULL, &r, &err));
    static const size_t longest[1] = {1};
    CHECK(indices_are(r, longest, 1));
    CHECK(state->calls == 1);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    // The last reference is gone: destroy ran exactly once.
    CHECK(destroyed == 1);
    ctxpack_budget_free(budget);
    ctxpack_items_free(items);
}

TEST(registry_errors_and_the_unknown_type_message) {
    ctxpack_scorer_registry *registry = NULL;
    ctxpack_error *err = NULL;
    REQUIRE_OK(ctxpack_scorer_registry_new(&registry, NULL));
    ctxpack_scorer *recency = NULL;
    REQUIRE_OK(ctxpack_scorer_new_recency(&recency, NULL));
    CHECK_STATUS(ctxpack_scorer_registry_add(registry, S("Recency"), recency, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "is the built-in scorer type recency");
    CHECK_STATUS(ctxpack_scorer_registry_add(registry, S("  "), recency, &err),
                 CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "must not be blank");
    CHECK_STATUS(ctxpack_scorer_registry_add(registry, S("x"), NULL, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "scorer must not be NULL");
    CHECK_STATUS(ctxpack_scorer_registry_add(NULL, S("x"), recency, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "registry must not be NULL");
    CHECK_STATUS(ctxpack_scorer_registry_add(registry, S("x"),
                                             (const ctxpack_scorer *)(const void *)registry, &err),
                 CTXPACK_WRONG_HANDLE_TYPE);
    CHECK_ERROR(err, CTXPACK_WRONG_HANDLE_TYPE, "scorer must be a ctxpack_scorer");
    REQUIRE_OK(ctxpack_scorer_registry_add(registry, S("semanticSimilarity"), recency, NULL));
    REQUIRE_OK(ctxpack_scorer_registry_add(registry, S("freshness"), recency, NULL));
    // Adding a name again replaces it (no new entry).
    REQUIRE_OK(ctxpack_scorer_registry_add(registry, S("FRESHNESS"), recency, NULL));
    size_t n = 0;
    CHECK_OK(ctxpack_scorer_registry_count(registry, &n));
    CHECK(n == 2);
    ctxpack_scorer_free(recency);
    // The free function of every other handle type leaves a registry alone (each handle
    // type has its own tag; the registry's once repeated the slice result's).
    ctxpack_slice_result_free((ctxpack_slice_result *)(void *)registry);
    ctxpack_json_warnings_free((ctxpack_json_warnings *)(void *)registry);
    ctxpack_string_free((ctxpack_string *)(void *)registry);
    ctxpack_budget_free((ctxpack_budget *)(void *)registry);
    CHECK_OK(ctxpack_scorer_registry_count(registry, &n));
    CHECK(n == 2);

    ctxpack_json_read_options o = options(false, registry);
    ctxpack_pipeline *p = NULL;
    CHECK_STATUS(ctxpack_pipeline_new_policy_json_with(
                     S("{\"scorers\": [{\"type\": \"unknownOther\", \"weight\": 1}]}"), &o, &p,
                     NULL, &err),
                 CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY,
                "invalid policy: scorers[0].type: unknown scorer type \"unknownOther\"; known "
                "values: recency, priority, kind, tag, frequency, reflexive, scaled, composite, "
                "decay, metadataTrust, metadataKey; registered: semanticSimilarity, FRESHNESS");
    // Without the registry the name is unknown.
    CHECK_STATUS(ctxpack_pipeline_new_policy_json(
                     S("{\"scorers\": [{\"type\": \"freshness\", \"weight\": 1}]}"), &p, &err),
                 CTXPACK_INVALID_POLICY);
    CHECK_ERROR(err, CTXPACK_INVALID_POLICY, "unknown scorer type \"freshness\"");
    // A built-in scorer registered under another name writes back as the built-in it is.
    REQUIRE_OK(ctxpack_pipeline_new_policy_json_with(
        S("{\"scorers\": [{\"type\": \"freshness\", \"weight\": 2}]}"), &o, &p, NULL, NULL));
    ctxpack_string *s = NULL;
    REQUIRE_OK(ctxpack_pipeline_policy_json(p, false, &s, NULL));
    CHECK(string_is(s, "{\"scorers\":[{\"type\":\"recency\",\"weight\":2}],\"slicerType\":"
                       "\"greedy\",\"placerType\":\"chronological\",\"deduplicationEnabled\":"
                       "true,\"overflowStrategy\":\"throw\"}"));
    ctxpack_pipeline_free(p);
    ctxpack_scorer_registry_free(registry);
}

// ---------------------------------------------------------------- a registry shared by threads

#define READERS 4
#define WRITERS 2
#define ROUNDS 100

static ctxpack_scorer_registry *shared_registry;
static ctxpack_scorer *shared_scorer;

// Reads a policy naming "alpha" ROUNDS times (strictly, with the shared registry) and
// reads every registered name; returns the number of failures.
static void *read_policies(void *arg) {
    (void)arg;
    intptr_t failures = 0;
    ctxpack_json_read_options o = options(true, shared_registry);
    for (int i = 0; i < ROUNDS; i++) {
        ctxpack_pipeline *p = NULL;
        if (ctxpack_pipeline_new_policy_json_with(
                S("{\"scorers\": [{\"type\": \"alpha\", \"weight\": 1}]}"), &o, &p, NULL,
                NULL) != CTXPACK_OK) {
            failures++;
        }
        ctxpack_pipeline_free(p);
        size_t n = 0;
        if (ctxpack_scorer_registry_count(shared_registry, &n) != CTXPACK_OK) failures++;
        for (size_t k = 0; k < n; k++) {
            ctxpack_str name = {NULL, 0};
            ctxpack_status st = ctxpack_scorer_registry_name(shared_registry, k, &name);
            if (st != CTXPACK_OK || name.len == 0 || name.ptr[name.len] != '\0') failures++;
        }
    }
    return (void *)failures;
}

// Adds new names and registers "alpha" again in alternating letter case, ROUNDS times.
static void *add_names(void *arg) {
    intptr_t writer = (intptr_t)arg;
    intptr_t failures = 0;
    for (int i = 0; i < ROUNDS; i++) {
        char name[32];
        snprintf(name, sizeof name, "w%d_%d", (int)writer, i % 10);
        if (ctxpack_scorer_registry_add(shared_registry, ctxpack_str_from_cstr(name), shared_scorer,
                                        NULL) != CTXPACK_OK) {
            failures++;
        }
        if (ctxpack_scorer_registry_add(shared_registry, i % 2 ? S("ALPHA") : S("alpha"),
                                        shared_scorer, NULL) != CTXPACK_OK) {
            failures++;
        }
    }
    return (void *)failures;
}

TEST(registry_adds_may_overlap_policy_reads) {
    REQUIRE_OK(ctxpack_scorer_registry_new(&shared_registry, NULL));
    REQUIRE_OK(ctxpack_scorer_new_priority(&shared_scorer, NULL));
    REQUIRE_OK(ctxpack_scorer_registry_add(shared_registry, S("alpha"), shared_scorer, NULL));
    // A name handed out stays valid when the name is registered again in other case.
    ctxpack_str before = {NULL, 0};
    REQUIRE_OK(ctxpack_scorer_registry_name(shared_registry, 0, &before));
    REQUIRE_OK(ctxpack_scorer_registry_add(shared_registry, S("Alpha"), shared_scorer, NULL));
    ctxpack_str after = {NULL, 0};
    REQUIRE_OK(ctxpack_scorer_registry_name(shared_registry, 0, &after));
    CHECK_STR(before, "alpha");
    CHECK(before.ptr[before.len] == '\0');
    CHECK_STR(after, "Alpha");

    pthread_t readers[READERS], writers[WRITERS];
    for (intptr_t i = 0; i < READERS; i++) {
        REQUIRE(pthread_create(&readers[i], NULL, read_policies, NULL) == 0);
    }
    for (intptr_t i = 0; i < WRITERS; i++) {
        REQUIRE(pthread_create(&writers[i], NULL, add_names, (void *)i) == 0);
    }
    intptr_t failures = 0;
    for (int i = 0; i < READERS; i++) {
        void *f = NULL;
        pthread_join(readers[i], &f);
        failures += (intptr_t)f;
    }
    for (int i = 0; i < WRITERS; i++) {
        void *f = NULL;
        pthread_join(writers[i], &f);
        failures += (intptr_t)f;
    }
    CHECK(failures == 0);
    // "alpha" once, and ten names per writer.
    size_t n = 0;
    CHECK_OK(ctxpack_scorer_registry_count(shared_registry, &n));
    CHECK(n == 1 + WRITERS * 10);
    CHECK_STR(before, "alpha");
    ctxpack_scorer_free(shared_scorer);
    ctxpack_scorer_registry_free(shared_registry);
}

int main(void) {
    RUN(lenient_policy_reading_reports_warnings);
    RUN(strict_policy_reading_rejects_what_lenient_reading_warns_about);
    RUN(read_option_and_argument_errors);
    RUN(flag_bytes_reserved_bytes_and_initialisers);
    RUN(budget_json_round_trips_in_the_dotnet_form);
    RUN(budget_json_warnings_and_errors);
    RUN(a_registered_callback_scorer_named_in_a_policy_runs);
    RUN(registry_errors_and_the_unknown_type_message);
    RUN(registry_adds_may_overlap_policy_reads);
    return tf_finish();
}
