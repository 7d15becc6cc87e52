//! Protocol revisions and the era each belongs to.

use std::fmt;
use std::str::FromStr;

/// A protocol revision Bondry speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

/// Stateless requests (2026-07-28) or `initialize` and sessions (2025-*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Modern,
    Handshake,
}

impl Revision {
    pub const ALL: [Revision; 3] = [Self::V2026_07_28, Self::V2025_11_25, Self::V2025_06_18];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    pub fn era(self) -> Era {
        match self {
            Self::V2026_07_28 => Era::Modern,
            Self::V2025_06_18 | Self::V2025_11_25 => Era::Handshake,
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol revision {0:?}: use 2026-07-28, 2025-11-25 or 2025-06-18")]
pub struct UnknownRevision(pub String);

impl FromStr for Revision {
    type Err = UnknownRevision;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| UnknownRevision(s.to_owned()))
    }
}
