import CCtxpack

// Policy and budget JSON with reading options (docs/policy-json.md): lenient or strict
// reading with the warnings of a lenient read, host scorers registered under type names,
// and the JSON form of budgets.

/// What a lenient read of policy or budget JSON did instead of failing. A struct rather
/// than an enum so that a kind added by a newer library still has a value.
public struct JSONWarningKind: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// A property this version does not know (or a wrongly-cased name) was ignored.
    public static let unknownProperty = JSONWarningKind(rawValue: 1)
    /// A scorer entry without "type" was read as "recency", as .NET reads it.
    public static let missingScorerType = JSONWarningKind(rawValue: 2)
    /// A "kindWeights" or "reservedSlots" key repeated an earlier kind with other letter
    /// case; the last value was kept under the first spelling.
    public static let repeatedKind = JSONWarningKind(rawValue: 3)
    /// A budget without "maxTokens" or "targetTokens" had it read as 0.
    public static let missingBudgetField = JSONWarningKind(rawValue: 4)
}

/// One warning of a lenient read.
public struct JSONWarning: Hashable, Sendable, CustomStringConvertible {
    public let kind: JSONWarningKind
    /// The JSON path concerned (`scorers[0].wieght`; `$` for the document).
    public let path: String
    /// What the reader did (`unknown property; ignored`).
    public let message: String
    /// `path`, `": "` and `message`: the line to show a user.
    public let text: String

    public var description: String { text }
}

/// How `Pipeline.read(policyJSON:options:)` and `Budget.read(json:options:)` read their
/// document. The defaults read leniently, with the built-in scorer types only.
public struct JSONReadOptions: Sendable {
    /// Each case a lenient read reports as a warning is an error instead
    /// (`Status.invalidPolicy`, or `Status.invalidBudget` for a budget).
    public var strict: Bool
    /// The host scorer types a policy may name (nil: only the built-in types). Budgets
    /// ignore it.
    public var registry: ScorerRegistry?

    public init(strict: Bool = false, registry: ScorerRegistry? = nil) {
        self.strict = strict
        self.registry = registry
    }
}

/// Host scorers registered under type names, so that a policy entry
/// `{"type": "<name>", "weight": w}` runs them. Names compare ASCII case-insensitively;
/// registering a name again replaces the earlier scorer. The library makes every call on
/// a registry thread-safe, `register` included (hence `@unchecked Sendable`).
public final class ScorerRegistry: @unchecked Sendable {
    let handle: OpaquePointer

    public init() throws { handle = try create { ctxpack_scorer_registry_new($0, $1) } }
    deinit { ctxpack_scorer_registry_free(handle) }

    /// Registers `scorer` (a custom one, e.g. `Scorer.custom { ... }`, or a built-in one)
    /// under the type name `name`. The registry keeps its own reference; a closure's
    /// captures are released when the registry and every pipeline built from a policy
    /// naming it are gone. A blank name or a built-in type's name is
    /// `Status.invalidArgument`.
    public func register(_ name: String, _ scorer: Scorer) throws {
        let arena = CArena()
        let cName = arena.str(name)
        try withExtendedLifetime((arena, scorer)) {
            try call { ctxpack_scorer_registry_add(handle, cName, scorer.handle, $0) }
        }
    }

    /// Registers a per-item closure scorer (see `Scorer.custom`) under `name`.
    public func register(_ name: String, score: @escaping ScoreItemClosure) throws {
        try register(name, Scorer.custom(score))
    }

    /// The registered names, in registration order.
    public var names: [String] {
        var count = 0
        guard ctxpack_scorer_registry_count(handle, &count) == 0 else { return [] }
        return (0..<count).map { i in
            var name = ctxpack_str(ptr: nil, len: 0)
            _ = ctxpack_scorer_registry_name(handle, i, &name)  // cannot fail below the count
            return string(name)
        }
    }
}

extension ctxpack_json_read_options: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_json_read_options_init(v, n) }
}
extension ctxpack_json_warning: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_json_warning_init(v, n) }
}

/// Runs a JSON reader `read(options, out, warnings, error)` with `options` and returns
/// the new handle with its warnings (the warnings handle is freed here; the new handle
/// too, with `free`, when reading the warnings fails).
private func readJSON(
    _ options: JSONReadOptions, free: (OpaquePointer) -> Void,
    _ read: (UnsafePointer<ctxpack_json_read_options>, UnsafeMutablePointer<OpaquePointer?>,
             UnsafeMutablePointer<OpaquePointer?>, UnsafeMutablePointer<OpaquePointer?>) -> Int32
) throws -> (OpaquePointer, [JSONWarning]) {
    var o = ctxpack_json_read_options.sized()
    o.strict = flag(options.strict)
    o.registry = options.registry?.handle
    var raw: OpaquePointer? = nil
    let handle = try withExtendedLifetime(options.registry) { try create { read(&o, $0, &raw, $1) } }
    defer { ctxpack_json_warnings_free(raw) }
    do {
        return (handle, try readWarnings(raw))
    } catch {
        free(handle)
        throw error
    }
}

/// The warnings of a warnings handle, in document order.
private func readWarnings(_ raw: OpaquePointer?) throws -> [JSONWarning] {
    var count = 0
    try check(ctxpack_json_warnings_count(raw, &count), nil, "ctxpack_json_warnings_count")
    var warnings: [JSONWarning] = []
    for i in 0..<count {
        var w = ctxpack_json_warning.sized()
        try call { ctxpack_json_warnings_entry(raw, i, &w, $0) }
        warnings.append(JSONWarning(kind: JSONWarningKind(rawValue: w.kind), path: string(w.path),
                                    message: string(w.message), text: string(w.text)))
    }
    return warnings
}

/// A pipeline read from policy JSON, and what a lenient read did instead of failing.
public struct PolicyRead: Sendable {
    public let pipeline: Pipeline
    /// Empty for a clean document.
    public let warnings: [JSONWarning]
}

/// A budget read from its JSON form, and what a lenient read did instead of failing.
public struct BudgetRead: Sendable {
    public let budget: Budget
    /// Empty for a clean document.
    public let warnings: [JSONWarning]
}

extension Pipeline {
    /// A pipeline from a policy in JSON read with `options`, and the warnings of a lenient
    /// read (empty for a clean document). Errors are those of `init(policyJSON:)`; in strict
    /// mode each warning case is `Status.invalidPolicy` instead. An unknown scorer type's
    /// message lists the built-in and then the registered names.
    public static func read(policyJSON json: String, options: JSONReadOptions = JSONReadOptions()) throws
        -> PolicyRead
    {
        let arena = CArena()
        let cJSON = arena.str(json)
        let (handle, warnings) = try withExtendedLifetime(arena) {
            try readJSON(options, free: ctxpack_pipeline_free) { ctxpack_pipeline_new_policy_json_with(cJSON, $0, $1, $2, $3) }
        }
        return PolicyRead(pipeline: Pipeline(handle: handle), warnings: warnings)
    }
}

extension Budget {
    /// A budget from the JSON form of the .NET library (`maxTokens`, `targetTokens`,
    /// `outputReserve`, `reservedSlots`, `estimationSafetyMarginPercent`) read with
    /// `options` (its registry is not used), and the warnings of a lenient read. Every
    /// failure is `Status.invalidBudget`, with the JSON path first in the message.
    public static func read(json: String, options: JSONReadOptions = JSONReadOptions()) throws -> BudgetRead {
        let arena = CArena()
        let cJSON = arena.str(json)
        let (handle, warnings) = try withExtendedLifetime(arena) {
            try readJSON(JSONReadOptions(strict: options.strict), free: ctxpack_budget_free) {
                ctxpack_budget_new_json(cJSON, $0, $1, $2, $3)
            }
        }
        return BudgetRead(budget: Budget(handle: handle), warnings: warnings)
    }

    /// The budget in the JSON form of the .NET library, byte for byte what .NET writes:
    /// compact, or indented by two spaces when `pretty`.
    public func json(pretty: Bool = false) throws -> String {
        try takeString(create { ctxpack_budget_json(handle, flag(pretty), $0, $1) })
    }
}

/// The text of a `ctxpack_string` the library created, which is freed.
func takeString(_ text: OpaquePointer) throws -> String {
    defer { ctxpack_string_free(text) }
    var value = ctxpack_str(ptr: nil, len: 0)
    try check(ctxpack_string_value(text, &value), nil, "ctxpack_string_value")
    return string(value)
}
