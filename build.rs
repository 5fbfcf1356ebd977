//! Generates the C header `include/ctxpack.h` from `src/ffi/` with cbindgen.
//!
//! The header is written into `OUT_DIR` first. The committed copy in `include/` is
//! rewritten only when its content differs, so a build from a read-only source tree (as
//! some packaging tools require) works whenever the committed header is current; if it is
//! stale and cannot be written, the build warns and CI's `git diff --exit-code include/`
//! (and the `ffi::tests::committed_header_is_current` test) catch it.
//!
//! It also gives the shared library its soname, `libctxpack.so.MAJOR` (`set_soname`,
//! docs/packaging.md).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=include/ctxpack.h");
    set_soname(&out_dir);

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml must parse");
    let version = |key: &str| env::var(key).expect("cargo sets CARGO_PKG_VERSION_*");
    let number = |key: &str| -> u32 { version(key).parse().expect("a numeric version") };
    config.after_includes = Some(format!(
        "\n#define CTXPACK_VERSION_MAJOR {}\n#define CTXPACK_VERSION_MINOR {}\n\
         #define CTXPACK_VERSION_PATCH {}\n#define CTXPACK_VERSION_STRING \"{}\"\n\
         // MAJOR * 10000 + MINOR * 100 + PATCH; see ctxpack_version_number().\n\
         #define CTXPACK_VERSION_NUMBER {}",
        version("CARGO_PKG_VERSION_MAJOR"),
        version("CARGO_PKG_VERSION_MINOR"),
        version("CARGO_PKG_VERSION_PATCH"),
        version("CARGO_PKG_VERSION"),
        number("CARGO_PKG_VERSION_MAJOR") * 10000
            + number("CARGO_PKG_VERSION_MINOR") * 100
            + number("CARGO_PKG_VERSION_PATCH"),
    ));

    // Only the FFI module tree is parsed: the Rust API never reaches the header.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen failed to generate the header");
    let mut generated_text = Vec::new();
    bindings.write(&mut generated_text);
    // The initialiser macros need the struct definitions and belong inside the include
    // guard: they go just before its closing line.
    let text = String::from_utf8(generated_text).expect("cbindgen writes UTF-8");
    let guard_end = "#endif  /* CTXPACK_H */";
    let at = text
        .rfind(guard_end)
        .expect("the header ends with its include guard");
    let header = format!("{}{}\n\n{}", &text[..at], init_macros(), &text[at..]).into_bytes();

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

/// The structs that start with `size_t struct_size` (src/ffi/versioned.rs): each gets an
/// `_INIT` macro here and an `_init` function in src/ffi (a unit test checks both).
const VERSIONED_STRUCTS: &[&str] = &[
    "ctxpack_item_desc",
    "ctxpack_budget_desc",
    "ctxpack_pipeline_options",
    "ctxpack_run_options",
    "ctxpack_decay_config",
    "ctxpack_report_summary",
    "ctxpack_included_entry",
    "ctxpack_excluded_entry",
    "ctxpack_trace_event",
    "ctxpack_shortfall",
    "ctxpack_pruned_form",
    "ctxpack_variant_desc",
    "ctxpack_group_entry",
    "ctxpack_kind_quota_utilization",
    "ctxpack_json_read_options",
    "ctxpack_json_warning",
    "ctxpack_chat_options",
    "ctxpack_prefix_options",
    "ctxpack_prefix_reuse",
];

/// The `CTXPACK_<STRUCT>_INIT` initialisers: every field zero and `struct_size` set. C
/// uses a designated initialiser; C++ before C++20 has none, so there the macro is a
/// lambda that value-initialises the struct and sets `struct_size`.
fn init_macros() -> String {
    let mut c = String::new();
    let mut cxx = String::new();
    for ty in VERSIONED_STRUCTS {
        let name = format!("CTXPACK_{}_INIT", ty["ctxpack_".len()..].to_uppercase());
        c.push_str(&format!(
            "#define {name} {{ .struct_size = sizeof({ty}) }}\n"
        ));
        cxx.push_str(&format!(
            "#define {name} ([] {{ {ty} v_{{}}; v_.struct_size = sizeof v_; return v_; }}())\n"
        ));
    }
    format!(
        "// Initialisers of the versioned structs: every field zero and `struct_size` set.\n\
         //   ctxpack_item_desc d = CTXPACK_ITEM_DESC_INIT;\n\
         // Bindings call the matching ctxpack_<struct>_init(&x, sizeof x) instead.\n\
         #if defined(__cplusplus)\n{cxx}#else\n{c}#endif"
    )
}

/// Targets whose shared libraries are ELF files, where a soname applies.
const ELF_OSES: &[&str] = &[
    "linux",
    "android",
    "freebsd",
    "netbsd",
    "openbsd",
    "dragonfly",
    "illumos",
    "solaris",
];

/// On ELF platforms, links the cdylib with the soname `libctxpack.so.MAJOR` (MAJOR from
/// Cargo.toml; the policy is in docs/packaging.md), so programs record that name and an
/// installed `libctxpack.so.MAJOR.MINOR.PATCH` is found through it.
///
/// A program linked against the build tree (`-Ltarget/release -lctxpack`, as tests/c and
/// the bindings do) records the soname too, so the build tree gets the link an
/// installation has: `libctxpack.so.MAJOR -> libctxpack.so` in the directory that receives
/// the library (`OUT_DIR` is `<that directory>/build/ctxpack-<hash>/out`).
fn set_soname(out_dir: &Path) {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !ELF_OSES.contains(&os.as_str()) {
        return;
    }
    let major = env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets CARGO_PKG_VERSION_MAJOR");
    let soname = format!("libctxpack.so.{major}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");

    #[cfg(unix)]
    if let Some(artifact_dir) = out_dir.ancestors().nth(3) {
        let link = artifact_dir.join(&soname);
        if fs::read_link(&link).ok().as_deref() != Some(Path::new("libctxpack.so")) {
            let _ = fs::remove_file(&link);
            if let Err(e) = std::os::unix::fs::symlink("libctxpack.so", &link) {
                println!("cargo:warning=could not create {} ({e})", link.display());
            }
        }
    }
}
