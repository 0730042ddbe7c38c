//! Help that fits a screen: `-h` gives each option's first sentence and leaves out the options a
//! first run does not need; `--help` shows every option in full, wrapped to the terminal.

use clap::{Arg, Command};

/// Options left out of `-h` (by argument id), each in `--help`: tuning of the reduction's
/// statistics, resuming elsewhere, the litmus engine's incantations, debugging aids.
const ADVANCED: &[&str] = &[
    "stable_minutes",
    "race_runs",
    "race_events",
    "race_trace_memory",
    "trace_memory",
    "events",
    "confidence",
    "rare_rate",
    "split",
    "no_cache",
    "checks",
    "iterations",
    "resume_from",
    "no_hold",
    "mps",
    "launcher",
    "fence",
    "seed",
    "replay",
    "coverage",
    "dump_tree",
    "stats",
    "nvml_index",
    "warmup",
    "epsilon",
    "distances",
    "locations",
    "executions",
    "max_sequence",
    "max_spread",
    "patch_size",
    "stress_blocks",
    "instances",
    "stride",
    "stress_max_us",
    "sync",
    "pack",
    "prestress",
    "banks",
    "barrier",
    "dual",
    "cache",
];

/// The command line, with `help -h` (or `--help`), which clap's help subcommand refuses, read
/// as the help it asks for: `help`'s own, that is the command list.
pub fn args() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let asks = |a: &std::ffi::OsString| a == "-h" || a == "--help";
    if args.get(1).is_some_and(|a| a == "help") && args[2..].iter().any(asks) {
        args.truncate(2);
    }
    args
}

/// `cmd` with every subcommand's `-h` screen-sized.
pub fn screen_sized(cmd: Command) -> Command {
    cmd.mut_subcommands(|sub| {
        let ids: Vec<_> = sub.get_arguments().map(|a| a.get_id().clone()).collect();
        ids.into_iter().fold(sub, |s, id| s.mut_arg(id, short))
    })
}

fn short(arg: Arg) -> Arg {
    let hide = ADVANCED.contains(&arg.get_id().as_str());
    let Some(help) = arg.get_help().map(ToString::to_string) else {
        return arg.hide_short_help(hide);
    };
    let long = arg
        .get_long_help()
        .map_or_else(|| help.clone(), ToString::to_string);
    arg.help(first_sentence(&help))
        .long_help(long)
        .hide_short_help(hide)
}

/// `text` up to its first full stop, semicolon or colon followed by a space (without it), outside
/// parentheses and backticks.
fn first_sentence(text: &str) -> String {
    let (mut depth, mut code) = (0i32, false);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' if !code => depth += 1,
            b')' | b']' if !code => depth -= 1,
            b'`' => code = !code,
            b'.' | b';' | b':' if depth == 0 && !code && bytes.get(i + 1) == Some(&b' ') => {
                return text[..i].to_string();
            }
            _ => {}
        }
    }
    text.trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sentence_ends_at_a_stop_a_semicolon_or_a_colon() {
        assert_eq!(
            first_sentence("Runs at a time (at least 1). The default, 4."),
            "Runs at a time (at least 1)"
        );
        assert_eq!(
            first_sentence("Time budget in hours; the best so far"),
            "Time budget in hours"
        );
        assert_eq!(first_sentence("Stress: `sys` or none"), "Stress");
        assert_eq!(first_sentence("Output directory"), "Output directory");
        assert_eq!(first_sentence("Version 1.2 here."), "Version 1.2 here");
        assert_eq!(
            first_sentence("Serve runs (its pipe; its log). Cheaper"),
            "Serve runs (its pipe; its log)"
        );
        assert_eq!(first_sentence("Say `a. b` then. More"), "Say `a. b` then");
    }
}
