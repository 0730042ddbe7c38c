//! One module per subcommand: its arguments, its `run`, its printing. `main.rs` only dispatches.
//! The arguments several subcommands share live here.

pub mod apply;
pub mod build;
pub mod cost;
pub mod help;
pub mod init;
pub mod insert;
pub mod litmus;
pub mod prepare;
pub mod race;
pub mod reduce;
pub mod report;
pub mod test;
pub mod tune;
pub mod values;

use crate::cmd::values::Count;
use crate::exit_code;
use crate::fences::scope::FenceScope;
use crate::out_dir::OutDir;
use std::path::{Path, PathBuf};

/// Prints a command's result: `human` on stdout, or with `--json` the one JSON document `doc`
/// on stdout and `human` on stderr, so a script reads stdout whole.
pub(crate) fn report(json: bool, doc: &impl serde::Serialize, human: &str) {
    if json {
        eprint!("{human}");
        println!(
            "{}",
            serde_json::to_string_pretty(doc).expect("reports serialise")
        );
    } else {
        print!("{human}");
    }
}

/// A program that runs on a GPU (the config's `gpu`, true by default) needs a driver and a
/// device: checked before anything is built or written (exit 69).
pub(crate) fn needs_gpu(app: &crate::app::config::App, command: &str) -> anyhow::Result<()> {
    if app.config.gpu {
        crate::run::hold::require_gpu(command)?;
    }
    Ok(())
}

/// The output folder of an earlier command that this one continues (`--resume`, `--replay`,
/// `apply`, `cost` of a reduction), with the file it needs: a missing one is exit 66 with `hint`,
/// and nothing is written before that is known.
pub(crate) fn open_earlier(
    out: &Path,
    inputs: &[PathBuf],
    needs: impl Fn(&OutDir) -> PathBuf,
    hint: &str,
) -> anyhow::Result<OutDir> {
    let missing = |what: String| exit_code::fail(exit_code::NO_INPUT, format!("{what}: {hint}"));
    let o = OutDir::existing(out, inputs).map_err(|e| {
        if exit_code::code_of(&e) == exit_code::NO_INPUT {
            missing(e.to_string())
        } else {
            e
        }
    })?;
    let file = needs(&o);
    if !file.is_file() {
        return Err(missing(format!("{}: no such file", file.display())));
    }
    Ok(o)
}

/// The output folder: an earlier command's when `earlier` (`open_earlier`), else one opened
/// for a fresh start.
pub(crate) fn open_out(
    out: &Path,
    inputs: &[PathBuf],
    earlier: bool,
    needs: impl Fn(&OutDir) -> PathBuf,
    hint: &str,
) -> anyhow::Result<OutDir> {
    if earlier {
        open_earlier(out, inputs, needs, hint)
    } else {
        OutDir::open(out, inputs)
    }
}

#[derive(clap::Args)]
pub struct EngineArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0, value_parser = crate::cmd::values::whole_usize)]
    pub device: usize,
    /// Test instances per launch: a power of two, at least 256, or `auto`, the most whose test
    /// blocks fit on the GPU at once beside the most stressing blocks.
    #[arg(long, default_value = "auto", value_parser = instances)]
    pub instances: u32,
    /// Words between neighbouring instances' first locations (at least the largest distance + 1).
    #[arg(long, default_value_t = 256, value_parser = crate::cmd::values::whole_u32)]
    pub stride: u32,
    /// Bound on how long a stressing block stresses, in microseconds (it stops earlier, as the
    /// runtime's do, once the test blocks are done).
    #[arg(long, default_value_t = 10_000, value_parser = crate::cmd::values::whole_u64)]
    pub stress_max_us: u64,
    /// The thread-synchronisation incantation: an instance's threads meet before the test.
    #[arg(long)]
    pub sync: bool,
    /// Dense packing incantation: instances' locations PACK words apart, y in a permuted
    /// instance's slot, so instances share cache lines (0: each instance in its own --stride
    /// words, y at x + distance).
    #[arg(long, default_value_t = 0, value_parser = crate::cmd::values::whole_u32)]
    pub pack: u32,
    /// Pre-stress incantation: stores by each test thread to a stressed location before its
    /// test (0: none).
    #[arg(long, default_value_t = 0, value_parser = crate::cmd::values::whole_u32)]
    pub prestress: u32,
    /// Bank-conflict incantation: conflicting shared-memory accesses by each test thread
    /// before its test (0: none).
    #[arg(long, default_value_t = 0, value_parser = crate::cmd::values::whole_u32)]
    pub banks: u32,
    /// Grid barrier incantation: every test block meets the others (bounded spin) before the
    /// test, so the whole launch starts its tests together.
    #[arg(long)]
    pub barrier: bool,
    /// The peer's layout: each test thread runs role 0 of one instance, then role 1 of
    /// another whose role 0 runs in another block (one thread per instance, not two).
    #[arg(long)]
    pub dual: bool,
    /// Seed of the per-launch random choices.
    #[arg(long, default_value_t = 1, value_parser = crate::cmd::values::whole_u64)]
    pub seed: u64,
}

/// `--instances auto|N`: `auto` is the engine's `AUTO`.
fn instances(s: &str) -> Result<u32, String> {
    match s {
        "auto" => Ok(crate::litmus::engine::AUTO),
        n => n
            .parse()
            .map_err(|_| format!("wants `auto` or a number, not {s:?}")),
    }
}

/// `--stress-blocks MIN..MAX`, with MIN <= MAX: stressing blocks per launch, drawn uniformly.
pub(crate) fn stress_blocks(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("wants MIN..MAX with MIN <= MAX, not {s:?}");
    let (lo, hi) = s.split_once("..").ok_or_else(bad)?;
    let (lo, hi): (u32, u32) = (
        lo.trim().parse().map_err(|_| bad())?,
        hi.trim().parse().map_err(|_| bad())?,
    );
    if lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

impl EngineArgs {
    /// The engine's settings with `stress_blocks` per launch (each command has its default).
    pub fn settings(&self, stress_blocks: (u32, u32)) -> crate::litmus::engine::Settings {
        crate::litmus::engine::Settings {
            instances: self.instances,
            stride: self.stride,
            stress_blocks,
            max_us: self.stress_max_us,
            sync: self.sync,
            pack: self.pack,
            prestress: self.prestress,
            banks: self.banks,
            grid_barrier: self.barrier,
            dual: self.dual,
            seed: self.seed,
        }
    }
}

/// How `test` and `reduce` run the program.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Runs at a time (at least 1). The default, 4, doubled runs per hour on an H200 (cbe-dot:
    /// 10,561 with one job, 20,537 with four, 19,608 with eight) with the same error rate.
    #[arg(long, short, default_value = "4")]
    pub jobs: Count,
    /// Spread the runs over these GPUs (`all`, or ordinals like `0,1`): worker w runs with
    /// CUDA_VISIBLE_DEVICES set to the (w mod n)-th. Raise --jobs with the number of GPUs.
    #[arg(long)]
    pub gpus: Option<values::GpuList>,
    /// Do not hold a CUDA context open in wmfix while the runs go. Holding one makes each
    /// run's own context faster: a context held by another process cut a cbe-dot run on an
    /// H200 from 0.45 s to 0.31 s.
    #[arg(long)]
    pub no_hold: bool,
    /// Serve the runs from a CUDA MPS server of wmfix's own (nvidia-cuda-mps-control; its pipe
    /// and log folders in the output folder; told to quit at the end): cheaper contexts, 1.3x
    /// cbe-dot's runs an hour on an H100.
    #[arg(long)]
    pub mps: bool,
    /// Many runs a process: the program's main is called once a run, so runs share a CUDA
    /// context (cbe-dot on an H100: 16,004 runs an hour, 337,158 warm). A process is replaced
    /// after 1,000 runs, once it has lived 30 s; the program's module-scope variables keep their
    /// values between its runs, so a check of 8 warm runs against 4 cold ones with every fence
    /// comes first, and where warm runs err more often the runs go cold (see the guide's "Warm
    /// runs").
    #[arg(long)]
    pub warm: bool,
    /// A command each run goes through, as wmfix.toml's `launcher` (`srun --ntasks=1
    /// --gres=gpu:1 --exclusive` inside a Slurm allocation): `LAUNCHER sh -c 'RUN'`.
    #[arg(long, value_name = "COMMAND")]
    pub launcher: Option<String>,
}

impl RunArgs {
    pub fn gpus(&self) -> anyhow::Result<Vec<String>> {
        match &self.gpus {
            Some(values::GpuList::All) => crate::run::batch::all_gpus(),
            Some(values::GpuList::Listed(g)) => Ok(g.clone()),
            None => Ok(vec![]),
        }
    }
}

#[derive(clap::Args)]
pub struct AppArgs {
    /// The application's folder, holding wmfix.toml.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Output directory [default: DIR/wmfix-out, beside the application whatever the current
    /// folder].
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Scope of the inserted fences.
    #[arg(long, value_enum, default_value_t = FenceScope::Device)]
    pub fence: FenceScope,
}

impl AppArgs {
    /// `--out`, else `DIR/wmfix-out`.
    pub fn out(&self) -> PathBuf {
        default_out(&self.dir, self.out.as_deref())
    }
}

/// `out`, else the application's `wmfix-out`.
pub(crate) fn default_out(dir: &Path, out: Option<&Path>) -> PathBuf {
    out.map_or_else(|| dir.join("wmfix-out"), Path::to_path_buf)
}
