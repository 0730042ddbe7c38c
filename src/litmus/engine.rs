//! The litmus engine: MP, LB and SB test instances run by the thousand per launch on the GPU,
//! with stressing blocks in the same launch, outcomes counted on the GPU (Sorensen & Donaldson, PLDI 2016, Sec. 3).
//!
//! The kernels are `runtime-cu/litmus/litmus.cu`, embedded in the binary with the runtime's
//! stress headers it includes (its stressing blocks run the applications' stress code),
//! compiled at run time with nvcc to a cubin for the device's architecture (cached beside the
//! output) and launched through the driver API (cudarc, which loads libcuda at run time: wmfix
//! builds and runs without CUDA, and only these commands need a GPU).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};

use crate::exit_code::{self, fail};
use crate::litmus::profile::MAX_SPREAD;
use crate::litmus::vocabulary::{Access, Sequence, Test};

/// The kernels' source.
pub const SOURCE: &str = include_str!("../../runtime-cu/litmus/litmus.cu");
/// The kernels' source and the runtime headers it includes, as they are written beside each
/// other for nvcc: the stressing blocks run the runtime's own stress loop.
pub const SOURCES: [(&str, &str); 3] = [
    ("litmus.cu", SOURCE),
    (
        "wmfix_common.cuh",
        include_str!("../../runtime-cu/wmfix_common.cuh"),
    ),
    (
        "wmfix_stress.cuh",
        include_str!("../../runtime-cu/wmfix_stress.cuh"),
    ),
];
/// The test kernel (test and stressing blocks) and the evaluation kernel.
pub const KERNEL: &str = "litmus_run";
pub const EVAL_KERNEL: &str = "litmus_eval";
/// Threads per block, `LITMUS_BLOCK` in the source.
pub const BLOCK: u32 = 256;
/// The longest access sequence the tune enumerates (every (ld|st)+ up to it: 2^(N+1) - 2 of
/// them). The kernel runs any sequence the runtime runs.
pub const LONGEST_TUNED_SEQUENCE: usize = 8;
/// Counters of a launch (`LITMUS_COUNTERS` in the source): the runtime's counters of finished
/// blocks, then stressing blocks started and test blocks at the grid barrier.
pub const COUNTERS: usize = 32 * 32 + 2;

/// Mirrors `LitmusArgs` in litmus.cu (the source asserts the same size).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Args {
    mem: u64,
    results: u64,
    barrier: u64,
    scratch: u64,
    locs: u64,
    done: u64,
    hist: u64,
    max_ns: u64,
    test: u32,
    instances: u32,
    stride: u32,
    d0: u32,
    ndist: u32,
    test_blocks: u32,
    stress_blocks: u32,
    nlocs: u32,
    seq_bits: u32,
    seq_len: u32,
    sync: u32,
    mul0: u32,
    add0: u32,
    mul1: u32,
    add1: u32,
    rot: u32,
    pack: u32,
    permy: u32,
    prestress: u32,
    banks: u32,
    grid_barrier: u32,
    dual: u32,
}
const _: () = assert!(std::mem::size_of::<Args>() == 152);
/// The size of the kernels' parameter struct, which the CUDA side asserts too.
pub const ARGS_SIZE: usize = std::mem::size_of::<Args>();
// SAFETY: plain old data laid out as the kernel's parameter struct.
unsafe impl DeviceRepr for Args {}

/// Each field of the kernels' parameter struct with its byte offset, for the test that
/// checks this side against the CUDA compiler's `offsetof`.
pub fn layout() -> Vec<(&'static str, usize)> {
    macro_rules! fields {
        ($($f:ident),*) => { vec![$((stringify!($f), std::mem::offset_of!(Args, $f))),*] };
    }
    fields!(
        mem,
        results,
        barrier,
        scratch,
        locs,
        done,
        hist,
        max_ns,
        test,
        instances,
        stride,
        d0,
        ndist,
        test_blocks,
        stress_blocks,
        nlocs,
        seq_bits,
        seq_len,
        sync,
        mul0,
        add0,
        mul1,
        add1,
        rot,
        pack,
        permy,
        prestress,
        banks,
        grid_barrier,
        dual
    )
}

/// How launches are shaped; the same for every job of an engine.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Settings {
    /// Test instances per launch: a power of two, at least `BLOCK`; `AUTO` (0): as many as fit
    /// on the GPU beside the most stressing blocks (`fitting_instances`).
    pub instances: u32,
    /// Words between the first locations of neighbouring instances (at least the largest
    /// distance plus one).
    pub stride: u32,
    /// Stressing blocks per launch, drawn uniformly from this range (inclusive).
    pub stress_blocks: (u32, u32),
    /// Bound on how long a stressing block stresses, in microseconds (it stops earlier, as the
    /// runtime's do, once the test blocks are done).
    pub max_us: u64,
    /// The thread-synchronisation incantation (Alglave et al., ASPLOS 2015, Sec. 4.3.4): an instance's two
    /// threads meet at a bounded spin barrier before the test.
    pub sync: bool,
    /// Dense packing: 0 keeps each instance in its own `stride` words with y = x + d; `p`
    /// puts instance i's x at word 2pi and its y at 2p perm(i) + p, perm a fresh odd
    /// multiplier per launch, so instances share cache lines (distances are then not
    /// controlled: one distance, `d0`, is reported).
    pub pack: u32,
    /// Pre-stress incantation: stores by each test thread to a stressed location before its
    /// test (0: none; needs stress locations).
    pub prestress: u32,
    /// Bank-conflict incantation (Alglave et al., ASPLOS 2015, Sec. 4.2): conflicting shared-memory accesses by
    /// each test thread before its test (0: none).
    pub banks: u32,
    /// Grid barrier incantation: all test blocks meet (bounded spin) before the test.
    pub grid_barrier: bool,
    /// The peer's layout: each test thread runs role 0 of one instance and then role 1 of
    /// another, whose role 0 runs in another block: one thread per instance instead of two.
    pub dual: bool,
    pub seed: u64,
}

impl Settings {
    /// Test threads per instance: 2, or 1 with `dual`.
    pub fn threads_per_instance(&self) -> u32 {
        if self.dual { 1 } else { 2 }
    }

    /// Test blocks of a launch of `instances` instances.
    fn test_blocks(&self, instances: u32) -> u32 {
        self.threads_per_instance() * instances / BLOCK
    }
}

/// `Settings::instances`: as many as fit.
pub const AUTO: u32 = 0;

/// Most instances `AUTO` picks (mem, results and the evaluation grow with them).
const MAX_AUTO_INSTANCES: u32 = 1 << 20;

/// The largest power of two of instances (at least `BLOCK`) whose test blocks fit on the GPU
/// at once beside `stress` stressing blocks, `resident` blocks fitting in all, each instance
/// taking `threads` test threads: more instances per launch spread its fixed costs (two kernel
/// launches, the stress's start and end).
pub fn fitting_instances(resident: u32, stress: u32, threads: u32) -> u32 {
    let room = resident.saturating_sub(stress) as u64 * BLOCK as u64 / threads as u64;
    let mut n = BLOCK;
    while (n as u64) * 2 <= room && n < MAX_AUTO_INSTANCES {
        n *= 2;
    }
    n
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            instances: AUTO,
            stride: 256,
            stress_blocks: (64, 512),
            max_us: 10_000,
            sync: false,
            pack: 0,
            prestress: 0,
            banks: 0,
            grid_barrier: false,
            dual: false,
            seed: 1,
        }
    }
}

/// Which scratchpad locations the stressing threads hammer.
#[derive(Clone, Debug)]
pub enum Locations {
    /// No stressing blocks.
    None,
    /// The same locations in every launch (threads spread evenly over them).
    Fixed(Vec<u32>),
    /// `count` of `from`, a fresh random subset per launch (spread finding).
    Random { from: Vec<u32>, count: usize },
}

/// One configuration: a test over the distances `d0 .. d0 + ndist`, `executions` instances of
/// each, under one stress.
#[derive(Clone, Debug)]
pub struct Job {
    pub test: Test,
    pub d0: u32,
    pub ndist: u32,
    pub executions: u64,
    pub sequence: Sequence,
    pub locations: Locations,
}

/// What a job observed.
#[derive(Clone, Debug, PartialEq)]
pub struct Counts {
    /// Per distance, the outcomes `[r0 r1 = 00, 01, 10, 11]`.
    pub outcomes: Vec<[u64; 4]>,
    /// Instances with a result missing (should be 0; counted, never taken as an outcome).
    pub missing: u64,
    pub instances: u64,
    pub launches: u64,
    pub seconds: f64,
}

impl Counts {
    /// Weak behaviours per distance.
    pub fn weak(&self, test: Test) -> Vec<u64> {
        let i = weak_outcome(test);
        self.outcomes.iter().map(|o| o[i]).collect()
    }
}

/// The outcome index (`r0 * 2 + r1`) that only a weak memory model allows: MP reads y = 1 then
/// x = 0; LB reads 1 and 1; SB reads 0 and 0.
pub fn weak_outcome(test: Test) -> usize {
    match test {
        Test::Mp => 2,
        Test::Lb => 3,
        Test::Sb => 0,
    }
}

/// A stressing sequence as the runtime encodes it: bit k set = access k is a store; and its
/// length.
pub fn sequence_bits(seq: &Sequence) -> (u32, u32) {
    let mut bits = 0u32;
    for (k, a) in seq.accesses().iter().enumerate() {
        if *a == Access::St {
            bits |= 1 << k;
        }
    }
    (bits, seq.len() as u32)
}

/// Compiles the kernels for `sm_<arch>` into `cache` (once per source and architecture) and
/// returns the cubin's path.
pub fn compile(cache: &Path, arch: u32) -> Result<PathBuf> {
    let all: String = SOURCES.iter().map(|(_, text)| *text).collect();
    let digest = crate::digest::Fnv::of(all.as_bytes());
    let cubin = cache.join(format!("litmus-{digest}-sm_{arch}.cubin"));
    if cubin.is_file() {
        return Ok(cubin);
    }
    let dir = cache.join(format!("litmus-{digest}"));
    write_sources(&dir)?;
    let src = dir.join("litmus.cu");
    let tmp = cubin.with_extension("tmp");
    let out = std::process::Command::new("nvcc")
        .envs(crate::app::toolchain::build_env(None))
        .args(["-cubin", "-O3", &format!("-arch=sm_{arch}"), "-o"])
        .arg(&tmp)
        .arg(&src)
        .output()
        .map_err(|e| fail(exit_code::BUILD_FAILED, format!("cannot run nvcc: {e}")))?;
    if !out.status.success() {
        return Err(fail(
            exit_code::BUILD_FAILED,
            format!(
                "nvcc failed on {}:\n{}",
                src.display(),
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    std::fs::rename(&tmp, &cubin)?;
    Ok(cubin)
}

/// Writes the kernels' source and the runtime headers it includes into `dir`.
pub fn write_sources(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    for (name, text) in SOURCES {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))?;
    }
    Ok(())
}

/// The GPU side: a context, the module, and buffers sized for the largest job so far.
pub struct Engine {
    stream: Arc<CudaStream>,
    /// The test kernel (which keeps the module loaded) and the evaluation kernel.
    kernel: CudaFunction,
    eval: CudaFunction,
    settings: Settings,
    bufs: Buffers,
    draws: crate::rng::Draws,
    /// Blocks of a litmus kernel that fit on the GPU at once: the grid never exceeds it, so
    /// stressing and test blocks always run together (and the bounded waits end early).
    resident: u32,
}

struct Buffers {
    mem: CudaSlice<u32>,
    results: CudaSlice<u32>,
    barrier: CudaSlice<u32>,
    done: CudaSlice<u32>,
    scratch: CudaSlice<u32>,
    locs: CudaSlice<u32>,
    hist: CudaSlice<u64>,
    /// What `locs` holds, to skip copying the same locations before every launch.
    last_locs: Vec<u32>,
    /// The buffers' device pointers, refreshed when one is reallocated.
    pointers: Args,
}

/// The device's name, driver version and compute capability, for records.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    pub driver: String,
    pub arch: u32,
    pub multiprocessors: u32,
}

/// Opens device `ordinal`; a machine without a driver or GPU gets exit code 69.
pub fn open(ordinal: usize) -> Result<Arc<CudaContext>> {
    // cudarc panics when libcuda is missing; ask first.
    if !crate::run::hold::driver_present() {
        return Err(fail(
            exit_code::UNAVAILABLE,
            "no CUDA driver (libcuda) on this machine: this command needs a GPU",
        ));
    }
    CudaContext::new(ordinal).map_err(|e| {
        fail(
            exit_code::UNAVAILABLE,
            format!(
                "no CUDA device {ordinal}: {}",
                crate::run::hold::in_words(&e)
            ),
        )
    })
}

pub fn device_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let (major, minor) = ctx.compute_capability()?;
    let sms = ctx.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    let mut cuda = 0;
    // SAFETY: writes one int; the driver is loaded (the context exists).
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut cuda) };
    let driver = match kernel_driver_version() {
        Some(v) => format!("{v} (CUDA {}.{})", cuda / 1000, (cuda % 1000) / 10),
        None => format!("CUDA {}.{}", cuda / 1000, (cuda % 1000) / 10),
    };
    Ok(DeviceInfo {
        name: ctx.name()?,
        driver,
        arch: (major * 10 + minor) as u32,
        multiprocessors: sms as u32,
    })
}

/// The NVIDIA kernel module's version (`580.159.04`), as nvidia-smi reports it.
fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    let at = line.find("Kernel Module")?;
    line[at..]
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
}

impl Engine {
    pub fn new(ctx: Arc<CudaContext>, cubin: &Path, mut settings: Settings) -> Result<Engine> {
        check_settings(&settings)?;
        let stream = ctx.default_stream();
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_file(cubin))?;
        let eval = module.load_function(EVAL_KERNEL)?;
        let kernel = module.load_function(KERNEL)?;
        let resident = resident_blocks(&ctx, &kernel)?;
        if settings.instances == AUTO {
            settings.instances = fitting_instances(
                resident,
                settings.stress_blocks.1,
                settings.threads_per_instance(),
            );
            // What AUTO chose must be runnable too (--dual needs two test blocks).
            check_settings(&settings)?;
        }
        let bufs = Buffers::new(&stream, &settings, 1, 1, 1)?;
        let draws = crate::rng::Draws::new(settings.seed);
        let test_blocks = settings.test_blocks(settings.instances);
        if test_blocks > resident {
            return Err(fail(
                exit_code::USAGE,
                format!(
                    "{} instances need {test_blocks} blocks, but only {resident} fit on the GPU at once; use --instances {}",
                    settings.instances,
                    prev_power_of_two(resident * BLOCK / settings.threads_per_instance())
                ),
            ));
        }
        Ok(Engine {
            stream,
            kernel,
            eval,
            settings,
            bufs,
            draws,
            resident,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Runs one job to completion and returns its counts.
    pub fn run(&mut self, job: &Job) -> Result<Counts> {
        let s = self.settings;
        if s.pack > 0 && job.ndist > 1 {
            anyhow::bail!("a dense layout (--pack) has no distances to sweep");
        }
        check_distances(&s, job.d0, job.ndist)?;
        if max_locs(&job.locations) > MAX_SPREAD {
            anyhow::bail!(
                "{} stressed locations: the runtime's stress takes at most {MAX_SPREAD}",
                max_locs(&job.locations)
            );
        }
        let scratch_words = scratch_needed(&job.locations);
        self.bufs.grow(
            &self.stream,
            job.ndist,
            scratch_words,
            max_locs(&job.locations),
        )?;
        self.stream.memset_zeros(&mut self.bufs.hist)?;
        let launches = (job.executions * job.ndist as u64).div_ceil(s.instances as u64);
        let start = Instant::now();
        for _ in 0..launches {
            self.launch(job)?;
        }
        let hist = self.stream.clone_dtoh(&self.bufs.hist)?;
        let seconds = start.elapsed().as_secs_f64();
        let n = job.ndist as usize;
        let outcomes = (0..n)
            .map(|d| [0, 1, 2, 3].map(|o| hist[d * 4 + o]))
            .collect();
        Ok(Counts {
            outcomes,
            missing: hist[n * 4],
            instances: launches * s.instances as u64,
            launches,
            seconds,
        })
    }

    fn launch(&mut self, job: &Job) -> Result<()> {
        let s = self.settings;
        let (lo, hi) = s.stress_blocks;
        let locs = match &job.locations {
            Locations::None => vec![],
            Locations::Fixed(v) => v.clone(),
            Locations::Random { from, count } => self.draws.pick(from, *count),
        };
        let test_blocks = s.test_blocks(s.instances);
        let room = self.resident - test_blocks;
        if !locs.is_empty() && room < lo {
            // Fewer stressing blocks than asked would label weaker stress as the profile's.
            return Err(fail(
                exit_code::USAGE,
                format!(
                    "{} test blocks leave room for {room} stressing blocks on this GPU, fewer than the {lo} asked for: use fewer --instances or a smaller --stress-blocks range",
                    test_blocks
                ),
            ));
        }
        let stress_blocks = if locs.is_empty() {
            0
        } else {
            (lo + self.draws.next_u32() % (hi - lo + 1)).min(room)
        };
        if !locs.is_empty() && locs != self.bufs.last_locs {
            self.stream
                .memcpy_htod(&locs, &mut self.bufs.locs.slice_mut(0..locs.len()))?;
            self.bufs.last_locs = locs.clone();
        }
        let mut args = self.bufs.args();
        args.test = job.test as u32;
        args.instances = s.instances;
        args.stride = s.stride;
        args.d0 = job.d0;
        args.ndist = job.ndist;
        args.test_blocks = test_blocks;
        args.stress_blocks = stress_blocks;
        args.nlocs = locs.len() as u32;
        args.max_ns = s.max_us.saturating_mul(1000);
        (args.seq_bits, args.seq_len) = sequence_bits(&job.sequence);
        args.sync = s.sync as u32;
        args.mul0 = self.draws.next_u32() | 1;
        args.add0 = self.draws.next_u32();
        args.mul1 = self.draws.next_u32() | 1;
        args.add1 = self.draws.next_u32();
        args.rot = self.draws.next_u32() % (test_blocks + stress_blocks);
        args.prestress = s.prestress;
        args.banks = s.banks;
        args.grid_barrier = s.grid_barrier as u32;
        if s.dual {
            // The reader of a thread's instance is the thread this many blocks on (never 0).
            args.dual = 1;
            args.add1 = 1 + self.draws.next_u32() % (test_blocks - 1);
        }
        if s.pack > 0 {
            args.pack = s.pack;
            args.permy = self.draws.next_u32() | 1;
        }
        let grid = LaunchConfig {
            grid_dim: (test_blocks + stress_blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let eval = LaunchConfig {
            grid_dim: (args.instances / BLOCK, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: (job.ndist * 4 + 1) * 4,
        };
        // SAFETY: the arguments match the kernels' parameter struct, and every buffer they
        // point into is owned by `self.bufs`, sized by `grow` for this job.
        unsafe {
            self.stream
                .launch_builder(&self.kernel)
                .arg(&args)
                .launch(grid)?;
            self.stream
                .launch_builder(&self.eval)
                .arg(&args)
                .launch(eval)?;
        }
        Ok(())
    }
}

fn resident_blocks(ctx: &Arc<CudaContext>, kernel: &CudaFunction) -> Result<u32> {
    let per_sm = kernel.occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)?;
    let sms = ctx.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    Ok(per_sm * sms as u32)
}

fn prev_power_of_two(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        1 << (31 - n.leading_zeros())
    }
}

/// Distances `d0 .. d0 + ndist` (at least one) must lie within the stride; `litmus` asks
/// before the GPU is opened, every job again.
pub fn check_distances(s: &Settings, d0: u32, ndist: u32) -> Result<()> {
    if ndist == 0 || d0.saturating_add(ndist) > s.stride {
        return Err(fail(
            exit_code::USAGE,
            format!(
                "--distance {d0} with --distances {ndist}: the distances must lie in 0..{} (--stride {}) and be at least one",
                s.stride, s.stride
            ),
        ));
    }
    Ok(())
}

/// Settings the engine cannot run, refused before the GPU is opened.
pub fn check_settings(s: &Settings) -> Result<()> {
    if s.instances != AUTO && (!s.instances.is_power_of_two() || s.instances < BLOCK) {
        return Err(fail(
            exit_code::USAGE,
            format!(
                "instances per launch must be a power of two, at least {BLOCK} (got {})",
                s.instances
            ),
        ));
    }
    if s.stress_blocks.0 > s.stress_blocks.1 {
        return Err(fail(exit_code::USAGE, "stress blocks: min above max"));
    }
    if s.dual && s.sync {
        // A thread would wait for its reader at one instance while that reader waits at its own.
        return Err(fail(
            exit_code::USAGE,
            "--dual with --sync: a thread's two instances cannot both be met; use one of them",
        ));
    }
    if s.dual && s.instances != AUTO && s.instances < 2 * BLOCK {
        return Err(fail(
            exit_code::USAGE,
            format!(
                "--dual needs at least {} instances (two test blocks)",
                2 * BLOCK
            ),
        ));
    }
    if s.pack > 0 && 2 * s.pack > s.stride {
        return Err(fail(
            exit_code::USAGE,
            format!(
                "--pack {} needs --stride of at least {}",
                s.pack,
                2 * s.pack
            ),
        ));
    }
    Ok(())
}

fn scratch_needed(locs: &Locations) -> usize {
    let max = match locs {
        Locations::None => None,
        Locations::Fixed(v) => v.iter().max(),
        Locations::Random { from, .. } => from.iter().max(),
    };
    max.map_or(1, |&m| m as usize + 1)
}

fn max_locs(locs: &Locations) -> usize {
    match locs {
        Locations::None => 1,
        Locations::Fixed(v) => v.len().max(1),
        Locations::Random { count, .. } => (*count).max(1),
    }
}

fn raw<T>(slice: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (ptr, _sync) = slice.device_ptr(stream);
    ptr
}

impl Buffers {
    fn new(
        stream: &Arc<CudaStream>,
        s: &Settings,
        ndist: u32,
        scratch: usize,
        locs: usize,
    ) -> Result<Buffers> {
        let n = s.instances as usize;
        let mut bufs = Buffers {
            mem: stream.alloc_zeros(n * s.stride as usize)?,
            results: stream.alloc_zeros(2 * n)?,
            barrier: stream.alloc_zeros(n)?,
            done: stream.alloc_zeros(COUNTERS)?,
            scratch: stream.alloc_zeros(scratch + SCRATCH_ALIGN_WORDS)?,
            locs: stream.alloc_zeros(locs.max(1))?,
            hist: stream.alloc_zeros(ndist as usize * 4 + 1)?,
            last_locs: vec![],
            pointers: Args::default(),
        };
        bufs.refresh_pointers(stream);
        Ok(bufs)
    }

    fn grow(
        &mut self,
        stream: &Arc<CudaStream>,
        ndist: u32,
        scratch: usize,
        locs: usize,
    ) -> Result<()> {
        if self.scratch.len() < scratch + SCRATCH_ALIGN_WORDS {
            self.scratch = stream.alloc_zeros(scratch + SCRATCH_ALIGN_WORDS)?;
        }
        if self.locs.len() < locs {
            self.locs = stream.alloc_zeros(locs)?;
            self.last_locs.clear();
        }
        let want = ndist as usize * 4 + 1;
        if self.hist.len() != want {
            self.hist = stream.alloc_zeros(want)?;
        }
        self.refresh_pointers(stream);
        Ok(())
    }

    fn refresh_pointers(&mut self, st: &CudaStream) {
        self.pointers = Args {
            mem: raw(&self.mem, st),
            results: raw(&self.results, st),
            barrier: raw(&self.barrier, st),
            scratch: align_up(raw(&self.scratch, st), 4 * SCRATCH_ALIGN_WORDS as u64),
            locs: raw(&self.locs, st),
            done: raw(&self.done, st),
            hist: raw(&self.hist, st),
            ..Args::default()
        };
    }

    fn args(&self) -> Args {
        self.pointers
    }
}

/// The stressed locations are offsets from a 4 KiB boundary. An allocator guarantees only 256
/// bytes, so patches of more than 64 words could straddle other boundaries in the tune than in
/// the runtime's scratchpad (one large allocation) that uses the profile.
const SCRATCH_ALIGN_WORDS: usize = 1024;

fn align_up(p: u64, to: u64) -> u64 {
    p.div_ceil(to) * to
}

/// The built-in profile (the runtime's default for Hopper).
pub const DEFAULT_PROFILE: &str = include_str!("../../runtime-cu/profiles/hopper-default.toml");

/// Where `wmfix litmus --stress PROFILE` stresses: `spread` random patch starts per launch among
/// the first 64 patches.
pub fn locations(p: &crate::litmus::profile::Stress) -> Locations {
    Locations::Random {
        from: (0..64).map(|i| (i * p.patch_size) as u32).collect(),
        count: p.spread,
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
