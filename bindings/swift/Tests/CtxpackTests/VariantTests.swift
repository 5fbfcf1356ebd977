// Item variants through the C ABI (docs/variants.md): the form placed, the Downgraded
// reason and its fields, the option, pruning, and invalid variants.
import XCTest

@testable import Ctxpack

final class VariantTests: XCTestCase {
    private func reflexiveGreedy(useVariants: Bool = true) throws -> Pipeline {
        try Pipeline(
            scorer: Scorer.reflexive(), slicer: Slicer.greedy(), placer: Placer.chronological(),
            useVariants: useVariants)
    }

    // Greedy takes the 10-token question first (density 0.05 against 0.009), leaving 40 of
    // 50: the 100-token log does not fit, its 20-token summary does.
    private func logAndQuestion() throws -> Items {
        try Items([
            Item(
                content: "<100 tokens of test log>", tokens: 100, futureRelevanceHint: 0.9,
                variants: [Variant(content: "3 tests fail: rounding off by one cent", tokens: 20, quality: 0.5)]),
            Item(content: "why did the build fail?", tokens: 10, futureRelevanceHint: 0.5),
        ])
    }

    func testALongItemIsPlacedAsItsSummary() throws {
        let budget = try Budget(maxTokens: 50, targetTokens: 50)
        let items = try logAndQuestion()
        let result = try reflexiveGreedy().run(items, budget: budget, trace: .stage)
        XCTAssertEqual(result.indices, [0, 1])
        XCTAssertEqual(result.forms, [1, 0])
        XCTAssertEqual(result.reasons, [.downgraded, .scored])
        let report = try XCTUnwrap(result.report)
        let e = report.included[0]
        XCTAssertEqual(e.reason, .downgraded)
        XCTAssertEqual(e.form, 1)
        XCTAssertEqual(e.fullTokens, 100)
        XCTAssertEqual(e.chosenTokens, 20)
        XCTAssertEqual(e.availableTokens, 20)  // 50 - (20 + 10); the full form needs 80 more
        XCTAssertEqual(e.cause, .budgetExceeded)
        XCTAssertEqual(e.score, 0.9, accuracy: 1e-12)
        XCTAssertEqual(report.included[1].cause, DowngradeCause.none)
        XCTAssertTrue(report.json.contains(#""reason":"Downgraded","form":1,"full_tokens":100"#), report.json)

        let dropped = try reflexiveGreedy(useVariants: false).run(items, budget: budget)
        XCTAssertEqual(dropped.indices, [1])
        XCTAssertEqual(dropped.forms, [0])
    }

    func testVariantsNotCheaperThanTheItemArePruned() throws {
        let item = Item(
            content: "the item", tokens: 100, futureRelevanceHint: 0.5,
            variants: [
                Variant(content: "longer", tokens: 150, quality: 0.9),
                Variant(content: "summary", tokens: 20, quality: 0.5),
                Variant(content: "same length, less", tokens: 100, quality: 0.7),
            ])
        let result = try reflexiveGreedy().run(
            Items([item]), budget: Budget(maxTokens: 500, targetTokens: 500), trace: .stage)
        let report = try XCTUnwrap(result.report)
        XCTAssertEqual(
            report.prunedForms,
            [PrunedForm(index: 0, form: 1, dominatedBy: 0), PrunedForm(index: 0, form: 3, dominatedBy: 0)])
        XCTAssertEqual(result.forms, [0])
    }

    func testInvalidVariantsAreRejected() throws {
        let rows: [(Variant, String)] = [
            (Variant(content: "stub", tokens: 2, quality: .nan), "form 1: quality must be in (0, 1], got NaN"),
            (Variant(content: "stub", tokens: 2, quality: 0), "quality must be in (0, 1], got 0"),
            (Variant(content: "stub", tokens: 2, quality: 1.5), "quality must be in (0, 1], got 1.5"),
            (Variant(content: "", tokens: 2, quality: 0.5), "form 1: content must not be empty"),
            (Variant(content: "stub", tokens: -1, quality: 0.5), "tokens must be >= 0, got -1"),
        ]
        for (variant, message) in rows {
            let items = try Items()
            let list = [
                Item(content: "fine", tokens: 5), Item(content: "log", tokens: 100, variants: [variant]),
            ]
            XCTAssertThrowsError(try items.append(contentsOf: list)) { error in
                let e = error as? CtxpackError
                XCTAssertEqual(e?.status, .invalidArgument, message)
                XCTAssertTrue(e?.message.contains(message) == true, "\(String(describing: e))")
                XCTAssertTrue(e?.message.contains("item 1:") == true, "\(String(describing: e))")
            }
            XCTAssertEqual(try items.count, 0)
        }
    }
}
