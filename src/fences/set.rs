//! A set of enabled fences, written as `WMFIX_FENCES` wants it: `all`, `none`, or `0,3,7-9`.

use std::collections::BTreeSet;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FenceSet {
    All,
    Some(BTreeSet<usize>),
}

impl FenceSet {
    pub fn none() -> FenceSet {
        FenceSet::Some(BTreeSet::new())
    }

    pub fn parse(s: &str) -> Result<FenceSet, String> {
        match s.trim() {
            "all" => return Ok(FenceSet::All),
            "none" | "" => return Ok(FenceSet::none()),
            _ => {}
        }
        let mut ids = BTreeSet::new();
        for part in s.split(',') {
            let bad = || {
                format!(
                    "bad fence list `{s}`: expected `all`, `none`, or ids and ranges like `0,3,7-9`"
                )
            };
            let part = part.trim();
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (usize, usize) =
                        (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                    if a > b {
                        return Err(bad());
                    }
                    ids.extend(a..=b);
                }
                None => {
                    ids.insert(part.parse().map_err(|_| bad())?);
                }
            }
        }
        Ok(FenceSet::Some(ids))
    }
}

impl fmt::Display for FenceSet {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let ids = match self {
            FenceSet::All => return f.write_str("all"),
            FenceSet::Some(ids) if ids.is_empty() => return f.write_str("none"),
            FenceSet::Some(ids) => ids,
        };
        let mut parts = Vec::new();
        let mut it = ids.iter().copied().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().unwrap();
            }
            parts.push(if end > start {
                format!("{start}-{end}")
            } else {
                start.to_string()
            });
        }
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_round_trip() {
        let s = FenceSet::parse("0,3,7-9,10").unwrap();
        assert_eq!(s.to_string(), "0,3,7-10");
        assert_eq!(FenceSet::parse("none").unwrap().to_string(), "none");
        assert_eq!(FenceSet::parse("all").unwrap(), FenceSet::All);
        assert!(FenceSet::parse("3-1").is_err());
        assert!(FenceSet::parse("x").is_err());
    }
}
