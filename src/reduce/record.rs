//! `reduce.json`: what a reduction found, written by `wmfix reduce` and read back through the
//! same types by `wmfix apply` and `wmfix cost`.

use crate::exit_code::{self, fail};
use crate::fences::id::FenceId;
use crate::fences::record::{AccessKind, FenceRecord, Placement};
use crate::fences::scope::FenceScope;
use crate::out_dir::OutDir;
use crate::reduce::algorithm::{Reduced, Settings};
use crate::reduce::patch::SourceDigests;
use crate::run::environment::TestEnv;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A kept fence, for the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptFence {
    pub id: FenceId,
    /// `file:line:column`.
    pub location: String,
    pub function: String,
    pub kind: AccessKind,
    pub access: String,
    /// The placements `fences.patch` has (a loop condition's fence: the top of the body and
    /// after the loop, or after the loop alone). Absent in reductions made before.
    #[serde(default)]
    pub placements: Vec<Placement>,
    /// Why it is kept, in words (`reduce::why`): the race its absence leaves, the check that
    /// erred without it, store buffering, the memory model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proof: Vec<String>,
}

impl KeptFence {
    /// `r`, with only its placement after the loop when `after_loop_only`.
    pub fn placed(r: &FenceRecord, after_loop_only: bool) -> KeptFence {
        let mut k = KeptFence::from(r);
        if after_loop_only {
            k.placements.retain(|p| !p.loop_body);
        }
        k
    }
}

impl From<&FenceRecord> for KeptFence {
    fn from(r: &FenceRecord) -> KeptFence {
        KeptFence {
            id: r.id,
            location: r.location(),
            function: r.function.clone(),
            kind: r.kind,
            access: r.access.clone(),
            placements: r.placements.clone(),
            proof: Vec::new(),
        }
    }
}

/// A fence dropped before any run, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub id: FenceId,
    /// `file:line:column`.
    pub location: String,
    pub function: String,
    pub reason: String,
}

impl Dropped {
    /// `r`, which no launched kernel reaches (`fences.json`).
    pub fn unreachable(r: &FenceRecord) -> Dropped {
        Dropped {
            id: r.id,
            location: r.location(),
            function: r.function.clone(),
            reason: format!(
                "no launched kernel reaches `{}`: never executed",
                r.function
            ),
        }
    }

    /// `r`, which the runs with every fence never executed on global memory.
    pub fn off_global(r: &FenceRecord) -> Dropped {
        Dropped {
            id: r.id,
            location: r.location(),
            function: r.function.clone(),
            reason: "the runs with every fence never executed it on global memory (only on shared or local memory, or not at all)".into(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub app: PathBuf,
    pub env: TestEnv,
    pub seed: u64,
    /// The settings the algorithm ran with: `rare_rate` is a rate a run.
    pub settings: Settings,
    /// Steps a run (wmfix.toml's `steps` or `--steps`; 1 in reductions made before).
    #[serde(default = "crate::app::config::default_steps")]
    pub steps: u32,
    pub scope: FenceScope,
    pub initial_fences: usize,
    pub result: Reduced,
    pub kept: Vec<KeptFence>,
    /// Fences dropped before any run: in functions no launched kernel reaches (absent in
    /// reductions made before wmfix looked).
    #[serde(default)]
    pub unreachable: Vec<Dropped>,
    /// Fences dropped after the check with every fence: its runs never executed them on global
    /// memory (`run::coverage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_global: Vec<Dropped>,
    pub replayed_checks: usize,
    pub wall_seconds: f64,
    /// Where the wall time went, in order: (phase, seconds); absent in reductions made before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<(String, f64)>,
    pub patch: PathBuf,
    /// The sources the fence ids refer to; `wmfix apply` refuses if they changed.
    pub sources: SourceDigests,
    /// Preprocessed mode: kept fences in library headers, not in `fences.patch`: findings for
    /// that library, `cub/agent/x.cuh:NNN (fence N)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub library_fences: Vec<String>,
    /// Preprocessed mode: kept fences of the user's files that `fences.patch` lacks, as the
    /// instrumented build did (inside a macro's expansion, or a header's later inclusion).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced_fences: Vec<String>,
    /// Stopped by ctrl-c (or SIGTERM): `result` is the best set so far, not complete.
    #[serde(default)]
    pub interrupted: bool,
    /// The chip profile the runs used (absent in reductions made before wmfix recorded it).
    #[serde(default)]
    pub profile: Option<crate::run::profile::ProfileUsed>,
    /// What passed natively before the reduction: the original, or only the fully fenced one.
    #[serde(default)]
    pub sanity: crate::run::sanity::Sanity,
    /// The fences the PTX memory model requires beside the kept ones (`fences-model.patch`,
    /// `wmfix apply --model`), and the kept fences whose pattern was not recognised.
    #[serde(default)]
    pub model: crate::reduce::model::Completed,
    /// `--oracle race`: what the detection runs decided (the first reduced set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<crate::reduce::by_race::RaceStart>,
    /// Where this reduction and a race detection of the same build disagree (`reduce::why`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreement: Vec<String>,
    /// `--warm`: the check of warm runs against cold ones, and whether the checks stayed warm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_check: Option<crate::run::warm_check::Agreement>,
}

impl Report {
    /// The last reduction in the output folder `out`.
    pub fn load(out: &OutDir) -> Result<Report> {
        let path = out.reduce().report();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            fail(
                exit_code::NO_INPUT,
                format!(
                    "no reduction in {} ({e}); run `wmfix reduce` first",
                    out.root().display()
                ),
            )
        })?;
        Self::parse(&path, &text)
    }

    /// A reduction's report from a file of its own (`cost --fences FILE.json`).
    pub fn read(path: &Path) -> Result<Report> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", path.display())))?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Report> {
        serde_json::from_str(text)
            .map_err(|e| fail(exit_code::BAD_INPUT, format!("{}: {e}", path.display())))
    }

    pub fn save(&self, out: &OutDir) -> Result<()> {
        std::fs::write(
            out.reduce().report(),
            serde_json::to_string_pretty(self)? + "\n",
        )?;
        Ok(())
    }
}

/// Wall time by phase: each `lap` closes the phase that ran since the last.
pub struct Laps {
    last: std::time::Instant,
    phases: Vec<(String, f64)>,
}

impl Laps {
    pub fn start() -> Laps {
        Laps {
            last: std::time::Instant::now(),
            phases: Vec::new(),
        }
    }

    pub fn lap(&mut self, phase: &str) {
        let now = std::time::Instant::now();
        self.phases
            .push((phase.to_string(), (now - self.last).as_secs_f64()));
        self.last = now;
    }

    /// The phases, with the last one closed.
    pub fn finish(mut self, phase: &str) -> Vec<(String, f64)> {
        self.lap(phase);
        self.phases
    }
}
