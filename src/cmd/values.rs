//! Option values as types, parsed by clap (`FromStr`), so a bad value is refused with exit 64
//! and a message naming the option before anything runs: durations that are not positive
//! finite numbers, GPU lists that are neither `all` nor ordinals, environments and fence sets
//! that do not parse. Counts that must not be zero are `Count`s.

use crate::fences::set::FenceSet;
use crate::run::environment::TestEnv;
use std::str::FromStr;

/// The longest duration taken, in seconds (about 300 years): a time budget becomes a
/// `Duration`, which a larger number would overflow.
pub const MAX_SECONDS: f64 = 1e10;

/// A positive, finite number of `unit`s (`seconds` each), at most `MAX_SECONDS`: `nan`, `inf`,
/// `0`, `-1` and `1e300` are refused.
fn positive(s: &str, unit: &str, seconds: f64) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x * seconds <= MAX_SECONDS => Ok(x),
        _ => Err(format!(
            "expected a positive number of {unit} (at most {:.0}), not `{s}`",
            MAX_SECONDS / seconds
        )),
    }
}

/// A count of at least 1 (`--runs`, `--jobs`, `--rounds`, `--iterations`): `0`, `-1` and `abc`
/// are refused in words that name the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count(pub std::num::NonZeroUsize);

impl Count {
    pub fn get(self) -> usize {
        self.0.get()
    }
}

impl FromStr for Count {
    type Err = String;
    fn from_str(s: &str) -> Result<Count, String> {
        s.trim()
            .parse::<std::num::NonZeroUsize>()
            .map(Count)
            .map_err(|_| format!("expected a whole number of at least 1, not `{s}`"))
    }
}

/// Whole numbers from 0 up (`--seed`, `--device`, `--warmup`, ...): `-1`, `1.5` and `abc` are
/// refused in words that name the range.
macro_rules! whole {
    ($($name:ident: $t:ty),*) => {$(
        pub fn $name(s: &str) -> Result<$t, String> {
            s.trim()
                .parse::<$t>()
                .map_err(|_| format!("expected a whole number from 0 to {}, not `{s}`", <$t>::MAX))
        }
    )*};
}
whole!(whole_u32: u32, whole_u64: u64, whole_usize: usize);

/// `--minutes`, `--stable-minutes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Minutes(pub f64);

impl FromStr for Minutes {
    type Err = String;
    fn from_str(s: &str) -> Result<Minutes, String> {
        positive(s, "minutes", 60.0).map(Minutes)
    }
}

/// `--hours`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hours(pub f64);

impl FromStr for Hours {
    type Err = String;
    fn from_str(s: &str) -> Result<Hours, String> {
        positive(s, "hours", 3600.0).map(Hours)
    }
}

/// `--confidence`: strictly between 0 and 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probability(pub f64);

impl FromStr for Probability {
    type Err = String;
    fn from_str(s: &str) -> Result<Probability, String> {
        match s.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p < 1.0 => Ok(Probability(p)),
            _ => Err(format!("expected a number between 0 and 1, not `{s}`")),
        }
    }
}

/// `--trace-memory` (race): the share of the device's free memory a detection run's trace may
/// take, as the runtime accepts it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceShare(pub f64);

impl FromStr for TraceShare {
    type Err = String;
    fn from_str(s: &str) -> Result<TraceShare, String> {
        match s.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 0.9 => Ok(TraceShare(p)),
            _ => Err(format!(
                "expected a share of free device memory above 0 and at most 0.9, not `{s}`"
            )),
        }
    }
}

/// `--macro NAME=EXPANSION` (insert): a macro defined outside the tree, as wmfix.toml's `macros`.
#[derive(Clone, Debug, PartialEq)]
pub struct MacroDef(pub String, pub String);

impl FromStr for MacroDef {
    type Err = String;
    fn from_str(s: &str) -> Result<MacroDef, String> {
        let ident = |n: &str| {
            n.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        match s.split_once('=') {
            Some((name, body)) if ident(name.trim()) => {
                Ok(MacroDef(name.trim().to_string(), body.to_string()))
            }
            _ => Err(format!(
                "expected NAME=EXPANSION with NAME an identifier (`MY_DEVICE=__device__`), not `{s}`"
            )),
        }
    }
}

/// `--gpus`: `all` (resolved with the driver when the runs start), or device ordinals or UUIDs
/// as CUDA_VISIBLE_DEVICES takes them.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuList {
    All,
    Listed(Vec<String>),
}

impl FromStr for GpuList {
    type Err = String;
    fn from_str(s: &str) -> Result<GpuList, String> {
        if s.trim() == "all" {
            return Ok(GpuList::All);
        }
        let gpus: Vec<String> = s.split(',').map(|g| g.trim().to_string()).collect();
        for g in &gpus {
            let ordinal = !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit());
            let uuid = (g.starts_with("GPU-") || g.starts_with("MIG-"))
                && g.len() > 4
                && g[4..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'/');
            if !(ordinal || uuid) {
                return Err(format!(
                    "`{g}` is not a GPU: expected `all`, or device ordinals or UUIDs like `0,1`"
                ));
            }
        }
        Ok(GpuList::Listed(gpus))
    }
}

/// `--env` of `test`: `all` or a comma-separated list.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvList(pub Vec<TestEnv>);

impl FromStr for EnvList {
    type Err = String;
    fn from_str(s: &str) -> Result<EnvList, String> {
        TestEnv::parse_list(s).map(EnvList)
    }
}

/// `--env` of `reduce`: one environment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Env(pub TestEnv);

impl FromStr for Env {
    type Err = String;
    fn from_str(s: &str) -> Result<Env, String> {
        TestEnv::parse(s).map(Env)
    }
}

/// `cost --fences`: `reduced`, or a fence set.
impl FromStr for crate::cost::measure::Middle {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        use crate::cost::measure::Middle;
        match s.trim() {
            "reduced" => Ok(Middle::Reduced),
            s if s.ends_with(".json") => Ok(Middle::ReducedIn(s.into())),
            s => FenceSet::parse(s).map(Middle::Given),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_positive_and_finite() {
        for bad in [
            "nan", "NaN", "inf", "-inf", "0", "-1", "0.0", "", "x", "1e999", "1e300",
        ] {
            assert!(bad.parse::<Minutes>().is_err(), "{bad}");
            assert!(bad.parse::<Hours>().is_err(), "{bad}");
        }
        assert_eq!("0.5".parse::<Minutes>(), Ok(Minutes(0.5)));
        assert_eq!("24".parse::<Hours>(), Ok(Hours(24.0)));
        assert!("1".parse::<Probability>().is_err() && "0".parse::<Probability>().is_err());
        assert!("nan".parse::<Probability>().is_err());
    }

    #[test]
    fn gpu_lists_are_all_ordinals_or_uuids() {
        assert_eq!("all".parse::<GpuList>(), Ok(GpuList::All));
        assert_eq!(
            "0, 2".parse::<GpuList>(),
            Ok(GpuList::Listed(vec!["0".into(), "2".into()]))
        );
        assert!("GPU-8f3c-11".parse::<GpuList>().is_ok());
        for bad in ["abc", "0,,1", "", "-1", "0 1", "GPU-", "1.5"] {
            assert!(bad.parse::<GpuList>().is_err(), "{bad}");
        }
    }
}
