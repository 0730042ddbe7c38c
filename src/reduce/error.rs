//! The reduction's one error: the program fails with every fence on, so fences cannot be what
//! it lacks.

#[derive(Debug, thiserror::Error)]
pub enum ReduceError {
    #[error(
        "the program still fails with every fence enabled ({errors} of {runs} runs{}{}): {}",
        timeouts_note(*.timeouts, *.errors),
        left_out_note(*.unreachable),
        advice(*.timeouts, *.errors)
    )]
    UnstableWithAllFences {
        errors: usize,
        /// Of the errors, time-outs.
        timeouts: usize,
        runs: usize,
        /// Fences left out as unreachable.
        unreachable: usize,
    },
}

fn timeouts_note(timeouts: usize, errors: usize) -> String {
    match timeouts {
        0 => String::new(),
        t if t == errors => ", every one a time-out".to_string(),
        t => format!(", {t} of them time-outs"),
    }
}

/// A program that only times out is too slow for its timeout, not beyond fences.
fn advice(timeouts: usize, errors: usize) -> &'static str {
    if timeouts == errors {
        "the runs are slower than the study's timeout_s (with every fence on, under stress, several at a time): raise timeout_s in wmfix.toml or run fewer at a time (--jobs)"
    } else {
        "its errors are not ones fences can fix"
    }
}

fn left_out_note(unreachable: usize) -> String {
    match unreachable {
        0 => String::new(),
        n => format!(", the {n} fences no launched kernel reaches left out"),
    }
}
