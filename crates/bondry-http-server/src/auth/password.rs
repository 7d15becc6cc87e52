//! Password verification in memory allocated once.
//!
//! argon2 needs `m_cost` KiB for every check (19 MiB at the default parameters).
//! Allocated per check, on whichever blocking thread runs it, that memory lands in the
//! allocator's per-thread caches and stays resident: sixteen concurrent wrong passwords
//! kept over a gigabyte. Instead the process keeps a fixed pool, one block array per check
//! that may run at once, each grown to the largest parameters it has met and reused from
//! then on. The pool is the process's, not a realm's, so the bound holds across realms
//! and reloads.

use std::sync::{LazyLock, Mutex};

use argon2::{Algorithm, Argon2, Block, Params, PasswordHash, Version};
use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use subtle::ConstantTimeEq;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Password checks that may run at once in the process; others wait their turn.
pub const CONCURRENT_CHECKS: usize = 4;

/// The block arrays of the process's password checks.
pub struct PasswordPool {
    turns: Semaphore,
    memory: Mutex<Vec<Vec<Block>>>,
}

static PROCESS: LazyLock<PasswordPool> = LazyLock::new(|| PasswordPool::new(CONCURRENT_CHECKS));

impl PasswordPool {
    fn new(checks: usize) -> Self {
        Self { turns: Semaphore::new(checks), memory: Mutex::new((0..checks).map(|_| Vec::new()).collect()) }
    }

    /// The pool every authenticator of this process shares.
    pub fn process() -> &'static Self {
        &PROCESS
    }

    /// Waits for a turn, then lends that turn's memory until the lease is dropped.
    pub async fn lease(&'static self) -> Lease {
        let turn = self.turns.acquire().await.expect("the pool's semaphore is never closed");
        let memory = self.memory.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop().unwrap_or_default();
        Lease { pool: self, memory, _turn: turn }
    }
}

/// One turn at checking a password, and the memory to check it in.
pub struct Lease {
    pool: &'static PasswordPool,
    memory: Vec<Block>,
    _turn: SemaphorePermit<'static>,
}

impl Lease {
    /// Whether `password` matches the PHC string `hash`, compared in constant time.
    /// A hash this build cannot evaluate matches nothing.
    pub fn verify(&mut self, password: &[u8], hash: &PasswordHash) -> bool {
        let (Some(salt), Some(expected)) = (&hash.salt, &hash.hash) else {
            return false;
        };
        let Ok(algorithm) = Algorithm::try_from(hash.algorithm.as_str()) else {
            return false;
        };
        let Ok(version) = hash.version.map_or(Ok(Version::default()), Version::try_from) else {
            return false;
        };
        let Ok(params) = Params::try_from(hash) else {
            return false;
        };
        let blocks = params.block_count();
        if self.memory.len() < blocks {
            // Grown once to the largest parameters this slot has met, never shrunk.
            self.memory.resize(blocks, Block::new());
        }
        let mut computed = vec![0; expected.len()];
        let hashed = Argon2::new(algorithm, version, params).hash_password_into_with_memory(
            password,
            salt.as_ref(),
            &mut computed,
            &mut self.memory[..blocks],
        );
        hashed.is_ok() && bool::from(computed.as_slice().ct_eq(expected.as_bytes()))
    }
}

/// A PHC string at the default parameters, with a random salt and a random output: as
/// costly to check as a real hash, and matched by no password.
pub fn decoy() -> String {
    let mut random = [0u8; 48];
    getrandom::fill(&mut random).expect("the operating system random source is available");
    let (salt, output) = random.split_at(16);
    let params = Params::default();
    format!(
        "$argon2id$v=19$m={},t={},p={}${}${}",
        params.m_cost(),
        params.t_cost(),
        params.p_cost(),
        STANDARD_NO_PAD.encode(salt),
        STANDARD_NO_PAD.encode(output)
    )
}

impl Drop for Lease {
    fn drop(&mut self) {
        let memory = std::mem::take(&mut self.memory);
        self.pool.memory.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(memory);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::PasswordHasher;

    fn hash(password: &[u8], params: Params) -> String {
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params).hash_password(password).unwrap().to_string()
    }

    #[tokio::test]
    async fn verifies_like_argon2_in_memory_it_keeps() {
        let pool: &'static PasswordPool = Box::leak(Box::new(PasswordPool::new(1)));
        let small = Params::new(64, 1, 1, None).unwrap();
        let stored = hash(b"secret", small.clone());
        let parsed = PasswordHash::new(&stored).unwrap();
        let mut lease = pool.lease().await;
        assert!(lease.verify(b"secret", &parsed));
        assert!(!lease.verify(b"wrong", &parsed));
        drop(lease);
        // The slot keeps its memory, and grows it for larger parameters only.
        let larger = hash(b"other", Params::new(128, 1, 1, None).unwrap());
        let mut lease = pool.lease().await;
        assert_eq!(lease.memory.len(), small.block_count());
        assert!(lease.verify(b"other", &PasswordHash::new(&larger).unwrap()));
        assert!(lease.verify(b"secret", &parsed));
        assert_eq!(lease.memory.len(), 128);
    }

    #[tokio::test]
    async fn a_hash_without_salt_or_output_matches_nothing() {
        let pool: &'static PasswordPool = Box::leak(Box::new(PasswordPool::new(1)));
        let stored = hash(b"secret", Params::new(64, 1, 1, None).unwrap());
        let unsalted = stored.rsplitn(3, '$').nth(2).unwrap().to_owned();
        let mut lease = pool.lease().await;
        assert!(!lease.verify(b"secret", &PasswordHash::new(&unsalted).unwrap()));
    }

    #[tokio::test]
    async fn the_decoy_costs_a_default_check_and_matches_nothing() {
        let decoy = decoy();
        let parsed = PasswordHash::new(&decoy).unwrap();
        assert_eq!(Params::try_from(&parsed).unwrap().m_cost(), Params::default().m_cost());
        let mut lease = PasswordPool::process().lease().await;
        assert!(!lease.verify(b"", &parsed));
        assert_eq!(lease.memory.len(), Params::default().block_count());
    }

    #[tokio::test]
    async fn a_turn_waits_while_every_slot_is_lent() {
        let pool: &'static PasswordPool = Box::leak(Box::new(PasswordPool::new(1)));
        let first = pool.lease().await;
        let second = tokio::spawn(pool.lease());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!second.is_finished());
        drop(first);
        assert!(tokio::time::timeout(std::time::Duration::from_secs(5), second).await.is_ok());
    }
}
