// The C++17 test of the ctxpack ABI: RAII ownership with std::unique_ptr, C++ lambdas and
// std::function as callbacks (user_data owned by the library and deleted by `destroy`),
// C++ exceptions turned into callback errors at the boundary. Built and run by
// tests/c/run.sh.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ctxpack_test.h"

static_assert(std::is_enum_v<ctxpack_status>, "a C++ enum");
static_assert(sizeof(ctxpack_status) == 4, "int32_t underneath");
static_assert(std::is_trivially_copyable_v<ctxpack_item_desc>, "plain C struct");
static_assert(std::is_standard_layout_v<ctxpack_item_view>, "plain C struct");

namespace {

template <typename T, void (*Free)(T *)>
struct deleter {
    void operator()(T *p) const { Free(p); }
};
template <typename T, void (*Free)(T *)>
using handle = std::unique_ptr<T, deleter<T, Free>>;
using items_ptr = handle<ctxpack_items, ctxpack_items_free>;
using budget_ptr = handle<ctxpack_budget, ctxpack_budget_free>;
using scorer_ptr = handle<ctxpack_scorer, ctxpack_scorer_free>;
using slicer_ptr = handle<ctxpack_slicer, ctxpack_slicer_free>;
using placer_ptr = handle<ctxpack_placer, ctxpack_placer_free>;
using pipeline_ptr = handle<ctxpack_pipeline, ctxpack_pipeline_free>;
using result_ptr = handle<ctxpack_result, ctxpack_result_free>;
using error_ptr = handle<ctxpack_error, ctxpack_error_free>;

ctxpack_str str(std::string_view s) { return ctxpack_str{s.data(), s.size()}; }
std::string_view view(ctxpack_str s) { return std::string_view(s.ptr, s.len); }

// Makes a handle through a constructor `f(..., T **out, ctxpack_error **err)`.
template <typename Ptr, typename F>
Ptr make(F &&f, std::string *error = nullptr) {
    typename Ptr::pointer raw = nullptr;
    ctxpack_error *err = nullptr;
    ctxpack_status s = f(&raw, &err);
    error_ptr owned(err);
    if (error) *error = s == CTXPACK_OK ? "" : std::string(view(ctxpack_error_message(err)));
    return Ptr(raw);
}

// A scorer implemented by any C++ callable; the library owns the holder and deletes it
// through `destroy`. Exceptions never cross the C boundary.
using score_fn = std::function<double(const ctxpack_item_view &)>;
int destroyed_holders = 0;
thread_local std::string callback_message;  // valid until the callback returns

struct holder {
    score_fn fn;
    ~holder() { destroyed_holders++; }
};

scorer_ptr scorer_from(score_fn fn) {
    auto *h = new holder{std::move(fn)};
    scorer_ptr s = make<scorer_ptr>([&](ctxpack_scorer **out, ctxpack_error **err) {
        return ctxpack_scorer_new_custom_batch(
            [](void *ud, const ctxpack_item_view *items, size_t n, double *out,
               ctxpack_callback_error *error) -> int {
                try {
                    for (size_t i = 0; i < n; i++) out[i] = static_cast<holder *>(ud)->fn(items[i]);
                    return 0;
                } catch (const std::exception &e) {
                    callback_message = e.what();
                    error->message = str(callback_message);
                    return 1;
                }
            },
            h, [](void *ud) { delete static_cast<holder *>(ud); }, out, err);
    });
    if (!s) delete h;  // the constructor failed: we still own it
    return s;
}

items_ptr chat_items() {
    items_ptr items = make<items_ptr>(ctxpack_items_new);
    const char *contents[] = {"You are helpful.", "hello", "tell me a story", "once upon a time"};
    std::vector<ctxpack_item_desc> descs(4);
    for (size_t i = 0; i < descs.size(); i++) {
        ctxpack_item_desc d{};
        d.struct_size = sizeof d;
        d.content = ctxpack_str_from_cstr(contents[i]);
        d.tokens = 10 * static_cast<int64_t>(i + 1);
        d.timestamp_ns = 1000 * static_cast<int64_t>(i);
        d.has_timestamp = i > 0;
        d.pinned = i == 0;
        d.kind = str(i == 0 ? "SystemPrompt" : "Message");
        descs[i] = d;
    }
    if (items && ctxpack_items_push_many(items.get(), descs.data(), descs.size(), nullptr) != CTXPACK_OK) {
        return nullptr;
    }
    return items;
}

pipeline_ptr pipeline_with(const scorer_ptr &scorer) {
    slicer_ptr sl = make<slicer_ptr>(ctxpack_slicer_new_greedy);
    placer_ptr pl = make<placer_ptr>(ctxpack_placer_new_chronological);
    return make<pipeline_ptr>([&](ctxpack_pipeline **out, ctxpack_error **err) {
        return ctxpack_pipeline_new(scorer.get(), sl.get(), pl.get(), nullptr, out, err);
    });
}

}  // namespace

TEST(raii_pipeline_with_lambda_scorer) {
    int before = destroyed_holders;
    {
        items_ptr items = chat_items();
        budget_ptr budget = make<budget_ptr>([](ctxpack_budget **out, ctxpack_error **err) {
            ctxpack_budget_desc d = CTXPACK_BUDGET_DESC_INIT;
            d.max_tokens = 1000;
            d.target_tokens = 55;
            return ctxpack_budget_new(&d, out, err);
        });
        REQUIRE(items && budget);
        scorer_ptr recency = make<scorer_ptr>(ctxpack_scorer_new_recency);
        scorer_ptr longer = scorer_from([](const ctxpack_item_view &v) {
            return static_cast<double>(v.content.len) / 100.0;
        });
        REQUIRE(recency && longer);
        std::vector<ctxpack_composite_child> children = {{recency.get(), 1.0}, {longer.get(), 1.0}};
        scorer_ptr composite = make<scorer_ptr>([&](ctxpack_scorer **out, ctxpack_error **err) {
            return ctxpack_scorer_new_composite(children.data(), children.size(), out, err);
        });
        REQUIRE(composite);
        longer.reset();  // the composite keeps the lambda scorer alive
        CHECK(destroyed_holders == before);
        pipeline_ptr pipeline = pipeline_with(composite);
        REQUIRE(pipeline);

        ctxpack_run_options opts{};
        opts.struct_size = sizeof opts;
        opts.trace_detail = CTXPACK_TRACE_DETAIL_ITEM;
        ctxpack_result *raw = nullptr;
        REQUIRE_OK(ctxpack_pipeline_run(pipeline.get(), items.get(), budget.get(), &opts, &raw, nullptr));
        result_ptr result(raw);
        const size_t *idx = nullptr;
        size_t n = 0;
        REQUIRE_OK(ctxpack_result_indices(result.get(), &idx, &n));
        std::vector<size_t> placed(idx, idx + n);
        // Pinned system prompt (10) + the best of the rest within 55: chronological order
        // puts the timestamped items first and the prompt (no timestamp) last.
        REQUIRE(!placed.empty());
        CHECK(placed.back() == 0);
        ctxpack_str json{};
        REQUIRE_OK(ctxpack_result_report_json(result.get(), &json));
        std::string text(view(json));
        CHECK(text.front() == '{' && text.back() == '}');
        CHECK(text.find("\"included\"") != std::string::npos);
    }
    CHECK(destroyed_holders == before + 1);
}

TEST(exceptions_become_callback_errors) {
    items_ptr items = chat_items();
    budget_ptr budget = make<budget_ptr>([](ctxpack_budget **out, ctxpack_error **err) {
        ctxpack_budget_desc d = CTXPACK_BUDGET_DESC_INIT;
        d.max_tokens = 1000;
        d.target_tokens = 1000;
        return ctxpack_budget_new(&d, out, err);
    });
    scorer_ptr throwing = scorer_from([](const ctxpack_item_view &v) -> double {
        if (view(v.content) == "hello") throw std::runtime_error("cannot score 'hello'");
        return 0.5;
    });
    REQUIRE(items && budget && throwing);
    pipeline_ptr pipeline = pipeline_with(throwing);
    REQUIRE(pipeline);
    ctxpack_result *raw = nullptr;
    ctxpack_error *err = nullptr;
    CHECK_STATUS(ctxpack_pipeline_run(pipeline.get(), items.get(), budget.get(), nullptr, &raw, &err),
                 CTXPACK_CALLBACK);
    error_ptr owned(err);
    CHECK(raw == nullptr);
    REQUIRE(err != nullptr);
    CHECK(ctxpack_error_code(err) == CTXPACK_CALLBACK);
    CHECK(view(ctxpack_error_message(err)).find("cannot score 'hello'") != std::string_view::npos);
}

TEST(constructor_errors_in_cpp) {
    std::string message;
    scorer_ptr bad = make<scorer_ptr>(
        [](ctxpack_scorer **out, ctxpack_error **err) {
            return ctxpack_scorer_new_metadata_key(str("k"), str("v"), -1.0, out, err);
        },
        &message);
    CHECK(!bad);
    CHECK(!message.empty());
    // Enumerations are real C++ enums over int32_t; fields stay int32_t.
    ctxpack_pipeline_options o{};
    o.struct_size = sizeof o;
    o.overflow_strategy = CTXPACK_OVERFLOW_STRATEGY_TRUNCATE;
    o.deduplication = true;
    scorer_ptr sc = make<scorer_ptr>(ctxpack_scorer_new_priority);
    slicer_ptr sl = make<slicer_ptr>([](ctxpack_slicer **out, ctxpack_error **err) {
        return ctxpack_slicer_new_knapsack(CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE, 0, out, err);
    });
    placer_ptr pl = make<placer_ptr>(ctxpack_placer_new_u_shaped);
    pipeline_ptr p = make<pipeline_ptr>([&](ctxpack_pipeline **out, ctxpack_error **err) {
        return ctxpack_pipeline_new(sc.get(), sl.get(), pl.get(), &o, out, err);
    });
    CHECK(p != nullptr);
}

int main() {
    RUN(raii_pipeline_with_lambda_scorer);
    RUN(exceptions_become_callback_errors);
    RUN(constructor_errors_in_cpp);
    return tf_finish();
}
