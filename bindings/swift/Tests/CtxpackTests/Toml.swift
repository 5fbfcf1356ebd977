// A reader for the TOML subset the conformance vectors use (shared/spec/08 §2), since
// Swift's standard library and Foundation have no TOML parser: tables and arrays of
// tables (nested under the latest element), dotted keys, `key = value` with basic and
// literal strings, integers, floats (inf and nan included), booleans, offset date-times
// (seconds optional, as TOML 1.1 allows), arrays over several lines, and inline tables.
// Comments are dropped. It is not a general TOML parser: what it does not know is an
// error, never a guess.
import Foundation

/// A table; a class so that parsing can extend a table reached through its parents.
final class TomlTable {
    private(set) var keys: [String] = []
    private var values: [String: TomlValue] = [:]

    subscript(key: String) -> TomlValue? { values[key] }

    func set(_ key: String, _ value: TomlValue) {
        if values[key] == nil { keys.append(key) }
        values[key] = value
    }
}

enum TomlValue {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    /// An offset date-time, as nanoseconds since the Unix epoch.
    case dateTime(Int64)
    case array([TomlValue])
    case table(TomlTable)

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var integer: Int64? { if case .integer(let i) = self { return i } else { return nil } }
    var boolean: Bool? { if case .boolean(let b) = self { return b } else { return nil } }
    var dateTime: Int64? { if case .dateTime(let t) = self { return t } else { return nil } }
    var array: [TomlValue]? { if case .array(let a) = self { return a } else { return nil } }
    var table: TomlTable? { if case .table(let t) = self { return t } else { return nil } }
    /// A float, or an integer read as one (08 §2: numbers are lenient).
    var number: Double? {
        switch self {
        case .float(let d): return d
        case .integer(let i): return Double(i)
        default: return nil
        }
    }
}

struct TomlError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum Toml {
    static func parse(_ text: String) throws -> TomlTable {
        let root = TomlTable()
        var current = root
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var n = 0
        while n < lines.count {
            let number = n + 1
            let line = lines[n].trimmingCharacters(in: .whitespaces)
            n += 1
            if line.isEmpty || line.hasPrefix("#") { continue }
            do {
                if line.hasPrefix("[[") {
                    guard let end = line.range(of: "]]") else { throw TomlError("unterminated header") }
                    let path = keyPath(line[line.index(line.startIndex, offsetBy: 2)..<end.lowerBound])
                    let parent = try descend(root, path.dropLast())
                    let element = TomlTable()
                    parent.set(path.last!, .array((parent[path.last!]?.array ?? []) + [.table(element)]))
                    current = element
                } else if line.hasPrefix("[") {
                    guard let end = line.firstIndex(of: "]") else { throw TomlError("unterminated header") }
                    current = try descend(root, keyPath(line[line.index(after: line.startIndex)..<end])[...])
                } else {
                    guard let equals = line.firstIndex(of: "=") else { throw TomlError("expected key = value") }
                    // A value may continue over the next lines (arrays, inline tables).
                    var source = String(line[line.index(after: equals)...])
                    while bracketDepth(source) > 0 && n < lines.count {
                        source += "\n" + lines[n]
                        n += 1
                    }
                    var reader = ValueReader(source)
                    let value = try reader.value()
                    try reader.end()
                    let path = keyPath(line[..<equals])
                    try descend(current, path.dropLast()).set(path.last!, value)
                }
            } catch let error as TomlError {
                throw TomlError("line \(number): \(error)")
            }
        }
        return root
    }

    /// `a.b."c"` as its parts.
    private static func keyPath(_ s: Substring) -> [String] {
        s.split(separator: ".", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
        }
    }

    /// The table at `path` below `table`, created where missing; an array of tables stands
    /// for its latest element.
    private static func descend(_ table: TomlTable, _ path: ArraySlice<String>) throws -> TomlTable {
        var t = table
        for key in path {
            switch t[key] {
            case nil:
                let next = TomlTable()
                t.set(key, .table(next))
                t = next
            case .table(let next)?:
                t = next
            case .array(let elements)? where elements.last?.table != nil:
                t = elements.last!.table!
            default:
                throw TomlError("key \"\(key)\" is not a table")
            }
        }
        return t
    }

    /// Unclosed `[` and `{` outside strings and comments.
    private static func bracketDepth(_ s: String) -> Int {
        var depth = 0
        var quote: UInt8? = nil
        var escaped = false
        var comment = false
        for c in s.utf8 {
            if comment {
                if c == UInt8(ascii: "\n") { comment = false }
            } else if let q = quote {
                if escaped {
                    escaped = false
                } else if c == UInt8(ascii: "\\") && q == UInt8(ascii: "\"") {
                    escaped = true
                } else if c == q {
                    quote = nil
                }
            } else {
                switch c {
                case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = c
                case UInt8(ascii: "#"): comment = true
                case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
            }
        }
        return depth
    }
}

/// Reads one value from the text after `=` (UTF-8 bytes).
private struct ValueReader {
    let s: [UInt8]
    var i = 0

    init(_ text: String) { s = Array(text.utf8) }

    var atEnd: Bool { i >= s.count }
    var peek: UInt8 { s[i] }

    mutating func skipBlank() {
        while !atEnd {
            switch peek {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): i += 1
            case UInt8(ascii: "#"): while !atEnd && peek != UInt8(ascii: "\n") { i += 1 }
            default: return
            }
        }
    }

    /// Only blanks and comments may follow the value.
    mutating func end() throws {
        skipBlank()
        guard atEnd else { throw TomlError("trailing text \"\(String(decoding: s[i...], as: UTF8.self))\"") }
    }

    mutating func value() throws -> TomlValue {
        skipBlank()
        guard !atEnd else { throw TomlError("missing value") }
        switch peek {
        case UInt8(ascii: "\""), UInt8(ascii: "'"): return .string(try string())
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "{"): return try inlineTable()
        default: return try scalar()
        }
    }

    mutating func string() throws -> String {
        let quote = peek
        i += 1
        var bytes: [UInt8] = []
        while !atEnd {
            let c = peek
            i += 1
            if c == quote { return String(decoding: bytes, as: UTF8.self) }
            guard c == UInt8(ascii: "\\") && quote == UInt8(ascii: "\"") else {
                bytes.append(c)
                continue
            }
            guard !atEnd else { break }
            let e = peek
            i += 1
            switch e {
            case UInt8(ascii: "n"): bytes.append(UInt8(ascii: "\n"))
            case UInt8(ascii: "t"): bytes.append(UInt8(ascii: "\t"))
            case UInt8(ascii: "r"): bytes.append(UInt8(ascii: "\r"))
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(e)
            case UInt8(ascii: "u"), UInt8(ascii: "U"):
                let width = e == UInt8(ascii: "u") ? 4 : 8
                guard i + width <= s.count, let code = UInt32(String(decoding: s[i..<i + width], as: UTF8.self), radix: 16),
                      let scalar = Unicode.Scalar(code)
                else { throw TomlError("bad unicode escape") }
                bytes += Array(String(Character(scalar)).utf8)
                i += width
            default: throw TomlError("unknown escape \\\(Character(Unicode.Scalar(e)))")
            }
        }
        throw TomlError("unterminated string")
    }

    /// Reads the comma-separated elements of an array or inline table up to `close` (the
    /// opening bracket is at `i`); `element` reads one.
    mutating func elements(until close: Character, _ element: (inout ValueReader) throws -> Void) throws {
        i += 1
        while true {
            skipBlank()
            guard !atEnd else { throw TomlError("no closing \(close)") }
            if peek == UInt8(ascii: close.unicodeScalars.first!) {
                i += 1
                return
            }
            try element(&self)
            skipBlank()
            if !atEnd && peek == UInt8(ascii: ",") { i += 1 }
        }
    }

    mutating func array() throws -> TomlValue {
        var values: [TomlValue] = []
        try elements(until: "]") { values.append(try $0.value()) }
        return .array(values)
    }

    mutating func inlineTable() throws -> TomlValue {
        let table = TomlTable()
        try elements(until: "}") { reader in
            let key: String
            if reader.peek == UInt8(ascii: "\"") || reader.peek == UInt8(ascii: "'") {
                key = try reader.string()
            } else {
                let start = reader.i
                while !reader.atEnd && reader.peek != UInt8(ascii: "=") && reader.peek != UInt8(ascii: " ") { reader.i += 1 }
                key = String(decoding: reader.s[start..<reader.i], as: UTF8.self)
            }
            reader.skipBlank()
            guard !reader.atEnd && reader.peek == UInt8(ascii: "=") else { throw TomlError("expected = in inline table") }
            reader.i += 1
            table.set(key, try reader.value())
        }
        return .table(table)
    }

    /// A boolean, date-time or number: the text up to the next delimiter.
    mutating func scalar() throws -> TomlValue {
        let start = i
        while !atEnd && !" \t\r\n,]}#".utf8.contains(peek) { i += 1 }
        let token = String(decoding: s[start..<i], as: UTF8.self)
        if token == "true" { return .boolean(true) }
        if token == "false" { return .boolean(false) }
        if let t = try dateTime(token) { return .dateTime(t) }
        let digits = token.replacingOccurrences(of: "_", with: "")
        if digits.contains(where: { ".eEin".contains($0) }) {
            if let d = Double(digits) { return .float(d) }
        } else if let n = Int64(digits) {
            return .integer(n)
        }
        throw TomlError("cannot read value \"\(token)\"")
    }

    /// `YYYY-MM-DDTHH:MM[:SS[.fraction]](Z|±HH:MM)` as nanoseconds since the epoch; nil
    /// when the token does not start like a date.
    func dateTime(_ token: String) throws -> Int64? {
        let c = Array(token.utf8)
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= c.count else { return nil }
            var v = 0
            for k in at..<at + count {
                guard c[k] >= UInt8(ascii: "0") && c[k] <= UInt8(ascii: "9") else { return nil }
                v = v * 10 + Int(c[k] - UInt8(ascii: "0"))
            }
            return v
        }
        guard c.count >= 10, c[4] == UInt8(ascii: "-"), let year = digits(0, 4) else { return nil }
        guard let month = digits(5, 2), c[7] == UInt8(ascii: "-"), let day = digits(8, 2), c.count >= 16,
              c[10] == UInt8(ascii: "T") || c[10] == UInt8(ascii: "t"), let hour = digits(11, 2),
              c[13] == UInt8(ascii: ":"), let minute = digits(14, 2)
        else { throw TomlError("not an offset date-time: \(token)") }
        var k = 16
        var second = 0
        var nanos: Int64 = 0
        if k < c.count && c[k] == UInt8(ascii: ":") {
            guard let s = digits(k + 1, 2) else { throw TomlError("bad seconds in \(token)") }
            second = s
            k += 3
            if k < c.count && c[k] == UInt8(ascii: ".") {
                k += 1
                var scale: Int64 = 100_000_000
                while k < c.count, let d = digits(k, 1) {
                    nanos += Int64(d) * scale
                    scale /= 10
                    k += 1
                }
            }
        }
        var offset = 0
        if k < c.count && (c[k] == UInt8(ascii: "Z") || c[k] == UInt8(ascii: "z")) {
            k += 1
        } else if k < c.count && (c[k] == UInt8(ascii: "+") || c[k] == UInt8(ascii: "-")),
                  let h = digits(k + 1, 2), k + 3 < c.count, c[k + 3] == UInt8(ascii: ":"), let m = digits(k + 4, 2)
        {
            offset = (c[k] == UInt8(ascii: "-") ? -1 : 1) * (h * 3600 + m * 60)
            k += 6
        } else {
            throw TomlError("a date-time without an offset: \(token)")
        }
        guard k == c.count else { throw TomlError("trailing text in date-time \(token)") }
        return utc(year, month, day, hour, minute, second) + nanos - Int64(offset) * 1_000_000_000
    }
}
