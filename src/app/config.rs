//! `wmfix.toml`: how to build, run and check one application.

use crate::exit_code::{self, fail};
use anyhow::Result;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "wmfix.toml";

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Files and folders to instrument, relative to the config's folder.
    #[serde(default = "default_sources")]
    pub sources: Vec<PathBuf>,
    /// Shell command that builds the program, run in the (instrumented or original) tree.
    pub build: String,
    /// Shell command that runs the program once; `{steps}` in it becomes `steps`.
    pub run: String,
    /// Steps a run: how many times one run repeats the work under test, each checked (a
    /// harness's loop, given `{steps}` in `run`). Checks count runs; a rate a step becomes a
    /// rate a run as if steps erred independently (`stats::rate_a_run`).
    #[serde(default = "default_steps")]
    pub steps: u32,
    /// Seconds before a run is killed; a timeout counts as an error.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Optional shell command run after a run that exited 0; `WMFIX_RUN_OUTPUT` names the file
    /// holding the run's output. Exit status 0 means the post-condition holds.
    #[serde(default)]
    pub check: Option<String>,
    /// Exit codes that mean the program crashed (a CUDA error, say) rather than computed a
    /// wrong result. Death by a signal is always a crash, and so is an exit status of 129 to
    /// 192, which is how a shell reports its child's death by signal.
    #[serde(default)]
    pub crash_exit_codes: Vec<i32>,
    /// Whether the program needs a GPU (the default). `false` declares one that does not (a
    /// simulation, the stand-ins of wmfix's CPU tests): then no CUDA driver is looked for.
    #[serde(default = "default_gpu")]
    pub gpu: bool,
    /// Preprocessed mode (`wmfix insert --preprocess`): the command that preprocesses one `.cu`
    /// file with the build's flags (its path appended), for example
    /// `nvcc -E -x cu -O3 -arch=sm_90`. `reduce`'s patch is not made in this mode yet.
    #[serde(default)]
    pub preprocess: Option<String>,
    /// Macros wmfix cannot learn from the tree's `#define`s nor from the build command's `-D`
    /// flags and `-I` folders (`build_macros.rs`; a build through `make` shows none): name to
    /// expansion, `MY_DEVICE = "__device__"`.
    /// Qualifier and namespace macros only (`rewrite/macros.rs`); others are ignored.
    #[serde(default)]
    pub macros: std::collections::BTreeMap<String, String>,
    /// Keep application blocks in `blockIdx` order in the `+` environments (warps are still
    /// permuted): for programs that need blocks dispatched in order, as CUB's single-pass scans
    /// and radix sorts wait for the tile of the block before. Randomised ids hang them.
    #[serde(default)]
    pub keep_block_order: bool,
    /// A command each run goes through (`srun --ntasks=1 --gres=gpu:1 --exclusive`): the run
    /// command becomes `LAUNCHER sh -c 'RUN'`, so that a workload manager places each run
    /// while wmfix coordinates from where it runs. `--launcher` overrides it.
    #[serde(default)]
    pub launcher: Option<String>,
}

fn default_sources() -> Vec<PathBuf> {
    vec![PathBuf::from(".")]
}

fn default_timeout() -> f64 {
    30.0
}

/// One step a run: also the value of records made before wmfix counted steps.
pub fn default_steps() -> u32 {
    1
}

/// Where a run command takes its steps.
pub const STEPS_PLACEHOLDER: &str = "{steps}";
/// At most this many steps a run.
pub const MAX_STEPS: u32 = 1_000_000;

impl Config {
    /// The run command with its steps filled in.
    pub fn run_command(&self) -> String {
        self.run.replace(STEPS_PLACEHOLDER, &self.steps.to_string())
    }

    /// The run command as a run is started: through the launcher, if any (an `srun` one names
    /// the run's job step after the output folder, `claim::launcher_for_run`).
    pub fn launched_run_command(&self) -> String {
        let run = self.run_command();
        match self.launcher.as_deref().map(str::trim) {
            Some(l) if !l.is_empty() => format!(
                "{} sh -c '{}'",
                crate::app::claim::launcher_for_run(l),
                run.replace('\'', "'\\''")
            ),
            _ => run,
        }
    }

    /// What is wrong with `steps` for this run command, if anything.
    fn steps_problem(&self, steps: u32) -> Option<String> {
        if !(1..=MAX_STEPS).contains(&steps) {
            return Some(format!("steps must be 1 to {MAX_STEPS}, not {steps}"));
        }
        (steps > 1 && !self.run.contains(STEPS_PLACEHOLDER)).then(|| {
            format!(
                "{steps} steps a run, but `run` has no `{STEPS_PLACEHOLDER}` where the program takes them: `{}`",
                self.run
            )
        })
    }
}

fn default_gpu() -> bool {
    true
}

/// A config and the folder it lives in (the application's root).
#[derive(Debug, Clone)]
pub struct App {
    pub root: PathBuf,
    pub config: Config,
}

impl App {
    /// Reads `dir/wmfix.toml`. A wrong value is exit 78 naming `wmfix.toml:LINE`.
    pub fn load(dir: &Path) -> Result<App> {
        let root = dir
            .canonicalize()
            .map_err(|e| fail(exit_code::NO_INPUT, format!("{}: {e}", dir.display())))?;
        let path = root.join(FILE_NAME);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            fail(
                exit_code::CONFIG,
                format!("{}: {e} (`wmfix init` writes a template)", path.display()),
            )
        })?;
        let at = |e: ConfigError| {
            let place = match e.line {
                Some(l) => format!("{}:{l}", path.display()),
                None => path.display().to_string(),
            };
            fail(exit_code::CONFIG, format!("{place}: {}", e.message))
        };
        let config = parse(&text).map_err(at)?;
        let spans = spans(&text);
        for (k, s) in config.sources.iter().enumerate() {
            let line = spans
                .as_ref()
                .and_then(|p| p.sources.get(k))
                .map(|s| line_of(&text, s.span().start));
            source_inside(&root, s).map_err(|message| at(ConfigError { line, message }))?;
        }
        Ok(App { root, config })
    }

    /// The app with `launcher` (`--launcher`) in place of the config's, when given.
    pub fn with_launcher(mut self, launcher: Option<String>) -> App {
        if launcher.is_some() {
            self.config.launcher = launcher;
        }
        self
    }

    /// The app with `steps` a run (`--steps`) in place of the config's; exit 64 naming
    /// wmfix.toml when its run command cannot take them.
    pub fn with_steps(mut self, steps: Option<u32>) -> Result<App> {
        let Some(steps) = steps else { return Ok(self) };
        if let Some(why) = self.config.steps_problem(steps) {
            let path = self.root.join(FILE_NAME);
            return Err(fail(
                exit_code::USAGE,
                format!("--steps {steps}: {}: {why}", path.display()),
            ));
        }
        self.config.steps = steps;
        Ok(self)
    }
}

/// A source must exist and lie inside the application's folder: wmfix instruments and copies
/// only the application.
fn source_inside(root: &Path, s: &Path) -> Result<(), String> {
    let abs = root.join(s);
    let Ok(canonical) = abs.canonicalize() else {
        return Err(format!("source `{}` does not exist", s.display()));
    };
    if !canonical.starts_with(root) {
        return Err(format!(
            "source `{}` is outside the application's folder {}: sources are paths inside it",
            s.display(),
            root.display()
        ));
    }
    Ok(())
}

/// A config error, with the line it is on when known.
#[derive(Debug)]
pub struct ConfigError {
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Where the values that are checked after parsing stand, for messages.
#[derive(Deserialize)]
struct Spans {
    #[serde(default)]
    sources: Vec<toml::Spanned<PathBuf>>,
    build: toml::Spanned<String>,
    run: toml::Spanned<String>,
    timeout_s: Option<toml::Spanned<f64>>,
    steps: Option<toml::Spanned<u32>>,
}

fn spans(text: &str) -> Option<Spans> {
    toml::from_str(text).ok()
}

/// Every unknown top-level key, in file order, where toml names one of them (its message lists
/// the keys it expected).
fn unknown_keys(text: &str, message: &str) -> Option<ConfigError> {
    let expected = message.split_once("expected one of ")?.1;
    let known: Vec<&str> = expected.split(", ").map(|k| k.trim_matches('`')).collect();
    let table: toml::Table = toml::from_str(text).ok()?;
    let line = |key: &str| {
        text.lines().position(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix(key)
                .or_else(|| l.strip_prefix(&format!("[{key}")));
            rest.is_some_and(|r| r.trim_start().starts_with(['=', ']', '.']))
        })
    };
    let mut unknown: Vec<(Option<usize>, &str)> = (table.keys())
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| (line(k).map(|l| l + 1), k.as_str()))
        .collect();
    unknown.sort();
    let first = unknown.first()?.0;
    let named: Vec<String> = unknown
        .iter()
        .map(|(l, k)| match l {
            Some(l) => format!("`{k}` (line {l})"),
            None => format!("`{k}`"),
        })
        .collect();
    Some(ConfigError {
        line: first,
        message: format!(
            "unknown key{} {}; the keys are {expected}",
            if named.len() > 1 { "s" } else { "" },
            named.join(", ")
        ),
    })
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

pub fn parse(text: &str) -> Result<Config, ConfigError> {
    // toml's own messages name the line and column already.
    let config: Config = toml::from_str(text).map_err(|e| {
        let message = e.to_string().trim_end().to_string();
        unknown_keys(text, &message).unwrap_or(ConfigError {
            line: None,
            message,
        })
    })?;
    let spans = spans(text);
    let line =
        |f: fn(&Spans) -> Option<usize>| spans.as_ref().and_then(f).map(|b| line_of(text, b));
    // Up to about 300 years: a run's timeout becomes a `Duration`.
    if !(config.timeout_s > 0.0 && config.timeout_s <= 1e10) {
        return Err(ConfigError {
            line: line(|s| Some(s.timeout_s.as_ref()?.span().start)),
            message: format!(
                "timeout_s must be a positive number of seconds (at most 1e10), not {}",
                config.timeout_s
            ),
        });
    }
    if let Some(why) = config.steps_problem(config.steps) {
        return Err(ConfigError {
            line: line(|s| Some(s.steps.as_ref()?.span().start)),
            message: why,
        });
    }
    for (key, value, start, what) in [
        (
            "build",
            &config.build,
            line(|s| Some(s.build.span().start)),
            "builds the program",
        ),
        (
            "run",
            &config.run,
            line(|s| Some(s.run.span().start)),
            "runs the program once",
        ),
    ] {
        if value.trim().is_empty() {
            return Err(ConfigError {
                line: start,
                message: format!("`{key}` is empty: give the shell command that {what}"),
            });
        }
    }
    Ok(config)
}

pub const TEMPLATE: &str = r#"# wmfix configuration: how to build, run and check this application.

# Files and folders to instrument, relative to this file. Other files are copied as they are.
sources = ["."]

# Shell command that builds the program. It runs in a copy of this folder: the instrumented
# one, and for the baseline the original. nvcc is on PATH (from PATH, CUDA_HOME, or wmfix's
# PyPI install).
build = "nvcc -O3 -arch=sm_90 -o app main.cu"

# Shell command that runs the program once. Its exit status is the post-condition: 0 = correct.
run = "./app"

# Seconds before a run is killed (with its whole process group); a timeout counts as an error.
timeout_s = 30

# Steps a run: a harness that repeats the work under test in a loop, checking each, takes
# their number where `run` says {steps} (run = "./app {steps}"). A process's start costs
# more than a step on a GPU, so a run of many steps tests more a second; --rare-rate is then
# a rate a step, taken as a rate a run as if steps erred independently. `--steps` overrides.
# steps = 1

# Optional: a command that checks the run's output, run after a run that exited 0.
# WMFIX_RUN_OUTPUT names the file with the run's stdout and stderr. Exit 0 = correct.
# check = "grep -q PASS \"$WMFIX_RUN_OUTPUT\""

# Exit codes that mean a crash (e.g. a CUDA error) rather than a wrong result.
crash_exit_codes = []

# The program runs on a GPU: without a CUDA driver and device, wmfix stops before building.
# gpu = false declares a program that needs none (a simulation, a stand-in).
# gpu = true

# Preprocessed mode: instrument each .cu file as the compiler's front end sees it (macros
# expanded, headers and library code included); the build's own flags, the file appended.
# preprocess = "nvcc -E -x cu -O3 -arch=sm_90"

# Each run through a workload manager (inside a Slurm allocation): `LAUNCHER sh -c 'RUN'`.
# launcher = "srun --ntasks=1 --gres=gpu:1 --exclusive"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parses_with_defaults() {
        let c = parse(TEMPLATE).unwrap();
        assert_eq!(c.sources, [PathBuf::from(".")]);
        assert_eq!(c.timeout_s, 30.0);
        assert_eq!(c.check, None);
        assert_eq!(c.preprocess, None);
        assert_eq!(c.steps, 1);
        let p = parse("build = \"b\"\nrun = \"r\"\npreprocess = \"nvcc -E -x cu\"\n").unwrap();
        assert_eq!(p.preprocess.as_deref(), Some("nvcc -E -x cu"));
    }

    #[test]
    fn a_launcher_runs_the_run_command_through_sh_with_its_quotes_kept() {
        let mut c = parse("build = \"b\"\nrun = \"./a 'x y' {steps}\"\n").unwrap();
        assert_eq!(c.launched_run_command(), "./a 'x y' 1");
        // Not `srun`, whose steps get a name once a folder is claimed (`slurm::name_steps`).
        c.launcher = Some("launch --ntasks=1".into());
        let launched = c.launched_run_command();
        assert_eq!(launched, "launch --ntasks=1 sh -c './a '\\''x y'\\'' 1'");
        let out = std::process::Command::new("sh")
            .args(["-c", &launched.replace("launch --ntasks=1 ", "")])
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        // sh -c gets the run command back whole (./a does not exist: sh says so by name).
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("./a"),
            "{out:?}"
        );
    }

    #[test]
    fn steps_fill_the_run_command_and_need_its_placeholder() {
        let c = parse("build = \"b\"\nrun = \"./a 9 {steps}\"\nsteps = 10\n").unwrap();
        assert_eq!(c.run_command(), "./a 9 10");
        let one = parse("build = \"b\"\nrun = \"./a {steps}\"\n").unwrap();
        assert_eq!(one.run_command(), "./a 1");
        let e = parse("build = \"b\"\nrun = \"./a\"\nsteps = 10\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("no `{steps}`"), "{}", e.message);
        let zero = parse("build = \"b\"\nrun = \"./a {steps}\"\n\nsteps = 0\n").unwrap_err();
        assert_eq!(zero.line, Some(4));
        assert!(
            zero.message.contains("steps must be 1 to"),
            "{}",
            zero.message
        );
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_line() {
        let e = parse("build = \"make\"\nrun = \"./a\"\ntimeout = 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("line 3: unknown key `timeout` (line 3); the keys are `sources`"),
            "{e}"
        );
        // A table key too, and its line.
        let e = parse("build = \"make\"\nrun = \"./a\"\n[extra]\nx = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key `extra` (line 3)"), "{e}");
    }

    #[test]
    fn missing_keys_and_bad_timeouts_are_rejected() {
        assert!(
            parse("run = \"./a\"\n")
                .unwrap_err()
                .to_string()
                .contains("missing field `build`")
        );
        let e = parse("build = \"b\"\nrun = \"r\"\ntimeout_s = 0\n").unwrap_err();
        assert!(e.message.contains("positive") && e.line == Some(3), "{e}");
        for t in ["nan", "inf", "1e300", "-1"] {
            let text = format!("build = \"b\"\nrun = \"r\"\ntimeout_s = {t}\n");
            assert!(parse(&text).is_err(), "{t}");
        }
    }

    #[test]
    fn empty_commands_are_refused_on_their_line() {
        let e = parse("# x\nbuild = \"make\"\nrun = \"  \"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3: `run` is empty: give the shell command that runs the program once"
        );
        let e = parse("build = \"\"\nrun = \"./a\"\n").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("`build` is empty"), "{e}");
    }

    #[test]
    fn sources_must_be_inside_the_application() {
        let tmp = tempfile::tempdir().unwrap();
        let app = tmp.path().join("app");
        std::fs::create_dir_all(app.join("src")).unwrap();
        std::fs::write(tmp.path().join("k.cu"), "").unwrap();
        let write = |sources: &str| {
            let text =
                format!("build = \"b\"\nrun = \"r\"\nsources = [\n  \"src\",\n  {sources},\n]\n");
            std::fs::write(app.join(FILE_NAME), text).unwrap();
            App::load(&app)
        };
        for outside in ["\"../k.cu\"", "\"/etc\"", "\"src/../..\""] {
            let e = write(outside).unwrap_err();
            assert_eq!(exit_code::code_of(&e), exit_code::CONFIG);
            let m = e.to_string();
            assert!(
                m.contains("wmfix.toml:5: source")
                    && m.contains("is outside the application's folder"),
                "{m}"
            );
        }
        let e = write("\"gone.cu\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("wmfix.toml:5: source `gone.cu` does not exist"),
            "{e}"
        );
        assert!(write("\"src/.\"").is_ok());
    }
}
