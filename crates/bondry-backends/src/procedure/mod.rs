//! A procedure: one capability served by one HTTP endpoint, which Bondry POSTs a JSON
//! request to and reads a JSON answer from (`docs/backends.md`).

pub mod answer;
mod call;
pub mod request;
pub mod signing;

pub use answer::{Failure, read};
pub use call::{Procedure, ProcedureSpec};
pub use request::body;
