//! A run's trace split by launch. Kernels of one stream run one after another: no access of one
//! launch races with one of another, reads-from and barriers stay within a launch, and each
//! launch's threads are its own. So each launch is checked as a trace of its own, on all cores
//! at once, and a run of 300 launches takes the time of its largest.

use super::trace::Trace;
use std::collections::HashMap;

/// Each trace's launches as traces of their own, in the order their first events came, each
/// keeping its run. A run's counts of what was not recorded (dropped, cut, lost, launches after
/// a reset) go with its first launch, so that sums over the pieces are the run's; a run with
/// no event stays one (empty) piece.
pub fn split(traces: Vec<Trace>) -> Vec<Trace> {
    let mut out = Vec::new();
    for mut t in traces {
        let events = std::mem::take(&mut t.events);
        let mut index: HashMap<u32, usize> = HashMap::new();
        let mut pieces: Vec<Trace> = Vec::new();
        for e in events {
            let i = *index.entry(e.thread.launch).or_insert_with(|| {
                pieces.push(Trace {
                    names: t.names.clone(),
                    run: t.run,
                    ..Trace::default()
                });
                pieces.len() - 1
            });
            pieces[i].events.push(e);
        }
        if pieces.is_empty() {
            out.push(t);
            continue;
        }
        let first = &mut pieces[0];
        first.dropped = t.dropped;
        first.cut = t.cut;
        first.lost = t.lost.take();
        first.unrecorded_launches = t.unrecorded_launches;
        out.extend(pieces);
    }
    out
}

/// How many runs `traces` (launches of runs, or whole runs) come from.
pub fn runs(traces: &[Trace]) -> usize {
    let runs: std::collections::HashSet<usize> = traces.iter().map(|t| t.run).collect();
    runs.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_become_traces_of_their_own_and_the_run_keeps_its_counts() {
        let mut t = Trace::parse_text(
            "k0.b0.t0 st x 1 @0\nk1.b0.t0 ld x 1 @1\nk0.b1.t0 ld x 1 @1\nk1.b1.t0 st y 2 @2\n",
        )
        .unwrap();
        t.run = 3;
        t.dropped = 5;
        let pieces = split(vec![t, Trace::lost("gone")]);
        assert_eq!(pieces.len(), 3);
        let launches: Vec<Vec<u32>> = pieces
            .iter()
            .map(|p| p.events.iter().map(|e| e.thread.launch).collect())
            .collect();
        assert_eq!(launches, [vec![0, 0], vec![1, 1], vec![]]);
        assert_eq!((pieces[0].dropped, pieces[1].dropped), (5, 0));
        assert_eq!((pieces[0].run, pieces[1].run), (3, 3));
        assert!(pieces[2].lost.is_some() && !pieces[2].complete());
        assert_eq!(pieces[1].events[0].thread.block, 0);
    }
}
