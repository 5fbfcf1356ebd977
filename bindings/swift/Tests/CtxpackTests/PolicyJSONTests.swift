// Policy and budget JSON with reading options: lenient reads and their warnings, strict
// reads, the .NET reading rules, a scorer registry whose closure scorer runs when a
// policy names it, and budget JSON round trips in .NET's form.
import XCTest

@testable import Ctxpack

final class PolicyJSONTests: XCTestCase {
    let policyWithTypo = #"{"scorers": [{"type": "recency", "weight": 1, "wieght": 2}], "futureOption": true}"#

    func testLenientReadReturnsWarnings() throws {
        let read = try Pipeline.read(policyJSON: policyWithTypo)
        let (p, warnings) = (read.pipeline, read.warnings)
        XCTAssertEqual(warnings, [
            JSONWarning(kind: .unknownProperty, path: "futureOption", message: "unknown property; ignored",
                        text: "futureOption: unknown property; ignored"),
            JSONWarning(kind: .unknownProperty, path: "scorers[0].wieght", message: "unknown property; ignored",
                        text: "scorers[0].wieght: unknown property; ignored"),
        ])
        XCTAssertEqual(warnings[1].description, "scorers[0].wieght: unknown property; ignored")
        let items = try Items([dated("a", tokens: 1, days: 0)])
        XCTAssertEqual(try p.run(items, budget: Budget(maxTokens: 10, targetTokens: 10)).indices, [0])
        // A clean document has no warning, even read strictly.
        let clean = try Pipeline.read(policyJSON: #"{"scorers": [{"type": "recency", "weight": 1}]}"#,
                                      options: JSONReadOptions(strict: true))
        XCTAssertEqual(clean.warnings, [])
    }

    func testStrictReadFails() {
        assertThrows(.invalidPolicy, containing: "futureOption: unknown property") {
            _ = try Pipeline.read(policyJSON: policyWithTypo, options: JSONReadOptions(strict: true))
        }
    }

    func testDotNetReadingRules() throws {
        let doc = #"{"scorers": [{"weight": 1}, {"type": "kind", "weight": 1, "kindWeights": {"Message": 1, "message": 2}}]}"#
        let read = try Pipeline.read(policyJSON: doc)
        let (p, warnings) = (read.pipeline, read.warnings)
        XCTAssertEqual(warnings.map(\.kind), [.missingScorerType, .repeatedKind])
        XCTAssertEqual(warnings.map(\.path), ["scorers[0].type", "scorers[1].kindWeights.message"])
        let text = try p.policyJSON()
        XCTAssertTrue(text.contains(#"{"type":"recency","weight":1}"#), text)
        XCTAssertTrue(text.contains(#""kindWeights":{"Message":2}"#), text)
        assertThrows(.invalidPolicy, containing: "scorers[0].type: is required") {
            _ = try Pipeline.read(policyJSON: doc, options: JSONReadOptions(strict: true))
        }
    }

    func testRegistryRunsClosureScorer() throws {
        let calls = Locked(0)
        func runOnce() throws {
            let tracker = Tracker()
            let registry = try ScorerRegistry()
            try registry.register("semanticSimilarity") { items, index in
                _ = tracker
                calls.withLock { $0 += 1 }
                return Double(items[index].content.utf8.count) / 100
            }
            try registry.register("freshness", Scorer.recency())
            XCTAssertEqual(registry.names, ["semanticSimilarity", "freshness"])
            // Names compare case-insensitively.
            let doc = #"{"scorers": [{"type": "SEMANTICSIMILARITY", "weight": 1}]}"#
            let options = JSONReadOptions(strict: true, registry: registry)
            let read = try Pipeline.read(policyJSON: doc, options: options)
            let (p, warnings) = (read.pipeline, read.warnings)
            XCTAssertEqual(warnings, [])
            let items = try Items([
                dated("short", tokens: 10, days: 2), dated("a much longer one", tokens: 10, days: 0),
                dated("middling", tokens: 10, days: 1),
            ])
            let result = try p.run(items, budget: Budget(maxTokens: 20, targetTokens: 20))
            XCTAssertGreaterThan(calls.current, 0, "the closure scorer was not called")
            // The two longest contents fit, placed chronologically, with the closure's scores.
            XCTAssertEqual(result.indices, [1, 2])
            XCTAssertEqual(result.scores, [0.17, 0.08])
            // Without the registry the name is unknown; an unknown name lists the registered ones.
            XCTAssertThrowsError(try Pipeline.read(policyJSON: doc)) { error in
                let e = error as? CtxpackError
                XCTAssertEqual(e?.status, .invalidPolicy)
                XCTAssertFalse(e?.message.contains("registered:") ?? true, "\(error)")
            }
            assertThrows(.invalidPolicy, containing: "registered: semanticSimilarity, freshness") {
                _ = try Pipeline.read(policyJSON: #"{"scorers": [{"type": "vibes", "weight": 1}]}"#, options: options)
            }
            XCTAssertEqual(Tracker.alive.current, 1)
        }
        try runOnce()
        // The registry and the pipeline are gone: the library released the closure box.
        XCTAssertEqual(Tracker.alive.current, 0)
    }

    /// The closure lives while a pipeline built from a policy naming it holds the scorer,
    /// after the registry is gone.
    func testRegisteredClosureOutlivesTheRegistry() throws {
        func build() throws -> Pipeline {
            let registry = try ScorerRegistry()
            let tracker = Tracker()
            try registry.register("host") { _, _ in
                _ = tracker
                return 0.5
            }
            return try Pipeline.read(policyJSON: #"{"scorers": [{"type": "host", "weight": 1}]}"#,
                                     options: JSONReadOptions(registry: registry)).pipeline
        }
        var p: Pipeline? = try build()
        XCTAssertEqual(Tracker.alive.current, 1)
        let items = try Items([dated("a", tokens: 1, days: 0)])
        XCTAssertEqual(try p?.run(items, budget: Budget(maxTokens: 10, targetTokens: 10)).scores, [0.5])
        p = nil
        XCTAssertEqual(Tracker.alive.current, 0)
    }

    func testRegistryRejectsBadNames() throws {
        let registry = try ScorerRegistry()
        let recency = try Scorer.recency()
        for name in ["", "  ", "recency", "MetadataKey"] {
            assertThrows(.invalidArgument) { try registry.register(name, recency) }
        }
        XCTAssertEqual(registry.names, [])
    }

    // The first budget of .NET's round-trip tests, as .NET writes it.
    let dotnetBudget = #"{"maxTokens":8000,"targetTokens":6000,"outputReserve":1000,"reservedSlots":{"Message":100,"SystemPrompt":200},"estimationSafetyMarginPercent":10}"#
    let dotnetBudgetIndented = """
        {
          "maxTokens": 8000,
          "targetTokens": 6000,
          "outputReserve": 1000,
          "reservedSlots": {
            "Message": 100,
            "SystemPrompt": 200
          },
          "estimationSafetyMarginPercent": 10
        }
        """

    func testBudgetJSONRoundTrip() throws {
        let built = try Budget(maxTokens: 8000, targetTokens: 6000, outputReserve: 1000,
                               reservedSlots: ["Message": 100, "SystemPrompt": 200], estimationSafetyMarginPercent: 10)
        XCTAssertEqual(try built.json(), dotnetBudget)
        XCTAssertEqual(try built.json(pretty: true), dotnetBudgetIndented)
        for text in [dotnetBudget, dotnetBudgetIndented] {
            let strictRead = try Budget.read(json: text, options: JSONReadOptions(strict: true))
            let (read, warnings) = (strictRead.budget, strictRead.warnings)
            XCTAssertEqual(warnings, [])
            XCTAssertEqual(try read.json(), dotnetBudget)
            XCTAssertEqual(try read.json(pretty: true), dotnetBudgetIndented)
        }
        // A budget read from JSON runs like one built in Swift.
        let items = try Items((0..<3).map { dated("m\($0)", tokens: 10, days: $0) })
        let p = try pipeline(Scorer.recency())
        let fromJSON = try Budget.read(json: #"{"maxTokens": 20, "targetTokens": 20}"#).budget
        XCTAssertEqual(try p.run(items, budget: fromJSON).indices,
                       try p.run(items, budget: Budget(maxTokens: 20, targetTokens: 20)).indices)
    }

    func testBudgetJSONWarningsAndErrors() throws {
        let read = try Budget.read(json: #"{"maxTokens": 100, "reservedSlots": {"Memory": 5, "memory": 0}, "x": 1}"#)
        let (b, warnings) = (read.budget, read.warnings)
        XCTAssertEqual(Set(warnings.map(\.kind)), [.unknownProperty, .missingBudgetField, .repeatedKind])
        XCTAssertEqual(warnings.count, 3)
        XCTAssertEqual(try b.json(),
                       #"{"maxTokens":100,"targetTokens":0,"outputReserve":0,"reservedSlots":{"Memory":0},"estimationSafetyMarginPercent":0}"#)
        let cases = [
            (#"{"maxTokens": 1000, "targetTokens": 2000}"#, "targetTokens: 2000 cannot exceed maxTokens (1000)"),
            (#"{"maxTokens": 10, "targetTokens": 5, "x": 1}"#, "x: unknown property"),
            (#"{"maxTokens": 10}"#, "targetTokens: is required"),
            (#"{"maxTokens": "#, "$: malformed JSON"),
        ]
        for (doc, want) in cases {
            assertThrows(.invalidBudget, containing: want) {
                _ = try Budget.read(json: doc, options: JSONReadOptions(strict: true))
            }
        }
    }
}
