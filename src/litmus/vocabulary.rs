//! The litmus vocabulary every stage of the tune speaks: the tests (MP, LB, SB), one value per
//! test, and the stressing threads' access sequences.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// Longest access sequence the runtime runs (`kMaxSeqLen` in `runtime-cu/wmfix_common.cuh`).
pub const MAX_SEQUENCE_LEN: usize = 32;

// ---------------------------------------------------------------------------------------------
// Tests and per-test values

/// The three litmus tests of Fig. 2: message passing, load buffering, store buffering.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
pub enum Test {
    #[serde(rename = "MP")]
    Mp,
    #[serde(rename = "LB")]
    Lb,
    #[serde(rename = "SB")]
    Sb,
}

impl Test {
    pub const ALL: [Test; 3] = [Test::Mp, Test::Lb, Test::Sb];

    pub fn name(self) -> &'static str {
        match self {
            Test::Mp => "MP",
            Test::Lb => "LB",
            Test::Sb => "SB",
        }
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One value per test; in JSON an object with the keys `MP`, `LB`, `SB`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerTest<T> {
    #[serde(rename = "MP")]
    pub mp: T,
    #[serde(rename = "LB")]
    pub lb: T,
    #[serde(rename = "SB")]
    pub sb: T,
}

impl<T> PerTest<T> {
    pub fn from_fn(mut f: impl FnMut(Test) -> T) -> Self {
        PerTest {
            mp: f(Test::Mp),
            lb: f(Test::Lb),
            sb: f(Test::Sb),
        }
    }

    pub fn get(&self, t: Test) -> &T {
        match t {
            Test::Mp => &self.mp,
            Test::Lb => &self.lb,
            Test::Sb => &self.sb,
        }
    }

    pub fn get_mut(&mut self, t: Test) -> &mut T {
        match t {
            Test::Mp => &mut self.mp,
            Test::Lb => &mut self.lb,
            Test::Sb => &mut self.sb,
        }
    }

    pub fn map<U>(&self, mut f: impl FnMut(Test, &T) -> U) -> PerTest<U> {
        PerTest::from_fn(|t| f(t, self.get(t)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (Test, &T)> {
        Test::ALL.into_iter().map(move |t| (t, self.get(t)))
    }
}

// ---------------------------------------------------------------------------------------------
// Access sequences

/// One access of a stressing thread's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    Ld,
    St,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Ld => "ld",
            Access::St => "st",
        }
    }
}

/// An access sequence sigma in (ld|st)+, at most [`MAX_SEQUENCE_LEN`] accesses. Ordered by
/// length, then access by access with `ld` before `st` (the order of [`all_sequences`]).
/// `Display` and [`Sequence::compact`] give the paper's form `ld st2 ld`; [`Sequence::text`]
/// gives `ld st st ld`, the form written into profiles. JSON holds the text form; parsing
/// accepts both (`ld3 st` is `ld ld ld st`, as in the runtime's parser).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sequence(Vec<Access>);

impl Sequence {
    pub fn new(accesses: Vec<Access>) -> Result<Sequence, String> {
        if accesses.is_empty() {
            return Err("an access sequence needs at least one access".into());
        }
        if accesses.len() > MAX_SEQUENCE_LEN {
            return Err(format!(
                "an access sequence has at most {MAX_SEQUENCE_LEN} accesses, not {}",
                accesses.len()
            ));
        }
        Ok(Sequence(accesses))
    }

    pub fn accesses(&self) -> &[Access] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `ld st st ld`: one word per access.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `ld st2 ld`: runs of one access written with a count (the paper's `ld^x`).
    pub fn compact(&self) -> String {
        let mut words = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let run = self.0[i..].iter().take_while(|&&a| a == self.0[i]).count();
            words.push(if run == 1 {
                self.0[i].name().to_string()
            } else {
                format!("{}{run}", self.0[i].name())
            });
            i += run;
        }
        words.join(" ")
    }

    /// Parses `ld st st ld` or `ld st2 ld` (whitespace-separated words `ld`/`st` with an
    /// optional positive count).
    pub fn parse(text: &str) -> Result<Sequence, String> {
        let mut out = Vec::new();
        for word in text.split_whitespace() {
            let access = match word.get(..2) {
                Some("ld") => Access::Ld,
                Some("st") => Access::St,
                _ => {
                    return Err(format!(
                        "access sequence \"{text}\": unknown access \"{word}\" (use ld and st, \
                         optionally with a count: ld3)"
                    ));
                }
            };
            let count = match &word[2..] {
                "" => 1,
                n => match n.parse::<usize>() {
                    Ok(c) if c > 0 && c <= MAX_SEQUENCE_LEN => c,
                    _ => {
                        return Err(format!(
                            "access sequence \"{text}\": bad count in \"{word}\""
                        ));
                    }
                },
            };
            if out.len() + count > MAX_SEQUENCE_LEN {
                return Err(format!(
                    "access sequence \"{text}\" is longer than {MAX_SEQUENCE_LEN} accesses"
                ));
            }
            out.extend(std::iter::repeat_n(access, count));
        }
        Sequence::new(out).map_err(|e| format!("access sequence \"{text}\": {e}"))
    }
}

impl Ord for Sequence {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Sequence {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.compact())
    }
}

impl std::str::FromStr for Sequence {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Sequence::parse(s)
    }
}

impl Serialize for Sequence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for Sequence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Sequence::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Every sequence in (ld|st)+ of length 1..=`max_len`, in [`Sequence`] order: `ld`, `st`,
/// `ld ld`, `ld st`, `st ld`, `st st`, `ld ld ld`, ...
///
/// There are 2 + 4 + ... + 2^N = 2^(N+1) - 2 of them: 62 for N = 5. The paper (Sec. 3.3) says
/// 2^(n+1) - 1 = 63 and its Tab. 3 ranks down to 63; that is the count of all words of length
/// 0..=N, i.e. it includes the empty sequence, which (ld|st)+ excludes (and a stressing loop
/// with no access is no stress). We enumerate the 62 non-empty sequences.
pub fn all_sequences(max_len: usize) -> Vec<Sequence> {
    let mut out = Vec::new();
    for len in 1..=max_len.min(MAX_SEQUENCE_LEN) {
        for bits in 0..(1u64 << len) {
            let accesses = (0..len)
                .map(|i| {
                    if bits >> (len - 1 - i) & 1 == 1 {
                        Access::St
                    } else {
                        Access::Ld
                    }
                })
                .collect();
            out.push(Sequence(accesses));
        }
    }
    out
}
