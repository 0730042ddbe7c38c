//! What the access a fence site names did, for reading a trace's `ACCESS` records. Most sites
//! say it by their kind in `fences.json`; `fences.json` counts the cache-operator and CUB
//! load/store calls as `call` (as atomics before issue 47), but `__ldcg(p)` is a weak load and
//! `store_release(p, v)` a strong store with a release, so those are told apart by the callee's
//! name.

use super::scope::Scope;
use crate::fences::record::{AccessKind, FenceList, FenceRecord};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteKind {
    Load,
    Store,
    /// A read-modify-write; its own record, when the runtime wrapped it, says more.
    Atomic,
    /// A load at `scope` (device: CUB's `load_relaxed`), with an acquire after it.
    StrongLoad {
        scope: Scope,
        acquire: bool,
    },
    /// A store at `scope`, with a release before it.
    StrongStore {
        scope: Scope,
        release: bool,
    },
}

/// Each fence id's site kind, in id order.
pub fn site_kinds(fences: &FenceList) -> Vec<SiteKind> {
    fences.fences.iter().map(SiteKind::of).collect()
}

impl From<AccessKind> for SiteKind {
    fn from(k: AccessKind) -> SiteKind {
        match k {
            AccessKind::Load => SiteKind::Load,
            AccessKind::Store => SiteKind::Store,
            AccessKind::Call | AccessKind::Atomic => SiteKind::Atomic,
        }
    }
}

impl SiteKind {
    pub fn of(f: &FenceRecord) -> SiteKind {
        let kind = f.aimed.unwrap_or(f.kind);
        if !matches!(kind, AccessKind::Call | AccessKind::Atomic) {
            return kind.into();
        }
        // The site's first call, atomic or not (older records call both `atomic`).
        let Some(call) = f.accesses.iter().find_map(|a| {
            a.strip_prefix("atomic: ")
                .or_else(|| a.strip_prefix("call: "))
        }) else {
            return SiteKind::Atomic;
        };
        SiteKind::of_call(call)
    }

    /// A call's kind by its callee: `__ldcg(...)`, `cub::ThreadLoad<LOAD_CG>(...)`,
    /// `detail::store_release(...)`; anything else stays an atomic.
    pub fn of_call(call: &str) -> SiteKind {
        if let Some(kind) = of_asm(call) {
            return kind;
        }
        let callee = call.split('(').next().unwrap_or("").trim();
        let (path, args) = match callee.split_once('<') {
            Some((p, a)) => (p, a),
            None => (callee, ""),
        };
        let name = path.rsplit("::").next().unwrap_or(path).trim();
        let device = Scope::Device;
        let is_cache_op = |p: &str| {
            name.strip_prefix(p)
                .is_some_and(|op| ["g", "cg", "ca", "cs", "cv", "lu", "wb", "wt"].contains(&op))
        };
        match name {
            _ if is_cache_op("__ld") => SiteKind::Load,
            _ if is_cache_op("__st") => SiteKind::Store,
            "ThreadLoad" if args.contains("VOLATILE") => SiteKind::StrongLoad {
                scope: Scope::System,
                acquire: false,
            },
            "ThreadStore" if args.contains("VOLATILE") => SiteKind::StrongStore {
                scope: Scope::System,
                release: false,
            },
            "ThreadLoad" => SiteKind::Load,
            "ThreadStore" => SiteKind::Store,
            "load_relaxed" | "load_acquire" => SiteKind::StrongLoad {
                scope: device,
                acquire: name == "load_acquire",
            },
            "store_relaxed" | "store_release" => SiteKind::StrongStore {
                scope: device,
                release: name == "store_release",
            },
            _ => SiteKind::Atomic,
        }
    }
}

/// Inline PTX counted as a load/store call (`rewrite/asm.rs`: its strong or atomic instruction):
/// an acquire or relaxed load, a release or relaxed store at the scope it names, an atomic.
fn of_asm(call: &str) -> Option<SiteKind> {
    let t = call.trim_start();
    if !(t.starts_with("asm") || t.starts_with("__asm")) {
        return None;
    }
    let (_, op) = crate::rewrite::asm::kind_of(&crate::rewrite::asm::memory_ops(t))?;
    let scope = Scope::from(op.scope);
    Some(match op.kind {
        AccessKind::Load => SiteKind::StrongLoad {
            scope,
            acquire: op.acquire,
        },
        AccessKind::Store => SiteKind::StrongStore {
            scope,
            release: op.release,
        },
        _ => SiteKind::Atomic,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_ptx_calls_are_strong_loads_stores_or_atomics_by_their_instruction() {
        assert_eq!(
            SiteKind::of_call(
                r#"asm volatile("ld.global.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory")"#
            ),
            SiteKind::StrongLoad {
                scope: Scope::Device,
                acquire: true
            }
        );
        assert_eq!(
            SiteKind::of_call(
                r#"asm volatile("st.relaxed.cta.global.u32 [%0], %1;" :: "l"(p), "r"(v))"#
            ),
            SiteKind::StrongStore {
                scope: Scope::Block,
                release: false
            }
        );
        assert_eq!(
            SiteKind::of_call(
                r#"asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(o) : "l"(c), "r"(1u))"#
            ),
            SiteKind::Atomic
        );
    }

    #[test]
    fn cache_operator_and_cub_calls_are_loads_and_stores_by_their_name() {
        assert_eq!(SiteKind::of_call("__ldcg(&src[start + i])"), SiteKind::Load);
        assert_eq!(SiteKind::of_call("__ldg(p)"), SiteKind::Load);
        assert_eq!(SiteKind::of_call("__stcg(&out[i], v)"), SiteKind::Store);
        assert_eq!(
            SiteKind::of_call("cub::ThreadLoad<cub::LOAD_CG>(p + i)"),
            SiteKind::Load
        );
        assert_eq!(
            SiteKind::of_call("ThreadStore<STORE_VOLATILE>(p, v)"),
            SiteKind::StrongStore {
                scope: Scope::System,
                release: false
            }
        );
        assert_eq!(
            SiteKind::of_call("detail::load_acquire(flag)"),
            SiteKind::StrongLoad {
                scope: Scope::Device,
                acquire: true
            }
        );
        assert_eq!(
            SiteKind::of_call("store_release(&f[b], 1)"),
            SiteKind::StrongStore {
                scope: Scope::Device,
                release: true
            }
        );
        assert_eq!(SiteKind::of_call("atomicAdd(&n, 1)"), SiteKind::Atomic);
        assert_eq!(SiteKind::of_call("__ldx(p)"), SiteKind::Atomic);
    }

    #[test]
    fn a_sites_call_is_read_by_its_name_in_records_old_and_new() {
        let record = |kind: &str, accesses: &[&str]| -> FenceRecord {
            serde_json::from_value(serde_json::json!({
                "id": 0, "file": "k.cu", "line": 1, "column": 1, "function": "k",
                "access": "", "kind": kind, "accesses": accesses, "placements": [],
            }))
            .unwrap()
        };
        // fences.json now calls `__ldcg(p)` a call; before issue 47, an atomic.
        for kind in ["call", "atomic"] {
            let r = record(kind, &[&format!("{kind}: __ldcg(&src[i])")]);
            assert_eq!(SiteKind::of(&r), SiteKind::Load, "{kind}");
        }
        let r = record(
            "atomic",
            &["call: __stcg(&o[i], v)", "atomic: atomicAdd(n, 1)"],
        );
        assert_eq!(SiteKind::of(&r), SiteKind::Store);
        assert_eq!(
            SiteKind::of(&record("store", &["store: a[i]"])),
            SiteKind::Store
        );
    }
}
