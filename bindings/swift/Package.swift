// swift-tools-version:5.5
// ctxpack for Swift: a system-library target over the C ABI (CCtxpack) and a thin Swift
// wrapper (Ctxpack). libctxpack must be on the linker's search path: see README.md.
import PackageDescription

let package = Package(
    name: "Ctxpack",
    products: [
        .library(name: "Ctxpack", targets: ["Ctxpack"]),
    ],
    targets: [
        .systemLibrary(name: "CCtxpack", path: "Sources/CCtxpack"),
        .target(name: "Ctxpack", dependencies: ["CCtxpack"]),
        .testTarget(name: "CtxpackTests", dependencies: ["Ctxpack", "CCtxpack"]),
    ]
)
