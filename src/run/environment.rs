//! The paper's eight testing environments, a stress strategy with (`+`) or without (`-`) thread
//! randomisation, and wmfix's aimed stress (`aim-str-`, `aim-str+`: sys-str at the offsets
//! where the application's own accesses land, runtime-cu/README.md). The runtime reads the name
//! from `WMFIX_ENV`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stress {
    No,
    Sys,
    Rand,
    Cache,
    /// Beyond the paper: sys-str aimed at the pages offsets of the application's accesses.
    Aim,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TestEnv {
    pub stress: Stress,
    pub randomise: bool,
}

impl TestEnv {
    /// The paper's eight, in its table order: what `--env all` runs.
    pub fn all() -> Vec<TestEnv> {
        Self::with([Stress::No, Stress::Sys, Stress::Rand, Stress::Cache])
    }

    /// Every environment the runtime knows: the paper's eight and aim-str.
    pub fn known() -> Vec<TestEnv> {
        Self::with([
            Stress::No,
            Stress::Sys,
            Stress::Rand,
            Stress::Cache,
            Stress::Aim,
        ])
    }

    fn with<const N: usize>(stresses: [Stress; N]) -> Vec<TestEnv> {
        stresses
            .into_iter()
            .flat_map(|stress| [false, true].map(|randomise| TestEnv { stress, randomise }))
            .collect()
    }

    pub fn parse(s: &str) -> Result<TestEnv, String> {
        TestEnv::known()
            .into_iter()
            .find(|e| e.to_string() == s)
            .ok_or_else(|| {
                format!(
                    "unknown environment `{s}`: expected `all` or one of {}",
                    names()
                )
            })
    }

    /// `all`, or a comma-separated list.
    pub fn parse_list(s: &str) -> Result<Vec<TestEnv>, String> {
        if s == "all" {
            return Ok(TestEnv::all());
        }
        s.split(',').map(|p| TestEnv::parse(p.trim())).collect()
    }
}

fn names() -> String {
    TestEnv::known()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for TestEnv {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let s = match self.stress {
            Stress::No => "no-str",
            Stress::Sys => "sys-str",
            Stress::Rand => "rand-str",
            Stress::Cache => "cache-str",
            Stress::Aim => "aim-str",
        };
        write!(f, "{s}{}", if self.randomise { '+' } else { '-' })
    }
}

impl Serialize for TestEnv {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TestEnv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TestEnv::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let all = TestEnv::all();
        assert_eq!(all.len(), 8);
        assert_eq!(all[0].to_string(), "no-str-");
        assert_eq!(all[3].to_string(), "sys-str+");
        for e in all {
            assert_eq!(TestEnv::parse(&e.to_string()), Ok(e));
        }
        assert_eq!(TestEnv::parse_list("sys-str+, no-str-").unwrap().len(), 2);
        // aim-str is known, but `all` stays the paper's eight.
        let aim = TestEnv::parse("aim-str+").unwrap();
        assert_eq!((aim.stress, aim.randomise), (Stress::Aim, true));
        assert_eq!(aim.to_string(), "aim-str+");
        assert!(!TestEnv::all().contains(&aim));
        assert_eq!(TestEnv::known().len(), 10);
        assert!(TestEnv::parse("sys-str").unwrap_err().contains("sys-str+"));
    }
}
