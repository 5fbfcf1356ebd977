// The C test of item variants (docs/variants.md): the variant descriptor and its
// initialisers, the form of every placed item, the DOWNGRADED reason with its fields and
// the pruned forms in the report accessors, and the no_variants pipeline option.
// Built and run by tests/c/run.sh (plain, under ASan+UBSan, and under valgrind).
#include <stddef.h>
#include <stdint.h>

#include "ctxpack_test.h"
#include "ctxpack_helpers.h"

// ---------------------------------------------------------------- helpers

// reflexive + `slicer` + chronological, with `no_variants` and `strategy` (consumes the
// slicer reference).
static ctxpack_pipeline *pipeline_with(ctxpack_slicer *slicer, uint8_t no_variants,
                                       int32_t strategy) {
    ctxpack_scorer *sc = NULL;
    ctxpack_placer *pl = NULL;
    ctxpack_scorer_new_reflexive(&sc, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline_options o = CTXPACK_PIPELINE_OPTIONS_INIT;
    o.no_variants = no_variants;
    o.overflow_strategy = strategy;
    ctxpack_pipeline *p = NULL;
    ctxpack_pipeline_new(sc, slicer, pl, &o, &p, NULL);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(slicer);
    ctxpack_placer_free(pl);
    return p;
}

static ctxpack_slicer *greedy(void) {
    ctxpack_slicer *sl = NULL;
    ctxpack_slicer_new_greedy(&sl, NULL);
    return sl;
}

// Runs traced at STAGE detail.
static ctxpack_status run_traced(const ctxpack_pipeline *p, const ctxpack_items *items,
                                 const ctxpack_budget *b, ctxpack_result **out,
                                 ctxpack_error **err) {
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    o.trace_detail = CTXPACK_TRACE_DETAIL_STAGE;
    return ctxpack_pipeline_run(p, items, b, &o, out, err);
}

// An item descriptor with a future-relevance hint (the reflexive scorer's score).
static ctxpack_item_desc hinted(const char *content, int64_t tokens, double hint) {
    ctxpack_item_desc d = desc(content, tokens);
    d.future_relevance_hint = hint;
    d.has_future_relevance_hint = 1;
    return d;
}

// A variant descriptor.
static ctxpack_variant_desc variant(const char *content, int64_t tokens, double quality) {
    ctxpack_variant_desc v = CTXPACK_VARIANT_DESC_INIT;
    v.content = ctxpack_str_from_cstr(content);
    v.tokens = tokens;
    v.quality = quality;
    return v;
}

// Pushes one descriptor into a new list; returns the status, frees the list, and hands
// the error (if any) to the caller.
static ctxpack_status push_one(const ctxpack_item_desc *d, ctxpack_error **err) {
    ctxpack_items *items = NULL;
    if (ctxpack_items_new(&items, NULL) != CTXPACK_OK) return CTXPACK_OUT_OF_MEMORY;
    ctxpack_status st = ctxpack_items_push(items, d, err);
    size_t len = 99;
    ctxpack_items_len(items, &len);
    if (st != CTXPACK_OK && len != 0) st = CTXPACK_PANIC;  // a failed push must add nothing
    ctxpack_items_free(items);
    return st;
}

// ---------------------------------------------------------------- tests

TEST(initialisers_set_the_struct_size) {
    ctxpack_variant_desc v = CTXPACK_VARIANT_DESC_INIT;
    CHECK(v.struct_size == sizeof v);
    CHECK(v.content.ptr == NULL && v.content.len == 0 && v.tokens == 0 && v.quality == 0.0);
    ctxpack_variant_desc w;
    memset(&w, 0x5a, sizeof w);
    CHECK_OK(ctxpack_variant_desc_init(&w, sizeof w));
    CHECK(w.struct_size == sizeof w && w.tokens == 0 && w.quality == 0.0);
    CHECK_STATUS(ctxpack_variant_desc_init(&w, 8), CTXPACK_INVALID_ARGUMENT);
    CHECK_STATUS(ctxpack_variant_desc_init(NULL, sizeof w), CTXPACK_NULL_ARGUMENT);

    ctxpack_pruned_form f = CTXPACK_PRUNED_FORM_INIT;
    CHECK(f.struct_size == sizeof f);
    memset(&f, 0x5a, sizeof f);
    CHECK_OK(ctxpack_pruned_form_init(&f, sizeof f));
    CHECK(f.struct_size == sizeof f && f.index == 0 && f.form == 0 && f.dominated_by == 0);
    CHECK_STATUS(ctxpack_pruned_form_init(&f, 5000), CTXPACK_INVALID_ARGUMENT);
}

TEST(items_without_variants_are_placed_in_full) {
    ctxpack_item_desc d[3] = {hinted("a", 10, 0.9), hinted("b", 20, 0.5), hinted("c", 90, 0.1)};
    ctxpack_items *items = items_of(d, 3);
    ctxpack_budget *b = budget_of(50, 50);
    ctxpack_pipeline *p = pipeline_with(greedy(), 0, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(items && b && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    const size_t *idx = NULL, *forms = NULL;
    size_t n = 0, nf = 0;
    CHECK_OK(ctxpack_result_indices(r, &idx, &n));
    CHECK_OK(ctxpack_result_forms(r, &forms, &nf));
    CHECK(n == 2 && nf == n);
    for (size_t i = 0; i < nf; i++) CHECK(forms[i] == 0);
    CHECK_STATUS(ctxpack_result_forms(r, NULL, &nf), CTXPACK_NULL_ARGUMENT);
    CHECK_STATUS(ctxpack_result_forms(NULL, &forms, &nf), CTXPACK_NULL_ARGUMENT);

    ctxpack_report_summary s = CTXPACK_REPORT_SUMMARY_INIT;
    CHECK_OK(ctxpack_result_report_summary(r, &s, NULL));
    CHECK(s.pruned_form_count == 0);
    for (size_t i = 0; i < s.included_count; i++) {
        ctxpack_included_entry e = CTXPACK_INCLUDED_ENTRY_INIT;
        CHECK_OK(ctxpack_result_report_included(r, i, &e, NULL));
        CHECK(e.reason == CTXPACK_INCLUSION_REASON_SCORED);
        CHECK(e.form == 0 && e.full_tokens == 0 && e.chosen_tokens == 0);
        CHECK(e.cause == CTXPACK_DOWNGRADE_CAUSE_NONE);
    }
    ctxpack_pruned_form f = CTXPACK_PRUNED_FORM_INIT;
    ctxpack_error *err = NULL;
    CHECK_STATUS(ctxpack_result_report_pruned_form(r, 0, &f, &err), CTXPACK_OUT_OF_RANGE);
    CHECK_ERROR(err, CTXPACK_OUT_OF_RANGE, "pruned form index 0 is out of range (count 0)");
    ctxpack_result_free(r);

    // Untraced: the forms are there, the report accessors are not.
    ctxpack_run_options o = CTXPACK_RUN_OPTIONS_INIT;
    REQUIRE_OK(ctxpack_pipeline_run(p, items, b, &o, &r, NULL));
    CHECK_OK(ctxpack_result_forms(r, &forms, &nf));
    CHECK(nf == 2 && forms[0] == 0 && forms[1] == 0);
    CHECK_STATUS(ctxpack_result_report_pruned_form(r, 0, &f, NULL), CTXPACK_NO_REPORT);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(the_no_variants_option_is_a_flag_byte) {
    ctxpack_scorer *sc = NULL;
    ctxpack_slicer *sl = greedy();
    ctxpack_placer *pl = NULL;
    ctxpack_scorer_new_reflexive(&sc, NULL);
    ctxpack_placer_new_chronological(&pl, NULL);
    ctxpack_pipeline_options o = CTXPACK_PIPELINE_OPTIONS_INIT;
    ctxpack_pipeline *p = NULL;
    ctxpack_error *err = NULL;
    o.no_variants = 2;
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, pl, &o, &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.no_variants is 2; a flag must be 0 or 1");
    CHECK(p == NULL);
    o.no_variants = 1;
    o.reserved[1] = 7;
    CHECK_STATUS(ctxpack_pipeline_new(sc, sl, pl, &o, &p, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "options.reserved[1] is 7; reserved bytes must be zero");
    o.reserved[1] = 0;
    CHECK_OK(ctxpack_pipeline_new(sc, sl, pl, &o, &p, NULL));
    ctxpack_pipeline_free(p);
    ctxpack_scorer_free(sc);
    ctxpack_slicer_free(sl);
    ctxpack_placer_free(pl);
}

// Greedy takes the 10-token question first (density 0.05 against 0.009), leaving 40 of 50:
// the 100-token log does not fit, its 20-token summary does.
TEST(a_long_item_is_placed_as_its_summary) {
    ctxpack_variant_desc v[1] = {variant("3 tests fail: rounding off by one cent", 20, 0.5)};
    ctxpack_item_desc d[2] = {hinted("<100 tokens of test log>", 100, 0.9),
                              hinted("why did the build fail?", 10, 0.5)};
    d[0].variants = v;
    d[0].variant_count = 1;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(50, 50);
    ctxpack_pipeline *p = pipeline_with(greedy(), 0, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(items && b && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    const size_t want[2] = {0, 1};
    CHECK(indices_are(r, want, 2));
    const size_t *forms = NULL;
    const int32_t *reasons = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_forms(r, &forms, &n));
    CHECK(n == 2 && forms[0] == 1 && forms[1] == 0);
    CHECK_OK(ctxpack_result_reasons(r, &reasons, &n));
    CHECK(n == 2 && reasons[0] == CTXPACK_INCLUSION_REASON_DOWNGRADED &&
          reasons[1] == CTXPACK_INCLUSION_REASON_SCORED);

    ctxpack_included_entry e = CTXPACK_INCLUDED_ENTRY_INIT;
    CHECK_OK(ctxpack_result_report_included(r, 0, &e, NULL));
    CHECK(e.index == 0 && e.reason == CTXPACK_INCLUSION_REASON_DOWNGRADED);
    CHECK(e.form == 1);
    CHECK_I64(e.full_tokens, 100);
    CHECK_I64(e.chosen_tokens, 20);
    CHECK_I64(e.available_tokens, 20);  // 50 - (20 + 10); the full form needs 80 more
    CHECK(e.cause == CTXPACK_DOWNGRADE_CAUSE_BUDGET_EXCEEDED);
    CHECK_F64(e.score, 0.9);  // the item's score, not multiplied by the quality

    // A caller whose entry ends at `reason` (an older header) reads SCORED.
    ctxpack_included_entry old;
    memset(&old, 0x5a, sizeof old);
    old.struct_size = offsetof(ctxpack_included_entry, form);
    CHECK_OK(ctxpack_result_report_included(r, 0, &old, NULL));
    CHECK(old.struct_size == offsetof(ctxpack_included_entry, form));
    CHECK(old.index == 0 && old.reason == CTXPACK_INCLUSION_REASON_SCORED);
    CHECK(old.form == (size_t)0x5a5a5a5a5a5a5a5aULL);  // beyond its struct: untouched

    ctxpack_str json = {NULL, 0};
    CHECK_OK(ctxpack_result_report_json(r, &json));
    CHECK(tf_str_contains(json, "\"reason\":\"Downgraded\",\"form\":1,\"full_tokens\":100"));
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);

    // With no_variants the log is dropped instead.
    p = pipeline_with(greedy(), 1, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(p);
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    const size_t only_question[1] = {1};
    CHECK(indices_are(r, only_question, 1));
    CHECK_OK(ctxpack_result_forms(r, &forms, &n));
    CHECK(n == 1 && forms[0] == 0);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// Pinned items take their room first and are always placed in full; the slicer degrades
// the others into what is left.
TEST(pinned_items_stay_in_full_and_others_degrade) {
    ctxpack_variant_desc v[2] = {variant("medium", 30, 0.6), variant("stub", 0, 0.1)};
    ctxpack_item_desc d[2] = {hinted("pinned system prompt", 40, 0.0), hinted("tool output", 60, 0.8)};
    d[0].pinned = 1;
    d[1].variants = v;
    d[1].variant_count = 2;
    ctxpack_items *items = items_of(d, 2);
    // max 100, target 80: 40 pinned leave 40 for slicing; the 60-token output does not
    // fit, its 30-token form does (the richest that fits).
    ctxpack_budget *b = budget_of(100, 80);
    ctxpack_pipeline *p = pipeline_with(greedy(), 0, CTXPACK_OVERFLOW_STRATEGY_PROCEED);
    REQUIRE(items && b && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    const size_t *forms = NULL, *idx = NULL;
    size_t n = 0, ni = 0;
    CHECK_OK(ctxpack_result_indices(r, &idx, &ni));
    CHECK_OK(ctxpack_result_forms(r, &forms, &n));
    REQUIRE(n == 2 && ni == 2);
    for (size_t i = 0; i < n; i++) {
        CHECK(forms[i] == (idx[i] == 1 ? 1u : 0u));  // the pinned prompt is in full
    }
    ctxpack_included_entry e = CTXPACK_INCLUDED_ENTRY_INIT;
    for (size_t i = 0; i < 2; i++) {
        CHECK_OK(ctxpack_result_report_included(r, i, &e, NULL));
        if (e.index == 1) {
            CHECK(e.reason == CTXPACK_INCLUSION_REASON_DOWNGRADED);
            CHECK_I64(e.chosen_tokens, 30);
            CHECK_I64(e.available_tokens, 10);  // 40 left for slicing - 30
            CHECK(e.cause == CTXPACK_DOWNGRADE_CAUSE_BUDGET_EXCEEDED);
        } else {
            CHECK(e.reason == CTXPACK_INCLUSION_REASON_PINNED && e.form == 0);
        }
    }
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// A variant with as many tokens as the item or more is accepted and pruned: the item
// itself dominates it. The report lists it.
TEST(a_variant_not_cheaper_than_the_item_is_pruned) {
    ctxpack_variant_desc v[3] = {variant("longer", 150, 0.9), variant("summary", 20, 0.5),
                                 variant("same length, less", 100, 0.7)};
    ctxpack_item_desc d[1] = {hinted("the item", 100, 0.5)};
    d[0].variants = v;
    d[0].variant_count = 3;
    ctxpack_items *items = items_of(d, 1);
    ctxpack_budget *b = budget_of(500, 500);
    ctxpack_pipeline *p = pipeline_with(greedy(), 0, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(items && b && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    ctxpack_report_summary s = CTXPACK_REPORT_SUMMARY_INIT;
    CHECK_OK(ctxpack_result_report_summary(r, &s, NULL));
    REQUIRE(s.pruned_form_count == 2);
    ctxpack_pruned_form f = CTXPACK_PRUNED_FORM_INIT;
    CHECK_OK(ctxpack_result_report_pruned_form(r, 0, &f, NULL));
    CHECK(f.index == 0 && f.form == 1 && f.dominated_by == 0);
    CHECK_OK(ctxpack_result_report_pruned_form(r, 1, &f, NULL));
    CHECK(f.index == 0 && f.form == 3 && f.dominated_by == 0);
    CHECK_STATUS(ctxpack_result_report_pruned_form(r, 2, &f, NULL), CTXPACK_OUT_OF_RANGE);
    // Everything fits: the item is placed in full.
    const size_t *forms = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_forms(r, &forms, &n));
    CHECK(n == 1 && forms[0] == 0);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

TEST(invalid_variant_descriptors_are_rejected) {
    ctxpack_item_desc d = desc("Tool result call_01 lookup_order", 100);
    ctxpack_variant_desc v[2] = {variant("summary", 20, 0.5), variant("stub", 2, 0.1)};
    ctxpack_error *err = NULL;
    d.variants = v;
    d.variant_count = 2;
    CHECK_OK(push_one(&d, NULL));

    v[1].content = S("");
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "item \"Tool result call_01 lookup_order\", form 2: content must not be empty");
    v[1] = variant("stub", -1, 0.1);
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "form 2: tokens must be >= 0, got -1");
    v[1] = variant("stub", 2, NAN);
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "form 2: quality must be in (0, 1], got NaN");
    v[1].quality = 1.5;
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "quality must be in (0, 1], got 1.5");
    v[1].quality = -0.5;
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "quality must be in (0, 1], got -0.5");
    // An initialised but unfilled descriptor: quality 0 (and empty content, checked first).
    ctxpack_variant_desc blank = CTXPACK_VARIANT_DESC_INIT;
    v[1] = blank;
    v[1].content = S("stub");
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "form 2: quality must be in (0, 1], got 0");

    v[1] = variant("stub", 2, 0.1);
    v[1].content = (ctxpack_str){"ok\xff", 3};
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_UTF8);
    CHECK_ERROR(err, CTXPACK_INVALID_UTF8, "variants[1].content is not valid UTF-8");

    v[1] = variant("stub", 2, 0.1);
    d.variants = NULL;
    CHECK_STATUS(push_one(&d, &err), CTXPACK_NULL_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_NULL_ARGUMENT, "variants is NULL but its length is 2");
    d.variant_count = 0;  // NULL with no variants is fine
    CHECK_OK(push_one(&d, NULL));

    d.variants = v;
    d.variant_count = 2;
    v[1].struct_size = sizeof v[1] + 8;
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT,
                "variants[1].struct_size differs from variants[0].struct_size");
    v[1].struct_size = sizeof v[1];
    v[0].struct_size = 8;
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "ctxpack_variant_desc.struct_size is 8");
    v[0].struct_size = sizeof v[0];

    // All or nothing across ctxpack_items_push_many, with the item's position.
    ctxpack_item_desc many[2] = {desc("fine", 5), d};
    v[0].quality = 0.0;
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_STATUS(ctxpack_items_push_many(items, many, 2, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "item 1: invalid argument: item \"Tool result");
    size_t len = 99;
    CHECK_OK(ctxpack_items_len(items, &len));
    CHECK(len == 0);
    ctxpack_items_free(items);
}

// A caller compiled before the variant fields: its struct_size ends before `variants`, and
// whatever lies after its struct is not read.
TEST(an_older_item_descriptor_has_no_variants) {
    struct {
        ctxpack_item_desc d;
        unsigned char after[64];
    } buf;
    memset(&buf, 0xab, sizeof buf);  // garbage where the newer fields would be
    ctxpack_item_desc d = desc("old caller", 7);
    memcpy(&buf.d, &d, offsetof(ctxpack_item_desc, variants));
    buf.d.struct_size = offsetof(ctxpack_item_desc, variants);
    ctxpack_items *items = NULL;
    REQUIRE_OK(ctxpack_items_new(&items, NULL));
    CHECK_OK(ctxpack_items_push(items, &buf.d, NULL));
    ctxpack_budget *b = budget_of(100, 100);
    ctxpack_pipeline *p = pipeline_with(greedy(), 0, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(b && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    const size_t *forms = NULL;
    size_t n = 0;
    CHECK_OK(ctxpack_result_forms(r, &forms, &n));
    CHECK(n == 1 && forms[0] == 0);
    ctxpack_report_summary s = CTXPACK_REPORT_SUMMARY_INIT;
    CHECK_OK(ctxpack_result_report_summary(r, &s, NULL));
    CHECK(s.pruned_form_count == 0);
    // An older summary (it ends at total_tokens_saturated) is filled up to its size.
    ctxpack_report_summary old;
    memset(&old, 0x5a, sizeof old);
    old.struct_size = offsetof(ctxpack_report_summary, pruned_form_count);
    CHECK_OK(ctxpack_result_report_summary(r, &old, NULL));
    CHECK(old.included_count == 1 && old.pruned_form_count == (size_t)0x5a5a5a5a5a5a5a5aULL);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// The slicer alone: items with variants may be selected as one of them.
TEST(a_slicer_alone_reports_the_forms) {
    ctxpack_variant_desc v[1] = {variant("summary", 20, 0.5)};
    ctxpack_item_desc d[2] = {desc("log", 100), desc("question", 10)};
    d[0].variants = v;
    d[0].variant_count = 1;
    ctxpack_items *items = items_of(d, 2);
    ctxpack_budget *b = budget_of(50, 50);
    ctxpack_slicer *sl = greedy();
    REQUIRE(items && b && sl);
    const double scores[2] = {0.9, 0.5};
    ctxpack_slice_result *sr = NULL;
    REQUIRE_OK(ctxpack_slicer_slice(sl, items, scores, 2, b, &sr, NULL));
    const size_t *sel = NULL, *forms = NULL;
    size_t n = 0, nf = 0;
    CHECK_OK(ctxpack_slice_result_selected(sr, &sel, &n));
    CHECK_OK(ctxpack_slice_result_forms(sr, &forms, &nf));
    REQUIRE(n == 2 && nf == 2);
    for (size_t i = 0; i < n; i++) CHECK(forms[i] == (sel[i] == 0 ? 1u : 0u));
    CHECK_STATUS(ctxpack_slice_result_forms(sr, &forms, NULL), CTXPACK_NULL_ARGUMENT);
    ctxpack_slice_result_free(sr);
    ctxpack_slicer_free(sl);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

// An item whose tokens the library counts has its variants counted with the same encoding;
// their caller counts must then be 0, as the item's.
TEST(an_encoding_counts_the_variants_too) {
    ctxpack_variant_desc v[1] = {variant("a short summary", 0, 0.5)};
    ctxpack_item_desc d = desc("a long text that the library counts for the caller", 0);
    d.encoding = S("o200k_base");
    d.variants = v;
    d.variant_count = 1;
    ctxpack_error *err = NULL;
    CHECK_OK(push_one(&d, NULL));
    v[0].tokens = 5;
    CHECK_STATUS(push_one(&d, &err), CTXPACK_INVALID_ARGUMENT);
    CHECK_ERROR(err, CTXPACK_INVALID_ARGUMENT, "variants[0].tokens is 5 but desc.encoding is set");
    // The counts are the encoding's: a budget that holds only the summary places it.
    int64_t item_tokens = 0, summary_tokens = 0;
    const ctxpack_encoding *enc = NULL;
    REQUIRE_OK(ctxpack_encoding_get(S("o200k_base"), &enc, NULL));
    CHECK_OK(ctxpack_encoding_count(enc, d.content, &item_tokens, NULL));
    CHECK_OK(ctxpack_encoding_count(enc, v[0].content, &summary_tokens, NULL));
    REQUIRE(summary_tokens > 0 && summary_tokens < item_tokens);
    v[0].tokens = 0;
    ctxpack_items *items = items_of(&d, 1);
    ctxpack_budget *b = budget_of(summary_tokens, summary_tokens);
    ctxpack_pipeline *p = pipeline_with(greedy(), 0, CTXPACK_OVERFLOW_STRATEGY_THROW);
    REQUIRE(items && b && p);
    ctxpack_result *r = NULL;
    REQUIRE_OK(run_traced(p, items, b, &r, NULL));
    ctxpack_included_entry e = CTXPACK_INCLUDED_ENTRY_INIT;
    CHECK_OK(ctxpack_result_report_included(r, 0, &e, NULL));
    CHECK(e.form == 1);
    CHECK_I64(e.full_tokens, item_tokens);
    CHECK_I64(e.chosen_tokens, summary_tokens);
    ctxpack_result_free(r);
    ctxpack_pipeline_free(p);
    ctxpack_budget_free(b);
    ctxpack_items_free(items);
}

int main(void) {
    RUN(initialisers_set_the_struct_size);
    RUN(items_without_variants_are_placed_in_full);
    RUN(the_no_variants_option_is_a_flag_byte);
    RUN(a_long_item_is_placed_as_its_summary);
    RUN(pinned_items_stay_in_full_and_others_degrade);
    RUN(a_variant_not_cheaper_than_the_item_is_pruned);
    RUN(invalid_variant_descriptors_are_rejected);
    RUN(an_older_item_descriptor_has_no_variants);
    RUN(a_slicer_alone_reports_the_forms);
    RUN(an_encoding_counts_the_variants_too);
    return tf_finish();
}
