// Uses the Swift binding as a package dependency, against the installed libctxpack. Prints
// one line naming the version of the loaded library; exits non-zero when anything is wrong.
import Ctxpack
import Foundation

struct Failure: Error, CustomStringConvertible {
    let description: String
}

func check() throws -> String {
    let all = [
        Item(content: "You are a helpful assistant.", tokens: 8, kind: "SystemPrompt", pinned: true),
        Item(content: "User: hello", tokens: 4, kind: "Message"),
        Item(content: "Assistant: hi, how can I help?", tokens: 9, kind: "Message"),
    ]
    let items = try Items(all)
    let pipeline = try Pipeline(scorer: try Scorer.kind(), slicer: try Slicer.greedy(), placer: try Placer.chronological())

    // Everything fits in a 100-token window, so everything is selected.
    let result = try pipeline.run(items, budget: try Budget(maxTokens: 100, targetTokens: 100))
    guard result.indices.count == all.count else {
        throw Failure(description: "selected \(result.indices) of \(all.count) items that all fit")
    }
    // The pinned item alone exceeds a 5-token window: the library's status reaches Swift.
    do {
        _ = try pipeline.run(items, budget: try Budget(maxTokens: 5, targetTokens: 5))
        throw Failure(description: "a pinned item over the budget was accepted")
    } catch let error as CtxpackError where error.status == .pinnedExceedsBudget {
    }
    return "ctxpack \(Library.version): \(result.indices.count) of \(all.count) items selected"
}

do {
    print(try check())
} catch {
    print("consumer: \(error)")
    exit(1)
}
