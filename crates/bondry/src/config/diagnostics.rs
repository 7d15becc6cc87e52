//! The refusals of one configuration, collected: a section records what it refuses and
//! goes on checking, so that one run of `bondry check` names every problem of the file.

use std::sync::Arc;

use bondry_mcp_proto::Revision;

use crate::config::{ConfigError, ConfigErrors, Places};

/// What the sections refused so far, in the order they found it.
pub struct Diagnostics {
    origin: String,
    places: Arc<Places>,
    refusals: Vec<ConfigError>,
}

impl Diagnostics {
    /// Collects the refusals of the file (or `<embedded default>`) `origin`, each placed
    /// where its key was written.
    pub fn new(origin: &str, places: Arc<Places>) -> Self {
        Self { origin: origin.to_owned(), places, refusals: Vec::new() }
    }

    /// Refuses the value at the key path `key`; `message` names the value and the fix.
    pub fn refuse(&mut self, key: impl Into<String>, message: impl Into<String>) {
        let key = key.into();
        let place = self.places.named(&key).cloned();
        let error = ConfigError { origin: self.origin.clone(), place, key: Some(key), message: message.into() };
        self.refusals.push(error);
    }

    /// The value of a check of the key `key`, or `None` with its refusal recorded.
    pub fn ok<T>(&mut self, key: impl Into<String>, checked: Result<T, String>) -> Option<T> {
        checked.map_err(|message| self.refuse(key, message)).ok()
    }

    /// Whether nothing was refused so far.
    pub fn is_clean(&self) -> bool {
        self.refusals.is_empty()
    }

    /// What the sections built when nothing was refused, else every refusal. A section
    /// returns nothing only after refusing something; should one not, the file is still
    /// refused, saying so, rather than served without the section.
    pub fn finish<T>(self, assembled: Option<T>) -> Result<T, ConfigErrors> {
        match (assembled, ConfigErrors::new(self.refusals)) {
            (Some(assembled), None) => Ok(assembled),
            (_, Some(errors)) => Err(errors),
            (None, None) => Err(ConfigErrors::from(ConfigError {
                origin: self.origin,
                place: None,
                key: None,
                message: "a section was refused without a reason; please report this as a bug".into(),
            })),
        }
    }
}

/// `protocol_versions`: at least one, and each a revision this build serves.
pub(crate) fn revisions(diagnostics: &mut Diagnostics, key: &str, versions: &[String]) -> Option<Vec<Revision>> {
    if versions.is_empty() {
        diagnostics
            .refuse(key, "the list is empty; serve at least one of \"2026-07-28\", \"2025-11-25\", \"2025-06-18\"");
        return None;
    }
    let revisions: Vec<_> = versions
        .iter()
        .enumerate()
        .map(|(index, version)| {
            diagnostics.ok(format!("{key}[{index}]"), version.parse::<Revision>().map_err(|e| e.to_string()))
        })
        .collect();
    revisions.into_iter().collect()
}

/// An hour, the longest most waits of a stanza may be, in milliseconds.
pub(crate) const ONE_HOUR_MS: u64 = 60 * 60 * 1000;

/// `value` when `range` holds it; else why not, in `unit`.
pub(crate) fn within(value: u64, range: std::ops::RangeInclusive<u64>, unit: &str) -> Result<u64, String> {
    range
        .contains(&value)
        .then_some(value)
        .ok_or_else(|| format!("{value} must be between {} and {} {unit}", range.start(), range.end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_kept_in_the_order_found_and_named() {
        let mut diagnostics = Diagnostics::new("t.toml", Default::default());
        assert!(diagnostics.is_clean());
        diagnostics.refuse("listeners.main.bind", "\"x\" is not an address");
        assert_eq!(diagnostics.ok("realms.default.limits.inflight_per_session", Ok::<_, String>(3)), Some(3));
        assert_eq!(diagnostics.ok::<u8>("realms.default.keys[0].id", Err("\"a b\" is not a key id".into())), None);
        assert!(!diagnostics.is_clean());
        let errors = diagnostics.finish(Some(())).unwrap_err();
        let keys: Vec<_> = errors.iter().map(|error| error.key.as_deref()).collect();
        assert_eq!(keys, [Some("listeners.main.bind"), Some("realms.default.keys[0].id")]);
        assert_eq!(
            errors.to_string(),
            "t.toml: listeners.main.bind: \"x\" is not an address\n\
             t.toml: realms.default.keys[0].id: \"a b\" is not a key id"
        );
    }

    #[test]
    fn a_clean_run_gives_what_was_built() {
        assert_eq!(Diagnostics::new("t.toml", Default::default()).finish(Some(7)), Ok(7));
    }

    #[test]
    fn nothing_built_without_a_refusal_is_still_refused() {
        let errors = Diagnostics::new("t.toml", Default::default()).finish(None::<()>).unwrap_err();
        assert!(errors.to_string().starts_with("t.toml: a section was refused without a reason"), "{errors}");
    }
}
