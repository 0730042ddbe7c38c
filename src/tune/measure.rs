//! `wmfix tune` on a GPU: the paper's patch, sequence and spread phases (Sorensen & Donaldson, PLDI 2016, Sec. 3.2-3.4)
//! run through the litmus engine. The raw counts are rewritten after every phase, so an
//! interrupted tune keeps what it measured, and the analysis (`tune::analysis`) turns them into
//! the profile, `analysis.json` and the plots.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::exit_code::{self, fail};
use crate::litmus::engine::{self as litmus, Engine, Job, Locations};
use crate::litmus::profile::{MAX_PATCH_SIZE, MAX_SPREAD};
use crate::litmus::vocabulary::{PerTest, Sequence, Test, all_sequences};
use crate::tune::analyse;
use crate::tune::analysis::analyse;
use crate::tune::raw::{self, Params, PatchPhase, RawCounts, SequencePhase, SpreadPhase};

/// The paper's sizes (Sec. 3.2-3.4) unless the command line says otherwise.
#[derive(Clone, Debug)]
pub struct Sizes {
    /// D: distances 0 <= d < D.
    pub distances: usize,
    /// L: stressed locations 0 <= l < L (patch and sequence phases).
    pub locations: usize,
    /// C: executions of each configuration (rounded up to whole launches).
    pub executions: u64,
    /// N: longest access sequence.
    pub max_sequence_length: usize,
    /// M: largest spread.
    pub max_spread: usize,
    pub epsilon: u64,
}

impl Sizes {
    pub fn paper() -> Sizes {
        Sizes {
            distances: 256,
            locations: 256,
            executions: 1000,
            max_sequence_length: 5,
            max_spread: 64,
            epsilon: 0,
        }
    }

    /// Every limit the engine, the kernels and the runtime set, checked before the GPU is
    /// opened, so a bad size costs no GPU time: `patch` is `--patch-size`.
    pub fn validate(&self, patch: Option<usize>, settings: &litmus::Settings) -> Result<()> {
        let bad = |m: String| Err(fail(exit_code::USAGE, m));
        let longest = crate::litmus::engine::LONGEST_TUNED_SEQUENCE;
        if self.distances == 0 || self.locations == 0 || self.executions == 0 {
            return bad("--distances, --locations and --executions must be positive".into());
        }
        if !(1..=longest).contains(&self.max_sequence_length) {
            return bad(format!(
                "--max-sequence {}: the tune tries every sequence of 1 to at most {longest} accesses",
                self.max_sequence_length
            ));
        }
        if !(1..=MAX_SPREAD).contains(&self.max_spread) {
            return bad(format!(
                "--max-spread {}: the runtime stresses 1 to {MAX_SPREAD} locations",
                self.max_spread
            ));
        }
        if let Some(p) = patch.filter(|p| !(1..=MAX_PATCH_SIZE).contains(p)) {
            return bad(format!(
                "--patch-size {p}: from 1 to {MAX_PATCH_SIZE} words"
            ));
        }
        if (settings.stride as usize) < self.distances {
            return bad(format!(
                "--stride {} must exceed the largest distance, {} (--distances)",
                settings.stride,
                self.distances - 1
            ));
        }
        litmus::check_settings(settings)
    }

    /// A few seconds' worth: a smaller grid, for trying the machinery.
    pub fn quick() -> Sizes {
        Sizes {
            distances: 128,
            locations: 128,
            executions: 1000,
            max_sequence_length: 3,
            max_spread: 16,
            epsilon: 0,
        }
    }
}

pub struct Options {
    pub out: PathBuf,
    pub device: usize,
    pub sizes: Sizes,
    pub settings: litmus::Settings,
    /// Skip patch finding and use this patch size.
    pub patch_size: Option<usize>,
    /// The command line, recorded with the counts.
    pub command: String,
}

/// What `run` measured, for the summary.
pub struct Done {
    pub raw: PathBuf,
    pub analysis: analyse::Done,
    pub phases: Vec<PhaseTime>,
    pub gpu: litmus::DeviceInfo,
}

pub struct PhaseTime {
    pub name: &'static str,
    pub wall: f64,
    pub gpu: f64,
    pub instances: u64,
    pub weak: u64,
}

struct Tuner {
    engine: Engine,
    /// Orders each phase's configurations: run in a random order, a slow drift of the GPU
    /// (clocks, temperature) spreads over all of them instead of posing as structure along l.
    seed: u64,
    sizes: Sizes,
    bar: ProgressBar,
    executions: u64,
    weak: u64,
}

pub fn run(opts: &Options) -> Result<Done> {
    opts.sizes.validate(opts.patch_size, &opts.settings)?;
    crate::interrupt::install();
    let ctx = litmus::open(opts.device)?;
    let gpu = litmus::device_info(&ctx)?;
    // Marked and locked as wmfix's output once the GPU is known to be there.
    let _out = crate::out_dir::OutDir::open(&opts.out, &[])?;
    let cubin = litmus::compile(&opts.out.join("cache"), gpu.arch)?;
    let engine = Engine::new(ctx, &cubin, opts.settings)?;
    let mut t = Tuner {
        seed: opts.settings.seed,
        engine,
        sizes: opts.sizes.clone(),
        bar: progress(),
        executions: 0,
        weak: 0,
    };
    let mut raw = RawCounts {
        format: raw::FORMAT,
        params: params(
            opts,
            &gpu,
            per_distance(
                opts.sizes.executions,
                opts.sizes.distances,
                t.engine.settings().instances as u64,
            ),
        ),
        patch: None,
        sequence: None,
        spread: None,
    };
    let raw_path = opts.out.join("raw.json");
    let mut phases = Vec::new();

    let patch = match opts.patch_size {
        Some(p) => p,
        None => {
            let (ph, time) = t.patch_phase()?;
            raw.patch = Some(ph);
            log_phase(&t.bar, &time);
            phases.push(time);
            save(&raw_path, &raw)?;
            // The profile's choice: the critical size, or the distance blocks when the stressed
            // location makes no difference (tune_structure).
            analyse(&raw, None)?.profile.patch_size.unwrap_or(64)
        }
    };
    let (ph, time) = t.sequence_phase(patch)?;
    raw.sequence = Some(ph);
    log_phase(&t.bar, &time);
    phases.push(time);
    save(&raw_path, &raw)?;
    let sequence = analyse(&raw, None)?
        .sequence
        .map(|c| c.chosen)
        .expect("the sequence phase was analysed");
    let (ph, time) = t.spread_phase(patch, sequence)?;
    raw.spread = Some(ph);
    log_phase(&t.bar, &time);
    phases.push(time);
    save(&raw_path, &raw)?;
    t.bar.finish_and_clear();

    let analysis = analyse::write(&raw, &raw_path, &opts.out, None)?;
    let named = opts
        .out
        .join(format!("{}.toml", analysis.analysis.profile.name));
    std::fs::copy(&analysis.profile, &named)?;
    Ok(Done {
        raw: raw_path,
        analysis,
        phases,
        gpu,
    })
}

/// `items` in a random order (seeded).
fn shuffled<T>(mut items: Vec<T>, seed: u64) -> Vec<T> {
    crate::rng::shuffle(&mut items, seed, 0x5f);
    items
}

/// Executions each distance gets: C rounded up so that every launch is full (the engine gives
/// instance i the distance i mod D, so with D dividing the launch size each gets the same).
fn per_distance(executions: u64, ndist: usize, per_launch: u64) -> u64 {
    let launches = (executions * ndist as u64).div_ceil(per_launch);
    launches * per_launch / ndist as u64
}

/// One line per finished phase, above the bar (and in logs, where the bar is hidden).
fn log_phase(bar: &ProgressBar, p: &PhaseTime) {
    bar.suspend(|| {
        eprintln!(
            "wmfix: {} phase: {:.1} s, {} instances, {} weak, {:.3e} instances/s",
            p.name,
            p.wall,
            p.instances,
            p.weak,
            p.instances as f64 / p.gpu.max(1e-9)
        )
    });
}

fn params(opts: &Options, gpu: &litmus::DeviceInfo, executions: u64) -> Params {
    let s = &opts.sizes;
    Params {
        gpu: gpu.name.clone(),
        driver: gpu.driver.clone(),
        date: utc_now(),
        command: opts.command.clone(),
        distances: s.distances,
        locations: s.locations,
        executions,
        epsilon: s.epsilon,
        max_sequence_length: s.max_sequence_length,
        max_spread: s.max_spread,
    }
}

/// The current UTC time, ISO 8601 (days to civil date after H. Hinnant).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn save(path: &Path, raw: &RawCounts) -> Result<()> {
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    std::fs::write(path, raw.to_json())
        .map_err(|e| fail(exit_code::CANT_WRITE, format!("{}: {e}", path.display())))?;
    Ok(())
}

fn progress() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} configs, {msg} ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

impl Tuner {
    fn start(&self, name: &'static str, configs: usize) {
        self.bar.set_prefix(name);
        self.bar.set_length(configs as u64);
        self.bar.set_position(0);
        self.bar.reset_eta();
    }

    /// Weak behaviours per distance for one configuration.
    fn weak(
        &mut self,
        test: Test,
        sequence: &Sequence,
        locations: Locations,
    ) -> Result<(Vec<u64>, f64, u64)> {
        crate::interrupt::check("(raw counts so far are kept)")?;
        let job = Job {
            test,
            d0: 0,
            ndist: self.sizes.distances as u32,
            executions: self.sizes.executions,
            sequence: sequence.clone(),
            locations,
        };
        let c = self.engine.run(&job)?;
        if c.missing > 0 {
            anyhow::bail!(
                "{test}: {} instances lost a result (an engine bug)",
                c.missing
            );
        }
        let weak = c.weak(test);
        self.executions += c.instances;
        self.weak += weak.iter().sum::<u64>();
        self.bar.inc(1);
        self.bar.set_message(format!(
            "{} executions, {} weak",
            self.executions, self.weak
        ));
        Ok((weak, c.seconds, c.instances))
    }

    /// Sec. 3.2: every test, distance and location, stressed with `st ld`.
    fn patch_phase(&mut self) -> Result<(PatchPhase, PhaseTime)> {
        let (nd, nl) = (self.sizes.distances, self.sizes.locations);
        self.start("patch", 3 * nl);
        let sequence = Sequence::parse("st ld").expect("valid");
        let mut time = Timer::new("patch");
        let mut counts = PerTest::from_fn(|_| vec![vec![0u64; nl]; nd]);
        let configs = Test::ALL
            .into_iter()
            .flat_map(|t| (0..nl).map(move |l| (t, l)));
        for (test, l) in shuffled(configs.collect(), self.seed) {
            let (w, secs, n) = self.weak(test, &sequence, Locations::Fixed(vec![l as u32]))?;
            time.add(secs, n, &w);
            for (d, &x) in w.iter().enumerate() {
                counts.get_mut(test)[d][l] = x;
            }
        }
        let phase = PatchPhase {
            sequence,
            seconds: Some(time.wall()),
            counts,
        };
        Ok((phase, time.done()))
    }

    /// Sec. 3.3: every sequence of up to N accesses at the first location of each patch.
    fn sequence_phase(&mut self, patch: usize) -> Result<(SequencePhase, PhaseTime)> {
        let locations: Vec<usize> = (0..self.sizes.locations).step_by(patch.max(1)).collect();
        let sequences = all_sequences(self.sizes.max_sequence_length);
        self.start("sequence", 3 * sequences.len() * locations.len());
        let mut time = Timer::new("sequence");
        let nd = self.sizes.distances;
        let mut counts =
            PerTest::from_fn(|_| vec![vec![vec![0u64; locations.len()]; nd]; sequences.len()]);
        let mut configs = vec![];
        for test in Test::ALL {
            for s in 0..sequences.len() {
                for k in 0..locations.len() {
                    configs.push((test, s, k));
                }
            }
        }
        for (test, s, k) in shuffled(configs, self.seed) {
            let l = locations[k] as u32;
            let (w, secs, n) = self.weak(test, &sequences[s], Locations::Fixed(vec![l]))?;
            time.add(secs, n, &w);
            for (d, &x) in w.iter().enumerate() {
                counts.get_mut(test)[s][d][k] = x;
            }
        }
        let scores = counts.map(|_, per_seq| {
            per_seq
                .iter()
                .map(|rows| rows.iter().flatten().sum())
                .collect()
        });
        let phase = SequencePhase {
            patch_size: patch,
            locations,
            sequences,
            scores,
            counts: Some(counts),
            seconds: Some(time.wall()),
        };
        Ok((phase, time.done()))
    }

    /// Sec. 3.4: spreads 1..M over patch-sized regions, a random subset per launch.
    fn spread_phase(
        &mut self,
        patch: usize,
        sequence: Sequence,
    ) -> Result<(SpreadPhase, PhaseTime)> {
        let m_max = self.sizes.max_spread;
        let starts: Vec<u32> = (0..m_max).map(|i| (i * patch) as u32).collect();
        self.start("spread", 3 * m_max);
        let mut time = Timer::new("spread");
        let mut counts = PerTest::from_fn(|_| vec![vec![]; m_max]);
        let configs = Test::ALL
            .into_iter()
            .flat_map(|t| (1..=m_max).map(move |m| (t, m)));
        for (test, m) in shuffled(configs.collect(), self.seed) {
            let locs = Locations::Random {
                from: starts.clone(),
                count: m,
            };
            let (w, secs, n) = self.weak(test, &sequence, locs)?;
            time.add(secs, n, &w);
            counts.get_mut(test)[m - 1] = w;
        }
        let scores = counts.map(|_, rows| rows.iter().map(|r| r.iter().sum()).collect());
        let phase = SpreadPhase {
            patch_size: patch,
            sequence,
            scores,
            counts: Some(counts),
            seconds: Some(time.wall()),
        };
        Ok((phase, time.done()))
    }
}

struct Timer {
    name: &'static str,
    start: Instant,
    gpu: f64,
    instances: u64,
    weak: u64,
}

impl Timer {
    fn new(name: &'static str) -> Timer {
        Timer {
            name,
            start: Instant::now(),
            gpu: 0.0,
            instances: 0,
            weak: 0,
        }
    }

    fn add(&mut self, seconds: f64, instances: u64, weak: &[u64]) {
        self.gpu += seconds;
        self.instances += instances;
        self.weak += weak.iter().sum::<u64>();
    }

    fn wall(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn done(self) -> PhaseTime {
        PhaseTime {
            name: self.name,
            wall: self.wall(),
            gpu: self.gpu,
            instances: self.instances,
            weak: self.weak,
        }
    }
}

/// The lines `wmfix tune` prints after the analysis's report.
pub fn summary(done: &Done) -> String {
    let mut out = format!(
        "GPU: {} (sm_{}, {} SMs), driver {}\n",
        done.gpu.name, done.gpu.arch, done.gpu.multiprocessors, done.gpu.driver
    );
    let mut wall = 0.0;
    for p in &done.phases {
        wall += p.wall;
        out += &format!(
            "{:>8}: {:>8.1} s wall, {:>14} instances, {:>10} weak, {:.3e} instances/s\n",
            p.name,
            p.wall,
            p.instances,
            p.weak,
            p.instances as f64 / p.gpu.max(1e-9)
        );
    }
    out += &format!(
        "   total: {wall:.1} s wall; raw counts in {}\n",
        done.raw.display()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_now_is_iso_8601() {
        let now = utc_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
        assert_eq!(&now[4..5], "-");
        assert_eq!(&now[10..11], "T");
    }

    #[test]
    fn shuffling_keeps_every_config_once_and_moves_them() {
        let order = shuffled((0..768).collect::<Vec<_>>(), 1);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..768).collect::<Vec<_>>());
        assert!(order.iter().enumerate().filter(|(i, v)| i == *v).count() < 20);
        assert_eq!(order, shuffled((0..768).collect::<Vec<_>>(), 1), "seeded");
    }

    #[test]
    fn executions_round_up_to_full_launches() {
        assert_eq!(per_distance(1000, 256, 1 << 16), 1024);
        assert_eq!(per_distance(1000, 1, 1 << 16), 1 << 16);
        assert_eq!(per_distance(1 << 16, 256, 1 << 16), 1 << 16);
    }
}
