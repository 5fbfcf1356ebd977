// swift-tools-version:6.0
// ctxpack for Swift: a system-library target over the C ABI (CCtxpack) and a thin Swift
// wrapper (Ctxpack). See README.md for finding the header and the library.
import PackageDescription

let package = Package(
    name: "Ctxpack",
    products: [
        .library(name: "Ctxpack", targets: ["Ctxpack"]),
    ],
    targets: [
        // After `make install`, pkg-config's ctxpack.pc supplies the include and library
        // paths; from a checkout, shim.h finds include/ and -Xlinker -L finds the library.
        .systemLibrary(name: "CCtxpack", path: "Sources/CCtxpack", pkgConfig: "ctxpack"),
        .target(name: "Ctxpack", dependencies: ["CCtxpack"]),
        .testTarget(name: "CtxpackTests", dependencies: ["Ctxpack", "CCtxpack"]),
    ]
)
