// swift-tools-version:6.0
// A package outside the ctxpack repository that depends on it, as an application would
// (tests/packaging/swift/consumer.sh builds and runs it inside the Swift root, with the
// repository at ../ctxpack: a path dependency, which SwiftPM reads like the root of a URL
// dependency's checkout).
import PackageDescription

let package = Package(
    name: "Consumer",
    dependencies: [
        .package(path: "../ctxpack"),
    ],
    targets: [
        .executableTarget(name: "Consumer", dependencies: [.product(name: "Ctxpack", package: "ctxpack")]),
    ]
)
