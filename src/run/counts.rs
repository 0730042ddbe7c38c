//! How the runs of one environment ended: the counts `wmfix test` writes in each row of
//! `summary.json` and `wmfix report` reads back.

use crate::run::trial::Outcome;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    pub env: String,
    pub runs: usize,
    pub pass: usize,
    pub fail: usize,
    pub timeout: usize,
    pub crash: usize,
}

impl Counts {
    pub fn errors(&self) -> usize {
        self.fail + self.timeout + self.crash
    }

    pub fn add(&mut self, o: Outcome) {
        self.runs += 1;
        match o {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Timeout => self.timeout += 1,
            Outcome::Crash => self.crash += 1,
        }
    }
}
