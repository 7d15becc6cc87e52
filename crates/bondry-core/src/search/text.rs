//! Text into search terms: words split at punctuation and camel case, lowercased, common
//! words dropped, and each stemmed (Snowball English), so `starred`, `stars` and `star`
//! meet, and `listForRepo` reads as `list for repo`.

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Words that say nothing about which tool is meant, in a query or a description.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do",
    "does", "for", "from", "get", "give", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "let", "me", "my", "of", "on", "one", "or", "our", "out", "please", "so", "some", "that", "the", "their", "them",
    "then", "there", "these", "this", "those", "to", "up", "us", "want", "was", "we", "what", "when", "where", "which",
    "who", "will", "with", "would", "you", "your",
];

/// The words of `text`, lowercased: runs of letters and digits, split again where a
/// lowercase letter or digit meets an uppercase one.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).flat_map(camel_parts).filter(|word| !word.is_empty())
}

/// `listForRepo` as `list`, `for`, `repo`; `HTTPServer` stays whole.
fn camel_parts(run: &str) -> impl Iterator<Item = String> + '_ {
    let mut starts = vec![0];
    let mut previous: Option<char> = None;
    for (at, c) in run.char_indices() {
        if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            starts.push(at);
        }
        previous = Some(c);
    }
    starts.push(run.len());
    (0..starts.len() - 1).map(move |i| run[starts[i]..starts[i + 1]].to_lowercase())
}

/// The search terms of `text`: its words less the common ones, stemmed.
pub(crate) fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).filter(|word| !is_stop_word(word)).map(|word| stem(&word))
}

/// Words that negate the word after them: "without removing" asks for no removal.
pub(crate) fn is_negation(word: &str) -> bool {
    matches!(word, "without" | "not" | "never" | "nobody" | "no" | "nothing" | "don" | "doesn" | "isn" | "hasn")
}

pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

pub(crate) fn stem(word: &str) -> String {
    STEMMER.stem(word).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_their_search() {
        assert!(STOP_WORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn words_split_at_punctuation_and_camel_case() {
        let words: Vec<String> = words("github.repos_list-for-org getPetById HTTPServer v2Api").collect();
        assert_eq!(
            words,
            ["github", "repos", "list", "for", "org", "get", "pet", "by", "id", "httpserver", "v2", "api"]
        );
    }

    #[test]
    fn terms_drop_common_words_and_meet_at_their_stem() {
        let terms: Vec<String> = terms("Show me the people who starred my repositories").collect();
        assert_eq!(terms, ["show", "peopl", "star", "repositori"]);
        assert_eq!(stem("stars"), stem("starred"));
    }
}
