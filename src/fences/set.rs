//! A set of enabled fences, written as `WMFIX_FENCES` wants it: `all`, `none`, or `0,3,7-9`.
//! The one place that form is parsed and printed; in JSON a set is that string.

use crate::fences::id::{FenceId, Ids};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The longest range `a-b` taken.
const MAX_RANGE: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FenceSet {
    All,
    Ids(Ids),
}

impl FenceSet {
    pub fn none() -> FenceSet {
        FenceSet::Ids(Ids::new())
    }

    pub fn parse(s: &str) -> Result<FenceSet, String> {
        match s.trim() {
            "all" => return Ok(FenceSet::All),
            "none" | "" => return Ok(FenceSet::none()),
            _ => {}
        }
        let mut ids = Ids::new();
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
                    // A range far beyond any program's fences is a typo, not a million ids.
                    if a > b || b - a > MAX_RANGE {
                        return Err(bad());
                    }
                    ids.extend((a..=b).map(FenceId));
                }
                None => {
                    ids.insert(FenceId(part.parse().map_err(|_| bad())?));
                }
            }
        }
        Ok(FenceSet::Ids(ids))
    }

    /// The ids enabled in a program with `n` fences.
    pub fn ids(&self, n: usize) -> Ids {
        match self {
            FenceSet::All => FenceId::all(n),
            FenceSet::Ids(ids) => ids.iter().copied().filter(|id| id.0 < n).collect(),
        }
    }

    /// The largest id named, if any (`all` names none).
    pub fn max_id(&self) -> Option<FenceId> {
        match self {
            FenceSet::All => None,
            FenceSet::Ids(ids) => ids.last().copied(),
        }
    }
}

impl FromStr for FenceSet {
    type Err = String;
    fn from_str(s: &str) -> Result<FenceSet, String> {
        FenceSet::parse(s)
    }
}

impl FenceSet {
    /// Refuses ids the program does not have (exit 64, naming `option`): a fence set is
    /// checked against the program's count once it is known.
    pub fn check_ids(&self, option: &str, total: usize) -> anyhow::Result<()> {
        if let FenceSet::Ids(ids) = self
            && let Some(bad) = ids.iter().find(|i| i.0 >= total)
        {
            let have = match total {
                0 => "none".to_string(),
                n => format!("{n} (0 to {})", n - 1),
            };
            return Err(crate::exit_code::fail(
                crate::exit_code::USAGE,
                format!("{option}: no fence {bad}; the program has {have}"),
            ));
        }
        Ok(())
    }
}

impl fmt::Display for FenceSet {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let ids = match self {
            FenceSet::All => return f.write_str("all"),
            FenceSet::Ids(ids) if ids.is_empty() => return f.write_str("none"),
            FenceSet::Ids(ids) => ids,
        };
        let mut parts = Vec::new();
        let mut it = ids.iter().map(|id| id.0).peekable();
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

impl Serialize for FenceSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FenceSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FenceSet, D::Error> {
        let text = String::deserialize(d)?;
        FenceSet::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_beyond_the_program_name_the_option() {
        let set = FenceSet::parse("0,12").unwrap();
        let e = set.check_ids("--fences", 10).unwrap_err();
        assert_eq!(crate::exit_code::code_of(&e), crate::exit_code::USAGE);
        assert_eq!(
            e.to_string(),
            "--fences: no fence 12; the program has 10 (0 to 9)"
        );
        assert!(FenceSet::All.check_ids("--fences", 0).is_ok());
        assert!(set.check_ids("--fences", 13).is_ok());
        assert!(
            FenceSet::parse("0-99999999999").is_err(),
            "a range far too long"
        );
    }

    #[test]
    fn ranges_round_trip() {
        let s = FenceSet::parse("0,3,7-9,10").unwrap();
        assert_eq!(s.to_string(), "0,3,7-10");
        assert_eq!(FenceSet::parse("none").unwrap().to_string(), "none");
        assert_eq!(FenceSet::parse("all").unwrap(), FenceSet::All);
        assert!(FenceSet::parse("3-1").is_err());
        assert!(FenceSet::parse("x").is_err());
    }

    #[test]
    fn json_is_the_string_form() {
        let s = FenceSet::parse("1-3,8").unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"1-3,8\"");
        let back: FenceSet = serde_json::from_str("\"1-3,8\"").unwrap();
        assert_eq!(back, s);
        assert!(serde_json::from_str::<FenceSet>("\"1-x\"").is_err());
    }

    #[test]
    fn ids_within_a_program() {
        assert_eq!(FenceSet::All.ids(3), FenceId::all(3));
        assert_eq!(
            FenceSet::parse("1,5").unwrap().ids(3),
            [FenceId(1)].into_iter().collect()
        );
        assert_eq!(FenceSet::parse("1,5").unwrap().max_id(), Some(FenceId(5)));
    }
}
