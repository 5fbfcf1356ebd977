// Tests of ctxpack.hpp against the real library: every status mapped to ctxpack::Error,
// ownership and move semantics, every built-in component, custom scorers, slicers and
// placers from lambdas (their state destroyed exactly once, their exceptions turned into
// CTXPACK_CALLBACK), results, reports, the overflow event, the single-stage calls,
// concurrent runs, the report helpers, budget simulation, sensitivity comparisons and
// borrowed items (ItemRef). Built and run by bindings/cpp/run.sh, plain and under ASan+UBSan
// (whose LeakSanitizer checks that nothing leaks).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "check.hpp"
#include "ctxpack.hpp"

// Test hook of the `ffi-test-hooks` feature (not in the public header; run.sh builds the
// library with it): a scorer whose runs panic (code 0) or fail with core error `code`.
// It is the only way to reach CTXPACK_PANIC through a real run.
extern "C" ctxpack_status ctxpack_test_scorer_new_faulty(int32_t code, ctxpack_scorer **out,
                                                         ctxpack_error **out_error);

using namespace ctxpack;

namespace {

constexpr int64_t kMinute = INT64_C(60000000000);
constexpr int64_t kJan2024 = INT64_C(1704067200) * 1000000000;

Item dated(std::string content, int64_t tokens, int minute, std::string kind = "") {
    Item item{std::move(content), tokens, std::move(kind)};
    item.timestamp_ns = kJan2024 + minute * kMinute;
    return item;
}

// Four dated messages, oldest first, 10/20/30/40 tokens.
Items four_messages() {
    return Items({dated("a", 10, 0), dated("b", 20, 1), dated("c", 30, 2), dated("d", 40, 3)});
}

Pipeline simple_pipeline(const Scorer &scorer, PipelineOptions options = {}) {
    return Pipeline(scorer, Slicer::greedy(), Placer::chronological(), options);
}

std::vector<std::size_t> run_indices(const Pipeline &p, const Items &items, const Budget &b) {
    Result result = p.run(items, b);
    return result.indices().to_vector();
}

// Counts how many copies of a callable's captured state are alive: the library must
// destroy the component's copy exactly once.
struct Tracker {
    std::atomic<int> *alive;
    explicit Tracker(std::atomic<int> *a) : alive(a) { ++*alive; }
    Tracker(const Tracker &o) : alive(o.alive) { ++*alive; }
    Tracker &operator=(const Tracker &) = delete;
    ~Tracker() { --*alive; }
};

// Takes every candidate, whatever the budget: pushes a run over its target.
Slicer take_everything() {
    return Slicer::custom([](ItemsView items, Span<const double>, int64_t, int64_t) {
        std::vector<std::size_t> all(items.size());
        for (std::size_t i = 0; i < all.size(); i++) all[i] = i;
        return all;
    });
}

Scorer faulty(int32_t code) {
    ctxpack_scorer *raw = nullptr;
    ctxpack_error *error = nullptr;
    throw_if_failed(ctxpack_test_scorer_new_faulty(code, &raw, &error), error);
    return Scorer::adopt(raw);
}

}  // namespace

// ---------------------------------------------------------------- statuses

// One row per status: its C value and name, and a real call that fails with it.
struct StatusRow {
    Status status;
    int32_t c_value;
    const char *name;
    std::function<void()> produce;
};

TEST(every_status_maps_to_an_error) {
    Items two = four_messages();
    Budget roomy(1000, 1000);
    const std::vector<StatusRow> table = {
        {Status::Ok, CTXPACK_OK, "CTXPACK_OK", nullptr},
        {Status::EmptyContent, CTXPACK_EMPTY_CONTENT, "CTXPACK_EMPTY_CONTENT", [] { Items().push(Item{"", 1}); }},
        {Status::EmptyKind, CTXPACK_EMPTY_KIND, "CTXPACK_EMPTY_KIND", [] { Items().push(Item{"x", 1, "  "}); }},
        {Status::EmptySource, CTXPACK_EMPTY_SOURCE, "CTXPACK_EMPTY_SOURCE",
         [] { Items().push(Item{"x", 1, "", " "}); }},
        {Status::InvalidBudget, CTXPACK_INVALID_BUDGET, "CTXPACK_INVALID_BUDGET", [] { Budget(10, 20); }},
        {Status::PinnedExceedsBudget, CTXPACK_PINNED_EXCEEDS_BUDGET, "CTXPACK_PINNED_EXCEEDS_BUDGET",
         [] {
             Item prompt{"prompt", 90};
             prompt.pinned = true;
             simple_pipeline(Scorer::recency()).run(Items({prompt}), Budget(100, 100, 20));
         }},
        {Status::Overflow, CTXPACK_OVERFLOW, "CTXPACK_OVERFLOW",
         [&] { Pipeline(Scorer::recency(), take_everything(), Placer::chronological()).run(two, Budget(100, 50)); }},
        {Status::ScorerConfig, CTXPACK_SCORER_CONFIG, "CTXPACK_SCORER_CONFIG",
         [] { Scorer::metadata_key("k", "v", -1.0); }},
        {Status::SlicerConfig, CTXPACK_SLICER_CONFIG, "CTXPACK_SLICER_CONFIG", [] { Slicer::knapsack(0); }},
        {Status::PipelineConfig, CTXPACK_PIPELINE_CONFIG, "CTXPACK_PIPELINE_CONFIG",
         [] {
             Scorer scorer = Scorer::recency();
             Scorer taken = std::move(scorer);
             simple_pipeline(scorer);  // the moved-from scorer hands NULL to the library
         }},
        {Status::TableTooLarge, CTXPACK_TABLE_TOO_LARGE, "CTXPACK_TABLE_TOO_LARGE",
         [&] { Pipeline(Scorer::recency(), Slicer::knapsack(1, 1), Placer::chronological()).run(two, roomy); }},
        {Status::CountRequirementUnmet, CTXPACK_COUNT_REQUIREMENT_UNMET, "CTXPACK_COUNT_REQUIREMENT_UNMET",
         [&] {
             Slicer slicer = Slicer::count_quota({{"tool", 1, 1}}, Slicer::greedy(), Scarcity::Throw);
             Pipeline(Scorer::recency(), slicer, Placer::chronological()).run(two, roomy);
         }},
        {Status::Callback, CTXPACK_CALLBACK, "CTXPACK_CALLBACK",
         [&] {
             Scorer nan = Scorer::custom([](ItemsView, std::size_t) { return std::nan(""); });
             simple_pipeline(nan).run(two, roomy);
         }},
        {Status::TokenOverflow, CTXPACK_TOKEN_OVERFLOW, "CTXPACK_TOKEN_OVERFLOW",
         [] {
             Item a{"a", std::numeric_limits<int64_t>::max()}, b{"b", 1};
             a.pinned = b.pinned = true;
             const int64_t max = std::numeric_limits<int64_t>::max();
             simple_pipeline(Scorer::recency(), {true, OverflowStrategy::Proceed}).run(Items({a, b}), Budget(max, max));
         }},
        {Status::InvalidPolicy, CTXPACK_INVALID_POLICY, "CTXPACK_INVALID_POLICY",
         [] { Pipeline::from_policy_json(R"({"scorers": []})"); }},
        {Status::InvalidArgument, CTXPACK_INVALID_ARGUMENT, "CTXPACK_INVALID_ARGUMENT",
         [] { simple_pipeline(Scorer::recency(), {true, static_cast<OverflowStrategy>(7)}); }},
        {Status::OutOfMemory, CTXPACK_OUT_OF_MEMORY, "CTXPACK_OUT_OF_MEMORY",
         [] {
             // No table limit and a budget of 10^12 tokens: a 4 TB DP row.
             Item a{"a", 600000000000}, b{"b", 600000000000};
             a.future_relevance_hint = 0.9;
             b.future_relevance_hint = 0.8;
             const int64_t budget = 1000000000000;
             Pipeline(Scorer::reflexive(), Slicer::knapsack(1, UINT64_MAX), Placer::chronological())
                 .run(Items({a, b}), Budget(budget, budget));
         }},
        {Status::Unsupported, CTXPACK_UNSUPPORTED, "CTXPACK_UNSUPPORTED",
         [&] { simple_pipeline(faulty(CTXPACK_UNSUPPORTED)).run(two, roomy); }},
        {Status::Cancelled, CTXPACK_CANCELLED, "CTXPACK_CANCELLED",
         [&] {
             CancelToken token;
             token.cancel();
             RunOptions options;
             options.cancel = &token;
             simple_pipeline(Scorer::recency()).run(two, roomy, options);
         }},
        // No prefix-state call exists in the binding yet: the hook's scorer fails with it.
        {Status::InvalidState, CTXPACK_INVALID_STATE, "CTXPACK_INVALID_STATE",
         [&] { simple_pipeline(faulty(CTXPACK_INVALID_STATE)).run(two, roomy); }},
        // No chat-request call exists in the binding yet: the hook's scorer fails with it.
        {Status::InvalidRequest, CTXPACK_INVALID_REQUEST, "CTXPACK_INVALID_REQUEST",
         [&] { simple_pipeline(faulty(20)).run(two, roomy); }},
        {Status::NullArgument, CTXPACK_NULL_ARGUMENT, "CTXPACK_NULL_ARGUMENT",
         [&] {
             Items moved = four_messages();
             Items taken = std::move(moved);
             simple_pipeline(Scorer::recency()).run(moved, roomy);
         }},
        {Status::InvalidUtf8, CTXPACK_INVALID_UTF8, "CTXPACK_INVALID_UTF8", [] { Items().push(Item{"\xff", 1}); }},
        {Status::WrongHandleType, CTXPACK_WRONG_HANDLE_TYPE, "CTXPACK_WRONG_HANDLE_TYPE",
         [&] {
             // Only reachable with a cast through the raw handles: the wrapper's types
             // make it impossible otherwise.
             std::size_t n = 0;
             throw_if_failed(ctxpack_items_len(reinterpret_cast<const ctxpack_items *>(roomy.native()), &n));
         }},
        {Status::OutOfRange, CTXPACK_OUT_OF_RANGE, "CTXPACK_OUT_OF_RANGE",
         [&] { simple_pipeline(Scorer::recency()).run(two, roomy, {TraceDetail::Stage}).included(99); }},
        {Status::NoReport, CTXPACK_NO_REPORT, "CTXPACK_NO_REPORT",
         [&] { simple_pipeline(Scorer::recency()).run(two, roomy).summary(); }},
        {Status::Panic, CTXPACK_PANIC, "CTXPACK_PANIC", [&] { simple_pipeline(faulty(0)).run(two, roomy); }},
    };

    for (const StatusRow &row : table) {
        CHECK_EQ(static_cast<int32_t>(row.status), row.c_value);
        CHECK_EQ(std::string(status_name(row.status)), std::string(row.name));
        if (!row.produce) continue;
        try {
            row.produce();
            check::fail(__FILE__, __LINE__, std::string(row.name) + ": the call did not throw");
        } catch (const Error &e) {
            if (e.status() != row.status) {
                check::fail(__FILE__, __LINE__, std::string(row.name) + ": got " + e.what());
            }
            CHECK(std::string(e.what()).rfind(std::string(row.name) + ": ", 0) == 0);
            CHECK(!e.message().empty());
        }
    }
    // The table covers every status the library names.
    for (int32_t code = 0; code < 256; code++) {
        if (std::strcmp(ctxpack_status_name(code), "CTXPACK_UNKNOWN_STATUS") == 0) continue;
        bool listed = false;
        for (const StatusRow &row : table) listed = listed || row.c_value == code;
        if (!listed) check::fail(__FILE__, __LINE__, std::string("status not in the table: ") + ctxpack_status_name(code));
    }
    throw_if_failed(CTXPACK_OK);  // success throws nothing
}

TEST(error_is_a_runtime_error_with_the_message) {
    try {
        Budget(10, 20);
        REQUIRE(false);
    } catch (const std::runtime_error &e) {
        const auto *error = dynamic_cast<const Error *>(&e);
        REQUIRE(error != nullptr);
        CHECK(error->status() == Status::InvalidBudget);
        CHECK(std::string(e.what()) == "CTXPACK_INVALID_BUDGET: " + std::string(error->message()));
        CHECK(error->message().find("20") != std::string_view::npos);  // names the values
        Error copy = *error;  // copies share the text
        CHECK(copy.message() == error->message());
    }
}

TEST(push_many_is_all_or_nothing) {
    Items items;
    items.push(Item{"first", 1});
    CHECK_THROWS_STATUS(items.push_many({Item{"ok", 1}, Item{"", 1}, Item{"ok too", 1}}), Status::EmptyContent);
    try {
        items.push_many({Item{"ok", 1}, Item{"", 1}});
    } catch (const Error &e) {
        CHECK(e.message().rfind("item 1:", 0) == 0);
    }
    CHECK_EQ(items.size(), 1u);
    items.push_many({Item{"x", 1}, Item{"y", 2}});
    CHECK_EQ(items.size(), 3u);
    items.clear();
    CHECK_EQ(items.size(), 0u);
}

// ---------------------------------------------------------------- ownership

static_assert(!std::is_copy_constructible_v<Items> && !std::is_copy_assignable_v<Items>);
static_assert(!std::is_copy_constructible_v<Result> && !std::is_copy_constructible_v<Budget>);
static_assert(std::is_nothrow_move_constructible_v<Items> && std::is_nothrow_move_assignable_v<Items>);
static_assert(std::is_nothrow_move_constructible_v<Scorer> && std::is_nothrow_move_constructible_v<Slicer>);
static_assert(std::is_nothrow_move_constructible_v<Placer> && std::is_nothrow_move_constructible_v<Pipeline>);
static_assert(std::is_nothrow_move_constructible_v<Result> && std::is_nothrow_move_constructible_v<Budget>);

// Views must not outlive their owners. A composite child refers to its Scorer, so it binds
// to lvalues only: from a temporary it would dangle (and hand a freed handle to the
// library) as soon as the statement that made it ends.
template <typename S, typename = void>
struct weighted_scorer_from : std::false_type {};
template <typename S>
struct weighted_scorer_from<S, std::void_t<decltype(WeightedScorer{std::declval<S>(), 1.0})>> : std::true_type {};
static_assert(weighted_scorer_from<const Scorer &>::value && weighted_scorer_from<Scorer &>::value);
static_assert(!weighted_scorer_from<Scorer>::value && !weighted_scorer_from<Scorer &&>::value);

// The accessors that return views into a Result compile on an lvalue only, not on a
// temporary that would be destroyed (and its result freed) before the view is used.
template <typename R, typename = void>
struct has_result_views : std::false_type {};
template <typename R>
struct has_result_views<R, std::void_t<decltype(std::declval<R>().indices()), decltype(std::declval<R>().scores()),
                                       decltype(std::declval<R>().overflow()), decltype(std::declval<R>().json())>>
    : std::true_type {};
static_assert(has_result_views<const Result &>::value && has_result_views<Result &>::value);
static_assert(!has_result_views<Result>::value && !has_result_views<Result &&>::value);

TEST(moves_transfer_the_handle) {
    Items items = four_messages();
    ctxpack_items *raw = items.native();
    Items moved = std::move(items);
    CHECK(!items);
    CHECK(moved.native() == raw);
    CHECK_EQ(moved.size(), 4u);

    // Move assignment frees the handle it replaces (LeakSanitizer would notice).
    Items other;
    other = std::move(moved);
    CHECK(other.native() == raw);
    CHECK(!moved);

    // A moved-from object reaches the library as NULL and gets a status, not a crash.
    CHECK_THROWS_STATUS(moved.size(), Status::NullArgument);

    Pipeline pipeline = simple_pipeline(Scorer::recency());
    Pipeline pipeline2 = std::move(pipeline);
    Budget budget(1000, 50);
    Result result = pipeline2.run(other, budget);
    Result result2 = std::move(result);
    CHECK(!result);
    CHECK_EQ(result2.indices().size(), 2u);
    CHECK_THROWS_STATUS(pipeline.run(other, budget), Status::NullArgument);

    // release() gives the handle up; the caller frees it.
    ctxpack_budget *b = budget.release();
    CHECK(!budget);
    ctxpack_budget_free(b);
}

TEST(components_are_shared_by_reference_counting) {
    Items items = four_messages();
    Budget budget(1000, 50);
    std::vector<Pipeline> pipelines;
    {
        Scorer recency = Scorer::recency();
        Scorer scaled = Scorer::scaled(recency);
        Slicer greedy = Slicer::greedy();
        Placer placer = Placer::chronological();
        // One C++ object in several pipelines and a composite: each keeps a reference.
        pipelines.emplace_back(recency, greedy, placer);
        pipelines.emplace_back(Scorer::composite({{recency, 1.0}, {scaled, 1.0}}), greedy, placer);
    }  // the caller's references are gone; the pipelines' remain
    // Recency 0, 1/3, 2/3, 1 (the composite adds its min-max scaled copy: same order).
    // Greedy by density within 50: d (40), then a (10); chronological order.
    for (const Pipeline &p : pipelines) CHECK(run_indices(p, items, budget) == (std::vector<std::size_t>{0, 3}));
}

TEST(copies_share_one_library_object_by_reference) {
    static_assert(std::is_copy_constructible_v<Pipeline> && std::is_copy_assignable_v<Scorer> &&
                      std::is_copy_constructible_v<Slicer> && std::is_copy_constructible_v<Placer>,
                  "components and pipelines are copyable");
    static_assert(!std::is_copy_constructible_v<Items> && !std::is_copy_constructible_v<CancelToken>,
                  "the other handles stay move-only");
    std::atomic<int> destroyed{0};
    // Owned by the scorer's callable: destroyed when the library destroys the callable.
    std::shared_ptr<int> probe(new int(0), [&destroyed](int *p) {
        destroyed.fetch_add(1);
        delete p;
    });
    Items items = four_messages();
    Budget budget(1000, 50);
    {
        Scorer scorer = Scorer::custom([p = std::move(probe)](ItemsView all, std::size_t i) {
            return static_cast<double>(all[i].tokens());
        });
        probe = nullptr;
        Scorer copy = scorer;  // a second reference to the same scorer
        CHECK(copy.native() == scorer.native());
        Pipeline first(copy, Slicer::greedy(), Placer::chronological());
        Pipeline second = first;
        CHECK(second.native() == first.native());
        Pipeline third = simple_pipeline(Scorer::recency());
        third = second;  // copy assignment releases the pipeline it replaced
        CHECK(third.native() == first.native());
        { Pipeline dropped = std::move(first); }  // one reference less; the copies still run
        CHECK(!first);
        CHECK(run_indices(second, items, budget) == run_indices(third, items, budget));
        Scorer assigned = Scorer::recency();
        assigned = scorer;
        CHECK(assigned.native() == scorer.native());
        CHECK_EQ(destroyed.load(), 0);
        // Copies made and destroyed on many threads at once.
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; t++) {
            threads.emplace_back([&] {
                for (int i = 0; i < 500; i++) {
                    Pipeline local = second;
                    Scorer s = scorer;
                    (void)local;
                    (void)s;
                }
            });
        }
        for (auto &t : threads) t.join();
        CHECK_EQ(destroyed.load(), 0);
    }  // the last references go: the scorer's callable is destroyed exactly once
    CHECK_EQ(destroyed.load(), 1);
}

TEST(a_cancel_token_stops_a_long_run_from_another_thread) {
    // 12 000 items against a 50 000-token target with one-token buckets: a knapsack DP of
    // 6 * 10^8 cells, seconds of work unless cancelled.
    std::vector<Item> many;
    for (int i = 0; i < 12000; i++) {
        many.push_back(Item{"item " + std::to_string(i), 5 + i * 37 % 40});
        many.back().priority = i % 7;
    }
    Items items(many);
    Budget budget(50000, 50000);
    Pipeline pipeline(Scorer::priority(), Slicer::knapsack(1), Placer::chronological());
    CancelToken token;
    CHECK(!token.is_cancelled());
    RunOptions options;
    options.cancel = &token;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        token.cancel();
    });
    auto started = std::chrono::steady_clock::now();
    CHECK_THROWS_STATUS(pipeline.run(items, budget, options), Status::Cancelled);
    auto elapsed = std::chrono::steady_clock::now() - started;
    canceller.join();
    CHECK(token.is_cancelled());
    CHECK(elapsed < std::chrono::milliseconds(1050));
    // A token never cancelled changes nothing.
    CancelToken fresh;
    RunOptions with_fresh;
    with_fresh.cancel = &fresh;
    Items four = four_messages();
    Budget small(1000, 50);
    Pipeline recent = simple_pipeline(Scorer::recency());
    Result with_token = recent.run(four, small, with_fresh);
    CHECK(with_token.indices().size() == 2u);
    CHECK(run_indices(recent, four, small) ==
          std::vector<std::size_t>(with_token.indices().begin(), with_token.indices().end()));
}

TEST(result_outlives_pipeline_and_items) {
    std::optional<Result> result;
    {
        Items items = four_messages();
        Pipeline pipeline = simple_pipeline(Scorer::recency());
        result = pipeline.run(items, Budget(1000, 1000), {TraceDetail::Item});
    }
    CHECK_EQ(result->indices().size(), 4u);
    CHECK(result->json().find("\"content\"") != std::string_view::npos ||
          result->json().find("\"included\"") != std::string_view::npos);
}

// ---------------------------------------------------------------- built-in components

TEST(built_in_scorers) {
    Item a = dated("a", 10, 0, "SystemPrompt"), b = dated("b", 10, 1, "Document");
    a.priority = 1;
    b.priority = 5;
    a.tags = {"x", "urgent"};
    b.tags = {"x"};
    a.metadata = {{"cupel:trust", "0.25"}, {"team", "red"}};
    a.future_relevance_hint = 2.0;  // clamped to 1
    b.future_relevance_hint = 0.3;
    Items items({a, b});
    auto near = [](double x, double y) { return std::fabs(x - y) < 1e-9; };
    auto scores = [&](const Scorer &s) { return s.score(items); };

    CHECK(scores(Scorer::recency()) == (std::vector<double>{0.0, 1.0}));
    CHECK(scores(Scorer::priority()) == (std::vector<double>{0.0, 1.0}));
    CHECK(scores(Scorer::kind()) == (std::vector<double>{1.0, 0.4}));
    CHECK(scores(Scorer::kind({{"document", 0.9}})) == (std::vector<double>{0.0, 0.9}));
    CHECK(scores(Scorer::tag({{"urgent", 1.0}})) == (std::vector<double>{1.0, 0.0}));
    CHECK(scores(Scorer::frequency()) == (std::vector<double>{1.0, 1.0}));
    CHECK(scores(Scorer::reflexive()) == (std::vector<double>{1.0, 0.3}));
    CHECK(scores(Scorer::metadata_trust()) == (std::vector<double>{0.25, 0.5}));
    CHECK(scores(Scorer::metadata_key("team", "red", 2.0)) == (std::vector<double>{2.0, 1.0}));
    CHECK(scores(Scorer::scaled(Scorer::reflexive())) == (std::vector<double>{1.0, 0.0}));

    Scorer recency = Scorer::recency(), kind = Scorer::kind();
    std::vector<double> composite = scores(Scorer::composite({{recency, 3.0}, {kind, 1.0}}));
    CHECK(near(composite[0], 0.25) && near(composite[1], 0.85));

    // Decay against a fixed clock: b is one half-life old, a two.
    DecayConfig exponential = DecayConfig::exponential(std::chrono::minutes(1));
    exponential.fixed_now_ns = kJan2024 + 2 * kMinute;
    std::vector<double> decay = scores(Scorer::decay(exponential));
    CHECK(near(decay[0], 0.25) && near(decay[1], 0.5));
    DecayConfig window = DecayConfig::window(std::chrono::seconds(90));
    window.fixed_now_ns = kJan2024 + 2 * kMinute;
    CHECK(scores(Scorer::decay(window)) == (std::vector<double>{0.0, 1.0}));
    DecayConfig step = DecayConfig::step({{std::chrono::seconds(90), 0.9}, {std::chrono::hours(1), 0.2}});
    step.fixed_now_ns = kJan2024 + 2 * kMinute;
    step.null_timestamp_score = 0.0;
    CHECK(scores(Scorer::decay(step)) == (std::vector<double>{0.2, 0.9}));
    CHECK_THROWS_STATUS(Scorer::decay(DecayConfig::exponential(std::chrono::nanoseconds(0))), Status::ScorerConfig);
    CHECK_THROWS_STATUS(Scorer::composite({}), Status::ScorerConfig);
}

TEST(built_in_slicers_and_placers) {
    // Scores 0.9, 0.7, 0.5, 0.3 by reflexive hint; tokens 40 each; kinds alternate.
    std::vector<Item> list;
    const char *names[] = {"t1", "m1", "t2", "m2"};
    for (int i = 0; i < 4; i++) {
        Item item{names[i], 40, i % 2 == 0 ? "tool" : "Message"};
        item.future_relevance_hint = 0.9 - 0.2 * i;
        list.push_back(item);
    }
    Items items(list);
    Budget budget(100, 100);
    std::vector<double> scores = Scorer::reflexive().score(items);

    auto sorted = [](std::vector<std::size_t> v) {
        std::sort(v.begin(), v.end());
        return v;
    };
    // Two of the four 40-token items fit in 100: the best two, t1 and m1.
    CHECK(sorted(Slicer::greedy().slice(items, scores, budget).selected) == (std::vector<std::size_t>{0, 1}));
    // Knapsack buckets of 10 tokens (the default 100 would make every item one full bucket).
    CHECK(sorted(Slicer::knapsack(10).slice(items, scores, budget).selected) == (std::vector<std::size_t>{0, 1}));
    // Message requires 50 and gets 25 more of the unassigned 50 by token mass: room for
    // m1 only; tool gets the other 25, less than one item.
    SliceOutcome quota = Slicer::quota({{"Message", 50.0, 100.0}}, Slicer::greedy()).slice(items, scores, budget);
    CHECK(quota.selected == (std::vector<std::size_t>{1}));
    // t1 is committed for the requirement, the greedy inner slicer takes the other three
    // within 200, and the cap of one tool removes t2 again. No Memory item exists.
    SliceOutcome counted = Slicer::count_quota({{"tool", 1, 1}, {"Memory", 1, 1}}, Slicer::greedy())
                               .slice(items, scores, Budget(200, 200));
    CHECK(sorted(counted.selected) == (std::vector<std::size_t>{0, 1, 3}));
    CHECK(counted.cap_excluded == (std::vector<std::size_t>{2}));
    REQUIRE(counted.shortfalls.size() == 1);
    CHECK(counted.shortfalls[0].kind == "Memory");
    CHECK(counted.shortfalls[0].required_count == 1 && counted.shortfalls[0].satisfied_count == 0);
    SliceOutcome ccks = Slicer::count_constrained_knapsack({{"tool", 2, 2}}, 10).slice(items, scores, budget);
    CHECK(sorted(ccks.selected) == (std::vector<std::size_t>{0, 2}));  // both tools required
    CHECK_THROWS_STATUS(Slicer::count_quota({{"tool", 1, 1}}, Slicer::knapsack()), Status::SlicerConfig);

    std::vector<std::size_t> chronological = Placer::chronological().place(items, scores);
    CHECK(chronological == (std::vector<std::size_t>{0, 1, 2, 3}));  // no timestamps: input order
    std::vector<std::size_t> u = Placer::u_shaped().place(items, scores);
    CHECK(u.front() == 0 && u.back() == 1);  // the two best at the edges
}

TEST(budget_with_reserved_slots_and_margin) {
    Budget budget(1000, 500, 100, {{"Memory", 50}}, 10.0);
    CHECK(budget);
    CHECK_THROWS_STATUS(Budget(1000, 500, 0, {{"Memory", 1}, {"memory", 2}}), Status::InvalidBudget);
    CHECK_THROWS_STATUS(Budget(1000, 500, 0, {}, 101.0), Status::InvalidBudget);
}

// ---------------------------------------------------------------- custom components

TEST(custom_scorer_lambda_sees_every_field) {
    std::atomic<int> alive{0};
    Item rich = dated("rich", 7, 5, "Document");
    rich.source = "Web";
    rich.priority = 3;
    rich.tags = {"t1", "t2"};
    rich.metadata = {{"id", "42"}, {"cupel:trust", "0.9"}};
    rich.future_relevance_hint = 0.4;
    rich.original_tokens = 70;
    Items items({rich, Item{"plain", 1}});
    std::vector<std::string> seen;
    {
        Scorer scorer = Scorer::custom([tracker = Tracker(&alive), &seen](ItemsView all, std::size_t i) {
            ItemView v = all[i];
            if (v.content() == "rich") {
                CHECK(v.tokens() == 7 && v.kind() == "Document" && v.source() == "Web");
                CHECK(v.priority() == 3 && v.timestamp_ns() == kJan2024 + 5 * kMinute);
                CHECK(v.tags() == (std::vector<std::string_view>{"t1", "t2"}));
                CHECK(v.metadata("id") == std::string_view("42") && !v.metadata("missing"));
                CHECK(v.future_relevance_hint() == 0.4 && v.original_tokens() == 70 && !v.pinned());
            } else {
                CHECK(v.kind() == "Message" && v.source() == "Chat");  // the defaults
                CHECK(!v.priority() && !v.timestamp_ns() && v.tag_count() == 0);
            }
            seen.emplace_back(v.content());
            return static_cast<double>(v.tokens());
        });
        CHECK_EQ(alive.load(), 1);  // one copy, owned by the component
        Pipeline pipeline = simple_pipeline(scorer);
        Scorer gone = std::move(scorer);
        { Scorer drop = std::move(gone); }  // our reference is gone; the pipeline's is not
        CHECK_EQ(alive.load(), 1);
        Result result = pipeline.run(items, Budget(100, 100));
        CHECK(result.scores().to_vector() == (std::vector<double>{7.0, 1.0}));
    }
    CHECK_EQ(alive.load(), 0);  // destroyed with the pipeline, exactly once
    CHECK(seen == (std::vector<std::string>{"rich", "plain"}));
}

TEST(custom_batch_scorer_lambda) {
    Items items = four_messages();
    Scorer big = Scorer::custom_batch([](ItemsView all, Span<double> out) {
        CHECK(out.size() == all.size());
        for (std::size_t i = 0; i < all.size(); i++) {
            CHECK(std::isnan(out[i]));  // pre-filled with NaN
            out[i] = all[i].tokens() >= 30 ? 1.0 : 0.0;
        }
    });
    // c (30) and d (40) score 1 and fill the 70 tokens exactly.
    Result result = simple_pipeline(big).run(items, Budget(1000, 70));
    CHECK(result.indices().to_vector() == (std::vector<std::size_t>{2, 3}));
}

TEST(throwing_scorer_fails_the_run_with_its_message) {
    Items items = four_messages();
    Budget budget(1000, 1000);
    Scorer throwing = Scorer::custom([](ItemsView all, std::size_t i) -> double {
        if (all[i].content() == "c") throw std::runtime_error("cannot score 'c'");
        return 0.5;
    });
    Pipeline pipeline = simple_pipeline(throwing);
    try {
        pipeline.run(items, budget);
        REQUIRE(false);
    } catch (const Error &e) {
        CHECK(e.status() == Status::Callback);
        CHECK(e.message().find("cannot score 'c'") != std::string_view::npos);
    }
    // Not a std::exception: still caught at the boundary.
    Scorer odd = Scorer::custom_batch([](ItemsView, Span<double>) { throw 42; });
    try {
        simple_pipeline(odd).run(items, budget);
        REQUIRE(false);
    } catch (const Error &e) {
        CHECK(e.status() == Status::Callback);
        CHECK(e.message().find("not a std::exception") != std::string_view::npos);
    }
    // The pipeline stays usable after a failed run.
    CHECK_THROWS_STATUS(pipeline.run(items, budget), Status::Callback);
    CHECK_THROWS_STATUS(Scorer::custom(nullptr), Status::NullArgument);
}

TEST(custom_placer_lambda) {
    Items items = four_messages();
    std::atomic<int> alive{0};
    {
        // Shortest content first, then by tokens descending.
        Placer reverse = Placer::custom([tracker = Tracker(&alive)](ItemsView all, Span<const double> scores) {
            CHECK(scores.size() == all.size());
            std::vector<std::size_t> order(all.size());
            for (std::size_t i = 0; i < order.size(); i++) order[i] = i;
            std::sort(order.begin(), order.end(),
                      [&](std::size_t x, std::size_t y) { return all[x].tokens() > all[y].tokens(); });
            return order;
        });
        Pipeline pipeline(Scorer::recency(), Slicer::greedy(), reverse);
        Result result = pipeline.run(items, Budget(1000, 1000));
        CHECK(result.indices().to_vector() == (std::vector<std::size_t>{3, 2, 1, 0}));
        const std::vector<double> scores = {0.1, 0.2, 0.3, 0.4};
        CHECK(reverse.place(items, scores) == (std::vector<std::size_t>{3, 2, 1, 0}));
    }
    CHECK_EQ(alive.load(), 0);

    // A placer result that is not a full permutation: caught before it reaches the buffer.
    Placer short_one = Placer::custom([](ItemsView, Span<const double>) { return std::vector<std::size_t>{0}; });
    try {
        Pipeline(Scorer::recency(), Slicer::greedy(), short_one).run(items, Budget(1000, 1000));
        REQUIRE(false);
    } catch (const Error &e) {
        CHECK(e.status() == Status::Callback);
        CHECK(e.message().find("returned 1 positions for 4 items") != std::string_view::npos);
    }
    // Duplicates are the library's to reject.
    Placer dupes = Placer::custom([](ItemsView all, Span<const double>) {
        return std::vector<std::size_t>(all.size(), 0);
    });
    CHECK_THROWS_STATUS(Pipeline(Scorer::recency(), Slicer::greedy(), dupes).run(items, Budget(1000, 1000)),
                        Status::Callback);
}

TEST(custom_slicer_lambda) {
    Items items = four_messages();
    int64_t seen_target = -1;
    // Takes the best-scored items while they fit (items arrive sorted by score).
    Slicer first_fit = Slicer::custom([&](ItemsView sorted, Span<const double> scores, int64_t target, int64_t) {
        seen_target = target;
        CHECK(std::is_sorted(scores.begin(), scores.end(), std::greater<double>()));
        std::vector<std::size_t> chosen;
        int64_t used = 0;
        for (std::size_t i = 0; i < sorted.size(); i++) {
            if (used + sorted[i].tokens() <= target) {
                chosen.push_back(i);
                used += sorted[i].tokens();
            }
        }
        return chosen;
    });
    Result result = Pipeline(Scorer::recency(), first_fit, Placer::chronological()).run(items, Budget(1000, 75));
    CHECK_EQ(seen_target, INT64_C(75));
    // By recency: d (40), c (30) fit in 75; b (20) and a (10) would not.
    CHECK(result.indices().to_vector() == (std::vector<std::size_t>{2, 3}));
}

// ---------------------------------------------------------------- item groups

// A tool call and its result (group "c1" when `grouped`) and two messages, scored by their
// hints: alone, the call is the densest item and its result the least dense.
Items tool_chat(bool grouped) {
    auto hinted = [&](std::string content, int64_t tokens, double hint, bool in_group) {
        Item item{std::move(content), tokens};
        item.future_relevance_hint = hint;
        if (grouped && in_group) item.group = "c1";
        return item;
    };
    return Items({hinted("call get_weather(Oslo)", 10, 0.9, true), hinted("result: 4 C, rain", 50, 0.1, true),
                  hinted("message A", 20, 0.5, false), hinted("message B", 20, 0.4, false)});
}

bool has(const std::vector<std::size_t> &v, std::size_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(groups_all_or_nothing_with_their_report) {
    Pipeline p = simple_pipeline(Scorer::reflexive());
    std::vector<std::size_t> plain = run_indices(p, tool_chat(false), Budget(100, 60));
    CHECK(has(plain, 0) && !has(plain, 1));  // the split that groups prevent
    Result r = p.run(tool_chat(true), Budget(100, 60), {TraceDetail::Item});
    std::vector<std::size_t> grouped = r.indices().to_vector();
    CHECK(!has(grouped, 0) && !has(grouped, 1) && has(grouped, 2) && has(grouped, 3));

    std::vector<ExcludedEntry> excluded = r.excluded();
    REQUIRE(excluded.size() == 2);
    const bool first_is_group = excluded[0].reason == ExclusionReason::GroupExcluded;
    const ExcludedEntry &lead = excluded[first_is_group ? 1 : 0], &other = excluded[first_is_group ? 0 : 1];
    CHECK(lead.reason == ExclusionReason::BudgetExceeded);
    CHECK(other.reason == ExclusionReason::GroupExcluded && other.name == "GroupExcluded");
    CHECK(other.group == "c1" && other.member_index == lead.index && other.member_reason == "BudgetExceeded");
    CHECK(other.member_content == (lead.index == 0 ? "call get_weather(Oslo)" : "result: 4 C, rain"));

    CHECK_EQ(r.summary().group_count, 1u);
    std::vector<GroupEntry> groups = r.groups();
    REQUIRE(groups.size() == 1);
    const GroupEntry &g = groups[0];
    CHECK(g.key == "c1" && g.members == (std::vector<std::size_t>{0, 1}));
    CHECK_EQ(g.tokens, INT64_C(60));
    CHECK(g.decision == GroupDecision::Excluded && g.stage == PipelineStage::Slice);
    CHECK_EQ(g.member_index, lead.index);
    CHECK(g.value.has_value() && !g.pinned_by && !g.partial_selection);
    CHECK(r.json().find("\"groups\":[{\"key\":\"c1\",\"members\":[0,1],\"tokens\":60") != std::string_view::npos);

    // With room for all, the members are adjacent and in input order.
    std::vector<std::size_t> all = run_indices(p, tool_chat(true), Budget(100, 100));
    auto at = std::find(all.begin(), all.end(), std::size_t{0});
    CHECK(all.size() == 4 && at != all.end() && at + 1 != all.end() && *(at + 1) == 1);
}

TEST(group_key_must_be_utf8) {
    Item bad{"x", 1};
    bad.group = "tool\xff";
    CHECK_THROWS_STATUS(Items({Item{"ok", 1}, bad}), Status::InvalidUtf8);
}

TEST(group_value_and_pinned_first_options) {
    // Two members worth 0.5 each against one item worth 0.8, 20 tokens of room.
    auto item = [](std::string content, int64_t tokens, double hint, std::string group) {
        Item i{std::move(content), tokens};
        i.future_relevance_hint = hint;
        i.group = std::move(group);
        return i;
    };
    Items items({item("member one", 10, 0.5, "g"), item("member two", 10, 0.5, "g"), item("single", 20, 0.8, "")});
    PipelineOptions sum, max;
    max.group_value = GroupValue::Max;
    Slicer knapsack = Slicer::knapsack(1);
    CHECK(run_indices(Pipeline(Scorer::reflexive(), knapsack, Placer::chronological(), sum), items, Budget(20, 20)) ==
          (std::vector<std::size_t>{0, 1}));
    CHECK(run_indices(Pipeline(Scorer::reflexive(), knapsack, Placer::chronological(), max), items, Budget(20, 20)) ==
          (std::vector<std::size_t>{2}));
    const double scores[] = {0.5, 0.5, 0.8};
    Budget b(20, 20);
    CHECK(knapsack.slice(items, Span<const double>(scores, 3), b, GroupValue::Max).selected ==
          (std::vector<std::size_t>{2}));
    CHECK(knapsack.slice(items, Span<const double>(scores, 3), b).selected.size() == 2);
    max.group_value = static_cast<GroupValue>(9);
    CHECK_THROWS_STATUS(Pipeline(Scorer::reflexive(), knapsack, Placer::chronological(), max), Status::InvalidArgument);

    // A pinned, undated system prompt: last by default, first with pinned_first.
    Item system{"You are a helpful assistant.", 5};
    system.pinned = true;
    Items chat({system, dated("hi", 2, 1), dated("hello!", 2, 2)});
    PipelineOptions first;
    first.pinned_first = true;
    CHECK(run_indices(simple_pipeline(Scorer::recency()), chat, Budget(100, 100)) ==
          (std::vector<std::size_t>{1, 2, 0}));
    CHECK(run_indices(simple_pipeline(Scorer::recency(), first), chat, Budget(100, 100)) ==
          (std::vector<std::size_t>{0, 1, 2}));

    // Placing alone: members dated minutes 1 and 3 go together at the earliest.
    Items dated_group({dated("early", 1, 1), dated("between", 1, 2), dated("late", 1, 3)});
    Item early = dated("early", 1, 1), late = dated("late", 1, 3);
    early.group = late.group = "g";
    Items grouped_dates({early, dated("between", 1, 2), late});
    CHECK(Placer::chronological().place(grouped_dates, Span<const double>(scores, 3), GroupValue::Mean) ==
          (std::vector<std::size_t>{0, 2, 1}));
    CHECK(Placer::chronological().place(dated_group, Span<const double>(scores, 3)) ==
          (std::vector<std::size_t>{0, 1, 2}));
}

// Items counted by the library; the counts are the ones OpenAI documents for cl100k_base.
TEST(items_counted_by_an_encoding) {
    Item hello{"hello world", 0}, tiktoken{"tiktoken is great!", 0};
    hello.encoding = "cl100k_base";
    tiktoken.encoding = "CL100K_BASE";
    Result r = simple_pipeline(Scorer::recency()).run(Items({hello, tiktoken}), Budget(100, 0), {TraceDetail::Stage});
    CHECK_EQ(r.summary().total_tokens_considered, INT64_C(8));
    for (const ExcludedEntry &e : r.excluded()) {
        CHECK(e.reason == ExclusionReason::BudgetExceeded);
        CHECK_EQ(e.item_tokens, e.index == 0 ? INT64_C(2) : INT64_C(6));
    }
    Item unknown{"x", 0};
    unknown.encoding = "p50k_base";
    CHECK_THROWS_STATUS(Items({unknown}), Status::InvalidArgument);
    Item both{"x", 3};
    both.encoding = "o200k_base";
    CHECK_THROWS_STATUS(Items({both}), Status::InvalidArgument);
}

// ---------------------------------------------------------------- results and reports

TEST(result_arrays_and_report) {
    Items items = four_messages();
    Item pinned{"pinned", 5};
    pinned.pinned = true;
    items.push(pinned);
    items.push(Item{"negative", -3});
    items.push(Item{"zero", 0});
    Pipeline pipeline = simple_pipeline(Scorer::recency());
    Result result = pipeline.run(items, Budget(1000, 80), {TraceDetail::Item});

    std::vector<std::size_t> indices = result.indices().to_vector();
    CHECK(indices == (std::vector<std::size_t>{2, 3, 4, 6}));  // c, d (dated), then pinned, zero
    CHECK_EQ(result.scores().size(), indices.size());
    CHECK(result.reasons() == (std::vector<InclusionReason>{InclusionReason::Scored, InclusionReason::Scored,
                                                           InclusionReason::Pinned, InclusionReason::ZeroToken}));
    CHECK(!result.overflow());
    REQUIRE(result.has_report());

    ReportSummary summary = result.summary();
    CHECK_EQ(summary.total_candidates, 7u);
    CHECK_EQ(summary.total_tokens_considered, INT64_C(102));
    CHECK_EQ(summary.included_count, 4u);
    CHECK_EQ(summary.excluded_count, 3u);
    CHECK_EQ(summary.shortfall_count, 0u);

    std::vector<IncludedEntry> included = result.included();
    REQUIRE(included.size() == 4);
    for (std::size_t i = 0; i < included.size(); i++) CHECK_EQ(included[i].index, indices[i]);
    CHECK(included[2].score == 1.0 && included[2].reason == InclusionReason::Pinned);

    std::vector<ExcludedEntry> excluded = result.excluded();
    REQUIRE(excluded.size() == 3);
    // Score descending, ties in recording order: b (1/3), then the two zeros, the
    // negative item first (dropped at Classify, before a was left out at Slice).
    CHECK(excluded[0].index == 1 && excluded[0].reason == ExclusionReason::BudgetExceeded);
    CHECK(excluded[0].name == "BudgetExceeded");
    CHECK_EQ(excluded[0].item_tokens, INT64_C(20));
    CHECK_EQ(excluded[0].available_tokens, INT64_C(5));  // 80 - 5 pinned - 70 selected
    CHECK(excluded[1].index == 5 && excluded[1].reason == ExclusionReason::NegativeTokens);
    CHECK_EQ(excluded[1].tokens, INT64_C(-3));
    CHECK(excluded[1].name == "NegativeTokens");
    CHECK(excluded[2].index == 0 && excluded[2].reason == ExclusionReason::BudgetExceeded);

    std::vector<TraceEvent> events = result.events();
    CHECK_EQ(events.size(), summary.event_count);
    bool stage_events = false, item_events = false;
    for (const TraceEvent &e : events) {
        stage_events = stage_events || (e.stage == PipelineStage::Place && !e.item_index);
        item_events = item_events || e.item_index.has_value();
    }
    CHECK(stage_events && item_events);

    std::string_view json = result.json();
    CHECK(json.front() == '{' && json.back() == '}');
    for (const char *key : {"\"included\"", "\"excluded\"", "\"BudgetExceeded\"", "\"NegativeTokens\""}) {
        CHECK(json.find(key) != std::string_view::npos);
    }
    CHECK(json.data() == result.json().data());  // built once, owned by the result

    Result untraced = pipeline.run(items, Budget(1000, 80));
    CHECK(!untraced.has_report());
    CHECK(untraced.indices().to_vector() == indices);
    CHECK_THROWS_STATUS(untraced.json(), Status::NoReport);
    CHECK_THROWS_STATUS(untraced.excluded(), Status::NoReport);
}

TEST(report_shortfalls_and_count_caps) {
    std::vector<Item> list;
    for (int i = 0; i < 3; i++) {
        Item tool{"t" + std::to_string(i), 10, "tool"};
        tool.future_relevance_hint = 0.9 - 0.1 * i;
        list.push_back(tool);
    }
    Slicer slicer = Slicer::count_quota({{"tool", 1, 2}, {"Memory", 1, 1}}, Slicer::greedy());
    Result result = Pipeline(Scorer::reflexive(), slicer, Placer::u_shaped()).run(Items(list), Budget(100, 100),
                                                                                  {TraceDetail::Stage});
    std::vector<Shortfall> shortfalls = result.shortfalls();
    REQUIRE(shortfalls.size() == 1);
    CHECK(shortfalls[0].kind == "Memory" && shortfalls[0].required_count == 1 && shortfalls[0].satisfied_count == 0);
    std::vector<ExcludedEntry> excluded = result.excluded();
    REQUIRE(excluded.size() == 1);
    CHECK(excluded[0].reason == ExclusionReason::CountCapExceeded && excluded[0].kind == "tool");
    CHECK(excluded[0].count_cap == 2 && excluded[0].count == 2);
    CHECK_THROWS_STATUS(result.shortfall(1), Status::OutOfRange);
}

TEST(overflow_event_and_callback) {
    Items items = four_messages();  // 100 tokens
    Budget budget(1000, 60);
    Pipeline proceed(Scorer::recency(), take_everything(), Placer::chronological(),
                     {true, OverflowStrategy::Proceed});
    int64_t observed = 0;
    std::vector<std::size_t> observed_items;
    RunOptions options;
    options.on_overflow = [&](int64_t over, Span<const std::size_t> merged) {
        observed = over;
        observed_items = merged.to_vector();
    };
    Result result = proceed.run(items, budget, options);
    std::optional<Overflow> overflow = result.overflow();
    REQUIRE(overflow.has_value());
    CHECK_EQ(overflow->tokens_over_budget, INT64_C(40));
    CHECK_EQ(observed, INT64_C(40));
    CHECK(overflow->items.to_vector() == observed_items);
    CHECK_EQ(observed_items.size(), 4u);

    // The overflow callback cannot fail the run: its exception is rethrown by run().
    options.on_overflow = [](int64_t, Span<const std::size_t>) { throw std::logic_error("observer failed"); };
    try {
        proceed.run(items, budget, options);
        REQUIRE(false);
    } catch (const std::logic_error &e) {
        CHECK(std::string(e.what()) == "observer failed");
    }

    Pipeline truncate(Scorer::recency(), take_everything(), Placer::chronological(),
                      {true, OverflowStrategy::Truncate});
    Result truncated = truncate.run(items, budget);
    CHECK(!truncated.overflow());
    CHECK(truncated.indices().size() < 4);
}

// ---------------------------------------------------------------- threads

TEST(one_pipeline_many_threads) {
    Items items = four_messages();
    Budget budget(1000, 70);
    std::atomic<int> calls{0};
    Scorer scorer = Scorer::custom([&calls](ItemsView all, std::size_t i) {
        calls++;
        return static_cast<double>(all[i].tokens() % 17);
    });
    Pipeline pipeline = simple_pipeline(scorer, {false, OverflowStrategy::Throw});
    const std::vector<std::size_t> expected = run_indices(pipeline, items, budget);
    std::vector<std::vector<std::size_t>> got(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < got.size(); t++) {
        threads.emplace_back([&, t] {
            for (int k = 0; k < 50; k++) got[t] = run_indices(pipeline, items, budget);
        });
    }
    for (std::thread &t : threads) t.join();
    for (const auto &g : got) CHECK(g == expected);
    CHECK_EQ(calls.load(), 4 * (1 + 4 * 50));
}

// ---------------------------------------------------------------- presets and policies

TEST(presets_and_policy_json) {
    std::vector<std::string_view> names = presets();
    REQUIRE(names.size() == 7);
    CHECK(names.front() == "Chat");
    Items items = four_messages();
    Budget budget(1000, 60);
    for (std::string_view name : names) {
        Pipeline preset = Pipeline::preset(name);
        // A preset's policy JSON builds a pipeline that selects the same items.
        Pipeline again = Pipeline::from_policy_json(preset.policy_json(true));
        CHECK(run_indices(preset, items, budget) == run_indices(again, items, budget));
    }
    CHECK_THROWS_STATUS(Pipeline::preset("no such preset"), Status::InvalidArgument);
    try {
        Pipeline::from_policy_json(R"({"scorers": [{"type": "recency", "weight": -1}]})");
        REQUIRE(false);
    } catch (const Error &e) {
        CHECK(e.status() == Status::InvalidPolicy);
        // The JSON path of the bad field. (The header says the message starts with it;
        // the library puts "invalid policy: " in front.)
        CHECK(e.message().find("scorers[0].weight: must be positive") != std::string_view::npos);
    }
    // A custom component has no JSON form.
    Pipeline custom = simple_pipeline(Scorer::custom([](ItemsView, std::size_t) { return 1.0; }));
    CHECK_THROWS_STATUS(custom.policy_json(), Status::InvalidPolicy);
    std::string json = simple_pipeline(Scorer::recency()).policy_json();
    CHECK(json.find("\"recency\"") != std::string::npos);
}

TEST(dry_run_always_has_a_report) {
    Items items = four_messages();
    Pipeline pipeline = simple_pipeline(Scorer::recency());
    Result dry = pipeline.dry_run(items, Budget(1000, 50));
    REQUIRE(dry.has_report());
    CHECK(dry.indices().to_vector() == run_indices(pipeline, items, Budget(1000, 50)));
    CHECK_EQ(dry.summary().included_count + dry.summary().excluded_count, 4u);
}

TEST(version_matches_header) {
    CHECK(version() == CTXPACK_VERSION_STRING);
    CHECK_EQ(version_number(), static_cast<uint32_t>(CTXPACK_VERSION_NUMBER));
}

TEST(budget_fields_by_name) {
    BudgetSpec spec;
    spec.max_tokens = 1000;
    spec.target_tokens = 500;
    spec.output_reserve = 100;
    spec.reserved_slots = {{"Memory", 50}};
    spec.estimation_safety_margin_percent = 10.0;
    Budget by_name(spec);
    CHECK(by_name.native() != nullptr);
    // Slots that can never be honoured (their sum above the target).
    spec.reserved_slots = {{"Memory", 400}, {"Tool", 200}};
    CHECK_THROWS_STATUS(Budget{spec}, Status::InvalidBudget);
}

// ------------------------------------------------------------------ item variants

namespace {

// Greedy takes the 10-token question first (density 0.05 against 0.009), leaving 40 of
// 50: the 100-token log does not fit, its 20-token summary does.
std::vector<Item> log_and_question() {
    Item log{"<100 tokens of test log>", 100};
    log.future_relevance_hint = 0.9;
    log.variants = {Variant{"3 tests fail: rounding off by one cent", 20, 0.5}};
    Item question{"why did the build fail?", 10};
    question.future_relevance_hint = 0.5;
    return {log, question};
}

}  // namespace

TEST(variants_a_long_item_is_placed_as_its_summary) {
    Items items(log_and_question());
    Budget budget(50, 50);
    Pipeline pipeline = simple_pipeline(Scorer::reflexive());
    Result r = pipeline.run(items, budget, RunOptions{TraceDetail::Stage});
    CHECK(r.indices().to_vector() == (std::vector<std::size_t>{0, 1}));
    CHECK(r.forms().to_vector() == (std::vector<std::size_t>{1, 0}));
    CHECK(r.reasons() == (std::vector<InclusionReason>{InclusionReason::Downgraded, InclusionReason::Scored}));
    IncludedEntry e = r.included(0);
    CHECK(e.reason == InclusionReason::Downgraded);
    CHECK_EQ(e.form, std::size_t{1});
    CHECK_EQ(e.full_tokens, int64_t{100});
    CHECK_EQ(e.chosen_tokens, int64_t{20});
    CHECK_EQ(e.available_tokens, int64_t{20});  // 50 - (20 + 10); the full form needs 80 more
    CHECK(e.cause == DowngradeCause::BudgetExceeded);
    CHECK(r.included(1).cause == DowngradeCause::None && r.included(1).form == 0);
    CHECK(r.json().find("\"reason\":\"Downgraded\",\"form\":1,\"full_tokens\":100") != std::string_view::npos);

    PipelineOptions off;
    off.use_variants = false;
    Result dropped = simple_pipeline(Scorer::reflexive(), off).run(items, budget);
    CHECK(dropped.indices().to_vector() == (std::vector<std::size_t>{1}));
    CHECK(dropped.forms().to_vector() == (std::vector<std::size_t>{0}));
}

TEST(variants_not_cheaper_than_the_item_are_pruned) {
    Item item{"the item", 100};
    item.future_relevance_hint = 0.5;
    item.variants = {Variant{"longer", 150, 0.9}, Variant{"summary", 20, 0.5}, Variant{"same length, less", 100, 0.7}};
    Result r = simple_pipeline(Scorer::reflexive()).run(Items({item}), Budget(500, 500), RunOptions{TraceDetail::Stage});
    std::vector<PrunedForm> pruned = r.pruned_forms();
    REQUIRE(pruned.size() == 2);
    CHECK(pruned[0].index == 0 && pruned[0].form == 1 && pruned[0].dominated_by == 0);
    CHECK(pruned[1].index == 0 && pruned[1].form == 3 && pruned[1].dominated_by == 0);
    CHECK_THROWS_STATUS(r.pruned_form(2), Status::OutOfRange);
    CHECK(r.forms().to_vector() == (std::vector<std::size_t>{0}));
}

TEST(variants_invalid_ones_are_rejected) {
    struct Row {
        Variant variant;
        Status status;
        const char *message;
    };
    const Row rows[] = {
        {Variant{"stub", 2, std::nan("")}, Status::InvalidArgument, "form 1: quality must be in (0, 1], got NaN"},
        {Variant{"stub", 2, 0.0}, Status::InvalidArgument, "quality must be in (0, 1], got 0"},
        {Variant{"", 2, 0.5}, Status::InvalidArgument, "form 1: content must not be empty"},
        {Variant{"stub", -1, 0.5}, Status::InvalidArgument, "tokens must be >= 0, got -1"},
        {Variant{"ok\xff", 2, 0.5}, Status::InvalidUtf8, "variants[0].content is not valid UTF-8"},
    };
    for (const Row &row : rows) {
        Item log{"log", 100};
        log.variants = {row.variant};
        Items items;
        try {
            items.push_many({Item{"fine", 5}, log});
            check::fail(__FILE__, __LINE__, std::string(row.message) + ": accepted");
        } catch (const Error &e) {
            CHECK(e.status() == row.status);
            CHECK(std::string(e.what()).find(row.message) != std::string::npos);
            CHECK(std::string(e.what()).find("item 1:") != std::string::npos);
        }
        CHECK_EQ(items.size(), std::size_t{0});
    }
}

// ------------------------------------------------------------------ prefix states

// n messages of 20 tokens, one a minute.
Items messages(int n, const std::string &edit_first = "") {
    std::vector<Item> v;
    for (int i = 0; i < n; i++) {
        v.push_back(dated("message " + std::to_string(i) + (i == 0 ? edit_first : ""), 20, i));
    }
    return Items(v);
}

TEST(prefix_hold_keeps_the_window_and_appends) {
    Pipeline p = simple_pipeline(Scorer::recency());
    Budget budget(100, 100);
    PrefixRun t1 = p.run_prefix(messages(4), budget);  // Hold, no previous: anchors
    CHECK(t1.reuse.outcome == TurnOutcome::Anchored);
    CHECK_EQ(t1.reuse.turn, 1u);
    CHECK(!t1.reuse.difference);
    // Four messages of 20 tokens fit the low watermark (80 % of 100).
    CHECK_EQ(t1.state.turn(), 1u);
    CHECK_EQ(t1.state.entries(), 4u);
    CHECK_EQ(t1.state.tokens(), 80);
    PrefixRun t2 = p.run_prefix(messages(5), budget, {}, &t1.state);
    CHECK(t2.reuse.outcome == TurnOutcome::Held);
    CHECK_EQ(t2.reuse.kept_entries, 4u);
    CHECK_EQ(t2.reuse.kept_tokens, 80);
    std::vector<std::size_t> expected = t1.result.indices().to_vector();
    expected.push_back(4);
    CHECK(t2.result.indices().to_vector() == expected);
    CHECK(t2.reuse.json.find("\"outcome\":\"held\"") != std::string::npos);
}

TEST(prefix_measure_an_edit_and_a_cache_rule) {
    Pipeline p = simple_pipeline(Scorer::recency());
    Budget budget(100, 60);
    PrefixOptions o;
    o.mode = PrefixMode::Measure;
    o.cache_rule = "blocks:32";
    PrefixRun t1 = p.run_prefix(messages(6), budget, o);
    PrefixRun t2 = p.run_prefix(messages(6), budget, o, &t1.state);
    // The three newest messages (60 tokens) again: one whole 32-token block.
    CHECK_EQ(t2.reuse.kept_entries, 3u);
    CHECK_EQ(t2.reuse.cached_tokens, 32);
    Budget roomy(1000, 1000);
    PrefixRun t3 = p.run_prefix(messages(4), roomy, o);
    PrefixRun t4 = p.run_prefix(messages(4, "!"), roomy, o, &t3.state);
    REQUIRE(t4.reuse.difference.has_value());
    CHECK(t4.reuse.difference->reason == DifferenceReason::Edited);
    CHECK_EQ(t4.reuse.difference->index, 0u);
    CHECK(t4.reuse.difference->item == std::optional<std::size_t>(0));
}

TEST(prefix_state_forms_and_errors) {
    Pipeline p = simple_pipeline(Scorer::recency());
    Budget budget(100, 100);
    PrefixOptions keyed;
    keyed.conversation = std::string("conv\0one", 8);
    PrefixRun run = p.run_prefix(messages(3), budget, keyed);
    std::vector<uint8_t> bytes = run.state.bytes();
    REQUIRE(bytes.size() > 4);
    CHECK(std::memcmp(bytes.data(), "CXPS", 4) == 0);
    CHECK(PrefixState::from_bytes(bytes).bytes() == bytes);
    CHECK(PrefixState::from_json(run.state.json()).bytes() == bytes);
    std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 1);
    CHECK_THROWS_STATUS(PrefixState::from_bytes(cut), Status::InvalidState);
    std::vector<uint8_t> flipped = bytes;
    flipped[flipped.size() - 5] ^= 1;
    CHECK_THROWS_STATUS(PrefixState::from_bytes(flipped), Status::InvalidState);
    CHECK_THROWS_STATUS(PrefixState::from_json("{}"), Status::InvalidState);
    PrefixOptions other = keyed;
    other.conversation = std::string("conv\0two", 8);
    CHECK_THROWS_STATUS(p.run_prefix(messages(3), budget, other, &run.state), Status::InvalidState);
    PrefixOptions bad;
    bad.cache_rule = "gemini";
    CHECK_THROWS_STATUS(p.run_prefix(messages(3), budget, bad), Status::InvalidArgument);
    bad = {};
    bad.max_value_loss = 1.5;
    CHECK_THROWS_STATUS(p.run_prefix(messages(3), budget, bad), Status::InvalidArgument);
}

// ---------------------------------------------------------------- analytics and simulation

namespace {

// a (Message, dated) 10, b (Document, dated) 20, c (document, undated) 30,
// d (ToolOutput, dated) 40 tokens.
Items four_kinds() {
    Item c{"c", 30, "document"};
    return Items({dated("a", 10, 0, "Message"), dated("b", 20, 1, "Document"), c, dated("d", 40, 3, "ToolOutput")});
}

// Every item scores 1: greedy takes them by density, which is list order here.
Pipeline equal_scores(const Slicer &slicer = Slicer::greedy()) {
    return Pipeline(Scorer::custom([](ItemsView, std::size_t) { return 1.0; }), slicer, Placer::chronological());
}

// The selection of `r` as a set (a temporary Result lives until the call returns).
std::vector<std::size_t> selection_set(const Result &r) {
    std::vector<std::size_t> v = r.indices().to_vector();
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST(analytics_of_a_traced_result) {
    Items items = four_kinds();
    // Within a target of 60, greedy takes a, b and c (60 tokens); d (40) no longer fits.
    Result r = equal_scores().dry_run(items, Budget(120, 60));
    REQUIRE(selection_set(r) == (std::vector<std::size_t>{0, 1, 2}));
    CHECK_EQ(r.budget_utilization(), 0.5);   // 60 of max 120
    CHECK_EQ(r.kind_diversity(), std::size_t{2});  // Message, Document (= document)
    CHECK(std::fabs(r.timestamp_coverage() - 2.0 / 3.0) < 1e-12);  // c has no timestamp
    CHECK(r.quota_utilization().empty());    // greedy has no quotas

    Analytics a = r.analytics();
    CHECK_EQ(a.budget_utilization, 0.5);
    CHECK_EQ(a.kind_diversity, std::size_t{2});
    CHECK_EQ(a.timestamp_coverage, r.timestamp_coverage());
    CHECK(a.quota_utilization.empty());

    // Nothing included: every helper is 0.
    Result none = Pipeline(Scorer::recency(), Slicer::greedy(), Placer::chronological())
                      .dry_run(Items({Item{"too big", 500}}), Budget(100, 100));
    CHECK(none.indices().empty());
    CHECK_EQ(none.budget_utilization(), 0.0);
    CHECK_EQ(none.kind_diversity(), std::size_t{0});
    CHECK_EQ(none.timestamp_coverage(), 0.0);
}

TEST(analytics_need_a_report) {
    Items items = four_kinds();
    Result untraced = equal_scores().run(items, Budget(120, 60));
    CHECK(!untraced.has_report());
    CHECK_THROWS_STATUS(untraced.budget_utilization(), Status::NoReport);
    CHECK_THROWS_STATUS(untraced.kind_diversity(), Status::NoReport);
    CHECK_THROWS_STATUS(untraced.timestamp_coverage(), Status::NoReport);
    CHECK_THROWS_STATUS(untraced.quota_utilization(), Status::NoReport);
    CHECK_THROWS_STATUS(untraced.analytics(), Status::NoReport);
    // A run traced at stage detail has a report, so the helpers answer.
    Result traced = equal_scores().run(items, Budget(120, 60), RunOptions{TraceDetail::Stage});
    CHECK_EQ(traced.budget_utilization(), 0.5);
}

TEST(quota_utilization_of_count_and_percentage_quotas) {
    Items items = four_kinds();
    // At most one Document (b and c are both Documents): greedy keeps b, the denser.
    Result counted = equal_scores(Slicer::count_quota({{"Document", 1, 1}}, Slicer::greedy()))
                         .dry_run(items, Budget(1000, 60));
    std::vector<KindQuotaUtilization> q = counted.quota_utilization();
    REQUIRE(q.size() == 1u);
    CHECK_EQ(q[0].kind, std::string("Document"));
    CHECK(q[0].mode == QuotaMode::Count);
    CHECK_EQ(q[0].require, 1.0);
    CHECK_EQ(q[0].cap, 1.0);
    CHECK_EQ(q[0].actual, 1.0);
    CHECK_EQ(q[0].utilization, 1.0);

    // Documents capped at 50% of the target, messages at 40%, sorted by kind.
    Result shared = equal_scores(Slicer::quota({{"Message", 0, 40}, {"Document", 10, 50}}, Slicer::greedy()))
                        .dry_run(items, Budget(1000, 60));
    q = shared.quota_utilization();
    REQUIRE(q.size() == 2u);
    CHECK_EQ(q[0].kind, std::string("Document"));
    CHECK_EQ(q[1].kind, std::string("Message"));
    // The entries agree with the selection: the included tokens of each kind over the
    // target (60), in percent, and that over the cap.
    const double tokens[] = {10, 20, 30, 40};
    const char *kinds[] = {"Message", "Document", "Document", "ToolOutput"};
    double doc_tokens = 0, msg_tokens = 0;
    for (std::size_t i : shared.indices()) {
        if (std::string_view(kinds[i]) == "Document") doc_tokens += tokens[i];
        if (std::string_view(kinds[i]) == "Message") msg_tokens += tokens[i];
    }
    CHECK(q[0].mode == QuotaMode::Percentage && q[0].require == 10.0 && q[0].cap == 50.0);
    CHECK(std::fabs(q[0].actual - doc_tokens / 60.0 * 100.0) < 1e-9);
    CHECK(std::fabs(q[0].utilization - std::min(1.0, q[0].actual / 50.0)) < 1e-9);
    CHECK(std::fabs(q[1].actual - msg_tokens / 60.0 * 100.0) < 1e-9);
    CHECK(doc_tokens > 0 && doc_tokens <= 30);  // within the cap's 30 tokens
}

TEST(marginal_items_drop_out_of_a_smaller_budget) {
    Items items = four_kinds();
    Pipeline pipeline = equal_scores();
    Budget budget(1000, 60);
    // a, b, c fit 60; within 60 - 30 only a and b do.
    CHECK(pipeline.marginal_items(items, budget, 30) == (std::vector<std::size_t>{2}));
    // Within 60 - 45 only a.
    CHECK(pipeline.marginal_items(items, budget, 45) == (std::vector<std::size_t>{1, 2}));
    CHECK(pipeline.marginal_items(items, budget, 0).empty());
    CHECK(pipeline.marginal_items(items, budget, -100).empty());  // a larger budget loses nothing
    // A percentage quota's inclusion is not monotonic in the budget.
    Pipeline quota = equal_scores(Slicer::quota({{"Document", 0, 50}}, Slicer::greedy()));
    CHECK_THROWS_STATUS(quota.marginal_items(items, budget, 10), Status::PipelineConfig);
    CHECK_THROWS_STATUS(pipeline.marginal_items(items, budget, 100), Status::InvalidBudget);
}

TEST(min_budget_for_an_item) {
    Items items = four_kinds();
    Pipeline pipeline = equal_scores();
    // Greedy takes a, b and c first whenever they fit, so d (40) needs 10+20+30+40.
    CHECK(pipeline.min_budget_for(items, 3, 1000) == std::optional<int64_t>(100));
    CHECK(pipeline.min_budget_for(items, 3, 99) == std::nullopt);
    CHECK(pipeline.min_budget_for(items, 0, 10) == std::optional<int64_t>(10));
    // The answer is the edge: d is out at 99 and in at 100.
    CHECK(selection_set(pipeline.run(items, Budget(99, 99))) == (std::vector<std::size_t>{0, 1, 2}));
    CHECK(selection_set(pipeline.run(items, Budget(100, 100))) == (std::vector<std::size_t>{0, 1, 2, 3}));

    CHECK_THROWS_STATUS(pipeline.min_budget_for(items, 4, 1000), Status::InvalidArgument);
    CHECK_THROWS_STATUS(pipeline.min_budget_for(items, 3, 39), Status::InvalidArgument);
    Pipeline counted = equal_scores(Slicer::count_quota({{"Document", 1, 1}}, Slicer::greedy()));
    CHECK_THROWS_STATUS(counted.min_budget_for(items, 3, 1000), Status::PipelineConfig);
}

// ---------------------------------------------------------------- sensitivity

static_assert(!std::is_copy_constructible_v<Sensitivity> && std::is_nothrow_move_constructible_v<Sensitivity>);
template <typename S, typename = void>
struct has_label_view : std::false_type {};
template <typename S>
struct has_label_view<S, std::void_t<decltype(std::declval<S>().label(0))>> : std::true_type {};
static_assert(has_label_view<const Sensitivity &>::value && !has_label_view<Sensitivity &&>::value);

TEST(sensitivity_lists_the_items_that_swing) {
    Items items = four_kinds();
    Budget budget(1000, 60);
    // "prefer d" scores d 10 and the rest 1: d (density 0.25) goes first, then a; b and
    // c no longer fit. "equal" takes a, b and c.
    Pipeline prefer_d(Scorer::custom([](ItemsView all, std::size_t i) { return all[i].content() == "d" ? 10.0 : 1.0; }),
                      Slicer::greedy(), Placer::chronological());
    std::optional<Result> kept;
    {
        // The variants hold their own references: a temporary pipeline is fine.
        Sensitivity s = Sensitivity::compare(items, budget, {{"equal", equal_scores()}, {"prefer d", prefer_d}});
        REQUIRE(s.variant_count() == 2u);
        CHECK(s.label(0) == "equal");
        CHECK(s.label(1) == "prefer d");
        Result equal = s.result(0);
        CHECK(equal.has_report());
        CHECK(selection_set(equal) == (std::vector<std::size_t>{0, 1, 2}));
        CHECK(selection_set(s.result(1)) == (std::vector<std::size_t>{0, 3}));

        REQUIRE(s.swing_count() == 3u);
        std::vector<Swing> swings = s.swings();
        const std::vector<ItemStatus> in_out{ItemStatus::Included, ItemStatus::Excluded};
        const std::vector<ItemStatus> out_in{ItemStatus::Excluded, ItemStatus::Included};
        CHECK(swings[0].index == 1 && swings[0].statuses == in_out);
        CHECK(swings[1].index == 2 && swings[1].statuses == in_out);
        CHECK(swings[2].index == 3 && swings[2].statuses == out_in);
        CHECK_THROWS_STATUS(s.result(2), Status::OutOfRange);
        kept.emplace(s.result(1));
    }
    // A result taken from the comparison outlives it.
    CHECK(selection_set(*kept) == (std::vector<std::size_t>{0, 3}));
    CHECK_EQ(kept->kind_diversity(), std::size_t{2});

    // Identical variants: nothing swings.
    Sensitivity same = Sensitivity::compare(items, budget, {{"one", prefer_d}, {"two", prefer_d}});
    CHECK_EQ(same.swing_count(), std::size_t{0});
    CHECK(same.swings().empty());
    CHECK_THROWS_STATUS(Sensitivity::compare(items, budget, {{"alone", prefer_d}}), Status::InvalidArgument);
    // The first failing run's error, as it is.
    CHECK_THROWS_STATUS(Sensitivity::compare(Items({Item{"pinned", 500, "", "", {}, {}, {}, {}, {}, true}}),
                                             Budget(100, 100), {{"a", prefer_d}, {"b", prefer_d}}),
                        Status::PinnedExceedsBudget);
}

// ---------------------------------------------------------------- borrowed items

// A borrowed string binds to what outlives the statement, never to a temporary string.
static_assert(std::is_constructible_v<StrRef, const std::string &> && std::is_constructible_v<StrRef, std::string &>);
static_assert(std::is_constructible_v<StrRef, std::string_view> && std::is_constructible_v<StrRef, const char *>);
static_assert(!std::is_constructible_v<StrRef, std::string> && !std::is_constructible_v<StrRef, std::string &&>);
static_assert(!std::is_convertible_v<std::string, StrRef>);

template <typename S, typename = void>
struct item_ref_from : std::false_type {};
template <typename S>
struct item_ref_from<S, std::void_t<decltype(ItemRef{std::declval<S>(), 1})>> : std::true_type {};
static_assert(item_ref_from<const std::string &>::value && item_ref_from<std::string_view>::value &&
              item_ref_from<const char *>::value);
static_assert(!item_ref_from<std::string>::value && !item_ref_from<std::string &&>::value);
template <typename S, typename = void>
struct variant_ref_from : std::false_type {};
template <typename S>
struct variant_ref_from<S, std::void_t<decltype(VariantRef{std::declval<S>(), 1, 0.5})>> : std::true_type {};
static_assert(variant_ref_from<std::string &>::value && !variant_ref_from<std::string>::value);

// A borrowed list binds to a container the caller keeps, never to a temporary one.
static_assert(std::is_constructible_v<TagsRef, const std::vector<std::string> &> &&
              std::is_constructible_v<TagsRef, std::vector<std::string_view> &> &&
              std::is_constructible_v<TagsRef, const std::array<const char *, 2> &>);
static_assert(!std::is_constructible_v<TagsRef, std::vector<std::string>> &&
              !std::is_constructible_v<TagsRef, std::vector<std::string_view> &&>);
static_assert(std::is_constructible_v<MetadataRef, const std::map<std::string, std::string> &> &&
              std::is_constructible_v<MetadataRef, std::vector<std::pair<std::string_view, std::string_view>> &>);
static_assert(!std::is_constructible_v<MetadataRef, std::map<std::string, std::string>>);
static_assert(std::is_constructible_v<VariantsRef, const std::vector<Variant> &> &&
              std::is_constructible_v<VariantsRef, const std::vector<VariantRef> &>);
static_assert(!std::is_constructible_v<VariantsRef, std::vector<Variant>>);
// Lists of the wrong elements are not lists of that kind at all.
static_assert(!std::is_constructible_v<TagsRef, const std::vector<int> &> &&
              !std::is_constructible_v<MetadataRef, const std::vector<std::string> &> &&
              !std::is_constructible_v<TagsRef, const std::string &>);

namespace {

// What a callback sees of each item, as one line per item.
std::vector<std::string> seen_by_a_scorer(const Items &items) {
    std::vector<std::string> lines;
    Scorer scorer = Scorer::custom_batch([&lines](ItemsView all, Span<double> out) {
        for (std::size_t i = 0; i < all.size(); i++) {
            ItemView v = all[i];
            std::string line = std::string(v.content()) + "|" + std::to_string(v.tokens()) + "|" +
                               std::string(v.kind()) + "|" + std::string(v.source()) + "|" +
                               std::to_string(v.priority().value_or(-1)) + "|" +
                               std::to_string(v.timestamp_ns().value_or(-1)) + "|" +
                               std::to_string(v.future_relevance_hint().value_or(-1)) + "|" +
                               std::to_string(v.pinned()) + "|" + std::to_string(v.original_tokens().value_or(-1));
            for (std::string_view tag : v.tags()) line += "|tag=" + std::string(tag);
            for (const char *key : {"id", "cupel:trust", "missing"}) {
                if (auto value = v.metadata(key)) line += "|" + std::string(key) + "=" + std::string(*value);
            }
            lines.push_back(line);
            out[i] = 1.0;
        }
    });
    Pipeline(scorer, Slicer::greedy(), Placer::chronological()).run(items, Budget(1000, 1000));
    return lines;
}

}  // namespace

TEST(item_refs_push_every_field_as_items_do) {
    // The caller's own storage, borrowed by the ItemRefs.
    std::string content = "rich", kind = "Document", source = "Web";
    std::vector<std::string> tags{"t1", "t2"};
    std::map<std::string, std::string> metadata{{"id", "42"}, {"cupel:trust", "0.9"}};
    std::array<const char *, 1> one_tag{"solo"};

    ItemRef rich{content, 7, kind, source};
    rich.priority = 3;
    rich.tags = tags;
    rich.metadata = metadata;
    rich.timestamp_ns = kJan2024;
    rich.future_relevance_hint = 0.4;
    rich.original_tokens = 70;
    ItemRef plain{"plain", 1};
    plain.tags = one_tag;
    plain.pinned = true;
    Items borrowed;
    borrowed.push_ref(rich);
    borrowed.push_refs({plain, ItemRef{std::string_view("view"), 2}});
    CHECK_EQ(borrowed.size(), std::size_t{3});

    Item owned_rich{"rich", 7, "Document", "Web", 3, {"t1", "t2"}, {{"id", "42"}, {"cupel:trust", "0.9"}}, kJan2024,
                    0.4, false, 70};
    Item owned_plain{"plain", 1};
    owned_plain.tags = {"solo"};
    owned_plain.pinned = true;
    Items owned({owned_rich, owned_plain, Item{"view", 2}});

    std::vector<std::string> from_refs = seen_by_a_scorer(borrowed);
    CHECK(from_refs == seen_by_a_scorer(owned));
    // Spelled out, so the comparison above cannot pass on two equally wrong lists. The
    // pinned item is not scored: it shows as pinned in the result instead.
    REQUIRE(from_refs.size() == 2u);
    CHECK_EQ(from_refs[0], std::string("rich|7|Document|Web|3|") + std::to_string(kJan2024) +
                               "|0.400000|0|70|tag=t1|tag=t2|id=42|cupel:trust=0.9");
    CHECK_EQ(from_refs[1], std::string("view|2|Message|Chat|-1|-1|-1.000000|0|-1"));
    for (const Items *list : {&borrowed, &owned}) {
        Result r = simple_pipeline(Scorer::recency()).run(*list, Budget(1000, 1000));
        std::vector<InclusionReason> reasons = r.reasons();
        REQUIRE(r.indices().size() == 3u);
        for (std::size_t k = 0; k < 3; k++) {
            CHECK((r.indices()[k] == 1) == (reasons[k] == InclusionReason::Pinned));
        }
    }
    // The tag of the pinned item, seen by a placer (which sees every item).
    std::vector<std::string> placed_tags;
    Placer placer = Placer::custom([&placed_tags](ItemsView all, Span<const double>) {
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < all.size(); i++) {
            for (std::string_view tag : all[i].tags()) placed_tags.emplace_back(tag);
            order.push_back(i);
        }
        return order;
    });
    Pipeline(Scorer::recency(), Slicer::greedy(), placer).run(borrowed, Budget(1000, 1000));
    std::sort(placed_tags.begin(), placed_tags.end());
    CHECK(placed_tags == (std::vector<std::string>{"solo", "t1", "t2"}));
}

TEST(item_refs_with_groups_variants_and_encodings) {
    std::vector<std::string> texts{"<100 tokens of test log>", "why did the build fail?"};
    std::vector<Variant> owned_variants{Variant{"3 tests fail: rounding off by one cent", 20, 0.5}};
    std::string summary = "3 tests fail";
    std::vector<VariantRef> borrowed_variants{VariantRef{summary, 20, 0.5}};
    for (int round = 0; round < 2; round++) {
        ItemRef log{texts[0], 100};
        log.future_relevance_hint = 0.9;
        if (round == 0) {
            log.variants = owned_variants;
        } else {
            log.variants = borrowed_variants;
        }
        ItemRef question{texts[1], 10};
        question.future_relevance_hint = 0.5;
        Items items;
        items.push_refs({log, question});
        // As `variants_a_long_item_is_placed_as_its_summary`: the log goes in as its summary.
        Result r = simple_pipeline(Scorer::reflexive()).run(items, Budget(50, 50));
        CHECK(r.indices().to_vector() == (std::vector<std::size_t>{0, 1}));
        CHECK(r.forms().to_vector() == (std::vector<std::size_t>{1, 0}));
    }

    // A group key and a library count, borrowed too.
    std::string call = "call", key = "g1";
    ItemRef a{call, 5};
    a.group = key;
    ItemRef b{"result", 50};
    b.group = key;
    ItemRef counted{"hello world", 0};
    counted.encoding = "cl100k_base";
    Items items;
    items.push_refs({a, b, ItemRef{"other", 5}});
    Result r = simple_pipeline(Scorer::recency()).dry_run(items, Budget(30, 30));
    // The group (55 tokens) cannot fit 30, so the call goes with its result.
    CHECK(r.indices().to_vector() == (std::vector<std::size_t>{2}));
    std::vector<GroupEntry> groups = r.groups();
    REQUIRE(groups.size() == 1u);
    CHECK_EQ(groups[0].key, std::string("g1"));
    CHECK(groups[0].members == (std::vector<std::size_t>{0, 1}));
    try {
        Items one;
        one.push_ref(counted);
        CHECK_EQ(one.size(), std::size_t{1});
    } catch (const Error &e) {
        CHECK(e.status() == Status::Unsupported);  // a library built without the tokenizer
    }
}

TEST(item_refs_are_checked_like_items) {
    Items items;
    std::string bad_utf8 = "\xff";
    CHECK_THROWS_STATUS(items.push_ref(ItemRef{"", 1}), Status::EmptyContent);
    CHECK_THROWS_STATUS(items.push_ref(ItemRef{bad_utf8, 1}), Status::InvalidUtf8);
    try {
        items.push_refs({ItemRef{"ok", 1}, ItemRef{"ok", 1, bad_utf8}});
        check::fail(__FILE__, __LINE__, "push_refs did not throw");
    } catch (const Error &e) {
        CHECK(e.status() == Status::InvalidUtf8);
        CHECK(e.message().rfind("item 1:", 0) == 0);
    }
    CHECK_EQ(items.size(), std::size_t{0});  // all or nothing
    items.push_refs(std::vector<ItemRef>{});
    CHECK_EQ(items.size(), std::size_t{0});
    const char *null_text = nullptr;
    CHECK_THROWS_STATUS(items.push_ref(ItemRef{null_text, 1}), Status::EmptyContent);  // null is ""
}

// The one-shot run (`Pipeline::run_once`, no item list) answers as a run over a list of
// the same items, untraced and traced (the report's JSON too), and checks items as a push
// does.
TEST(run_once_answers_as_a_list_run) {
    const char *kinds[] = {"Message", "Document", "ToolOutput", "Memory"};
    std::vector<Item> owned;
    for (int i = 0; i < 40; i++) {
        Item it{"once " + std::to_string(i), 5 + (i * 7) % 31, kinds[i % 4]};
        it.priority = i % 9;
        it.tags = {"t" + std::to_string(i % 3)};
        it.timestamp_ns = kJan2024 + int64_t(i) * 1000000000;
        owned.push_back(it);
    }
    owned[3].pinned = true;
    owned[10].group = owned[11].group = "call-1";
    Items list(owned);
    Pipeline pipeline = Pipeline::preset("chat");
    Budget budget(300, 200);
    for (TraceDetail trace : {TraceDetail::None, TraceDetail::Item}) {
        RunOptions options;
        options.trace = trace;
        Result from_list = pipeline.run(list, budget, options);
        Result once = pipeline.run_once(owned, budget, options);
        std::vector<std::size_t> a(from_list.indices().begin(), from_list.indices().end());
        std::vector<std::size_t> b(once.indices().begin(), once.indices().end());
        CHECK(a == b);
        CHECK(a.size() > 1 && a.size() < owned.size());  // the comparison is telling
        std::vector<double> sa(from_list.scores().begin(), from_list.scores().end());
        std::vector<double> sb(once.scores().begin(), once.scores().end());
        CHECK(sa == sb);
        CHECK(from_list.reasons() == once.reasons());
        CHECK(from_list.has_report() == once.has_report());
        if (trace == TraceDetail::Item) {
            std::string ja(from_list.json()), jb(once.json());
            // Stage durations differ between runs: compare the JSON without them.
            auto strip = [](std::string j) {
                std::string out;
                for (std::size_t at = 0; at < j.size();) {
                    std::size_t key = j.find("\"duration_ms\":", at);
                    if (key == std::string::npos) {
                        out += j.substr(at);
                        break;
                    }
                    out += j.substr(at, key - at);
                    at = j.find_first_of(",}", key);
                }
                return out;
            };
            CHECK(strip(ja) == strip(jb));
        }
    }
    Result none = pipeline.run_once(std::vector<Item>{}, budget);
    CHECK(none.indices().size() == 0u);
    std::string bad_utf8 = "\xff";
    try {
        pipeline.run_once(std::vector<ItemRef>{ItemRef{"ok", 1}, ItemRef{"ok", 1, bad_utf8}}, budget);
        check::fail(__FILE__, __LINE__, "run_once did not throw");
    } catch (const Error &e) {
        CHECK(e.status() == Status::InvalidUtf8);
        CHECK(e.message().rfind("item 1:", 0) == 0);
    }
}

// A run into a kept result (`Pipeline::run_once_into`) answers as `run_once`, rewrites the
// same result from the second run on, and leaves it as it was when a run throws.
TEST(run_once_into_reuses_one_result) {
    Pipeline pipeline = Pipeline::preset("chat");
    Result kept(nullptr);
    const ctxpack_result *first = nullptr;
    for (int n : {30, 30, 200, 10, 200}) {
        std::vector<Item> items;
        for (int i = 0; i < n; i++) {
            Item it{"kept " + std::to_string(i % 17 == 16 ? i - 1 : i), 3 + (i * 5) % 23};
            it.timestamp_ns = kJan2024 + int64_t(i) * 1000000000;
            it.priority = i % 7;
            items.push_back(it);
        }
        int64_t total = 0;
        for (const Item &it : items) total += it.tokens;
        Budget budget(total, total / 2);
        std::vector<ItemRef> refs;
        for (const Item &it : items) refs.push_back(ItemRef{it.content, it.tokens});
        for (std::size_t i = 0; i < items.size(); i++) refs[i].timestamp_ns = items[i].timestamp_ns;
        for (std::size_t i = 0; i < items.size(); i++) refs[i].priority = items[i].priority;
        Result once = pipeline.run_once(refs, budget);
        pipeline.run_once_into(kept, refs, budget);
        CHECK(bool(kept));
        if (first == nullptr) first = kept.native();
        CHECK(kept.native() == first);  // the same result, rewritten
        std::vector<std::size_t> a(once.indices().begin(), once.indices().end());
        std::vector<std::size_t> b(kept.indices().begin(), kept.indices().end());
        CHECK(a == b);
        CHECK(a.size() > 1 && a.size() < items.size());
        std::vector<double> sa(once.scores().begin(), once.scores().end());
        std::vector<double> sb(kept.scores().begin(), kept.scores().end());
        CHECK(sa == sb);
        CHECK(once.reasons() == kept.reasons());
    }
    std::vector<std::size_t> before(kept.indices().begin(), kept.indices().end());
    std::string bad_utf8 = "\xff";
    try {
        pipeline.run_once_into(kept, std::vector<ItemRef>{ItemRef{"ok", 1}, ItemRef{"ok", 1, bad_utf8}},
                               Budget(10, 10));
        check::fail(__FILE__, __LINE__, "run_once_into did not throw");
    } catch (const Error &e) {
        CHECK(e.status() == Status::InvalidUtf8);
    }
    CHECK(kept.native() == first);
    std::vector<std::size_t> after(kept.indices().begin(), kept.indices().end());
    CHECK(before == after);
}

// `Pipeline::release_memory` frees what the pipeline keeps between one-shot runs: runs
// before and after it answer the same, it may be called again with nothing kept, and an
// empty (moved-from) pipeline is a NullArgument error as for every other method.
TEST(release_memory_between_one_shot_runs) {
    const char *kinds[] = {"Message", "Document", "ToolOutput", "Memory"};
    std::vector<Item> items;
    for (int i = 0; i < 300; i++) {
        Item it{"release " + std::to_string(i), 4 + (i * 11) % 37, kinds[i % 4]};
        it.priority = i % 5;
        it.timestamp_ns = kJan2024 + int64_t(i) * 1000000000;
        items.push_back(it);
    }
    Pipeline pipeline = Pipeline::preset("chat");
    Budget budget(2000, 1500);
    pipeline.release_memory();  // nothing kept yet
    auto snapshot = [&] {
        Result r = pipeline.run_once(items, budget);
        return std::make_tuple(r.indices().to_vector(), std::vector<double>(r.scores().begin(), r.scores().end()),
                               r.reasons());
    };
    auto first = snapshot();
    CHECK(std::get<0>(first).size() > 1 && std::get<0>(first).size() < items.size());
    CHECK(snapshot() == first);  // from the kept memory
    pipeline.release_memory();
    CHECK(snapshot() == first);  // allocated again
    pipeline.release_memory();
    pipeline.release_memory();  // nothing kept: still fine
    CHECK(snapshot() == first);
    CHECK(snapshot() == first);

    Pipeline moved = std::move(pipeline);
    moved.release_memory();
    CHECK_THROWS_STATUS(pipeline.release_memory(), Status::NullArgument);
}

// One-shot runs on many threads with `release_memory` called among them, from other
// threads and between runs: every run answers as a run alone.
TEST(release_memory_during_one_shot_runs_on_many_threads) {
    std::vector<Item> items;
    for (int i = 0; i < 500; i++) {
        Item it{"thread " + std::to_string(i), 3 + (i * 7) % 29};
        it.timestamp_ns = kJan2024 + int64_t(i) * 1000000000;
        it.priority = i % 6;
        items.push_back(it);
    }
    Pipeline pipeline = Pipeline::preset("chat");
    Budget budget(3000, 2000);
    auto indices = [&] {
        Result r = pipeline.run_once(items, budget);
        return r.indices().to_vector();
    };
    const std::vector<std::size_t> expected = indices();
    CHECK(expected.size() > 1 && expected.size() < items.size());
    std::atomic<bool> done{false};
    std::atomic<int> releases{0};
    std::thread releaser([&] {
        while (!done.load()) {
            pipeline.release_memory();
            releases++;
            std::this_thread::yield();
        }
    });
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < mismatches.size(); t++) {
        threads.emplace_back([&, t] {
            for (int k = 0; k < 40; k++) {
                if (indices() != expected) mismatches[t]++;
                if (k % 5 == int(t)) pipeline.release_memory();
            }
        });
    }
    for (std::thread &t : threads) t.join();
    done = true;
    releaser.join();
    for (int m : mismatches) CHECK_EQ(m, 0);
    CHECK(releases.load() > 0);
}

int main() { return check::run_all(); }
