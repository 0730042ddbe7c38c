//! Model completion on the case studies' own sources: the fences the reductions kept on an
//! H200 (results/2026-11-24*-nvidia-h200/reduce-*) get their acquire/release partners.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wmfix::fences::id::{FenceId, Ids};
use wmfix::fences::record::FenceList;
use wmfix::reduce::model::{self, Completed};

fn completed(study: &str, kept: &[usize]) -> (Completed, FenceList) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("case-studies")
        .join(study);
    completed_in(&dir, kept)
}

fn completed_in(dir: &Path, kept: &[usize]) -> (Completed, FenceList) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = wmfix()
        .args([
            "insert",
            dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let list = FenceList::load(&out.join("fences.json")).unwrap();
    let sources: BTreeMap<PathBuf, String> = list
        .fences
        .iter()
        .map(|r| {
            (
                r.file.clone(),
                std::fs::read_to_string(dir.join(&r.file)).unwrap(),
            )
        })
        .collect();
    let kept: Ids = kept.iter().copied().map(FenceId).collect();
    let program = model::Program {
        records: &list.fences,
        sources: &sources,
    };
    (model::complete(&program, &kept), list)
}

fn ids(c: &Completed) -> Vec<usize> {
    c.fences.iter().map(|f| f.id.0).collect()
}

#[test]
fn cub_scan_nf_gets_the_readers_acquire_after_the_flag_spin() {
    // Kept: 5, after `prefix[tile] = ...`, before `flag[tile] = 1`.
    let (c, list) = completed("cub-scan-nf", &[5]);
    assert_eq!(ids(&c), [3], "{c:?}");
    assert_eq!(list.fences[3].accesses, ["load: flag[tile - 1]"]);
    assert_eq!(c.fences[0].side, "acquire");
    assert_eq!(c.fences[0].variable, "flag");
    assert!(c.unrecognised.is_empty());
}

#[test]
fn cbe_dot_gets_the_acquire_after_the_lock() {
    // Kept: 3, after `*c += cache[0]`, before `unlock(mutex)`.
    let (c, list) = completed("cbe-dot", &[3]);
    assert_eq!(ids(&c), [0], "{c:?}");
    assert_eq!(list.fences[0].accesses, ["atomic: atomicCAS(mutex, 0, 1)"]);
    assert_eq!(c.fences[0].side, "acquire");
}

#[test]
fn tpo_tm_finds_the_unlock_after_the_call_of_put() {
    // Kept: 12, `q->tail = tail + n;` in put, called with the lock held and unlocked after.
    let (c, list) = completed("tpo-tm", &[12]);
    assert_eq!(ids(&c), [0], "{c:?}");
    assert_eq!(list.fences[0].function, "try_lock");
}

#[test]
fn cbe_ht_gets_the_acquire_after_try_lock() {
    let (c, _) = completed("cbe-ht", &[6]);
    assert_eq!(ids(&c), [0], "{c:?}");
}

#[test]
fn an_acquire_kept_alone_gets_its_release_before_the_flag_store() {
    let (c, _) = completed("cub-scan-nf", &[3]);
    assert_eq!(ids(&c), [5], "{c:?}");
    assert_eq!(c.fences[0].side, "release");
}

#[test]
fn a_fence_in_no_pattern_is_said_to_be_unrecognised() {
    // 1: after the load of the input `in[i]`.
    let (c, _) = completed("cub-scan-nf", &[1]);
    assert!(c.fences.is_empty());
    assert_eq!(c.unrecognised.len(), 1);
    assert!(c.unrecognised[0].1.contains("no flag store"), "{c:?}");
}

#[test]
fn a_lock_kept_alone_gets_the_release_before_each_unlock_call() {
    let (c, _) = completed("cbe-dot", &[0]);
    assert_eq!(ids(&c), [3], "{c:?}");
    assert_eq!(c.fences[0].side, "release");
}

#[test]
fn a_flag_read_in_an_if_with_an_else_is_no_spin() {
    // Its fence has two placements too (the top of each branch), but no loop waits on it.
    let (_tmp, dir) = fixture("reduce-standin");
    std::fs::write(
        dir.join("kernel.cu"),
        "__global__ void k(int *data, int *flag) {\n  data[0] = 1;\n  flag[0] = 1;\n  if (flag[1] == 1) {\n    data[1] = 2;\n  } else {\n    data[2] = 3;\n  }\n}\n",
    )
    .unwrap();
    let (c, list) = completed_in(&dir, &[0]);
    assert_eq!(list.fences[2].accesses, ["load: flag[1]"]);
    assert_eq!(list.fences[2].placements.len(), 2);
    assert!(c.fences.is_empty(), "{c:?}");
    assert_eq!(ids_unrecognised(&c), [0], "{c:?}");
}

fn ids_unrecognised(c: &Completed) -> Vec<usize> {
    c.unrecognised.iter().map(|(id, _)| id.0).collect()
}

#[test]
fn sdk_red_nf_the_writers_release_before_the_ticket_gets_the_last_blocks_acquire() {
    // Kept on an H100 (results/2026-11-25-nvidia-h100-80gb-hbm3/reduce-sdk-red-nf): 1, after
    // `partial[blockIdx.x] = sum;`, before `unsigned ticket = atomicInc(count, ...)`.
    let (c, list) = completed("sdk-red-nf", &[1]);
    assert_eq!(ids(&c), [2], "{c:?}");
    assert_eq!(
        list.fences[2].accesses,
        ["atomic: atomicInc(count, blocks - 1)"]
    );
    assert_eq!(c.fences[0].side, "acquire");
    assert_eq!(c.fences[0].variable, "count");
    assert!(c.unrecognised.is_empty(), "{c:?}");
}

#[test]
fn sdk_red_nf_the_acquire_after_the_ticket_gets_the_release_before_it() {
    let (c, _) = completed("sdk-red-nf", &[2]);
    assert_eq!(ids(&c), [1], "{c:?}");
    assert_eq!(c.fences[0].side, "release");
}

#[test]
fn an_atomic_whose_result_is_only_an_index_is_no_ticket() {
    // ct-octree's `const int idx = atomicAdd(o.leaf_count, 1);` takes a slot, compared with nothing.
    let (c, list) = completed("ct-octree", &[27]);
    assert!(
        list.fences[27].access.contains("atomicAdd(o.leaf_count"),
        "{:?}",
        list.fences[27]
    );
    assert!(c.fences.is_empty(), "{c:?}");
    assert_eq!(ids_unrecognised(&c), [27]);
}
