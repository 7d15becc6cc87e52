//! The runtime's randomness: the operating system's, which the sans-IO protocol core
//! is handed wherever it mints ids and nonces.
//!
//! Each thread fetches the operating system's bytes a page at a time and hands each byte
//! out once, wiping it as it goes: a call mints an invocation id, and a system call per id
//! cost about 0.7 µs, more than a hundredth of a call (bench/README.md, "2026-12-04").
//! Nothing is generated in user space; what a thread holds is at most one page of bytes
//! no id has used yet.

use std::cell::RefCell;

use bondry_mcp_proto::Csprng;

/// How many bytes a thread fetches at once: ids and nonces are 12 to 32 bytes, so one
/// system call serves a hundred or more of them.
const PAGE: usize = 4096;

/// A thread's fetched bytes; those before `used` are handed out and wiped.
struct Fetched {
    bytes: [u8; PAGE],
    used: usize,
}

impl Fetched {
    fn take(&mut self, dest: &mut [u8]) {
        if PAGE - self.used < dest.len() {
            os_fill(&mut self.bytes);
            self.used = 0;
        }
        let taken = &mut self.bytes[self.used..self.used + dest.len()];
        dest.copy_from_slice(taken);
        taken.fill(0);
        self.used += dest.len();
    }
}

thread_local! {
    // Constant and without a destructor, so it is there for as long as its thread.
    static FETCHED: RefCell<Fetched> = const { RefCell::new(Fetched { bytes: [0; PAGE], used: PAGE }) };
}

/// The operating system's CSPRNG.
pub struct OsRandom;

impl Csprng for OsRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        if dest.len() > PAGE {
            os_fill(dest);
        } else {
            FETCHED.with(|fetched| fetched.borrow_mut().take(dest));
        }
    }
}

fn os_fill(dest: &mut [u8]) {
    // Without entropy no id or nonce is safe to mint; there is no sane fallback.
    getrandom::fill(dest).expect("the operating system random source is available");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_never_repeat_across_fetches() {
        let ids: HashSet<[u8; 16]> = (0..3 * PAGE / 16)
            .map(|_| {
                let mut id = [0; 16];
                OsRandom.fill(&mut id);
                id
            })
            .collect();
        assert_eq!(ids.len(), 3 * PAGE / 16);
        assert!(!ids.contains(&[0; 16]));
    }

    #[test]
    fn sizes_that_do_not_divide_the_page_cross_fetches_whole() {
        let nonces: HashSet<[u8; 12]> = (0..PAGE)
            .map(|_| {
                let mut nonce = [0; 12];
                OsRandom.fill(&mut nonce);
                nonce
            })
            .collect();
        assert_eq!(nonces.len(), PAGE);
        assert!(!nonces.contains(&[0; 12]));
        let mut page = [0; PAGE];
        OsRandom.fill(&mut page);
        assert!(page.chunks(32).all(|chunk| chunk.iter().any(|&byte| byte != 0)));
    }

    #[test]
    fn more_than_a_page_comes_straight_from_the_system() {
        let mut large = vec![0; 3 * PAGE];
        OsRandom.fill(&mut large);
        assert!(large.chunks(32).all(|chunk| chunk.iter().any(|&byte| byte != 0)));
    }

    #[test]
    fn bytes_handed_out_are_wiped() {
        let mut id = [0; 32];
        OsRandom.fill(&mut id);
        OsRandom.fill(&mut id);
        FETCHED.with(|fetched| {
            let fetched = fetched.borrow();
            assert!(fetched.used >= 64);
            assert!(fetched.bytes[..fetched.used].iter().all(|&byte| byte == 0));
            assert!(fetched.bytes[fetched.used..].iter().any(|&byte| byte != 0));
        });
    }
}
