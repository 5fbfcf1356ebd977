// swift-tools-version:6.0
// ctxpack for Swift (bindings/swift/README.md): a system-library target over the C ABI
// (CCtxpack) and a Swift wrapper (Ctxpack). The manifest is at the root of the repository
// because SwiftPM reads a dependency's manifest there:
//   .package(url: "<the repository's URL>", from: "0.1.0")
//   .product(name: "Ctxpack", package: "ctxpack")
// The sources stay in bindings/swift/. The library itself is the installed libctxpack
// (`make install`), found through pkg-config (ctxpack.pc).
import PackageDescription

let package = Package(
    name: "Ctxpack",
    products: [
        .library(name: "Ctxpack", targets: ["Ctxpack"]),
    ],
    targets: [
        // pkg-config's ctxpack.pc supplies the include and library paths of the installed
        // library; from a checkout, shim.h finds include/ and -Xlinker -L finds the library.
        .systemLibrary(name: "CCtxpack", path: "bindings/swift/Sources/CCtxpack", pkgConfig: "ctxpack"),
        .target(name: "Ctxpack", dependencies: ["CCtxpack"], path: "bindings/swift/Sources/Ctxpack"),
        .testTarget(
            name: "CtxpackTests", dependencies: ["Ctxpack", "CCtxpack"], path: "bindings/swift/Tests/CtxpackTests"),
    ]
)
