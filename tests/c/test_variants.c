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

int main(void) {
    RUN(initialisers_set_the_struct_size);
    RUN(items_without_variants_are_placed_in_full);
    RUN(the_no_variants_option_is_a_flag_byte);
    return tf_finish();
}
