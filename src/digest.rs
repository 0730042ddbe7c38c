//! A small stable digest for caches and change checks (not for security).

/// FNV-1a: stable across Rust versions, unlike the std hasher.
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn add(&mut self, bytes: &[u8]) {
        for b in bytes.iter().chain(&[0xff]) {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

impl Fnv {
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }

    /// The digest of one text.
    pub fn of(bytes: &[u8]) -> String {
        let mut h = Fnv::default();
        h.add(bytes);
        h.hex()
    }
}
