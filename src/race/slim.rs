//! A trace slimmed for checks with more fences: what enabling fences cannot change goes. Such
//! checks (`wmfix race`'s of its suggested set, `reduce --oracle race`'s of candidate sets) run
//! on a slim trace in a fraction of the full one's time.

use super::trace::{Event, Op, Thread, Trace};
use crate::fences::id::FenceId;
use foldhash::HashMap;

/// `t` less what enabling fences cannot change: more fences only order more, so a plain access
/// to an address with no unordered pair without them has none with them either, and orders
/// nothing itself (plain accesses carry no values and synchronise with nothing). Each becomes
/// the mark of its fence site, where an enabled fence would stand; of a thread's row of them
/// between two kept events, one mark a site.
pub fn slim(t: &Trace, racing: &foldhash::HashSet<u64>) -> Trace {
    let mut events = Vec::new();
    let mut marked: HashMap<Thread, Vec<FenceId>> = HashMap::default();
    for e in &t.events {
        let plain = matches!(
            e.op,
            Op::Read { strong: None, .. } | Op::Write { strong: None, .. }
        );
        if plain && !racing.contains(&e.addr) {
            if let Some(site) = e.site {
                let row = marked.entry(e.thread).or_default();
                if !row.contains(&site) {
                    row.push(site);
                    events.push(Event {
                        op: Op::Site,
                        addr: 0,
                        ..*e
                    });
                }
            }
            continue;
        }
        if let Some(row) = marked.get_mut(&e.thread) {
            row.clear();
        }
        events.push(*e);
    }
    Trace {
        events,
        dropped: t.dropped,
        cut: t.cut,
        lost: t.lost.clone(),
        unrecorded_launches: t.unrecorded_launches,
        names: t.names.clone(),
        run: t.run,
    }
}
