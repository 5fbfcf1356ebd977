// ctxpack quickstart in C++: the program of examples/quickstart.c through ctxpack.hpp,
// printing exactly the same lines (bindings/cpp/run.sh compares the two outputs).
//
// A short chat is scored by recency and kind, sliced greedily into the budget, and
// placed chronologically. From the repository root, after `cargo build --release`:
//   g++ -std=c++17 -Iinclude -Ibindings/cpp/include bindings/cpp/examples/quickstart.cpp
//       -Ltarget/release -lctxpack -Wl,-rpath,target/release -o quickstart && ./quickstart
#include <cstdio>
#include <vector>

#include "ctxpack.hpp"

int main() {
    struct Message {
        const char *content, *kind;
        int64_t tokens;
        int minute;
    };
    const std::vector<Message> chat = {
        {"You are a concise travel assistant.", "SystemPrompt", 12, 0},
        {"User: I want to visit Lisbon in May.", "Message", 14, 1},
        {"Assistant: Great choice! May is mild and sunny, ideal for walking tours.", "Message", 40, 2},
        {"Tool: flights to LIS from 89 EUR", "ToolOutput", 25, 3},
        {"Memory: the user prefers trains to planes.", "Memory", 10, 4},
        {"User: and how do I get there by train?", "Message", 12, 5},
    };
    const int64_t start_ns = INT64_C(1746093600) * 1000000000;  // 2025-05-01 10:00 UTC

    try {
        // 1. The candidates. The library copies each item; the system prompt is pinned.
        ctxpack::Items items;
        for (const Message &m : chat) {
            ctxpack::Item item{m.content, m.tokens, m.kind};
            item.timestamp_ns = start_ns + m.minute * INT64_C(60000000000);
            item.pinned = &m == &chat.front();
            items.push(item);
        }

        // 2. The pipeline: recency and kind (2:1), greedy slicing, chronological placement.
        //    The composite and the pipeline keep their own references to the components.
        ctxpack::Scorer recency = ctxpack::Scorer::recency();
        ctxpack::Scorer kind = ctxpack::Scorer::kind();
        ctxpack::Pipeline pipeline(ctxpack::Scorer::composite({{recency, 2.0}, {kind, 1.0}}),
                                   ctxpack::Slicer::greedy(), ctxpack::Placer::chronological());

        // 3. A 100-token window: aim for 70 and keep 20 for the model's answer.
        ctxpack::Budget budget(100, 70, 20);

        // 4. Run, and print the selection in placed order.
        ctxpack::Result result = pipeline.run(items, budget);
        auto selected = result.indices();
        auto scores = result.scores();
        std::printf("ctxpack %s selected %zu of %zu items:\n", ctxpack_version(), selected.size(), chat.size());
        for (std::size_t i = 0; i < selected.size(); i++) {
            std::printf("  [%zu] %.3f  %s\n", selected[i], scores[i], chat[selected[i]].content);
        }
    } catch (const ctxpack::Error &e) {
        std::fprintf(stderr, "ctxpack: %s\n", e.what());
        return 1;
    }
    return 0;
}
