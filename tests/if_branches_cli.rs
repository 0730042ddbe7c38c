//! Every branch of an `#if` group instrumented (issue 45): the fixtures of
//! `fixtures/if_branches/` (the kernel, whose `#else` branch is the body of an unbraced
//! `if`; unbraced `for`/`while`/`if`-`else` bodies split by groups, nested groups, an `#elif`
//! chain, `#if 0`, an `__CUDA_ARCH__` branch, conditions split by a group; a name declared
//! `__device__` in one branch and a host constant in the other, in the file and in a header)
//! instrumented, then in each
//! configuration (`-D` flags): preprocessed (`cpp`, device and host pass) for the fences that
//! configuration compiles and the balance of its braces, and built with nvcc.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::path::Path;

/// File, `-D` flags, and the accesses (as `fences.json` names them) whose fences the device
/// pass of that configuration compiles.
const CONFIGS: &[(&str, &str, &[&str])] = &[
    ("issue.cu", "", &["int v = atomicAdd(a, 1);", "a[2] = v;"]),
    (
        "issue.cu",
        "-DFAST",
        &["int v = atomicAdd(a, 1);", "a[1] = v;"],
    ),
    (
        "loops.cu",
        "",
        &[
            "atomicAdd(&a[j], b[i]);",
            "int v = a[0];",
            "v = a[4]++;",
            "a[5] = 1;",
            "a[9] = v;",
            "a[11] = v;",
            "a[12] = n;",
            "y[1] = 3;",
        ],
    ),
    (
        "loops.cu",
        "-DREPEAT -DGUARD",
        &[
            "atomicAdd(&a[j], b[i]);",
            "int v = a[0];",
            "v = a[4]++;",
            "a[5] = 1;",
            "a[9] = v;",
            "a[11] = v;",
            "a[12] = n;",
            "y[1] = 3;",
        ],
    ),
    (
        "loops.cu",
        "-DMODE=1",
        &[
            "atomicAdd(&a[j], b[i]);",
            "int v = a[0];",
            "v = atomicAdd(&a[1], 1);",
            "a[5] = 1;",
            "a[9] = v;",
            "a[11] = v;",
            "a[12] = n;",
            "y[1] = 3;",
        ],
    ),
    (
        "loops.cu",
        "-DMODE=2 -DEXTRA",
        &[
            "atomicAdd(&a[j], b[i]);",
            "int v = a[0];",
            "v = atomicAdd(&a[2], 2);",
            "a[5] = 1;",
            "a[9] = v;",
            "a[11] = v;",
            "a[12] = n;",
            "y[1] = 3;",
        ],
    ),
    (
        "loops.cu",
        "-DMODE=2 -DALT -DFAST",
        &[
            "atomicAdd(&a[j], b[i]);",
            "int v = a[0];",
            "v = atomicAdd(&a[3], 3);",
            "a[5] = 1;",
            "a[6] = 2;",
            "a[9] = v;",
            "a[11] = v;",
            "a[12] = n;",
            "y[1] = 3;",
        ],
    ),
    (
        "limit.cu",
        "",
        &[
            "a[threadIdx.x] = limit;",
            "(x > a[0])",
            "a[1] = x;",
            "a[2] = y;",
        ],
    ),
    (
        "limit.cu",
        "-DDEVICE_LIMIT",
        &[
            "a[threadIdx.x] = limit;",
            "(x > a[0])",
            "a[1] = x;",
            "a[2] = y;",
        ],
    ),
];

/// `text` (an instrumented file, its prologue cut off) through `cpp` with `flags`, including
/// the original headers of `app` (the instrumented ones include the runtime, whose macros would
/// hide the fence ids).
fn preprocessed(dir: &Path, app: &Path, text: &str, flags: &str) -> String {
    let path = dir.join("configuration.cu");
    std::fs::write(&path, text).unwrap();
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cpp -P -D__CUDACC__ -I{} {flags} {}",
            app.display(),
            path.display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "cpp {flags}: {}", stderr(&o));
    stdout(&o)
}

/// The fence ids a preprocessed text names (`WMFIX_FENCE_AT(3, ...)`, `WMFIX_IN_LOOP(4)`).
fn fence_ids(text: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("WMFIX_") {
        let rest = &text[at..];
        let Some(open) = rest.find('(') else { continue };
        let digits: String = rest[open + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let name = rest[..open]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if name && let Ok(id) = digits.parse() {
            out.insert(id);
        }
    }
    out
}

/// Whether every `}` closes a `{` and all are closed.
fn balanced(text: &str) -> bool {
    let mut depth = 0i64;
    for c in text.chars() {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

#[test]
fn every_branch_of_every_if_group_is_fenced_and_builds_in_each_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let app = copy_tree(&repo().join("tests/fixtures/if_branches"), tmp.path());
    let o = run(
        tmp.path(),
        &["insert", app.to_str().unwrap(), "--out", "out", "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The issue's `#else`; in loops.cu the `#else` of `__CUDA_ARCH__`, the `#elif` branch's two
    // (nested), the last `#else` and the one after `#if 0`: branches past the first of groups
    // that split statements, each holding a fence.
    assert_eq!(json["if_branches"], 6, "{json}");
    // What differs between configurations is left out, said at its line: a condition split by
    // a group (its fence would follow the whole `if`, outside the group), an unbraced body that
    // is one statement in one configuration and the next in the other, and the read of a
    // name that only one branch declares `__device__`. A header's such name (`limits.cuh`) is
    // no `__device__` variable to other files: their reads of it get no fence, unsaid.
    let warnings: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let expected = [
        "limit.cu:12:3: the fence after `int x = limit;` differs",
        "loops.cu:35:6: the fence after `(a[7] > 0)` differs",
        "loops.cu:37:6: the fence after `(a[8] > 0 && b[i] > 0)` differs",
        "loops.cu:75:5: the fence after `x[0] = 1;` differs",
        "loops.cu:77:3: the fence after `y[0] = 2;` differs",
    ];
    assert_eq!(warnings.len(), expected.len(), "{warnings:#?}");
    for (w, e) in warnings.iter().zip(expected) {
        assert!(w.contains(e), "{w}\nexpected: {e}");
    }
    let tree = tmp.path().join("out/tree");
    // A launch one level deeper where a group opens a loop: instrumented once, in both.
    let loops = std::fs::read_to_string(tree.join("loops.cu")).unwrap();
    assert_eq!(
        loops.matches("repeat<<<wmfix_launch(1, 0), 32>>>").count(),
        1,
        "{loops}"
    );
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/fences.json")).unwrap())
            .unwrap();
    let records = list["fences"].as_array().unwrap();
    // Every record names the line of its access, whichever branch it is in.
    for r in records {
        let file = r["file"].as_str().unwrap();
        let line = r["line"].as_u64().unwrap() as usize;
        let original = std::fs::read_to_string(app.join(file)).unwrap();
        let first = r["accesses"][0].as_str().unwrap();
        let access = first.split_once(": ").unwrap().1;
        assert!(
            original.lines().nth(line - 1).unwrap().contains(access),
            "{file}:{line} does not hold {access}"
        );
    }
    let access_of = |id: usize| {
        let r = records.iter().find(|r| r["id"] == id).unwrap();
        (
            r["file"].as_str().unwrap().to_string(),
            r["access"].as_str().unwrap().to_string(),
        )
    };
    let mut builds = Vec::new();
    for (file, flags, fenced) in CONFIGS {
        let text = std::fs::read_to_string(tree.join(file)).unwrap();
        let code = text.split_once("#line 1\n").unwrap().1;
        let device = preprocessed(
            tmp.path(),
            &app,
            code,
            &format!("{flags} -D__CUDA_ARCH__=900"),
        );
        let host = preprocessed(tmp.path(), &app, code, flags);
        assert!(
            balanced(&device) && balanced(&host),
            "{file} {flags}:\n{device}"
        );
        let seen: BTreeSet<String> = fence_ids(&device)
            .into_iter()
            .map(|id| {
                let (f, access) = access_of(id);
                assert_eq!(&f, file, "fence {id}");
                access
            })
            .collect();
        let want: BTreeSet<String> = fenced.iter().map(|s| s.to_string()).collect();
        assert_eq!(seen, want, "{file} {flags}:\n{device}");
        builds.push(format!(
            "nvcc -arch=sm_90 -std=c++17 -Werror all-warnings -c {flags} {file} -o /dev/null || {{ echo 'in: {file} {flags}'; exit 1; }}"
        ));
    }
    let o = nvcc_command(&tree)
        .arg("-c")
        .arg(builds.join("\n"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}
