//! `insert` on inputs as they come: any bytes (not UTF-8 is read losslessly and written back
//! byte for byte), host-only headers copied without parsing, symbolic links mirrored.

mod common;
use common::*;
use std::path::Path;

fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (rel, bytes) in files {
        let p = tmp.path().join("app").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    tmp
}

fn insert(tmp: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["insert", "app", "--out", "out"];
    args.extend(extra);
    run(tmp, &args)
}

#[test]
fn latin1_sources_are_instrumented_and_host_headers_copied_byte_for_byte() {
    let kernel: &[u8] =
        b"// \xa9 caf\xe9\n#include \"lat.h\"\n__global__ void k(int *a) { a[0] = 1; }\n";
    let host: &[u8] = b"// na\xefve host header\nint f(int x) { return x; }\n";
    let broken: &[u8] = b"// host only, not C++ tree-sitter reads\ntemplate <class T int g(;\n";
    let tmp = tree(&[("k.cu", kernel), ("lat.h", host), ("broken.h", broken)]);
    // `fail` too: neither the Latin-1 bytes nor a host-only header's syntax are errors.
    let o = insert(tmp.path(), &["--on-parse-error", "fail"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no warning expected");
    let out = tmp.path().join("out/tree");
    assert_eq!(std::fs::read(out.join("lat.h")).unwrap(), host);
    assert_eq!(std::fs::read(out.join("broken.h")).unwrap(), broken);
    let k = std::fs::read(out.join("k.cu")).unwrap();
    let at = k.windows(8).position(|w| w == b"#line 1\n").unwrap() + 8;
    assert!(
        k[at..].starts_with(b"// \xa9 caf\xe9\n"),
        "{}",
        String::from_utf8_lossy(&k)
    );
    assert!(String::from_utf8_lossy(&k).contains("a[0] = 1; WMFIX_FENCE_AT(0, a[0]);"));
}

#[test]
fn a_header_with_device_code_is_still_parsed_and_reported() {
    let broken: &[u8] = b"__device__ int g(int *p) { return p[0] +; }\n";
    let tmp = tree(&[("d.cuh.h", broken)]);
    let o = insert(tmp.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("d.cuh.h:1:"), "{}", stderr(&o));
}

#[test]
fn symlinks_are_mirrored_so_the_copy_builds_as_the_input() {
    let tmp = tree(&[
        (
            "k.cu",
            b"#include \"inc.cuh\"\n#include \"sub/up.cuh\"\n__global__ void k(int *a) { a[0] = v(); }\n",
        ),
        ("real/inc.cuh", b"__device__ int v() { return 1; }\n"),
    ]);
    let app = tmp.path().join("app");
    std::os::unix::fs::symlink("real/inc.cuh", app.join("inc.cuh")).unwrap();
    std::fs::create_dir(app.join("sub")).unwrap();
    std::os::unix::fs::symlink("../real/inc.cuh", app.join("sub/up.cuh")).unwrap();
    std::os::unix::fs::symlink("real", app.join("dir")).unwrap();
    let o = insert(tmp.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = tmp.path().join("out/tree");
    for link in ["inc.cuh", "sub/up.cuh", "dir"] {
        let meta = std::fs::symlink_metadata(out.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link} is not a link");
    }
    // The links reach the mirrored header, not the input's.
    let mirrored = std::fs::read_to_string(out.join("real/inc.cuh")).unwrap();
    assert_eq!(
        std::fs::read_to_string(out.join("inc.cuh")).unwrap(),
        mirrored
    );
    assert_eq!(
        std::fs::read_to_string(out.join("dir/inc.cuh")).unwrap(),
        mirrored
    );
    // The preprocessor finds every include in the mirror, as in the input.
    let o = nvcc_command(&out)
        .args(["-c", "nvcc -E k.cu -o /dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A `.cu` linked from outside the input (issue 28): it was mirrored as a link to the original,
/// so the build used it uninstrumented, silently. Now it is read through and instrumented; the
/// original stays as it was.
#[test]
fn a_source_linked_from_outside_the_input_is_instrumented_not_linked() {
    let tmp = tree(&[("main.cu", b"int main() { return 0; }\n")]);
    let outside = tmp.path().join("outside/k.cu");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    let kernel = "__global__ void k(int *a) { a[0] = 1; }\n";
    std::fs::write(&outside, kernel).unwrap();
    std::os::unix::fs::symlink(&outside, tmp.path().join("app/k.cu")).unwrap();
    let o = insert(tmp.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mirrored = tmp.path().join("out/tree/k.cu");
    let meta = std::fs::symlink_metadata(&mirrored).unwrap();
    assert!(meta.file_type().is_file(), "mirrored as a link");
    let text = std::fs::read_to_string(&mirrored).unwrap();
    assert!(text.contains("a[0] = 1; WMFIX_FENCE_AT("), "{text}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), kernel);
    assert!(
        std::fs::symlink_metadata(tmp.path().join("app/k.cu"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// Checks that `link` in the mirror is relative and reaches (with `file` inside it, for a
/// folder) a mirrored file holding a fence, never the input's own.
fn reaches_the_mirror(tree: &Path, link: &str, file: &str) {
    let at = tree.join(link);
    let target = std::fs::read_link(&at).unwrap_or_else(|e| panic!("{link}: {e}"));
    assert!(target.is_relative(), "{link} -> {}", target.display());
    let through = if file.is_empty() { at } else { at.join(file) };
    let reached = through.canonicalize();
    let reached = reached.unwrap_or_else(|e| panic!("{link} -> {}: {e}", target.display()));
    assert!(
        reached.starts_with(tree.canonicalize().unwrap()),
        "{link} -> {} reaches {}",
        target.display(),
        reached.display()
    );
    let text = std::fs::read_to_string(&reached).unwrap();
    assert!(text.contains("WMFIX_FENCE"), "{link}: {text}");
}

/// Issue 44: a link into the input spelt absolute (`k -> /abs/src/k`) kept pointing at the
/// original, unfenced file, and one up through the input's own name (`../src/k` from `src/`)
/// at nothing; the build compiled unfenced code or failed. Now both point into the mirror.
#[test]
fn links_into_the_input_point_into_the_mirror_however_spelt() {
    let header = b"__device__ void put(int *a) { a[0] = 1; }\n";
    let tmp = tree(&[("real/k.cuh", header), ("real/dir/d.cuh", header)]);
    let app = tmp.path().join("app").canonicalize().unwrap();
    let link = |target: &Path, at: &str| {
        let at = app.join(at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).unwrap();
    };
    link(&app.join("real/k.cuh"), "abs.cuh");
    link(&app.join("real/dir"), "absdir");
    link(Path::new("../../app/real/k.cuh"), "sub/up.cuh");
    link(Path::new("../app/real/dir"), "updir");
    let o = insert(tmp.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let out = tmp.path().join("out/tree");
    reaches_the_mirror(&out, "abs.cuh", "");
    reaches_the_mirror(&out, "sub/up.cuh", "");
    reaches_the_mirror(&out, "absdir", "d.cuh");
    reaches_the_mirror(&out, "updir", "d.cuh");
}

/// Issue 44: links outside the input are named in a warning where it matters: a CUDA file read
/// through and instrumented (its original stays unfenced), a folder the mirror links to as it
/// is. A host header read through unchanged and a data file say nothing.
#[test]
fn links_outside_the_input_are_named_in_a_warning() {
    let tmp = tree(&[(
        "k.cu",
        b"#include \"ext.cuh\"\n__global__ void k(int *a) { put(a); }\n",
    )]);
    let outside = tmp.path().join("outside");
    for (rel, text) in [
        ("ext.cuh", "__device__ void put(int *a) { a[0] = 1; }\n"),
        ("lib/l.cu", "__global__ void l(int *a) { a[0] = 2; }\n"),
        ("host.h", "int f(int x);\n"),
        ("notes.txt", "notes\n"),
    ] {
        let p = outside.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let app = tmp.path().join("app");
    for name in ["ext.cuh", "lib", "host.h", "notes.txt"] {
        std::os::unix::fs::symlink(outside.join(name), app.join(name)).unwrap();
    }
    let o = insert(tmp.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let warned = |name: &str| {
        err.lines().any(|l| {
            l.starts_with("wmfix: warning: ") && l.contains(&format!("app/{name} is a link to"))
        })
    };
    assert!(warned("ext.cuh") && warned("lib"), "{err}");
    assert!(!warned("host.h") && !warned("notes.txt"), "{err}");
    let out = tmp.path().join("out/tree");
    let ext = std::fs::read_to_string(out.join("ext.cuh")).unwrap();
    assert!(ext.contains("a[0] = 1; WMFIX_FENCE_AT("), "{ext}");
    assert!(
        std::fs::symlink_metadata(out.join("lib"))
            .unwrap()
            .is_symlink()
    );
}
