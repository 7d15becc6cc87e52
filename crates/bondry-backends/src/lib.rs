//! Bondry's HTTP backends: capabilities served by ordinary web services, behind core's
//! backend interface like every other kind. The request pipeline, proto and the runtime
//! learn nothing of them: a procedure's capability is resolved, validated, audited and
//! asked for input exactly as a builtin one.
//!
//! - [`procedure`]: the wire contract between Bondry and a service (the request body,
//!   the answers and their failures, and the signature that proves a request is Bondry's).
//! - [`openapi`]: a REST API's OpenAPI document, read and turned into tools.
//! - [`exchange`]: one request to a service and its whole answer, bounded; [`failure`]:
//!   how a call to either fails, and what its caller is told.

pub mod exchange;
pub mod failure;
pub mod openapi;
pub mod procedure;
mod trace;

#[cfg(test)]
mod testing;
