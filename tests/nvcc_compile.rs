//! Instrumented code compiles and links with real nvcc (13.0, `-arch=sm_90`), no GPU needed.
//! When an instrumented tree does not build, its original is built too, to say whether the
//! failure is the rewriter's or the fixture's (`builds`). The original is not built when the
//! instrumented tree builds: it is the same text without the fences, so it builds as well, and
//! building it would double the compiles of the slowest tests (measured in issue 28).

mod common;
use common::*;
use std::path::Path;

/// Runs a shell command with nvcc on PATH; panics with its output when it fails.
fn sh(cwd: &Path, script: &str) {
    let o = nvcc_command(cwd).arg("-c").arg(script).output().unwrap();
    assert!(
        o.status.success(),
        "`{script}` failed in {}:\n{}{}",
        cwd.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `script` in the instrumented `tree`; if it fails, runs it in `orig` (the same files
/// uninstrumented) too and panics saying whose failure it is, with the instrumented build's output.
fn builds(orig: &Path, tree: &Path, script: &str) {
    let o = nvcc_command(tree).arg("-c").arg(script).output().unwrap();
    if o.status.success() {
        return;
    }
    let original = nvcc_command(orig).arg("-c").arg(script).output().unwrap();
    let whose = if original.status.success() {
        "the original builds: a rewriter bug"
    } else {
        "the original does not build either: a fixture bug"
    };
    panic!(
        "`{script}` failed in {} ({whose}):\n{}{}",
        tree.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Instruments `src` into a temp dir; returns (temp, original copy, instrumented tree).
fn instrument(src: &Path) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let orig = copy_tree(src, tmp.path());
    let o = run(
        tmp.path(),
        &["insert", orig.to_str().unwrap(), "--out", "out"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tree = tmp.path().join("out/tree");
    (tmp, orig, tree)
}

/// Each fence the instrumented `tree` holds, as (file, line, id) in file and line order: every
/// `WMFIX_FENCE*(id` and `WMFIX_AFTER*(id` of its files, at the original's line (the prologue
/// ends with `#line 1`). Checked against `fences.json` beside the tree: one per placement.
fn fences_in(tree: &Path) -> Vec<(String, usize, usize)> {
    let marker = regex::Regex::new(
        r"\bWMFIX_(?:FENCE|FENCE_AT|FENCE_PTR|FENCE_AIM|FENCE_AIM_PTR|FENCE_AIM_IF|FENCE_EXPR|AFTER|AFTER_RETURN|AFTER_IF|AFTER_RETURN_IF)\((\d+)",
    )
    .unwrap();
    let mut found = Vec::new();
    for e in walkdir::WalkDir::new(tree).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(tree)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Some(body) = text.split_once("#line 1\n").map(|(_, b)| b) else {
            continue;
        };
        for (i, line) in body.lines().enumerate() {
            for m in marker.captures_iter(line) {
                found.push((rel.clone(), i + 1, m[1].parse().unwrap()));
            }
        }
    }
    let list: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tree.parent().unwrap().join("fences.json")).unwrap(),
    )
    .unwrap();
    let mut listed: Vec<(String, usize, usize)> = list["fences"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            let (file, id) = (f["file"].as_str().unwrap(), f["id"].as_u64().unwrap());
            f["placements"].as_array().unwrap().iter().map(move |p| {
                (
                    file.to_string(),
                    p["line"].as_u64().unwrap() as usize,
                    id as usize,
                )
            })
        })
        .collect();
    listed.sort();
    let mut sorted = found.clone();
    sorted.sort();
    assert_eq!(
        sorted, listed,
        "the tree's fences and fences.json's placements"
    );
    found
}

/// `(file, line, id)` for each of `ids` at `line` of `file`.
fn at(file: &str, places: &[(usize, &[usize])]) -> Vec<(String, usize, usize)> {
    places
        .iter()
        .flat_map(|(line, ids)| ids.iter().map(move |id| (file.to_string(), *line, *id)))
        .collect()
}

/// The build of each `.cu` file of the constructs fixture on its own, linked to an executable,
/// with extra `flags`.
fn build_each(flags: &str) -> String {
    format!(
        "for f in control.cu memory.cu templates.cu; do nvcc -arch=sm_90 -std=c++17 -Werror all-warnings {flags} -o $f.out $f || exit 1; done"
    )
}

#[test]
fn constructs_compile() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/constructs"));
    // nv/target's branches are instrumented inside the macro's arguments.
    let control = std::fs::read_to_string(tree.join("control.cu")).unwrap();
    assert!(
        control.contains("NV_IF_TARGET(NV_IS_DEVICE, (p[i] = 1; WMFIX_FENCE_AT("),
        "{control}"
    );
    builds(&orig, &tree, &build_each(""));
}

#[test]
fn constructs_compile_with_rdc_and_other_fence_scopes() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = copy_tree(&repo().join("tests/fixtures/constructs"), tmp.path());
    for scope in ["block", "system"] {
        let out = format!("out-{scope}");
        let o = run(
            tmp.path(),
            &[
                "insert",
                orig.to_str().unwrap(),
                "--out",
                &out,
                "--fence",
                scope,
            ],
        );
        assert!(o.status.success());
        builds(
            &orig,
            &tmp.path().join(&out).join("tree"),
            &build_each("-rdc=true"),
        );
    }
}

#[test]
fn header_with_device_code_compiles() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/multi"));
    // The header's fences and main.cu's: what compiles is the instrumented code.
    let mut want = at(
        "kernels/k.cuh",
        &[(5, &[0]), (6, &[1]), (10, &[2]), (11, &[2]), (12, &[3])],
    );
    want.extend(at("main.cu", &[(7, &[4])]));
    assert_eq!(fences_in(&tree), want);
    builds(&orig, &tree, "nvcc -arch=sm_90 -std=c++17 -o main main.cu");
}

#[test]
fn kernel_launched_from_another_unit_links() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/two_tu"));
    builds(&orig, &tree, "./build.sh");
    assert!(tree.join("two_tu").is_file() && tree.join("two_tu_rdc").is_file());
}

#[test]
fn scoping_fixture_compiles() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/scoping"));
    let mut want = at(
        "locals.cu",
        &[
            (12, &[0]),
            (13, &[1]),
            (14, &[2]),
            (22, &[3]),
            (27, &[4]),
            (29, &[5]),
        ],
    );
    want.extend(at("prototypes.cu", &[(9, &[6]), (10, &[7])]));
    assert_eq!(fences_in(&tree), want);
    for f in ["locals.cu", "prototypes.cu"] {
        let flags = "-arch=sm_90 -std=c++17 -Werror all-warnings";
        builds(&orig, &tree, &format!("nvcc {flags} -c -o {f}.o {f}"));
    }
}

#[test]
fn regressions_fixture_compiles() {
    // Labels the fixture never jumps to warn: no -Werror here.
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/regressions"));
    let want = at(
        "random.cu",
        &[
            (13, &[0]),
            (14, &[1]),
            (15, &[0]),
            (16, &[2]),
            (17, &[3]),
            (18, &[3]),
            (23, &[4]),
            (24, &[5, 6]),
            (25, &[7, 7]),
            (30, &[8]),
            (31, &[9]),
            (32, &[10]),
            (33, &[11]),
            (34, &[12]),
            (55, &[13]),
            (57, &[14]),
            (58, &[15]),
            (59, &[16]),
            (60, &[17]),
            (65, &[18]),
            (66, &[19]),
            (73, &[20, 20]),
            (74, &[21]),
            (75, &[21]),
        ],
    );
    assert_eq!(fences_in(&tree), want);
    builds(
        &orig,
        &tree,
        "nvcc -arch=sm_90 -std=c++17 -c -o random.o random.cu",
    );
}

#[test]
fn immutable_variables_braced_returns_and_folds_compile_with_their_fences() {
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/immutable"));
    builds(
        &orig,
        &tree,
        "nvcc -arch=sm_90 -std=c++17 -Werror all-warnings -c -o immutable.o immutable.cu && nvcc -arch=sm_90 -std=c++17 -Werror all-warnings -DWMFIX_RACE -c -o race.o immutable.cu",
    );
    // immutable.cu: the stores through p and table (and table's own write and read), nothing
    // for the variable template or the constant scalars.
    let fenced = std::fs::read_to_string(tree.join("immutable.cu")).unwrap();
    for access in ["p[0]", "p[1]", "table"] {
        assert!(
            fenced.contains(&format!(", {access});")),
            "no fence after {access}:\n{fenced}"
        );
    }
    assert!(
        fenced.contains(
            "return {g[0], WMFIX_AFTER_IF(3, WMFIX_GLOBAL(g[0]) || WMFIX_GLOBAL(g[1]), g[1])}"
        ),
        "{fenced}"
    );
    assert!(
        fenced.contains("return WMFIX_AFTER_RETURN_IF(") && fenced.contains(", sink(g[0], g));"),
        "{fenced}"
    );
    assert!(fenced.contains("int x = p[0]; WMFIX_FENCE_AT("), "{fenced}");
    assert!(
        fenced.contains("((dst[Is] = src[Is]), ...); WMFIX_FENCE("),
        "{fenced}"
    );
    // k4: the load of g is fenced, not the shared store beside it (whose fence would check
    // s.w's address and skip); the store through the pointer member is.
    assert!(
        fenced.contains("s.w[wmfix_threadIdx().x] = g[wmfix_threadIdx().x]; WMFIX_FENCE_AT(")
            && fenced.contains(", g[wmfix_threadIdx().x]);")
            && fenced.contains(", s.p[1]);"),
        "{fenced}"
    );
    for constant in [
        "tile_size_v",
        "kScale",
        "kBias",
        "src[Is]",
        "dst[Is]",
        "s.w[0]",
        "*this",
        "s.w[wmfix_threadIdx().x]",
    ] {
        assert!(
            !fenced.contains(&format!(", {constant});")),
            "a fence names {constant}:\n{fenced}"
        );
    }
}

/// The PTX of kernel `name` (C++-mangled, unique in the file): its `.entry` to its closing
/// brace.
fn kernel_ptx<'p>(ptx: &'p str, name: &str) -> &'p str {
    let head = format!(".entry _Z{}{name}", name.len());
    let start = ptx
        .find(&head)
        .unwrap_or_else(|| panic!("no kernel {name} in the PTX"));
    let end = ptx[start..].find("\n}").expect("a kernel's closing brace");
    &ptx[start..start + end]
}

/// For each fence (`membar.gl`, the device-scope fence) of a kernel's PTX, how many branches
/// skip it: those to the label right after it. The fence's switch (`fence_off`) is one; a test
/// of the address the fence names (`__isGlobal`, folded by the compiler to `p == nullptr` for a
/// shared address) another.
fn branches_past_each_fence(kernel: &str) -> Vec<usize> {
    let lines: Vec<&str> = kernel.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("membar.gl") {
            continue;
        }
        let next = lines[i + 1..].iter().find(|l| !l.is_empty());
        let Some(label) = next.and_then(|l| l.strip_suffix(':')) else {
            out.push(0);
            continue;
        };
        let target = format!("{label};");
        out.push(
            lines
                .iter()
                .filter(|l| l.contains("bra") && l.ends_with(&target))
                .count(),
        );
    }
    out
}

/// Issue 45's fence after a statement of several accesses (`fixtures/mixed_spaces`): after
/// `dst[i] = src[i];` with `dst` shared and `src` global at run time, the fence, which names the
/// store, runs (only its switch skips it), in the optimised PTX nvcc makes of the instrumented
/// file under C++11; so it does after a shared atomic of a global load. After one shared access
/// the address still decides: a branch on it skips the fence. A race build compiles too.
#[test]
fn a_fence_after_several_accesses_runs_whatever_memory_the_named_one_is_in() {
    let (_tmp, _orig, tree) = instrument(&repo().join("tests/fixtures/mixed_spaces"));
    let text = std::fs::read_to_string(tree.join("mixed.cu")).unwrap();
    for form in [
        "dst[i] = src[i]; WMFIX_RACE_LOAD(0, src[i]); WMFIX_FENCE_AIM_IF(0, WMFIX_GLOBAL(src[i]), dst[i]);",
        "atomicAdd(&counts[i], src[i]); WMFIX_RACE_LOAD(1, src[i]); WMFIX_FENCE_AIM_PTR(1, &counts[i]);",
        "dst[i] = 0; WMFIX_FENCE_AT(2, dst[i]);",
    ] {
        assert!(text.contains(form), "no `{form}`:\n{text}");
    }
    sh(
        &tree,
        "nvcc -arch=sm_90 -std=c++11 -w --ptx -o mixed.ptx mixed.cu && \
         nvcc -arch=sm_90 -std=c++11 -w -DWMFIX_RACE --ptx -o race.ptx mixed.cu",
    );
    let ptx = std::fs::read_to_string(tree.join("mixed.ptx")).unwrap();
    for kernel in ["staged", "copied", "counted_shared", "counted", "zeroed"] {
        assert_eq!(
            branches_past_each_fence(kernel_ptx(&ptx, kernel)),
            [1],
            "{kernel}: one fence, skipped only when switched off:\n{}",
            kernel_ptx(&ptx, kernel)
        );
    }
    // The check sees an address test where there is one: after the one shared store.
    let shared = branches_past_each_fence(kernel_ptx(&ptx, "zeroed_shared"));
    assert!(
        shared.iter().all(|&n| n >= 2),
        "zeroed_shared: {shared:?}:\n{}",
        kernel_ptx(&ptx, "zeroed_shared")
    );
}

/// Issue 45's inline PTX accesses (`fixtures/inline_asm`): a global store, an acquire load and an
/// atomic written in `asm` get a fence after their statement that names the address operand, one
/// whose template computes the address gets an unconditional one, and shared-memory, fence and
/// arithmetic `asm` get none; the fences are in the optimised PTX, plain and race builds.
#[test]
fn inline_ptx_loads_stores_and_atomics_get_fences() {
    let (_tmp, _orig, tree) = instrument(&repo().join("tests/fixtures/inline_asm"));
    let text = std::fs::read_to_string(tree.join("asm.cu")).unwrap();
    for form in [
        r#""r"(v) : "memory"); WMFIX_FENCE_PTR(0, p);"#,
        r#": "l"(p) : "memory"); WMFIX_FENCE_PTR(1, p);"#,
        r#""r"(1u) : "memory"); WMFIX_FENCE_PTR(3, counter);"#,
        r#": "memory"); WMFIX_FENCE(4);"#,
    ] {
        assert!(text.contains(form), "no `{form}`:\n{text}");
    }
    let fenced = text.lines().filter(|l| !l.starts_with('#'));
    assert_eq!(
        fenced
            .map(|l| l.matches("WMFIX_FENCE").count())
            .sum::<usize>(),
        6,
        "{text}"
    );
    sh(
        &tree,
        "nvcc -arch=sm_90 -std=c++11 -w --ptx -o asm.ptx asm.cu && \
         nvcc -arch=sm_90 -std=c++11 -w -DWMFIX_RACE --ptx -o race.ptx asm.cu",
    );
    let ptx = std::fs::read_to_string(tree.join("asm.ptx")).unwrap();
    let fences = |k: &str| branches_past_each_fence(kernel_ptx(&ptx, k));
    for (kernel, n) in [
        ("published", 1),
        ("acquired", 2),
        ("added", 1),
        ("shared_only", 1),
    ] {
        assert_eq!(
            fences(kernel).len(),
            n,
            "{kernel}:\n{}",
            kernel_ptx(&ptx, kernel)
        );
    }
    assert_eq!(fences("computed"), [1], "only the switch skips it");
}

/// Issue 45: wmma fragments (`fixtures/wmma`) are registers: their elements (`f.x[i]`, in a
/// fragment or an array of them) get no fence, only the global store does; it compiles.
#[test]
fn wmma_fragment_elements_are_not_fence_sites() {
    let (_tmp, _orig, tree) = instrument(&repo().join("tests/fixtures/wmma"));
    let text = std::fs::read_to_string(tree.join("frag.cu")).unwrap();
    let fenced: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("WMFIX_FENCE"))
        .collect();
    assert_eq!(
        fenced,
        ["  c[wmfix_threadIdx().x] += 1.0f; WMFIX_FENCE_AT(0, c[wmfix_threadIdx().x]);"],
        "{text}"
    );
    sh(
        &tree,
        "nvcc -arch=sm_90 -std=c++11 -w --ptx -o frag.ptx frag.cu",
    );
}

#[test]
fn the_runtimes_interface_test_compiles() {
    // runtime-cu/tests/interface_compile.cu: every macro the rewriter emits, with static
    // checks of WMFIX_AFTER's result types (an array decays, as a prvalue of it would).
    let dir = repo().join("runtime-cu/tests");
    let out = tempfile::tempdir().unwrap();
    for rdc in ["false", "true"] {
        sh(
            &dir,
            &format!(
                "nvcc -arch=sm_90 -std=c++17 -Werror all-warnings -rdc={rdc} -c interface_compile.cu -o {}/i.o",
                out.path().display()
            ),
        );
    }
}

#[test]
fn the_runtimes_host_tests_pass_without_a_gpu() {
    // runtime-cu/tests/host_test.cu: the runtime's host code (WMFIX_* parsing, chip profiles and
    // their variants, launch plans) checked on the CPU; before this, only compile_test.sh ran it.
    let dir = repo().join("runtime-cu/tests");
    let out = tempfile::tempdir().unwrap();
    let exe = out.path().join("host_test");
    sh(
        &dir,
        &format!(
            "nvcc -arch=sm_90 -std=c++17 -O2 -Werror all-warnings -o {} host_test.cu && {} ../profiles/hopper-default.toml > {}/log.txt 2>&1 || {{ cat {}/log.txt; exit 1; }}",
            exe.display(),
            exe.display(),
            out.path().display(),
            out.path().display()
        ),
    );
    let log = std::fs::read_to_string(out.path().join("log.txt")).unwrap();
    let last = log.lines().last().unwrap_or_default();
    assert!(last.contains(" 0 failures: PASS"), "host_test said: {last}");
}

#[test]
fn cuda_launch_kernel_ex_launches_build_and_link() {
    // Programmatic dependent launch, a clustered and a cooperative config, through
    // cudaLaunchKernelEx (also `::`-qualified) and cudaLaunchKernelExC.
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/launch_ex"));
    let build = "nvcc -arch=sm_90 -std=c++17 -Werror all-warnings -o launch_ex launch_ex.cu";
    builds(&orig, &tree, build);
    assert!(tree.join("launch_ex").is_file());
    let text = std::fs::read_to_string(tree.join("launch_ex.cu")).unwrap();
    assert!(text.contains("cudaLaunchKernelEx(wmfix_launch_ex(&config), consume<int>, a, n)"));
}

/// The build command of a case study's wmfix.toml.
fn build_command(dir: &Path) -> String {
    let cfg: toml::Table = std::fs::read_to_string(dir.join("wmfix.toml"))
        .unwrap()
        .parse()
        .unwrap();
    cfg["build"].as_str().unwrap().to_string()
}

/// `dir`'s build command as a build check: host and device code unoptimised and PTX alone (no
/// ptxas), which halves the time (ls-bh-nf 6.2 s -> 3.1 s). What the rewriter can break, the
/// front end and the link reject at any level; the GPU script builds with the command as written.
fn check_build_command(dir: &Path) -> String {
    let cmd = build_command(dir);
    assert!(
        cmd.starts_with("nvcc -O3 -arch=sm_90 "),
        "{}: a build command of another shape: {cmd}",
        dir.display()
    );
    cmd.replacen(
        "nvcc -O3 -arch=sm_90 ",
        "nvcc -O0 -Xcicc -O0 -arch=compute_90 ",
        1,
    )
}

#[test]
fn case_studies_build_and_link() {
    let studies: Vec<_> = std::fs::read_dir(repo().join("case-studies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("wmfix.toml").is_file())
        .collect();
    assert!(!studies.is_empty());
    for study in studies {
        // A study that makes part of its tree from the toolkit (cub-scan-lib-nf's copy of a CUB
        // header) does so first, as its README says.
        let prepared = tempfile::tempdir().unwrap();
        let study = copy_tree(&study, prepared.path());
        if study.join("prepare.sh").is_file() {
            sh(&study, "sh prepare.sh");
        }
        let (_tmp, orig, tree) = instrument(&study);
        builds(&orig, &tree, &check_build_command(&orig));
    }
}

/// Detection builds (`wmfix race`: `WMFIX_RACE` on) compile: every atomic wrapper at each scope
/// and type, the ground-truth suite, and studies whose atomics, fences and barriers go through
/// the recording wrappers, CUB's headers (included after the runtime's macros) among them.
#[test]
fn detection_builds_compile() {
    let fixture = repo().join("tests/fixtures/race_atomics");
    let (_tmp, _orig, tree) = instrument(&fixture);
    sh(&tree, "nvcc -arch=sm_90 -DWMFIX_RACE -o a atomics.cu");
    for dir in [
        "tests/race-suite",
        "case-studies/sdk-red-nf",
        "case-studies/ls-bh-nf",
        "case-studies/cub-scan",
    ] {
        let (_tmp, orig, tree) = instrument(&repo().join(dir));
        let build = check_build_command(&orig);
        sh(&tree, &format!("NVCC_APPEND_FLAGS=-DWMFIX_RACE {build}"));
    }
}

/// Writes the patch that keeps `kept` fences of the app in `src`, applies it to a clean copy with
/// `patch -p1`, and builds the result with the app's build command.
fn patch_applies_and_builds(src: &Path, kept: &[usize], build: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let app_dir = copy_tree(src, &tmp.path().join("app"));
    let app = wmfix::app::config::App::load(&app_dir).unwrap();
    let kept: wmfix::fences::id::Ids = kept
        .iter()
        .copied()
        .map(wmfix::fences::id::FenceId)
        .collect();
    let files = wmfix::reduce::patch::harden(
        &app,
        &tmp.path().join("out"),
        &kept,
        wmfix::fences::scope::FenceScope::Device,
    )
    .unwrap()
    .files;
    let diff = wmfix::reduce::patch::unified_diff(&files);
    let patch = tmp.path().join("fences.patch");
    std::fs::write(&patch, &diff).unwrap();
    let clean = copy_tree(src, &tmp.path().join("clean"));
    sh(&clean, &format!("patch -p1 < {}", patch.display()));
    assert_eq!(
        std::fs::read_to_string(clean.join(&files[0].rel)).unwrap(),
        files[0].hardened
    );
    sh(&clean, build);
}

#[test]
fn cbe_dot_patch_applies_and_compiles() {
    let study = repo().join("case-studies/cbe-dot");
    // Fence 3 (after `*c += cache[0]`): what the reduction found on the GPU; and every fence.
    patch_applies_and_builds(&study, &[3], &build_command(&study));
    patch_applies_and_builds(&study, &[0, 1, 2, 3], &build_command(&study));
}

#[test]
fn hardened_constructs_compile_with_every_fence() {
    // Every placement form (statement, comma, wrapped value, braces) in plain CUDA.
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_tree(&repo().join("tests/fixtures/constructs"), tmp.path());
    std::fs::write(dir.join("wmfix.toml"), "build = \"true\"\nrun = \"true\"\n").unwrap();
    let flags = "-arch=sm_90 -std=c++17 -Werror all-warnings";
    let build =
        format!("for f in control memory templates; do nvcc {flags} -o $f $f.cu || exit 1; done");
    // Ids past the last fence keep nothing: this keeps every fence.
    patch_applies_and_builds(&dir, &(0..1000).collect::<Vec<_>>(), &build);
}

#[test]
fn litmus_kernels_compile_for_hopper_and_are_cached() {
    let tmp = tempfile::tempdir().unwrap();
    let cubin = wmfix::litmus::engine::compile(tmp.path(), 90).unwrap();
    let bytes = std::fs::read(&cubin).unwrap();
    let has = |name: &str| bytes.windows(name.len()).any(|w| w == name.as_bytes());
    assert!(has(wmfix::litmus::engine::KERNEL));
    assert!(has(wmfix::litmus::engine::EVAL_KERNEL));
    let modified = std::fs::metadata(&cubin).unwrap().modified().unwrap();
    assert_eq!(
        wmfix::litmus::engine::compile(tmp.path(), 90).unwrap(),
        cubin
    );
    assert_eq!(
        std::fs::metadata(&cubin).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn litmus_parameter_struct_matches_the_cuda_layout() {
    let tmp = tempfile::tempdir().unwrap();
    wmfix::litmus::engine::write_sources(tmp.path()).unwrap();
    let fields = wmfix::litmus::engine::layout();
    let mut main = String::from(
        "#include <cstdio>\n#include <cstddef>\n#include \"litmus.cu\"\nint main() {\n",
    );
    for (f, _) in &fields {
        main += &format!("    printf(\"{f} %zu\\n\", offsetof(LitmusArgs, {f}));\n");
    }
    main += "    printf(\"size %zu\\n\", sizeof(LitmusArgs));\n";
    main += "    printf(\"counters %u\\n\", (unsigned)LITMUS_COUNTERS);\n}\n";
    std::fs::write(tmp.path().join("layout.cu"), main).unwrap();
    sh(tmp.path(), "nvcc -arch=sm_90 -o layout layout.cu");
    let out = std::process::Command::new(tmp.path().join("layout"))
        .output()
        .unwrap();
    let mut want: String = fields.iter().map(|(f, o)| format!("{f} {o}\n")).collect();
    want += &format!("size {}\n", wmfix::litmus::engine::ARGS_SIZE);
    want += &format!("counters {}\n", wmfix::litmus::engine::COUNTERS);
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

/// The kernel's own code in one function of `cuobjdump -sass`: the instructions before the first
/// subroutine it calls. ptxas puts `__noinline__` functions (the litmus kernel's stressing
/// blocks, which run the runtime's stress loop) and helpers after the kernel's code, in the same
/// function listing.
fn kernel_body(f: &str) -> String {
    let address = |l: &str| {
        let a = l.trim_start().strip_prefix("/*")?.split("*/").next()?;
        u64::from_str_radix(a, 16).ok()
    };
    let first_callee = f
        .lines()
        .filter_map(|l| {
            let code = l.split(';').next()?;
            let target = code.split("CALL.REL.NOINC ").nth(1)?;
            u64::from_str_radix(target.trim().trim_start_matches("0x"), 16).ok()
        })
        .min()
        .unwrap_or(u64::MAX);
    f.lines()
        .take_while(|l| address(l).is_none_or(|a| a < first_callee))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The SASS functions of the litmus cubin that run tests (the evaluation kernel left out),
/// each as its name and its own code.
fn litmus_test_kernels(dir: &Path) -> Vec<(String, String)> {
    let cubin = wmfix::litmus::engine::compile(dir, 90).unwrap();
    let o = nvcc_command(dir)
        .arg("-c")
        .arg(format!("cuobjdump -sass {}", cubin.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sass = String::from_utf8_lossy(&o.stdout).into_owned();
    let kernels: Vec<(String, String)> = sass
        .split("Function : ")
        .skip(1)
        .filter(|f| f.starts_with("litmus_") && !f.starts_with("litmus_eval"))
        .map(|f| (f.lines().next().unwrap().trim().to_string(), kernel_body(f)))
        .collect();
    assert_eq!(
        kernels.iter().map(|k| k.0.as_str()).collect::<Vec<_>>(),
        [wmfix::litmus::engine::KERNEL]
    );
    kernels
}

/// The strong (`.STRONG.GPU`) global loads and stores of one SASS function, in order: (is a
/// store, address operand). Atomics and the stress loop's `.STRONG.SYS` (volatile) accesses are
/// left out.
fn strong_accesses(sass: &str) -> Vec<(bool, String)> {
    strong_access_lines(sass)
        .into_iter()
        .map(|(_, store, addr)| (store, addr))
        .collect()
}

/// `strong_accesses` with each access's line number in `sass`.
fn strong_access_lines(sass: &str) -> Vec<(usize, bool, String)> {
    sass.lines()
        .enumerate()
        .filter_map(|(n, l)| {
            let code = l.split(';').next()?;
            let store = code.contains("STG.E.STRONG.GPU");
            if !store && !code.contains("LDG.E.STRONG.GPU") {
                return None;
            }
            // `desc[UR6][R4.64+0x4]`: the last bracket is the address.
            let addr = code.rsplit('[').next()?.split(']').next()?.to_string();
            Some((n, store, addr))
        })
        .collect()
}

/// The lines of MP's reader between its load of y and its load of x, in one kernel's SASS:
/// found after the writer's stores of x and y (the same window as the optcheck's: the first load
/// is from the register the writer stored y through; the second is from another, x, which the
/// compiler may hold in another register than the writer's).
fn mp_reader_gap(f: &str) -> Option<Vec<&str>> {
    let a = strong_access_lines(f);
    let lines: Vec<&str> = f.lines().collect();
    a.windows(4)
        .find(|w| {
            w[0].1
                && w[1].1
                && !w[2].1
                && !w[3].1
                && w[0].2 != w[1].2
                && w[2].2 == w[1].2
                && w[3].2 != w[2].2
        })
        .map(|w| lines[w[2].0 + 1..w[3].0].to_vec())
}

/// MP's reader must have both loads in flight before it stores either result: a store between
/// them waits for the first load's value (in-order issue), so the second load could never pass
/// the first and MP would show (almost) no weak outcome. Fails on the kernel that stored r0
/// between the loads (`LDG [y]; STG [results]; LDG [x]`).
#[test]
fn mp_reader_issues_both_loads_before_any_store() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, f) in litmus_test_kernels(tmp.path()) {
        let gap = mp_reader_gap(&f).unwrap_or_else(|| panic!("{name}: MP's reader not found"));
        let stores: Vec<&&str> = gap
            .iter()
            .filter(|l| l.contains("STG") || l.contains("ST."))
            .collect();
        assert!(
            stores.is_empty(),
            "{name}: a store between MP's loads: {stores:?}"
        );
    }
}

/// The paper's optcheck (001, Sec. 4.4): the compiler must not reorder a litmus thread's two
/// accesses, or the "weak" outcomes counted would be the compiler's. Disassembles every litmus
/// kernel (cuobjdump/nvdisasm from scripts/nvcc-env.sh) and finds each test's accesses in
/// program order: MP's writer stores x then y and its reader loads y then x; LB loads one
/// location then stores the other; SB stores one then loads the other.
#[test]
fn litmus_accesses_keep_their_program_order_in_sass() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, f) in litmus_test_kernels(tmp.path()) {
        let a = strong_accesses(&f);
        let pair = |first: bool, second: bool| {
            a.windows(2)
                .any(|w| w[0].0 == first && w[1].0 == second && w[0].1 != w[1].1)
        };
        let mp = a.windows(4).any(|w| {
            w[0].0
                && w[1].0
                && !w[2].0
                && !w[3].0
                && w[0].1 != w[1].1
                && w[2].1 == w[1].1
                && w[3].1 != w[2].1
        });
        assert!(
            mp,
            "{name}: MP's stores x, y and loads y, x not found in order: {a:?}"
        );
        assert!(
            pair(false, true),
            "{name}: LB's load-then-store not found: {a:?}"
        );
        assert!(
            pair(true, false),
            "{name}: SB's store-then-load not found: {a:?}"
        );
        // --dual's path: role 0 of one instance, then role 1 of another, four locations.
        for (test, pattern) in [
            ("MP", [true, true, false, false]),
            ("LB", [false, true, false, true]),
            ("SB", [true, false, true, false]),
        ] {
            assert!(
                dual_window(&a, pattern).is_some(),
                "{name}: {test}'s --dual accesses not found in order: {a:?}"
            );
        }
        // Nothing else: the tests' locations and the spin loads of the stress wait, the grid
        // barrier and --sync's meeting, once per path (25 on nvcc 13.0).
        assert!(a.len() <= 28, "{name}: unexpected strong accesses: {a:?}");
    }
}

/// The first four strong accesses in a row with these kinds (true: a store) at four different
/// addresses: a --dual thread's two roles, each on its own instance's x and y.
fn dual_window(a: &[(bool, String)], pattern: [bool; 4]) -> Option<usize> {
    a.windows(4).position(|w| {
        let addrs: std::collections::HashSet<&String> = w.iter().map(|x| &x.1).collect();
        addrs.len() == 4 && w.iter().zip(pattern).all(|(x, store)| x.0 == store)
    })
}

/// --dual's MP reader, too, has both loads in flight before any store.
#[test]
fn mp_dual_reader_issues_both_loads_before_any_store() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, f) in litmus_test_kernels(tmp.path()) {
        let a = strong_access_lines(&f);
        let plain: Vec<(bool, String)> = a.iter().map(|(_, s, r)| (*s, r.clone())).collect();
        let at = dual_window(&plain, [true, true, false, false])
            .unwrap_or_else(|| panic!("{name}: --dual's MP not found"));
        let lines: Vec<&str> = f.lines().collect();
        let gap = &lines[a[at + 2].0 + 1..a[at + 3].0];
        assert!(
            !gap.iter().any(|l| l.contains("STG") || l.contains("ST.")),
            "{name}: a store between --dual MP's loads: {gap:?}"
        );
    }
}

/// `cuobjdump -sass` of `file` compiled for sm_90 in `dir`.
fn sass_of(dir: &Path, file: &str) -> String {
    sh(
        dir,
        &format!(
            "nvcc -cubin -arch=sm_90 -O3 -o k.cubin {file} && cuobjdump -sass k.cubin > k.sass"
        ),
    );
    std::fs::read_to_string(dir.join("k.sass")).unwrap()
}

/// The stress loops' loads must survive ptxas, which deletes an unused relaxed load: otherwise
/// every `ld` of a profile, and half of rand-str and cache-str, would be no access at all.
#[test]
fn stress_loads_survive_in_sass() {
    let (_tmp, orig, tree) = instrument(&repo().join("case-studies/cbe-dot"));
    let volatile_loads = |dir: &Path| sass_of(dir, "dot.cu").matches("LDG.E.STRONG.SYS").count();
    // cbe-dot has none of its own, so each one is the runtime's.
    assert_eq!(volatile_loads(&orig), 0);
    let n = volatile_loads(&tree);
    assert!(
        n >= 3,
        "{n} stress loads in the SASS: sys-str, rand-str and cache-str need one each"
    );
}

/// Every environment wmfix runs (`TestEnv::known()`, aim-str included) is one the host library's
/// `WMFIX_ENV` parser accepts, with the same stress and randomisation.
#[test]
fn the_runtime_knows_every_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let main = format!(
        r#"#include "{0}/runtime-cu/wmfix.cuh"
#include "{0}/runtime-cu/wmfix_plan.h"
#include <cstdio>
int main(int argc, char** argv) {{
  for (int i = 1; i < argc; ++i) {{
    wmfix::StressKind k;
    bool r;
    if (!wmfix::host::parse_env_name(argv[i], &k, &r)) std::printf("%s refused\n", argv[i]);
    else std::printf("%s %u %d\n", argv[i], (unsigned)k, (int)r);
  }}
}}
"#,
        repo().display()
    );
    std::fs::write(tmp.path().join("envs.cu"), main).unwrap();
    let envs = wmfix::run::environment::TestEnv::known();
    let names: Vec<String> = envs.iter().map(|e| e.to_string()).collect();
    sh(
        tmp.path(),
        &format!(
            "nvcc -arch=sm_90 -std=c++17 -o envs envs.cu && ./envs {} bogus-str+ > out.txt",
            names.join(" ")
        ),
    );
    let out = std::fs::read_to_string(tmp.path().join("out.txt")).unwrap();
    let mut want: String = envs
        .iter()
        .map(|e| {
            use wmfix::run::environment::Stress;
            let kind = match e.stress {
                Stress::No => 0,
                Stress::Sys => 1,
                Stress::Rand => 2,
                Stress::Cache => 3,
                Stress::Aim => 4,
            };
            format!("{e} {kind} {}\n", e.randomise as i32)
        })
        .collect();
    want += "bogus-str+ refused\n";
    assert_eq!(out, want);
}

/// A public corpus compiled instrumented (issue 26): NVIDIA/cccl's cub, thrust and libcu++
/// headers as the pinned nvcc wheel ships them, instrumented in text mode as one tree, and a
/// program using thrust's device_vector and sort, CUB's DeviceScan and BlockReduce and
/// libcu++'s atomic_ref compiled against the instrumented copies (its original build is checked
/// by preprocess_cli's build of the same fixture). Every instrumented header it includes must
/// compile: more than a thousand of them, hundreds with fences.
#[test]
fn cccl_instrumented_in_text_mode_still_compiles_a_thrust_and_cub_program() {
    let cccl = nvcc().parent().unwrap().join("../include/cccl");
    let cccl = cccl
        .canonicalize()
        .expect("the nvcc wheel ships include/cccl");
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &["insert", cccl.to_str().unwrap(), "--out", "out"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tree = tmp.path().join("out/tree").canonicalize().unwrap();
    let app = copy_tree(&repo().join("tests/fixtures/thrust_cub"), tmp.path());
    let flags = format!("-arch=sm_90 -I{}", tree.display());
    sh(&app, &format!("nvcc {flags} -M thrust_cub.cu > deps.txt"));
    // A build check: what the front end rejects fails at any optimisation level, so PTX alone
    // (no ptxas) and unoptimised (32 s -> 14 s here).
    let flags = format!(
        "-gencode arch=compute_90,code=compute_90 -Xcicc -O0 -I{}",
        tree.display()
    );
    let deps = std::fs::read_to_string(app.join("deps.txt")).unwrap();
    let included: std::collections::BTreeSet<&str> = deps
        .split([' ', '\\', '\n'])
        .filter(|p| p.starts_with(tree.to_str().unwrap()))
        .collect();
    let fenced = included
        .iter()
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("WMFIX_FENCE")))
        .count();
    assert!(
        included.len() > 1000 && fenced >= 60,
        "{} instrumented headers included, {fenced} with fences",
        included.len()
    );
    sh(
        &app,
        &format!("nvcc {flags} -c thrust_cub.cu -o thrust_cub.o"),
    );
}

#[test]
fn libcuxx_atomic_refs_and_fences_are_renamed_and_compile_traced_and_untraced() {
    // Issue 46: a race build records cuda::atomic_ref's operations and cuda::atomic_thread_fence
    // with their scope and order (runtime-cu/wmfix_race.cuh), through the names the rewriter
    // writes; any other build takes them as libcu++'s own. Each operation has a fence site (a
    // fence in those builds), which in a race build gives the operation's record its line.
    let (_tmp, orig, tree) = instrument(&repo().join("tests/race-suite-libcuxx"));
    let text = std::fs::read_to_string(tree.join("suite.cu")).unwrap();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        assert!(
            !line.contains("cuda::atomic_ref")
                && !line.contains("cuda::atomic<")
                && !line.contains("cuda::atomic_thread_fence")
                && !line.contains("cuda::std::atomic"),
            "{line}"
        );
    }
    assert_eq!(
        text.matches("WMFIX_ATOMIC_THREAD_FENCE(").count(),
        8,
        "{text}"
    );
    assert!(text.contains("using device_ref = WMFIX_ATOMIC_REF<int, cuda::thread_scope_device>;"));
    assert!(
        text.contains("  WMFIX_ATOMIC_REF counter(d[0]);\n"),
        "{text}"
    );
    for line in [
        // cuda::std's: an atomic_ref declared by name binds its argument (no read of f[0]); one
        // held by `auto` is a reference, whose operations have sites.
        "\n    WMFIX_STD_ATOMIC_REF<int> sent(f[0]);\n",
        "\n    auto seen = WMFIX_STD_ATOMIC_REF<int>(f[0]);\n",
        "\n__device__ WMFIX_STD_ATOMIC<int> std_ready;\n",
        // An atomic passed by reference is not read at the call (it was: a weak load of its
        // word, a false race with every other block's operation on it).
        "\n    while (peek(std_flags[1]) == 0) {\n    }\n",
        // The reference a temporary binds is not read there; the global scope's `::` goes with
        // the name. Its operation has a site, which names the word the temporary refers to.
        "WMFIX_ATOMIC_REF<int, cuda::thread_scope_device>(f[0]).fetch_add(1); WMFIX_FENCE_AT(",
        "  WMFIX_ATOMIC_REF<int, ::cuda::thread_scope_device>{f[4]}.fetch_add(1); WMFIX_FENCE_AT(",
        "  WMFIX_ATOMIC_REF<int *, cuda::thread_scope_thread>(slot).fetch_add(1); WMFIX_FENCE_AT(",
        "    WMFIX_STD_ATOMIC_REF<int>{f[0]}.store(1, cuda::std::memory_order_relaxed); WMFIX_FENCE_AT(",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    // Every operation of an atomic_ref or atomic has an atomic site at its line, whose record in
    // a race build names the wrapper's (which has none): a race row names the user's line.
    // A reference's word is the runtime's to find; an object's is itself.
    let sites: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tree.parent().unwrap().join("fences.json")).unwrap(),
    )
    .unwrap();
    let atomic_lines: Vec<u64> = sites["fences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "atomic")
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    let op = regex::Regex::new(
        r"\.(load|store|exchange|fetch_[a-z]+|compare_exchange_[a-z]+)\(|\bflag ==? |\+\+counter|counter \+=|ready = 0",
    )
    .unwrap();
    let original = std::fs::read_to_string(orig.join("suite.cu")).unwrap();
    let mut ops = 0;
    for (i, line) in original.lines().enumerate() {
        if op.is_match(line) && !line.trim_start().starts_with("//") {
            ops += 1;
            assert!(
                atomic_lines.contains(&(i as u64 + 1)),
                "no atomic site at line {}: {line}",
                i + 1
            );
        }
    }
    assert_eq!(ops, 49, "{original}");
    for (i, line) in original.lines().enumerate() {
        if line.contains("flags_arr[1] = 0") || line.contains("p->") {
            assert!(
                atomic_lines.contains(&(i as u64 + 1)),
                "no atomic site: {line}"
            );
        }
    }
    for want in [
        r"\n    ready_in_block\.store\(1, cuda::memory_order_release\); WMFIX_FENCE_AT\(\d+, ready_in_block\);\n",
        r"\n  lock\.store\(0, cuda::memory_order_release\); WMFIX_FENCE_PTR\(\d+, WMFIX_ATOMIC_WORD\(lock\)\);\n",
        r"\n    flag = 1; WMFIX_FENCE_PTR\(\d+, WMFIX_ATOMIC_WORD\(flag\)\);\n",
        r"\n  \+\+counter; WMFIX_FENCE_PTR\(\d+, WMFIX_ATOMIC_WORD\(counter\)\);\n",
        r"\(!lock\.compare_exchange_strong\(expected, 1, cuda::memory_order_acquire\)\) \{ if \(WMFIX_IN_LOOP\((\d+)\)\) WMFIX_FENCE\(\d+\); expected = 0; \} WMFIX_FENCE\(\d+\);\n",
        // A __device__ struct's member is its own word (the atomic member is at the struct's).
        r"\n    box\.data = 1; WMFIX_FENCE_AT\(\d+, box\.data\);\n",
        r"\n    box\.ready\.store\(1, cuda::memory_order_release\); WMFIX_FENCE_AT\(\d+, box\.ready\);\n",
        r"\n    out\[0\] = box\.data; WMFIX_RACE_LOAD\(\d+, box\.data\);",
        // An element of an array of atomics, and one through a pointer: operations, not loads.
        r"\n    flags_arr\[1\] = 0; WMFIX_FENCE_AT\(\d+, flags_arr\[1\]\);\n",
        r"\n    p->store\(1, cuda::memory_order_relaxed\); WMFIX_FENCE_PTR\(\d+, p\);\n",
    ] {
        assert!(
            regex::Regex::new(want).unwrap().is_match(&text),
            "{want} in {text}"
        );
    }
    builds(
        &orig,
        &tree,
        "nvcc -std=c++17 -arch=sm_90 -c -o plain.o suite.cu && nvcc -std=c++17 -arch=sm_90 -DWMFIX_RACE=1 -c -o race.o suite.cu",
    );
}

#[test]
fn a_race_build_compiles_a_constexpr_function_whose_loop_reads_memory() {
    // CUB's cc_dispatch.cuh at cccl's newest commit: a race build failed with "expression must
    // have a constant value", the read after the loop being recorded during constant evaluation.
    let (_tmp, orig, tree) = instrument(&repo().join("tests/fixtures/constexpr-race"));
    let text = std::fs::read_to_string(tree.join("k.cu")).unwrap();
    assert!(text.contains("WMFIX_RACE_LOAD("), "{text}");
    builds(
        &orig,
        &tree,
        "nvcc -std=c++17 -arch=sm_90 -c -o plain.o k.cu && nvcc -std=c++17 -arch=sm_90 -DWMFIX_RACE=1 -c -o race.o k.cu",
    );
}
