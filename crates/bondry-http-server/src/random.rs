//! The runtime's randomness: the operating system's, which the sans-IO protocol core
//! is handed wherever it mints ids and nonces.

use bondry_mcp_proto::Csprng;

/// The operating system's CSPRNG.
pub struct OsRandom;

impl Csprng for OsRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        // Without entropy no id or nonce is safe to mint; there is no sane fallback.
        getrandom::fill(dest).expect("the operating system random source is available");
    }
}
