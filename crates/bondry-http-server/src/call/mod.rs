//! A dispatched call, from the adapter's `Step::Dispatch` to its settled response.
//!
//! A modern call lives as long as its request ([`modern`]); a session call outlives it
//! ([`session`]). Both are driven by the same loop ([`drive`]), settle through the same
//! side ([`settling`]) and are answered the same way ([`answer`]).

mod answer;
mod drive;
pub mod modern;
pub mod session;
mod settling;

pub use settling::{Opener, Settling};
