// A minimal test framework for the C++ binding's tests.
//
// TEST(name) { ... } defines and registers a test; check::add registers one at run time
// (one per conformance vector). CHECK records a failure and goes on; REQUIRE records it
// and ends the test; an exception escaping a test fails it. check::run_all() prints one
// line per test and "N passed, M failed" last, and returns the exit status.
#ifndef CTXPACK_CHECK_HPP
#define CTXPACK_CHECK_HPP

#include <cstdio>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ctxpack.hpp"

namespace check {

struct Test {
    std::string name;
    std::function<void()> body;
};

inline std::vector<Test> &registry() {
    static std::vector<Test> tests;
    return tests;
}

inline bool add(std::string name, std::function<void()> body) {
    registry().push_back({std::move(name), std::move(body)});
    return true;
}

// The failures of the running test.
inline std::vector<std::string> &failures() {
    static std::vector<std::string> list;
    return list;
}

struct RequireFailed {};

inline void fail(const char *file, int line, const std::string &what) {
    std::ostringstream s;
    s << file << ":" << line << ": " << what;
    failures().push_back(s.str());
}

template <typename T>
std::string show(const T &value) {
    std::ostringstream s;
    if constexpr (std::is_enum_v<T>) {
        s << static_cast<long long>(value);
    } else {
        s << value;
    }
    return s.str();
}

inline int run_all() {
    int passed = 0, failed = 0;
    for (const Test &test : registry()) {
        failures().clear();
        try {
            test.body();
        } catch (const RequireFailed &) {
            // already recorded
        } catch (const std::exception &e) {
            failures().push_back(std::string("unexpected exception: ") + e.what());
        } catch (...) {
            failures().push_back("unexpected non-standard exception");
        }
        if (failures().empty()) {
            passed++;
            std::printf("ok   %s\n", test.name.c_str());
        } else {
            failed++;
            std::printf("FAIL %s\n", test.name.c_str());
            for (const std::string &f : failures()) std::printf("    %s\n", f.c_str());
        }
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    // LeakSanitizer reports from an exit handler that does not flush stdio.
    std::fflush(stdout);
    return failed == 0 ? 0 : 1;
}

}  // namespace check

#define CHECK_CONCAT2(a, b) a##b
#define CHECK_CONCAT(a, b) CHECK_CONCAT2(a, b)

#define TEST(name)                                                                  \
    static void name();                                                             \
    static const bool CHECK_CONCAT(registered_, name) = ::check::add(#name, name);  \
    static void name()

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) ::check::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
    } while (0)

#define REQUIRE(cond)                                                          \
    do {                                                                       \
        if (!(cond)) {                                                         \
            ::check::fail(__FILE__, __LINE__, "REQUIRE(" #cond ")");           \
            throw ::check::RequireFailed{};                                    \
        }                                                                      \
    } while (0)

#define CHECK_EQ(actual, expected)                                                                  \
    do {                                                                                            \
        const auto &check_a_ = (actual);                                                            \
        const auto &check_e_ = (expected);                                                          \
        if (!(check_a_ == check_e_)) {                                                              \
            ::check::fail(__FILE__, __LINE__,                                                       \
                          #actual " == " #expected ": got " + ::check::show(check_a_) + ", expected " + \
                              ::check::show(check_e_));                                             \
        }                                                                                           \
    } while (0)

// Checks that `expr` throws ctxpack::Error with `expected_status`.
#define CHECK_THROWS_STATUS(expr, expected_status)                                                               \
    do {                                                                                                \
        try {                                                                                           \
            (void)(expr);                                                                               \
            ::check::fail(__FILE__, __LINE__, #expr " did not throw");                                  \
        } catch (const ::ctxpack::Error &check_e_) {                                                    \
            if (check_e_.status() != (expected_status)) {                                                        \
                ::check::fail(__FILE__, __LINE__, #expr " threw " + std::string(check_e_.what()) +      \
                                                      ", expected " + ::ctxpack::status_name(expected_status)); \
            }                                                                                           \
        }                                                                                               \
    } while (0)

#endif  // CTXPACK_CHECK_HPP
