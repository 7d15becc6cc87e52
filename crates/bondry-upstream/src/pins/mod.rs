//! Pins against drift (docs/upstreams.md). An upstream's definitions are instructions to a
//! model: each one Bondry serves is pinned by the hash of the definition an operator
//! trusted, and one that differs, or is new while new ones are held, is withheld until
//! approved. The book decides ([`PinBook`], pure), the store remembers ([`PinStore`]).

mod book;
mod hash;
mod pin;
mod sqlite;
mod store;

pub use book::PinBook;
pub use hash::{HASH_FORM, form_1_hash, kind_named, kind_of, newly_covered, served};
pub use pin::{Approval, Observed, Pin, PinState, Policy, Refusal, Seen};
pub use sqlite::SqliteStore;
pub use store::{MemoryStore, PinStore, StoreError};
