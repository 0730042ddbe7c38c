//! The printed analysis of a tune (Tab. 3 and the choices).

use crate::litmus::vocabulary::{Sequence, Test};
use crate::tune::analysis::Analysis;
use crate::tune::choice::SequenceChoice;
use crate::tune::raw::RawCounts;

/// Weak-behaviour counts the way Tab. 3 prints them: `342`, `9999`, `131k`, `12.5M`.
pub fn human(n: u64) -> String {
    if n < 10_000 {
        n.to_string()
    } else if n < 10_000_000 {
        format!("{}k", (n + 500) / 1000)
    } else {
        format!("{:.1}M", n as f64 / 1e6)
    }
}

/// The printed analysis: per-test patch sizes, the critical patch size, Tab. 3 (top and bottom
/// three sequences per test and the chosen one's ranks), the spread scores and the choices.
pub fn report(raw: &RawCounts, a: &Analysis) -> String {
    let p = &raw.params;
    let mut out = format!(
        "wmfix tune: {} ({}), D = {}, L = {}, C = {}\n",
        p.gpu, p.date, p.distances, p.locations, p.executions
    );
    if let Some(pa) = &a.patch {
        out += &format!(
            "\npatch finding (epsilon = {}: a location is hot with more than {} weak behaviours)\n",
            pa.epsilon, pa.epsilon
        );
        out += &format!(
            "  {:<4} {:>8} {:>6} {:>9} {:>10}  most frequent sizes (patches)\n",
            "test", "patches", "size", "aligned", "universal"
        );
        for (t, tp) in pa.tests.iter() {
            let mut top: Vec<(usize, usize)> = tp.sizes.iter().map(|(&s, &n)| (s, n)).collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let top = top
                .iter()
                .take(4)
                .map(|(s, n)| format!("{s} ({n})"))
                .collect::<Vec<_>>()
                .join(", ");
            let size = match (tp.size, tp.most.len()) {
                (Some(s), _) => s.to_string(),
                (None, 0) => "-".into(),
                (None, _) => "tied".into(),
            };
            let aligned = match tp.size {
                Some(s) => format!("{}/{}", tp.aligned, tp.sizes[&s]),
                None => "-".into(),
            };
            out += &format!(
                "  {:<4} {:>8} {:>6} {:>9} {:>10}  {}\n",
                t.name(),
                tp.patches,
                size,
                aligned,
                tp.universal_rows,
                if top.is_empty() { "none".into() } else { top }
            );
        }
        out += &format!("{}\n", pa.verdict());
        if let Some(st) = &a.structure {
            out += "what the counts depend on (the stressed location, or the distance):\n";
            for line in st.lines() {
                out += &format!("{line}\n");
            }
            if let Some(d) = st.patch_from_distance() {
                out += &format!("patch size {d}: from the distance blocks, not the location\n");
            }
        }
    }
    if let Some(c) = &a.sequence {
        let ph = raw.sequence.as_ref().expect("a choice comes from a phase");
        out += &format!(
            "\nsequence finding (patch size {}, {} locations, {} sequences; scores over all \
             distances and locations)\n",
            ph.patch_size,
            ph.locations.len(),
            c.all.len()
        );
        out += &sequence_table(c);
        out += &format!(
            "Pareto-optimal ({}): {}\n",
            c.pareto.len(),
            c.pareto
                .iter()
                .map(|x| format!(
                    "{} [{}/{}/{}, beats {}]",
                    x.key,
                    human(x.scores.mp),
                    human(x.scores.lb),
                    human(x.scores.sb),
                    x.wins
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        out += &format!(
            "chosen sequence: {} (\"{}\"): {}\n",
            c.chosen,
            c.chosen.text(),
            c.decided_by.describe()
        );
    }
    if let Some(c) = &a.spread {
        let ph = raw.spread.as_ref().expect("a choice comes from a phase");
        out += &format!(
            "\nspread finding (sequence {}, patch size {}; scores over all distances; p = \
             Pareto-optimal, * = chosen)\n",
            ph.sequence, ph.patch_size
        );
        out += &format!("  {:>3} {:>9} {:>9} {:>9}\n", "m", "MP", "LB", "SB");
        for (m, s) in &c.all {
            let mark = if *m == c.chosen {
                " *"
            } else if c.pareto.iter().any(|x| x.key == *m) {
                " p"
            } else {
                ""
            };
            out += &format!("  {m:>3} {:>9} {:>9} {:>9}{mark}\n", s.mp, s.lb, s.sb);
        }
        out += &format!("chosen spread: {}: {}\n", c.chosen, c.decided_by.describe());
    }
    for w in &a.warnings {
        out += &format!("{}\n", crate::exit_code::warning(w));
    }
    out
}

/// Tab. 3: per test, the top three and bottom three sequences, and the chosen one in between.
fn sequence_table(c: &SequenceChoice) -> String {
    let n = c.all.len();
    let columns: Vec<Vec<String>> = Test::ALL
        .iter()
        .map(|&t| {
            let ranking = c.ranking(t);
            let cell = |(r, s, v): &(usize, Sequence, u64)| {
                let mark = if *s == c.chosen { " *" } else { "" };
                format!("{r:>3} {:<12} {:>6}{mark}", s.compact(), human(*v))
            };
            let mut col = vec![format!("{:>3} {:<12} {:>6}", "", t.name(), "score")];
            let chosen_rank = ranking.iter().position(|x| x.1 == c.chosen).unwrap();
            let mut shown: Vec<usize> = (0..n.min(3)).collect();
            shown.push(chosen_rank);
            shown.extend(n.saturating_sub(3)..n);
            shown.sort();
            shown.dedup();
            let mut last = None;
            for i in shown {
                if last.is_some_and(|l| i > l + 1) {
                    col.push(format!("{:>3} {:<12} {:>6}", "...", "...", "..."));
                }
                col.push(cell(&ranking[i]));
                last = Some(i);
            }
            col
        })
        .collect();
    let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = String::new();
    for r in 0..rows {
        let line: Vec<String> = columns
            .iter()
            .map(|col| format!("{:<26}", col.get(r).map_or("", String::as_str)))
            .collect();
        out += &format!("  {}\n", line.join("  ").trim_end());
    }
    out
}
