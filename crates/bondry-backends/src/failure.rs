//! How a call to a web service fails, and what its caller is told: a code, never the
//! service's own words.

use bondry_core::capability::CapabilityKind;
use bondry_core::handler::Answer;

/// The stable codes of a service's failures, procedure or OpenAPI operation.
pub mod code {
    /// The service answered something that is not an answer (another status, a body that
    /// is not JSON or too large, an unknown or disallowed answer kind).
    pub const INVALID: &str = "backend_invalid";
    /// The service refused the request (4xx).
    pub const REFUSED: &str = "backend_refused";
    /// The service could not be reached, took too long or failed (5xx); worth a retry.
    pub const UNAVAILABLE: &str = "backend_unavailable";
}

/// Why a call to a service gave no answer. Logged where it is met; the caller only ever
/// sees the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Invalid(String),
    Refused(u16),
    Unavailable(String),
}

impl Failure {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => code::INVALID,
            Self::Refused(_) => code::REFUSED,
            Self::Unavailable(_) => code::UNAVAILABLE,
        }
    }

    /// What the caller is answered: for a tool, an unavailable service is a tool error the
    /// model may retry; everything else fails the call with the failure's code.
    pub fn answer(&self, kind: CapabilityKind) -> Answer {
        match (self, kind) {
            (Self::Unavailable(_), CapabilityKind::Tool) => {
                Answer::ToolError { code: code::UNAVAILABLE.into(), retryable: true, content: None, detail: None }
            }
            _ => Answer::Failure { code: self.code().into(), detail: None },
        }
    }
}
