//! The binary trace the detection runtime writes (`runtime-cu/wmfix_race.cuh`): a header line,
//! then 40-byte little-endian records. Tests and benchmarks write traces with `Record::encode`,
//! so that the layout lives here alone.

pub const MAGIC: &str = "wmfix-race-trace 1";
pub const RECORD_BYTES: usize = 40;
/// A record's site when it names none.
pub const NO_SITE: u32 = u32::MAX;

pub mod kind {
    /// An instrumented access: its kind is its fence site's (`fences.json`).
    pub const ACCESS: u8 = 1;
    pub const RMW: u8 = 2;
    pub const FENCE: u8 = 3;
    pub const BARRIER: u8 = 4;
    pub const CAS_FAILED: u8 = 5;
    pub const LOAD: u8 = 6;
    pub const STORE: u8 = 7;
    pub const SITE: u8 = 8;
}

pub mod flag {
    /// The low two bits: the scope (0 block, 1 device, 2 or 3 system).
    pub const DEVICE: u8 = 1;
    pub const SYSTEM: u8 = 2;
    pub const STRONG: u8 = 4;
    /// `a` holds the value read or written (an atomic's old value; `b` its new one).
    pub const VALUE: u8 = 8;
    /// A strong load or store whose scope is the low bits (libcu++'s `atomic_ref`), not a
    /// volatile one (system scope).
    pub const SCOPED: u8 = 16;
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub addr: u64,
    pub a: u64,
    pub b: u64,
    pub launch: u32,
    pub block: u32,
    pub site: u32,
    pub thread: u16,
    pub kind: u8,
    pub flags: u8,
}

impl Record {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend(self.addr.to_le_bytes());
        out.extend(self.a.to_le_bytes());
        out.extend(self.b.to_le_bytes());
        out.extend(self.launch.to_le_bytes());
        out.extend(self.block.to_le_bytes());
        out.extend(self.site.to_le_bytes());
        out.extend(self.thread.to_le_bytes());
        out.push(self.kind);
        out.push(self.flags);
    }

    /// `rec` is one record's `RECORD_BYTES`.
    pub fn decode(rec: &[u8]) -> Record {
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().unwrap());
        Record {
            addr: u64_at(0),
            a: u64_at(8),
            b: u64_at(16),
            launch: u32_at(24),
            block: u32_at(28),
            site: u32_at(32),
            thread: u16::from_le_bytes([rec[36], rec[37]]),
            kind: rec[38],
            flags: rec[39],
        }
    }
}

/// A trace file's header line.
pub fn header(dropped: u64) -> Vec<u8> {
    format!("{MAGIC} dropped={dropped}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_forty_bytes_and_reads_back_as_written() {
        let r = Record {
            addr: 0x1122_3344_5566_7788,
            a: 9,
            b: u64::MAX,
            launch: 3,
            block: 70_000,
            site: NO_SITE,
            thread: 1023,
            kind: kind::RMW,
            flags: flag::DEVICE | flag::VALUE,
        };
        let mut bytes = Vec::new();
        r.encode(&mut bytes);
        assert_eq!(bytes.len(), RECORD_BYTES);
        assert_eq!(Record::decode(&bytes), r);
        assert_eq!(bytes[38..], [kind::RMW, 9]);
    }
}
