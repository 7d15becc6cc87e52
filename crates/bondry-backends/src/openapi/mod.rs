//! A REST API described by an OpenAPI document, served as tools:
//!
//! - [`document`] reads the document, [`refs`] checks its references, [`schema`] turns its
//!   schemas into 2020-12;
//! - [`mapping`] decides which operations become tools and with which arguments, and
//!   [`tools`] names, describes and bounds them in the realm;
//! - [`call`] is an operation's handler: [`request`] writes the arguments as its request,
//!   [`answer`] reads the service's answer back.

pub mod answer;
pub mod call;
pub mod document;
pub mod mapping;
mod percent;
pub mod refs;
pub mod request;
pub mod schema;
pub mod tools;
