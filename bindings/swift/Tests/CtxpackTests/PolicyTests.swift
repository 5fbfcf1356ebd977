// Presets and policies in JSON.
import XCTest

@testable import Ctxpack

final class PolicyTests: XCTestCase {
    func testPresetsRoundTripThroughPolicyJSON() throws {
        XCTAssertEqual(Pipeline.presets.count, 7)
        XCTAssertEqual(Pipeline.presets.first, "Chat")
        let items = try Items((0..<4).map { Item(content: "m\($0)", tokens: 10, timestampNs: utc(2024, 1, 1, $0)) })
        let budget = try Budget(maxTokens: 1000, targetTokens: 25)
        for name in Pipeline.presets {
            let preset = try Pipeline(preset: name)
            let again = try Pipeline(policyJSON: preset.policyJSON(pretty: true))
            XCTAssertEqual(try preset.run(items, budget: budget).indices, try again.run(items, budget: budget).indices)
            XCTAssertEqual(try preset.policyJSON(), try again.policyJSON())
        }
        // Preset names in any ASCII case, with or without separators.
        XCTAssertEqual(try Pipeline(preset: "code_review").policyJSON(), try Pipeline(preset: "Code-Review").policyJSON())
        let custom = try pipeline(Scorer.custom { _, _ in 1 })
        assertThrows(.invalidPolicy) { _ = try custom.policyJSON() }
    }

    func testPolicyErrorsNameTheJSONPath() throws {
        assertThrows(.invalidPolicy) { _ = try Pipeline(policyJSON: "{") }
        assertThrows(.invalidPolicy) { _ = try Pipeline(policyJSON: #"{"scorers": []}"#) }
        assertThrows(.invalidArgument) { _ = try Pipeline(preset: "no such preset") }
        let chat = try Pipeline(preset: "chat").policyJSON()
        let broken = chat.replacingOccurrences(of: "\"greedy\"", with: "\"grady\"")
        XCTAssertNotEqual(broken, chat, "the chat preset no longer uses the greedy slicer: pick another word")
        assertThrows(.invalidPolicy, containing: "slicerType") { _ = try Pipeline(policyJSON: broken) }
    }
}
