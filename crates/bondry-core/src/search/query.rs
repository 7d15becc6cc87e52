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
    /// How many distinct words were asked (by their stems) that stand for any term.
    pub(crate) words: usize,
    /// Each term the words stand for, once: itself for a word that is not a common one,
    /// and its synonyms (a common word may still have some: "my" stands for
    /// "authenticated"), with the greatest weight any word gives it.
    pub(crate) terms: Vec<Term>,
}

pub(crate) struct Term {
    pub(crate) term: String,
    pub(crate) weight: f32,
    /// The asked words standing for it, a bit each.
    pub(crate) words: u32,
}

impl Query {
    pub(crate) fn parse(query: &str) -> Self {
        let mut words: Vec<String> = text::words(query).take(4 * MAX_QUERY_WORDS).collect();
        // A negated word is what the caller does not ask for: dropped with its negation
        // ("don't delete": `don`, `t` and `delete`).
        let mut negated = false;
        words.retain(|word| {
            let keep = !negated && !text::is_negation(word);
            negated = text::is_negation(word) || (negated && word == "t");
            keep
        });
        let wanted = action::of_query(&words);
        let mut stems: Vec<String> = Vec::new();
        let mut terms: Vec<Term> = Vec::new();
        let mut asked = 0;
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
            if meant.is_empty() {
                continue;
            }
            for (term, weight) in meant {
                match terms.iter_mut().find(|known| known.term == term) {
                    Some(known) => {
                        known.weight = known.weight.max(weight);
                        known.words |= 1 << asked;
                    }
                    None => terms.push(Term { term, weight, words: 1 << asked }),
                }
            }
            asked += 1;
            if asked == MAX_QUERY_WORDS {
                break;
            }
        }
        Self { wanted, words: asked, terms }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(query: &str) -> Vec<(String, u32)> {
        Query::parse(query).terms.into_iter().map(|term| (term.term, term.words)).collect()
    }

    #[test]
    fn words_stand_for_their_stems_and_synonyms_once_and_negated_words_for_nothing() {
        let owned = |terms: &[(&str, u32)]| terms.iter().map(|(t, w)| (t.to_string(), *w)).collect::<Vec<_>>();
        assert_eq!(
            terms("Show my open PRs"),
            owned(&[
                ("show", 1),
                ("list", 1),
                ("authent", 2),
                ("open", 4),
                ("creat", 4),
                ("prs", 8),
                ("pull", 8),
                ("request", 8)
            ])
        );
        // `add` stands for `create` and for itself: once each.
        assert_eq!(terms("add labels without removing any"), owned(&[("add", 1), ("creat", 1), ("label", 2)]));
        assert_eq!(terms("labels, but don't delete them"), owned(&[("label", 1)]));
        assert_eq!(Query::parse("show see view").terms.iter().filter(|term| term.term == "list").count(), 1);
        assert_eq!(Query::parse("which repos am I watching").wanted, Some(Action::List));
        assert_eq!(Query::parse("set up a webhook").wanted, Some(Action::Create));
        assert_eq!(Query::parse("the webhooks").wanted, None);
        assert_eq!(Query::parse(&"word ".repeat(10_000)).words, 1);
    }
}
