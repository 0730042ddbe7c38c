//! The litmus engine: MP, LB and SB test instances run by the thousand per launch on the GPU,
//! with stressing blocks in the same launch, outcomes counted on the GPU (paper 000, Sec. 3).
//!
//! The kernels are `runtime-cu/litmus/litmus.cu`, embedded in the binary, compiled at run time
//! with nvcc to a cubin for the device's architecture (cached beside the output) and launched
//! through the driver API (cudarc, which loads libcuda at run time: wmfix builds and runs
//! without CUDA, and only these commands need a GPU).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};

use crate::exit_code::{self, fail};
use crate::litmus::vocabulary::{Access, Sequence, Test};

/// The kernels' source.
pub const SOURCE: &str = include_str!("../../runtime-cu/litmus/litmus.cu");
/// Threads per block, `LITMUS_BLOCK` in the source.
pub const BLOCK: u32 = 256;
/// The litmus kernels exist for every access sequence of 1 to this many accesses.
pub const LONGEST_KERNEL_SEQUENCE: usize = 5;

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
    test: u32,
    instances: u32,
    stride: u32,
    d0: u32,
    ndist: u32,
    test_blocks: u32,
    stress_blocks: u32,
    nlocs: u32,
    max_iters: u32,
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
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Args>() == 136);
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
        test,
        instances,
        stride,
        d0,
        ndist,
        test_blocks,
        stress_blocks,
        nlocs,
        max_iters,
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
        pad
    )
}

/// How launches are shaped; the same for every job of an engine.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Test instances per launch: a power of two, at least `BLOCK`.
    pub instances: u32,
    /// Words between the first locations of neighbouring instances (at least the largest
    /// distance plus one).
    pub stride: u32,
    /// Stressing blocks per launch, drawn uniformly from this range (inclusive).
    pub stress_blocks: (u32, u32),
    /// Bound on a stressing thread's loop iterations (it stops earlier once the test blocks
    /// are done).
    pub max_iters: u32,
    /// The thread-synchronisation incantation (paper 001, Sec. 4.3.4): an instance's two
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
    /// Bank-conflict incantation (paper 001, Sec. 4.2): conflicting shared-memory accesses by
    /// each test thread before its test (0: none).
    pub banks: u32,
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            instances: 1 << 16,
            stride: 256,
            stress_blocks: (64, 512),
            max_iters: 1 << 14,
            sync: false,
            pack: 0,
            prestress: 0,
            banks: 0,
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

/// The kernel name for a stressing sequence: `litmus_<code>`, code = 1 << len | store bits.
pub fn kernel_name(seq: &Sequence) -> String {
    let mut code = 1u32 << seq.len();
    for (k, a) in seq.accesses().iter().enumerate() {
        if *a == Access::St {
            code |= 1 << k;
        }
    }
    format!("litmus_{code}")
}

/// Compiles the kernels for `sm_<arch>` into `cache` (once per source and architecture) and
/// returns the cubin's path.
pub fn compile(cache: &Path, arch: u32) -> Result<PathBuf> {
    let digest = crate::digest::Fnv::of(SOURCE.as_bytes());
    let cubin = cache.join(format!("litmus-{digest}-sm_{arch}.cubin"));
    if cubin.is_file() {
        return Ok(cubin);
    }
    std::fs::create_dir_all(cache)
        .with_context(|| format!("{}: cannot create", cache.display()))?;
    let src = cache.join("litmus.cu");
    std::fs::write(&src, SOURCE).with_context(|| format!("{}: cannot write", src.display()))?;
    let tmp = cubin.with_extension("tmp");
    let out = std::process::Command::new("nvcc")
        .envs(crate::app::toolchain::build_env())
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

/// The GPU side: a context, the module, and buffers sized for the largest job so far.
pub struct Engine {
    stream: Arc<CudaStream>,
    /// Every stressing sequence's kernel, by name (they keep the module loaded).
    kernels: std::collections::HashMap<String, CudaFunction>,
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
            format!("no CUDA device {ordinal}: {e}"),
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
    pub fn new(ctx: Arc<CudaContext>, cubin: &Path, settings: Settings) -> Result<Engine> {
        check_settings(&settings)?;
        let stream = ctx.default_stream();
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_file(cubin))?;
        let eval = module.load_function("litmus_eval")?;
        let bufs = Buffers::new(&stream, &settings, 1, 1, 1)?;
        let draws = crate::rng::Draws::new(settings.seed);
        // Every kernel now: the grid cap must hold for the one with the most registers.
        let mut kernels = std::collections::HashMap::new();
        let mut resident = u32::MAX;
        for seq in crate::litmus::vocabulary::all_sequences(LONGEST_KERNEL_SEQUENCE) {
            let name = kernel_name(&seq);
            let k = module.load_function(&name)?;
            resident = resident.min(resident_blocks(&ctx, &k)?);
            kernels.insert(name, k);
        }
        let test_blocks = 2 * settings.instances / BLOCK;
        if test_blocks > resident {
            return Err(fail(
                exit_code::USAGE,
                format!(
                    "{} instances need {test_blocks} blocks, but only {resident} fit on the GPU at once; use --instances {}",
                    settings.instances,
                    prev_power_of_two(resident * BLOCK / 2)
                ),
            ));
        }
        Ok(Engine {
            stream,
            kernels,
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

    fn kernel(&self, seq: &Sequence) -> Result<CudaFunction> {
        let name = kernel_name(seq);
        self.kernels
            .get(&name)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no kernel {name} for sequence {seq}"))
    }

    /// Runs one job to completion and returns its counts.
    pub fn run(&mut self, job: &Job) -> Result<Counts> {
        let s = self.settings;
        if s.pack > 0 && job.ndist > 1 {
            anyhow::bail!("a dense layout (--pack) has no distances to sweep");
        }
        if job.ndist == 0 || job.d0 + job.ndist > s.stride {
            anyhow::bail!(
                "distances {}..{} do not fit the stride of {} words",
                job.d0,
                job.d0 + job.ndist,
                s.stride
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
        let kernel = self.kernel(&job.sequence)?;
        let launches = (job.executions * job.ndist as u64).div_ceil(s.instances as u64);
        let start = Instant::now();
        for _ in 0..launches {
            self.launch(&kernel, job)?;
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

    fn launch(&mut self, kernel: &CudaFunction, job: &Job) -> Result<()> {
        let s = self.settings;
        let (lo, hi) = s.stress_blocks;
        let locs = match &job.locations {
            Locations::None => vec![],
            Locations::Fixed(v) => v.clone(),
            Locations::Random { from, count } => self.draws.pick(from, *count),
        };
        let test_blocks = 2 * s.instances / BLOCK;
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
        args.max_iters = s.max_iters;
        args.sync = s.sync as u32;
        args.mul0 = self.draws.next_u32() | 1;
        args.add0 = self.draws.next_u32();
        args.mul1 = self.draws.next_u32() | 1;
        args.add1 = self.draws.next_u32();
        args.rot = self.draws.next_u32() % (test_blocks + stress_blocks);
        args.prestress = s.prestress;
        args.banks = s.banks;
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
            self.stream.launch_builder(kernel).arg(&args).launch(grid)?;
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

/// Settings the engine cannot run, refused before the GPU is opened.
pub fn check_settings(s: &Settings) -> Result<()> {
    if !s.instances.is_power_of_two() || s.instances < BLOCK {
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
            done: stream.alloc_zeros(2)?,
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

/// The histogram and rates `wmfix litmus` prints.
pub fn report(test: Test, job: &Job, c: &Counts) -> String {
    let names = ["r0=0 r1=0", "r0=0 r1=1", "r0=1 r1=0", "r0=1 r1=1"];
    let weak_i = weak_outcome(test);
    let mut totals = [0u64; 4];
    for o in &c.outcomes {
        for k in 0..4 {
            totals[k] += o[k];
        }
    }
    let mut out = format!(
        "{test} at distance{} {}: {} instances in {} launches, {:.3} s\n",
        if job.ndist > 1 { "s" } else { "" },
        if job.ndist > 1 {
            format!("{}..{}", job.d0, job.d0 + job.ndist - 1)
        } else {
            job.d0.to_string()
        },
        c.instances,
        c.launches,
        c.seconds
    );
    for (k, name) in names.iter().enumerate() {
        let tag = if k == weak_i { "  <- weak" } else { "" };
        out += &format!("  {name}: {:>14}{tag}\n", totals[k]);
    }
    if c.missing > 0 {
        out += &format!(
            "  missing: {:>12}  (instances that did not report)\n",
            c.missing
        );
    }
    let secs = c.seconds.max(1e-9);
    out += &format!(
        "  weak: {} ({:.3e} of instances); {:.3e} weak/s; {:.3e} instances/s\n",
        totals[weak_i],
        totals[weak_i] as f64 / c.instances.max(1) as f64,
        totals[weak_i] as f64 / secs,
        c.instances as f64 / secs
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::litmus::profile::Stress;

    #[test]
    fn the_scratchpad_starts_on_a_4_kib_boundary() {
        assert_eq!(align_up(0x7f00_0000_0100, 4096), 0x7f00_0000_1000);
        assert_eq!(align_up(0x7f00_0000_1000, 4096), 0x7f00_0000_1000);
        // The extra words cover the largest shift.
        assert!(4 * SCRATCH_ALIGN_WORDS as u64 >= 4096 - 256);
    }

    #[test]
    fn kernel_names_encode_length_and_stores() {
        let k = |s: &str| kernel_name(&Sequence::parse(s).unwrap());
        assert_eq!(k("ld"), "litmus_2");
        assert_eq!(k("st"), "litmus_3");
        assert_eq!(k("st ld"), "litmus_5");
        assert_eq!(k("ld st st ld"), "litmus_22");
        assert_eq!(k("st st st st st"), "litmus_63");
    }

    #[test]
    fn every_sequence_has_a_kernel_in_the_source() {
        for seq in crate::litmus::vocabulary::all_sequences(LONGEST_KERNEL_SEQUENCE) {
            let name = kernel_name(&seq);
            let code = name.trim_start_matches("litmus_");
            assert!(
                SOURCE.contains(&format!("LITMUS_KERNEL({code})")),
                "{name} missing for {}",
                seq.text()
            );
        }
    }

    #[test]
    fn the_default_profile_parses() {
        let p = Stress::parse(DEFAULT_PROFILE, "default").unwrap();
        assert_eq!(p.sequence.text(), "ld st st ld");
        match locations(&p) {
            Locations::Random { from, count } => {
                assert_eq!(count, p.spread);
                assert_eq!(from[1], p.patch_size as u32);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_report_marks_the_weak_outcome() {
        let job = Job {
            test: Test::Mp,
            d0: 64,
            ndist: 1,
            executions: 8,
            sequence: Sequence::parse("st ld").unwrap(),
            locations: Locations::None,
        };
        let c = Counts {
            outcomes: vec![[3, 2, 1, 2]],
            missing: 0,
            instances: 8,
            launches: 1,
            seconds: 0.5,
        };
        let r = report(Test::Mp, &job, &c);
        assert!(r.contains("MP at distance 64: 8 instances"), "{r}");
        assert!(r.contains("r0=1 r1=0:              1  <- weak"), "{r}");
        assert!(
            r.contains("weak: 1 (1.250e-1 of instances); 2.000e0 weak/s; 1.600e1 instances/s"),
            "{r}"
        );
    }

    #[test]
    fn weak_outcomes_are_the_forbidden_ones_under_sc() {
        assert_eq!(weak_outcome(Test::Mp), 0b10);
        assert_eq!(weak_outcome(Test::Lb), 0b11);
        assert_eq!(weak_outcome(Test::Sb), 0b00);
    }
}
