//! A REST API described by an OpenAPI document, served as tools: the document read
//! ([`document`]), its references checked ([`refs`]), its schemas in 2020-12 ([`schema`]),
//! its operations mapped to tools ([`mapping`]), a tool's arguments
//! written as its operation's request ([`request`]), and the answer read back ([`answer`]); [`call`] is the
//! handler that does it all for one operation.

pub mod answer;
pub mod call;
pub mod document;
pub mod mapping;
pub mod refs;
pub mod request;
pub mod schema;
