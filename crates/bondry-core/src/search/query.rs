//! A query read for searching: the action its first words ask for, and each of its
//! words as the weighted terms it stands for.

use super::action::{self, Action};
use super::{synonyms, text};

/// Words of a query considered, at most: past them a query is prose, not a question.
pub(crate) const MAX_QUERY_WORDS: usize = 32;

/// What a synonym counts for, against the word the caller used; one meaning the same
/// ("PR" for "pull request") counts in full.
const SYNONYM_WEIGHT: f32 = 0.6;

pub(crate) struct Query {
    pub(crate) wanted: Option<Action>,
    /// Each distinct word asked (by its stem), as the terms it stands for with their
    /// weights: itself unless it is a common word, and its synonyms (a common word may
    /// still have some: "my" stands for "authenticated").
    pub(crate) asked: Vec<Vec<(String, f32)>>,
}

impl Query {
    pub(crate) fn parse(query: &str) -> Self {
        let mut words: Vec<String> = text::words(query).take(4 * MAX_QUERY_WORDS).collect();
        // A negated word is what the caller does not ask for: dropped with its negation.
        let mut negated = false;
        words.retain(|word| {
            let keep = !negated && !text::is_negation(word);
            negated = text::is_negation(word);
            keep
        });
        let wanted = action::of_query(&words);
        let mut stems: Vec<String> = Vec::new();
        let mut asked = Vec::new();
        for word in words {
            let stem = text::stem(&word);
            if stems.contains(&stem) {
                continue;
            }
            let mut meant: Vec<(String, f32)> = synonyms::of(&stem)
                .iter()
                .map(|synonym| (synonym.term.clone(), if synonym.same { 1.0 } else { SYNONYM_WEIGHT }))
                .collect();
            if !text::is_stop_word(&word) {
                meant.insert(0, (stem.clone(), 1.0));
            }
            stems.push(stem);
            if !meant.is_empty() {
                asked.push(meant);
            }
            if asked.len() == MAX_QUERY_WORDS {
                break;
            }
        }
        Self { wanted, asked }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(query: &str) -> Vec<Vec<String>> {
        Query::parse(query).asked.into_iter().map(|meant| meant.into_iter().map(|(term, _)| term).collect()).collect()
    }

    #[test]
    fn words_stand_for_their_stems_and_synonyms_and_negated_words_for_nothing() {
        assert_eq!(
            terms("Show my open PRs"),
            [vec!["show", "list", "get"], vec!["authent"], vec!["open", "creat"], vec!["prs", "pull", "request"]]
        );
        assert_eq!(terms("add labels without removing any"), [vec!["add", "creat", "add"], vec!["label"]]);
        assert_eq!(Query::parse("which repos am I watching").wanted, Some(Action::List));
        assert_eq!(Query::parse("set up a webhook").wanted, Some(Action::Create));
        assert_eq!(Query::parse("the webhooks").wanted, None);
    }
}
