//! Process exit codes, one per kind of outcome, so scripts can tell them apart. Documented in
//! the README.

/// A warning as wmfix prints every warning, the runtime's too: `wmfix: warning: k.cu:3:5: ...`
/// (the text names its place first where it has one). `insert --json` lists the texts alone.
pub fn warning(text: impl std::fmt::Display) -> String {
    format!("wmfix: warning: {text}")
}

/// Success: the command did what was asked, and `test`/`reduce` saw no error.
pub const OK: i32 = 0;
/// `test`: at least one run failed its post-condition, timed out or crashed.
pub const ERRORS_SEEN: i32 = 2;
/// `test`: the original, uninstrumented program fails its post-condition, so no error could be
/// blamed on weak memory.
pub const BASELINE_FAILED: i32 = 3;
/// The program's build command failed.
pub const BUILD_FAILED: i32 = 4;
/// `reduce`: the budget ended before the check with every fence or the run without fences
/// finished, so nothing was decided; every fence is kept (`undecided` in `reduce.json`).
pub const UNDECIDED: i32 = 5;
/// `race`: no race was found, but not every event of every launch was checked (a trace buffer
/// too small, a run that wrote no trace, reads past the detector's memory), so "no race" is not
/// a verdict.
pub const INCONCLUSIVE: i32 = 6;
/// `build`: the instrumented program, fences off and no stress, does not end as the original
/// does natively: wmfix changed the program, and nothing it would say of it can be trusted.
pub const DIFFERS: i32 = 7;
/// The command line could not be understood.
pub const USAGE: i32 = 64;
/// Bad input: a source file that does not parse (with `--on-parse-error fail`), a bad config.
pub const BAD_INPUT: i32 = 65;
/// An input path does not exist.
pub const NO_INPUT: i32 = 66;
/// No GPU or CUDA driver where a command needs one (`test`, `reduce`, `cost` of a program
/// that runs on a GPU; `litmus`, `tune`), or a baseline stopped by CUDA errors.
pub const UNAVAILABLE: i32 = 69;
/// A bug in wmfix.
pub const INTERNAL: i32 = 70;
/// The output directory could not be written.
pub const CANT_WRITE: i32 = 73;
/// Another wmfix is using the same output directory.
pub const BUSY: i32 = 75;
/// `wmfix.toml` is missing or wrong.
pub const CONFIG: i32 = 78;
/// Interrupted by ctrl-c.
pub const INTERRUPTED: i32 = 130;

/// An error that carries its exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

pub fn fail(code: i32, message: impl Into<String>) -> anyhow::Error {
    Exit {
        code,
        message: message.into(),
    }
    .into()
}

/// The code for an error: its own where it has one, else INTERNAL.
pub fn code_of(e: &anyhow::Error) -> i32 {
    e.chain()
        .find_map(|c| c.downcast_ref::<Exit>())
        .map_or(INTERNAL, |x| x.code)
}
