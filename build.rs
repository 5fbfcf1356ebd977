//! Generates the C header `include/ctxpack.h` from `src/ffi/` with cbindgen.
//!
//! The header is written into `OUT_DIR` first. The committed copy in `include/` is
//! rewritten only when its content differs, so a build from a read-only source tree (as
//! some packaging tools require) works whenever the committed header is current; if it is
//! stale and cannot be written, the build warns and CI's `git diff --exit-code include/`
//! (and the `ffi::tests::committed_header_is_current` test) catch it.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=include/ctxpack.h");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml must parse");
    let version = |key: &str| env::var(key).expect("cargo sets CARGO_PKG_VERSION_*");
    config.after_includes = Some(format!(
        "\n#define CTXPACK_VERSION_MAJOR {}\n#define CTXPACK_VERSION_MINOR {}\n\
         #define CTXPACK_VERSION_PATCH {}\n#define CTXPACK_VERSION_STRING \"{}\"",
        version("CARGO_PKG_VERSION_MAJOR"),
        version("CARGO_PKG_VERSION_MINOR"),
        version("CARGO_PKG_VERSION_PATCH"),
        version("CARGO_PKG_VERSION"),
    ));

    // Only the FFI module tree is parsed: the Rust API never reaches the header.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen failed to generate the header");
    let mut header = Vec::new();
    bindings.write(&mut header);

    let generated = out_dir.join("ctxpack.h");
    fs::write(&generated, &header).expect("write the header into OUT_DIR");

    let committed = crate_dir.join("include/ctxpack.h");
    if fs::read(&committed).ok().as_deref() != Some(header.as_slice()) {
        let written = fs::create_dir_all(crate_dir.join("include"))
            .and_then(|()| fs::write(&committed, &header));
        if let Err(e) = written {
            println!(
                "cargo:warning=include/ctxpack.h is stale and could not be updated ({e}); \
                 the fresh header is {}",
                generated.display()
            );
        }
    }
}
