// What a report costs in C++ (issue 20, item 3): the inputs of the Go and C# report
// benchmarks (2 000 items, five kinds, two tags each, priorities, timestamps, the Chat
// preset, a 50 000-token target, one item list), run untraced, traced at Item detail with
// nothing read, and traced with the JSON read. A C++ Result wraps the library's result
// handle, so a traced run copies nothing until a part of the report is read. Prints the
// median and the quartiles of `reps` runs of each, alternating.
//
//   c++ -std=c++17 -O2 -Iinclude -Ibindings/cpp/include bindings/cpp/bench/trace_bench.cpp
//       -Ltarget/release -lctxpack -o /tmp/trace_bench
//   LD_LIBRARY_PATH=target/release /tmp/trace_bench 300
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ctxpack.hpp"

using namespace ctxpack;
using Clock = std::chrono::steady_clock;

static std::vector<Item> bench_items() {
    const char *kinds[] = {"Message", "Document", "ToolOutput", "Memory", "SystemPrompt"};
    std::vector<Item> items(2000);
    const int64_t t0 = 1704067200LL * 1000000000LL;  // 2024-01-01T00:00:00Z
    for (int i = 0; i < 2000; i++) {
        Item &it = items[i];
        it.content = "item " + std::to_string(i) + " with some content";
        it.tokens = 20 + (i * 37 % 400);
        it.kind = kinds[i % 5];
        it.tags = {"t" + std::to_string(i % 13), "u" + std::to_string(i % 7)};
        it.priority = i % 10;
        it.timestamp_ns = t0 + int64_t(i) * 1000000000LL;
    }
    return items;
}

static double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

static void print(const char *name, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::printf("%-28s median %.3f ms  (quartiles %.3f - %.3f)\n", name, v[v.size() / 2], v[v.size() / 4],
                v[v.size() * 3 / 4]);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? std::atoi(argv[1]) : 200;
    Pipeline pipeline = Pipeline::preset("Chat");
    Items items;
    items.push_many(bench_items());
    Budget budget(100000, 50000);
    RunOptions traced;
    traced.trace = TraceDetail::Item;
    std::vector<double> untraced_ms, traced_ms, json_ms;
    std::size_t sink = 0;
    for (int r = 0; r < reps; r++) {
        auto start = Clock::now();
        {
            Result result = pipeline.run(items, budget);
            sink += result.indices().size();
        }
        untraced_ms.push_back(ms_since(start));
        start = Clock::now();
        {
            Result result = pipeline.run(items, budget, traced);
            sink += result.indices().size();
        }
        traced_ms.push_back(ms_since(start));
        start = Clock::now();
        {
            Result result = pipeline.run(items, budget, traced);
            sink += result.json().size();
        }
        json_ms.push_back(ms_since(start));
    }
    print("untraced", untraced_ms);
    print("traced (Item), nothing read", traced_ms);
    print("traced (Item), JSON read", json_ms);
    return sink == 0;
}
