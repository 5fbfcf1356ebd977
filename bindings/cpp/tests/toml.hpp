// A small TOML reader for the conformance vectors (shared/spec/08-conformance-format.md):
// tables, arrays of tables (nested ones attach to the latest element), dotted keys,
// basic and literal strings, integers, floats (also inf/nan), booleans, arrays and
// inline tables, and UTC offset date-times with or without seconds (the TOML 1.1 form
// the vectors use), converted to nanoseconds since the Unix epoch. Multi-line strings,
// local dates/times and non-Z offsets are not needed by the vectors and are rejected.
#ifndef CTXPACK_TOML_HPP
#define CTXPACK_TOML_HPP

#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toml {

struct Value;
using Table = std::vector<std::pair<std::string, Value>>;  // insertion order
using Array = std::vector<Value>;

struct Value {
    enum class Type { String, Integer, Float, Bool, DateTime, Array, Table };
    Type type = Type::Table;
    std::string string;
    int64_t integer = 0;  // Integer, and DateTime in ns since the epoch
    double number = 0.0;
    bool boolean = false;
    Array array;
    Table table;

    // Lookup in a table; nullptr when absent (or when this is not a table).
    const Value *find(const std::string &key) const {
        if (type != Type::Table) return nullptr;
        for (const auto &[k, v] : table) {
            if (k == key) return &v;
        }
        return nullptr;
    }
    const Value &at(const std::string &key) const {
        const Value *v = find(key);
        if (v == nullptr) throw std::runtime_error("missing key '" + key + "'");
        return *v;
    }
    const std::string &as_string() const { return expect(Type::String, "a string").string; }
    int64_t as_int() const { return expect(Type::Integer, "an integer").integer; }
    // Wherever a float is expected an integer is accepted too (08 §2, numeric leniency).
    double as_double() const {
        if (type == Type::Integer) return static_cast<double>(integer);
        return expect(Type::Float, "a float").number;
    }
    bool as_bool() const { return expect(Type::Bool, "a boolean").boolean; }
    int64_t as_datetime_ns() const { return expect(Type::DateTime, "a date-time").integer; }
    const Array &as_array() const { return expect(Type::Array, "an array").array; }

    // Optional lookups with a default.
    std::string get_string(const std::string &key, std::string fallback = "") const {
        const Value *v = find(key);
        return v ? v->as_string() : fallback;
    }
    int64_t get_int(const std::string &key, int64_t fallback) const {
        const Value *v = find(key);
        return v ? v->as_int() : fallback;
    }
    double get_double(const std::string &key, double fallback) const {
        const Value *v = find(key);
        return v ? v->as_double() : fallback;
    }
    bool get_bool(const std::string &key, bool fallback) const {
        const Value *v = find(key);
        return v ? v->as_bool() : fallback;
    }
    // An array of tables (or an absent key) as a list.
    const Array &list(const std::string &key) const {
        static const Array empty;
        const Value *v = find(key);
        return v ? v->as_array() : empty;
    }

private:
    const Value &expect(Type t, const char *what) const {
        if (type != t) throw std::runtime_error(std::string("expected ") + what);
        return *this;
    }
};

namespace detail {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
inline int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

class Parser {
public:
    explicit Parser(std::string text) : s_(std::move(text)) {}

    Value parse() {
        Value root;
        Value *current = &root;
        while (true) {
            skip_blank_lines();
            if (at_end()) break;
            if (peek() == '[') {
                bool array = s_.compare(pos_, 2, "[[") == 0;
                pos_ += array ? 2 : 1;
                std::vector<std::string> path = parse_key_path();
                expect(array ? "]]" : "]");
                current = array ? &append_table(root, path) : &open_table(root, path);
            } else {
                std::vector<std::string> path = parse_key_path();
                expect("=");
                skip_spaces();
                Value value = parse_value();
                Value *parent = current;
                for (std::size_t i = 0; i + 1 < path.size(); i++) parent = &child_table(*parent, path[i]);
                if (parent->find(path.back())) fail("duplicate key '" + path.back() + "'");
                parent->table.emplace_back(path.back(), std::move(value));
            }
            end_of_line();
        }
        return root;
    }

private:
    std::string s_;
    std::size_t pos_ = 0;

    [[noreturn]] void fail(const std::string &what) const {
        std::size_t line = 1;
        for (std::size_t i = 0; i < pos_ && i < s_.size(); i++) line += s_[i] == '\n';
        throw std::runtime_error("TOML line " + std::to_string(line) + ": " + what);
    }
    bool at_end() const { return pos_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[pos_]; }
    void skip_spaces() {
        while (!at_end() && (peek() == ' ' || peek() == '\t')) pos_++;
    }
    void skip_comment() {
        if (peek() == '#') {
            while (!at_end() && peek() != '\n') pos_++;
        }
    }
    // Whitespace, newlines and comments (between lines, and inside arrays).
    void skip_blank_lines() {
        while (!at_end()) {
            skip_spaces();
            skip_comment();
            if (peek() == '\n' || peek() == '\r') {
                pos_++;
            } else {
                break;
            }
        }
    }
    void end_of_line() {
        skip_spaces();
        skip_comment();
        if (!at_end() && peek() != '\n' && peek() != '\r') fail("unexpected text after a value");
    }
    void expect(const char *token) {
        skip_spaces();
        std::string t(token);
        if (s_.compare(pos_, t.size(), t) != 0) fail("expected '" + t + "'");
        pos_ += t.size();
    }

    std::vector<std::string> parse_key_path() {
        std::vector<std::string> path;
        while (true) {
            skip_spaces();
            if (peek() == '"') {
                path.push_back(parse_basic_string());
            } else if (peek() == '\'') {
                path.push_back(parse_literal_string());
            } else {
                std::size_t start = pos_;
                while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-')) {
                    pos_++;
                }
                if (start == pos_) fail("expected a key");
                path.push_back(s_.substr(start, pos_ - start));
            }
            skip_spaces();
            if (peek() != '.') return path;
            pos_++;
        }
    }

    // The table under `key`, created when absent; for an array of tables, its last one.
    Value &child_table(Value &parent, const std::string &key) {
        for (auto &[k, v] : parent.table) {
            if (k != key) continue;
            if (v.type == Value::Type::Table) return v;
            if (v.type == Value::Type::Array && !v.array.empty() && v.array.back().type == Value::Type::Table) {
                return v.array.back();
            }
            fail("'" + key + "' is not a table");
        }
        parent.table.emplace_back(key, Value{});
        return parent.table.back().second;
    }
    Value &open_table(Value &root, const std::vector<std::string> &path) {
        Value *t = &root;
        for (const std::string &key : path) t = &child_table(*t, key);
        return *t;
    }
    Value &append_table(Value &root, const std::vector<std::string> &path) {
        Value *parent = &root;
        for (std::size_t i = 0; i + 1 < path.size(); i++) parent = &child_table(*parent, path[i]);
        Value *array = nullptr;
        for (auto &[k, v] : parent->table) {
            if (k == path.back()) array = &v;
        }
        if (array == nullptr) {
            Value fresh;
            fresh.type = Value::Type::Array;
            parent->table.emplace_back(path.back(), std::move(fresh));
            array = &parent->table.back().second;
        }
        if (array->type != Value::Type::Array) fail("'" + path.back() + "' is not an array of tables");
        array->array.emplace_back();
        return array->array.back();
    }

    Value parse_value() {
        Value v;
        char c = peek();
        if (c == '"') {
            v.type = Value::Type::String;
            v.string = parse_basic_string();
        } else if (c == '\'') {
            v.type = Value::Type::String;
            v.string = parse_literal_string();
        } else if (c == '[') {
            v.type = Value::Type::Array;
            pos_++;
            while (true) {
                skip_blank_lines();
                if (peek() == ']') break;
                v.array.push_back(parse_value());
                skip_blank_lines();
                if (peek() == ',') {
                    pos_++;
                } else if (peek() != ']') {
                    fail("expected ',' or ']' in an array");
                }
            }
            pos_++;
        } else if (c == '{') {
            v.type = Value::Type::Table;
            pos_++;
            skip_spaces();
            while (peek() != '}') {
                std::vector<std::string> path = parse_key_path();
                expect("=");
                skip_spaces();
                Value *parent = &v;
                for (std::size_t i = 0; i + 1 < path.size(); i++) parent = &child_table(*parent, path[i]);
                parent->table.emplace_back(path.back(), parse_value());
                skip_spaces();
                if (peek() == ',') pos_++;
                skip_spaces();
                if (at_end()) fail("unterminated inline table");
            }
            pos_++;
        } else if (s_.compare(pos_, 4, "true") == 0) {
            v.type = Value::Type::Bool;
            v.boolean = true;
            pos_ += 4;
        } else if (s_.compare(pos_, 5, "false") == 0) {
            v.type = Value::Type::Bool;
            pos_ += 5;
        } else if (looks_like_datetime()) {
            v.type = Value::Type::DateTime;
            v.integer = parse_datetime();
        } else {
            parse_number(v);
        }
        return v;
    }

    std::string parse_basic_string() {
        pos_++;  // the opening quote
        std::string out;
        while (true) {
            if (at_end() || peek() == '\n') fail("unterminated string");
            char c = s_[pos_++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = s_[pos_++];
            switch (e) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case 'u':
            case 'U': {
                const std::size_t width = e == 'u' ? 4 : 8;
                append_utf8(out, std::stoul(s_.substr(pos_, width), nullptr, 16));
                pos_ += width;
                break;
            }
            default: fail(std::string("unknown escape \\") + e);
            }
        }
    }
    static void append_utf8(std::string &out, unsigned long cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    std::string parse_literal_string() {
        std::size_t end = s_.find('\'', ++pos_);
        if (end == std::string::npos || s_.find('\n', pos_) < end) fail("unterminated literal string");
        std::string out = s_.substr(pos_, end - pos_);
        pos_ = end + 1;
        return out;
    }

    bool looks_like_datetime() const {
        return pos_ + 10 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])) && s_[pos_ + 4] == '-' &&
               s_[pos_ + 7] == '-';
    }
    int digits(std::size_t n) {
        int value = 0;
        for (std::size_t i = 0; i < n; i++) {
            if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("bad date-time");
            value = value * 10 + (s_[pos_++] - '0');
        }
        return value;
    }
    void literal(char c) {
        if (peek() != c) fail(std::string("bad date-time: expected '") + c + "'");
        pos_++;
    }
    // YYYY-MM-DDTHH:MM[:SS]Z
    int64_t parse_datetime() {
        int year = digits(4);
        literal('-');
        int month = digits(2);
        literal('-');
        int day = digits(2);
        if (peek() != 'T' && peek() != 't' && peek() != ' ') fail("local dates are not supported");
        pos_++;
        int hour = digits(2);
        literal(':');
        int minute = digits(2);
        int second = 0;
        if (peek() == ':') {
            pos_++;
            second = digits(2);
        }
        if (peek() == '.') fail("fractional seconds are not supported");
        if (peek() != 'Z' && peek() != 'z') fail("only UTC ('Z') date-times are supported");
        pos_++;
        int64_t seconds = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
                          hour * 3600 + minute * 60 + second;
        return seconds * 1000000000;
    }

    void parse_number(Value &v) {
        std::size_t start = pos_;
        while (!at_end() && std::string_view(",]} \t\r\n#").find(peek()) == std::string_view::npos) pos_++;
        std::string token;
        for (char c : s_.substr(start, pos_ - start)) {
            if (c != '_') token += c;
        }
        if (token.empty()) fail("expected a value");
        std::string unsigned_token = token[0] == '+' || token[0] == '-' ? token.substr(1) : token;
        double sign = token[0] == '-' ? -1.0 : 1.0;
        if (unsigned_token == "inf" || unsigned_token == "nan") {
            v.type = Value::Type::Float;
            v.number = sign * (unsigned_token == "inf" ? std::numeric_limits<double>::infinity()
                                                       : std::numeric_limits<double>::quiet_NaN());
            return;
        }
        std::size_t used = 0;
        try {
            if (token.find_first_of(".eE") == std::string::npos) {
                v.type = Value::Type::Integer;
                v.integer = std::stoll(token, &used, 10);
            } else {
                v.type = Value::Type::Float;
                v.number = std::stod(token, &used);  // keeps the sign of -0.0
            }
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != token.size()) fail("bad number '" + token + "'");
    }
};

}  // namespace detail

inline Value parse(std::string text) { return detail::Parser(std::move(text)).parse(); }

inline Value parse_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str());
}

}  // namespace toml

#endif  // CTXPACK_TOML_HPP
