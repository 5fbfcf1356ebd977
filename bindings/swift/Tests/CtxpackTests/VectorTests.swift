// The pipeline conformance vectors through the Swift API: every `*.toml` of the vector
// folders is read (Toml.swift), its components are built with the wrapper, run, and
// compared with the vector's expectations (format: shared/spec/08-conformance-format.md,
// §6.4 and §7.4–7.5, plus the project runner's extensions `expect_run_error`,
// `[expected.overflow]`, shortfalls, reserved slots and the safety margin, documented at
// the top of tests/conformance.rs). Expected values come only from the vector files.
//
// Folders: CTXPACK_VECTOR_DIRS (colon-separated; run.sh sets it when its own
// CTXPACK_VECTOR_DIRS is set), otherwise tests/vectors/pipeline of this checkout and
// ../shared/conformance/{required,optional}/pipeline beside it, those that exist.
import CCtxpack
import Foundation
import XCTest

@testable import Ctxpack

struct VectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - typed access to a vector's tables

extension TomlTable {
    func value(_ key: String) throws -> TomlValue {
        guard let v = self[key] else { throw VectorError("missing key '\(key)'") }
        return v
    }
    /// The value of `key` read by `read` (a property of TomlValue such as `\.string`); a
    /// missing key or a value of another type is an error.
    func required<T>(_ key: String, _ read: (TomlValue) -> T?) throws -> T {
        guard let typed = read(try value(key)) else { throw VectorError("'\(key)' has the wrong type") }
        return typed
    }
    func string(_ key: String) throws -> String { try required(key, \.string) }
    func integer(_ key: String) throws -> Int64 { try required(key, \.integer) }
    func number(_ key: String) throws -> Double { try required(key, \.number) }
    func table(_ key: String) throws -> TomlTable { try required(key, \.table) }
    /// An array of tables (an empty inline array counts); missing is empty.
    func tables(_ key: String) throws -> [TomlTable] {
        guard let v = self[key] else { return [] }
        guard let elements = v.array else { throw VectorError("'\(key)' is not an array") }
        return try elements.map {
            guard let t = $0.table else { throw VectorError("'\(key)' holds a non-table") }
            return t
        }
    }
    /// As `required`, but nil when the key is missing.
    func optional<T>(_ key: String, _ read: (TomlValue) -> T?) throws -> T? {
        self[key] == nil ? nil : try required(key, read)
    }
    func bool(_ key: String, default value: Bool) throws -> Bool { try optional(key, \.boolean) ?? value }
}

// MARK: - building the inputs

/// Seconds (a float) as whole nanoseconds, rounded, as the project's runner converts.
func nanoseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1e9).rounded()) }

func vectorItem(_ t: TomlTable) throws -> Item {
    var metadata: [String: String] = [:]
    if let m = t["metadata"]?.table {
        for key in m.keys { if let s = m[key]?.string { metadata[key] = s } }
    }
    let tags: [String] = try (t["tags"]?.array ?? []).map {
        guard let s = $0.string else { throw VectorError("a tag is not a string") }
        return s
    }
    return Item(
        content: try t.string("content"), tokens: try t.integer("tokens"),
        kind: try t.optional("kind", \.string) ?? "", source: try t.optional("source", \.string) ?? "",
        priority: try t.optional("priority", \.integer), tags: tags, metadata: metadata, timestampNs: try t.optional("timestamp", \.dateTime),
        futureRelevanceHint: try t.optional("futureRelevanceHint", \.number),
        pinned: try t.bool("pinned", default: false), originalTokens: try t.optional("original_tokens", \.integer),
        group: try t.optional("group", \.string) ?? "")
}

func vectorBudget(_ b: TomlTable) throws -> Budget {
    var slots: [String: Int64] = [:]
    if let r = try b.optional("reserved_slots", \.table) {
        for kind in r.keys { slots[kind] = try r.integer(kind) }
    }
    return try Budget(
        maxTokens: b.integer("max_tokens"), targetTokens: b.integer("target_tokens"),
        outputReserve: b.optional("output_reserve", \.integer) ?? 0, reservedSlots: slots,
        estimationSafetyMarginPercent: b.optional("estimation_safety_margin_percent", \.number) ?? 0)
}

/// A scorer from its configuration table (which has its `type`).
func vectorScorer(_ config: TomlTable) throws -> Scorer {
    let type = try config.string("type")
    switch type {
    case "recency": return try Scorer.recency()
    case "priority": return try Scorer.priority()
    case "frequency": return try Scorer.frequency()
    case "reflexive": return try Scorer.reflexive()
    case "kind":
        if try config.bool("use_default_weights", default: false) || config["weights"] == nil { return try Scorer.kind() }
        var weights: [String: Double] = [:]
        for w in try config.tables("weights") { weights[try w.string("kind")] = try w.number("weight") }
        return try Scorer.kind(weights: weights)
    case "tag":
        var weights: [String: Double] = [:]
        for w in try config.tables("tag_weights") { weights[try w.string("tag")] = try w.number("weight") }
        return try Scorer.tag(weights: weights)
    case "composite": return try compositeScorer(config.tables("children"))
    case "scaled":
        // A plain name builds the inner scorer without configuration; a table configures it.
        let inner = try config.value("inner_scorer")
        if let name = inner.string { return try Scorer.scaled(vectorScorer(namedOnly(name))) }
        guard let table = inner.table else { throw VectorError("'inner_scorer' is neither a name nor a table") }
        return try Scorer.scaled(vectorScorer(table))
    case "metadata_trust":
        return try Scorer.metadataTrust(defaultScore: config.optional("default_score", \.number) ?? 0.5)
    case "metadata_key":
        return try Scorer.metadataKey(config.string("key"), equals: config.string("value"), boost: config.number("boost"))
    case "decay":
        let curveTable = try config.table("curve")
        let curve: DecayCurve
        switch try curveTable.string("type") {
        case "exponential": curve = .exponential(halfLife: .nanoseconds(nanoseconds(try curveTable.number("half_life_secs"))))
        case "window": curve = .window(maxAge: .nanoseconds(nanoseconds(try curveTable.number("max_age_secs"))))
        case "step":
            curve = .step(try curveTable.tables("windows").map {
                DecayWindow(maxAge: .nanoseconds(nanoseconds(try $0.number("max_age_secs"))), score: try $0.number("score"))
            })
        case let other: throw VectorError("unknown decay curve \(other)")
        }
        return try Scorer.decay(curve, fixedNowNs: config.required("reference_time", \.dateTime),
                                nullTimestampScore: config.optional("null_timestamp_score", \.number))
    default: throw VectorError("unknown scorer \(type)")
    }
}

func namedOnly(_ type: String) -> TomlTable {
    let t = TomlTable()
    t.set("type", .string(type))
    return t
}

/// A composite of entries, each its scorer's configuration plus a `weight`.
func compositeScorer(_ entries: [TomlTable]) throws -> Scorer {
    try Scorer.composite(entries.map { WeightedScorer(try vectorScorer($0), weight: try $0.number("weight")) })
}

func vectorSlicer(_ name: String, _ config: TomlTable) throws -> Slicer {
    let bucket = try config.optional("bucket_size", \.integer) ?? Int64(CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE)
    func inner(fallback: String?) throws -> Slicer {
        guard let value = config["inner_slicer"] else {
            guard let fallback = fallback else { throw VectorError("missing key 'inner_slicer'") }
            return try vectorSlicer(fallback, TomlTable())
        }
        if let name = value.string { return try vectorSlicer(name, TomlTable()) }
        guard let table = value.table else { throw VectorError("'inner_slicer' is neither a name nor a table") }
        return try vectorSlicer(table.string("type"), table)
    }
    func countEntries() throws -> [CountQuotaEntry] {
        try config.tables("entries").map {
            CountQuotaEntry(kind: try $0.string("kind"), requireCount: Int(try $0.integer("require_count")),
                            capCount: Int(try $0.integer("cap_count")))
        }
    }
    func scarcity() throws -> Scarcity {
        switch try config.optional("scarcity_behavior", \.string) ?? "degrade" {
        case "degrade": return .degrade
        case "throw": return .throw
        case let other: throw VectorError("unknown scarcity_behavior \(other)")
        }
    }
    switch name {
    case "greedy": return try Slicer.greedy()
    case "knapsack": return try Slicer.knapsack(bucketSize: bucket)
    case "quota":
        let quotas = try config.tables("quotas").map {
            QuotaEntry(kind: try $0.string("kind"), require: try $0.number("require"), cap: try $0.number("cap"))
        }
        return try Slicer.quota(quotas, inner: inner(fallback: nil))
    case "count_quota": return try Slicer.countQuota(countEntries(), inner: inner(fallback: "greedy"), scarcity: scarcity())
    case "count_constrained_knapsack":
        return try Slicer.countConstrainedKnapsack(countEntries(), bucketSize: bucket, scarcity: scarcity())
    default: throw VectorError("unknown slicer \(name)")
    }
}

func vectorPlacer(_ name: String) throws -> Placer {
    switch name {
    case "chronological": return try Placer.chronological()
    case "u-shaped": return try Placer.uShaped()
    default: throw VectorError("unknown placer \(name)")
    }
}

func vectorPipeline(_ config: TomlTable) throws -> Pipeline {
    // 08 §6.4: one entry is the scorer itself, more make a composite.
    let entries = try config.tables("scorers")
    let scorer = entries.count == 1 ? try vectorScorer(entries[0]) : try compositeScorer(entries)
    let overflow: OverflowStrategy
    switch try config.optional("overflow_strategy", \.string) ?? "throw" {
    case "throw": overflow = .throw
    case "truncate": overflow = .truncate
    case "proceed": overflow = .proceed
    case let other: throw VectorError("unknown overflow_strategy \(other)")
    }
    let groupValue: GroupValue
    switch try config.optional("group_value", \.string) ?? "sum" {
    case "sum": groupValue = .sum
    case "max": groupValue = .max
    case "mean": groupValue = .mean
    case let other: throw VectorError("unknown group_value \(other)")
    }
    return try Pipeline(
        scorer: scorer, slicer: vectorSlicer(config.string("slicer"), config), placer: vectorPlacer(config.string("placer")),
        deduplication: config.bool("deduplication", default: true), overflowStrategy: overflow, groupValue: groupValue,
        pinnedFirst: config.bool("pinned_first", default: false))
}

// MARK: - checking one vector

let inclusionNames: [InclusionReason: String] = [.scored: "Scored", .pinned: "Pinned", .zeroToken: "ZeroToken"]

/// Runs one pipeline vector; `problems` lists every difference from its expectations.
struct PipelineVector {
    let doc: TomlTable
    var contents: [String] = []
    var epsilon = 1e-9
    var problems: [String] = []

    init(_ text: String) throws { doc = try Toml.parse(text) }

    func names(_ indices: [Int]) -> [String] { indices.map { contents.indices.contains($0) ? contents[$0] : "#\($0)" } }

    mutating func expect<T: Equatable>(_ what: String, _ got: T, _ want: T) {
        if got != want { problems.append("\(what): got \(got), expected \(want)") }
    }

    mutating func expectScore(_ what: String, _ got: Double, _ want: Double) {
        if !(abs(got - want) < epsilon) { problems.append("\(what): got \(got), expected \(want)") }
    }

    mutating func run() throws {
        let test = try doc.table("test")
        guard try test.string("stage") == "pipeline" else { throw VectorError("not a pipeline vector") }
        let list = try doc.tables("items").map(vectorItem)
        contents = list.map(\.content)
        let items = try Items(list)
        let budget = try vectorBudget(doc.table("budget"))
        let pipeline = try vectorPipeline(doc.table("config"))
        if let tolerance = try doc.optional("tolerance", \.table) {
            epsilon = try tolerance.optional("score_epsilon", \.number) ?? epsilon
        }

        if try test.bool("expect_run_error", default: false) {
            if let result = try? pipeline.run(items, budget: budget) {
                problems.append("the run succeeded (\(names(result.indices))); the vector expects an error")
            }
            return
        }
        // The output comes from an untraced run.
        let result = try pipeline.run(items, budget: budget)
        expect("output", names(result.indices), try doc.tables("expected_output").map { try $0.string("content") })

        guard let expected = try doc.optional("expected", \.table) else { return }
        if let overflow = try expected.optional("overflow", \.table) {
            try checkOverflow(result, overflow)
        }
        if let diagnostics = try expected.optional("diagnostics", \.table) {
            let traced = try pipeline.run(items, budget: budget, trace: .item)
            expect("traced output", names(traced.indices), names(result.indices))
            try checkDiagnostics(try XCTUnwrap(traced.report), diagnostics)
        }
    }

    mutating func checkOverflow(_ result: RunResult, _ want: TomlTable) throws {
        let tokens = try want.integer("tokens_over_budget")
        guard tokens != 0 else {
            if let o = result.overflow { problems.append("overflow: \(o), none expected") }
            return
        }
        guard let overflow = result.overflow else { return problems.append("overflow: no event, expected one") }
        expect("overflow tokens", overflow.tokensOverBudget, tokens)
        if let contents = try want.optional("overflowing_contents", \.array) {
            expect("overflowing contents", names(overflow.items), try contents.map {
                guard let s = $0.string else { throw VectorError("'overflowing_contents' holds a non-string") }
                return s
            })
        }
    }

    mutating func checkDiagnostics(_ r: Report, _ want: TomlTable) throws {
        if let summary = try want.optional("summary", \.table) {
            if let n = try summary.optional("total_candidates", \.integer) {
                expect("total_candidates", Int64(r.summary.totalCandidates), n)
            }
            if let n = try summary.optional("total_tokens_considered", \.integer) {
                expect("total_tokens_considered", r.summary.totalTokensConsidered, n)
            }
        }
        if want["included"] != nil {
            let entries = try want.tables("included")
            expect("included count", r.included.count, entries.count)
            for (k, (got, e)) in zip(r.included, entries).enumerated() {
                expect("included[\(k)] content", names([got.index])[0], try e.string("content"))
                expectScore("included[\(k)] score", got.score, try e.number("score_approx"))
                expect("included[\(k)] reason", inclusionNames[got.reason] ?? "?", try e.string("inclusion_reason"))
            }
        }
        if want["excluded"] != nil {
            let entries = try want.tables("excluded")
            expect("excluded count", r.excluded.count, entries.count)
            for (k, (got, e)) in zip(r.excluded, entries).enumerated() {
                try checkExcluded("excluded[\(k)] ", got, e)
            }
        }
        if want["shortfalls"] != nil {
            let entries = try want.tables("shortfalls")
            expect("shortfall count", r.shortfalls.count, entries.count)
            for (k, (got, e)) in zip(r.shortfalls, entries).enumerated() {
                expect("shortfall[\(k)] kind", got.kind, try e.string("kind"))
                expect("shortfall[\(k)] required_count", Int64(got.requiredCount), try e.integer("required_count"))
                expect("shortfall[\(k)] satisfied_count", Int64(got.satisfiedCount), try e.integer("satisfied_count"))
            }
        }
        if want["groups"] != nil {
            let entries = try want.tables("groups")
            expect("group count", r.groups.count, entries.count)
            for (k, (got, e)) in zip(r.groups, entries).enumerated() {
                try checkGroup("groups[\(k)] ", got, e)
            }
        }
    }

    /// The group listing: key, members (contents) and decision always; tokens, stage,
    /// member, pinned_by and partial_selection when the vector gives them.
    mutating func checkGroup(_ at: String, _ got: GroupEntry, _ e: TomlTable) throws {
        let stageNames: [PipelineStage: String] = [
            .classify: "Classify", .score: "Score", .deduplicate: "Deduplicate", .slice: "Slice", .place: "Place",
        ]
        expect(at + "key", got.key, try e.string("key"))
        expect(at + "members", names(got.members), try (e["members"]?.array ?? []).map {
            guard let s = $0.string else { throw VectorError("'members' holds a non-string") }
            return s
        })
        expect(at + "decision", got.decision == .excluded ? "Excluded" : got.decision == .included ? "Included" : "?",
               try e.string("decision"))
        if let n = try e.optional("tokens", \.integer) { expect(at + "tokens", got.tokens, n) }
        if let s = try e.optional("stage", \.string) { expect(at + "stage", got.stage.flatMap { stageNames[$0] } ?? "(none)", s) }
        if let m = try e.optional("member", \.string) { expect(at + "member", got.memberIndex.map { names([$0])[0] } ?? "(none)", m) }
        if let p = try e.optional("pinned_by", \.string) { expect(at + "pinned_by", got.pinnedBy.map { names([$0])[0] } ?? "(none)", p) }
        expect(at + "partial_selection", got.partialSelection, try e.bool("partial_selection", default: false))
    }

    /// The reason's own fields: the TOML names are the wire names (08 §7.5).
    mutating func checkExcluded(_ at: String, _ got: ExcludedEntry, _ e: TomlTable) throws {
        expect(at + "content", names([got.index])[0], try e.string("content"))
        expectScore(at + "score", got.score, try e.number("score_approx"))
        expect(at + "reason", got.name, try e.string("exclusion_reason"))
        for key in e.keys where !["content", "score_approx", "exclusion_reason"].contains(key) {
            let field = at + key
            switch key {
            case "tokens": expect(field, got.tokens, try e.integer(key))
            case "item_tokens": expect(field, got.itemTokens, try e.integer(key))
            case "available_tokens": expect(field, got.availableTokens, try e.integer(key))
            // QuotaCapExceeded's cap, or CountCapExceeded's count cap.
            case "cap": expect(field, got.reason == .countCapExceeded ? Int64(got.countCap) : got.cap, try e.integer(key))
            case "count": expect(field, Int64(got.count), try e.integer(key))
            case "actual": expect(field, got.actual, try e.integer(key))
            case "score": expectScore(field, got.reasonScore, try e.number(key))  // ScoredTooLow
            case "threshold": expectScore(field, got.threshold, try e.number(key))
            case "deduplicated_against": expect(field, got.deduplicatedAgainst, try e.string(key))
            case "displaced_by": expect(field, got.displacedBy, try e.string(key))
            case "displaced_by_kind": expect(field, got.displacedByKind, try e.string(key))
            case "kind": expect(field, got.kind, try e.string(key))
            case "filter_name": expect(field, got.filterName, try e.string(key))
            case "group": expect(field, got.group, try e.string(key))
            case "member_index": expect(field, Int64(got.memberIndex), try e.integer(key))
            case "member_content": expect(field, got.memberContent, try e.string(key))
            case "member_reason": expect(field, got.memberReason, try e.string(key))
            default: problems.append("\(field): a field this runner does not know")
            }
        }
    }
}

// MARK: - the test

final class VectorTests: XCTestCase {
    func vectorFolders() -> [URL] {
        if let dirs = ProcessInfo.processInfo.environment["CTXPACK_VECTOR_DIRS"], !dirs.isEmpty {
            return dirs.split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        }
        let shared = repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/conformance")
        return [repositoryRoot.appendingPathComponent("tests/vectors/pipeline"),
                repositoryRoot.appendingPathComponent("tests/vectors/groups"),
                shared.appendingPathComponent("required/pipeline"), shared.appendingPathComponent("optional/pipeline")]
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// The vector files of a folder: every `.toml`, except in tests/vectors/groups, which
    /// mixes stages and whose pipeline vectors are named `pipeline-*.toml`.
    func vectorFiles(_ folder: URL) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".toml") }.sorted()
        return folder.lastPathComponent == "groups" ? names.filter { $0.hasPrefix("pipeline-") } : names
    }

    func testPipelineVectors() throws {
        var ran = 0
        for folder in vectorFolders() {
            for name in try vectorFiles(folder) {
                let path = folder.appendingPathComponent(name).path
                ran += 1
                do {
                    var vector = try PipelineVector(String(contentsOfFile: path, encoding: .utf8))
                    try vector.run()
                    if vector.problems.isEmpty {
                        print("ok   \(path)")
                    } else {
                        XCTFail("\(path): " + vector.problems.joined(separator: "; "))
                    }
                } catch {
                    XCTFail("\(path): \(error)")
                }
            }
        }
        print("\(ran) pipeline vectors from \(vectorFolders().map(\.path))")
        XCTAssertGreaterThanOrEqual(ran, 3, "too few pipeline vectors found")
    }

    /// The reader itself, on the forms the vectors use.
    func testTomlReader() throws {
        let doc = try Toml.parse(#"""
            # comment
            [test]
            name = "a \"quoted\" name \u00e9" # trailing comment
            literal = 'C:\path'
            [budget]
            max_tokens = 1_000
            margin = 2.5
            flag = true
            slots = { Memory = 50, "odd key" = -1 }
            [[items]]
            content = "x"
            timestamp = 2024-03-01T12:30Z
            tags = [
                "a", # first
                "b",
            ]
            [[items]]
            content = "y"
            timestamp = 2024-03-01T12:30:05.25+01:00
            [items.metadata]
            k = "v"
            [[expected.diagnostics.included]]
            content = "x"
            """#)
        let test = try doc.table("test")
        XCTAssertEqual(try test.string("name"), "a \"quoted\" name é")
        XCTAssertEqual(try test.string("literal"), #"C:\path"#)
        let budget = try doc.table("budget")
        XCTAssertEqual(try budget.integer("max_tokens"), 1000)
        XCTAssertEqual(try budget.number("margin"), 2.5)
        XCTAssertEqual(try budget.number("max_tokens"), 1000)
        XCTAssertEqual(try budget.bool("flag", default: false), true)
        XCTAssertEqual(try budget.table("slots").integer("Memory"), 50)
        XCTAssertEqual(try budget.table("slots").integer("odd key"), -1)
        let items = try doc.tables("items")
        XCTAssertEqual(items.count, 2)
        XCTAssertEqual(items[0]["timestamp"]?.dateTime, utc(2024, 3, 1, 12, 30))
        XCTAssertEqual(items[0]["tags"]?.array?.compactMap(\.string), ["a", "b"])
        XCTAssertEqual(items[1]["timestamp"]?.dateTime, utc(2024, 3, 1, 11, 30, 5) + 250_000_000)
        XCTAssertEqual(try items[1].table("metadata").string("k"), "v")
        XCTAssertEqual(try doc.table("expected").table("diagnostics").tables("included").count, 1)
        XCTAssertThrowsError(try Toml.parse("x = 2024-03-01T12:30"))  // no offset
        XCTAssertThrowsError(try Toml.parse("x = \"open"))
        XCTAssertThrowsError(try Toml.parse("x = 1 2"))
        XCTAssertThrowsError(try Toml.parse("x = 1\n[x]"))
    }
}
