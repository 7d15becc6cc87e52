//! Words callers use for what API descriptions say otherwise: the verbs of asking ("show",
//! "which", "open", "remove") for the verbs operations are named with, and the short or
//! everyday names of what they act on ("PR", "repo", "my", "bug").

use std::collections::HashMap;
use std::sync::LazyLock;

use super::text;

/// Each word, then what it may also mean; matched after stemming on both sides.
const TABLE: &[(&str, &str)] = &[
    // Asking to see.
    ("show", "list"),
    ("see", "list"),
    ("view", "list"),
    ("display", "list"),
    ("what", "list"),
    ("where", "location"),
    ("look", "search"),
    ("find", "=search list"),
    // Asking to make.
    ("new", "create"),
    ("open", "create"),
    ("make", "create"),
    ("add", "create add"),
    ("upload", "create add"),
    ("publish", "create"),
    ("share", "create"),
    ("register", "create registration"),
    ("post", "create"),
    ("submit", "create"),
    ("leave", "create"),
    ("react", "create reaction"),
    ("put", "create add set"),
    ("assign", "add assignee"),
    ("tag", "label add"),
    ("prevent", "lock block restrict disable"),
    ("spin", "create"),
    ("setup", "create set"),
    // Asking to change.
    ("change", "update set"),
    ("edit", "update"),
    ("modify", "update"),
    ("rename", "rename update"),
    ("turn", "update set enable"),
    ("enable", "set update"),
    ("disable", "set update"),
    ("configure", "set update"),
    ("move", "update"),
    ("mark", "set update"),
    ("bring", "restore update"),
    ("restore", "restore"),
    ("recover", "restore"),
    ("undelete", "restore"),
    // Asking to remove.
    ("remove", "delete remove"),
    ("erase", "delete"),
    ("drop", "delete remove"),
    ("discard", "delete"),
    ("revoke", "delete remove"),
    ("clear", "delete remove"),
    ("stop", "stop delete"),
    ("shut", "stop"),
    ("unwatch", "delete subscription"),
    ("unfollow", "unfollow delete"),
    // Asking whether.
    ("has", "check"),
    ("is", "check"),
    ("whether", "check"),
    // What is acted on.
    ("pr", "=pull =request"),
    ("prs", "=pull =request"),
    ("repo", "=repository"),
    ("repository", "=repo"),
    ("org", "=organization"),
    ("organization", "=org"),
    ("bug", "issue"),
    ("ticket", "issue"),
    ("my", "authenticated"),
    ("me", "authenticated"),
    ("mine", "authenticated"),
    ("i", "authenticated"),
    ("person", "user"),
    ("people", "user"),
    ("someone", "user"),
    ("teammate", "user collaborator member"),
    ("colleague", "user collaborator member reviewer"),
    ("note", "comment"),
    ("reply", "comment reply"),
    ("emoji", "reaction"),
    ("star", "stargazer star"),
    ("watch", "subscription watched"),
    ("follow", "follower following"),
    ("webhook", "hook"),
    ("ci", "workflow pipeline build job"),
    ("snippet", "gist"),
    ("finding", "alert"),
    ("copy", "fork"),
    ("history", "commit event"),
    ("zip", "zipball archive"),
    ("tar", "tarball archive"),
    ("throttle", "rate limit"),
    ("quota", "rate limit"),
    ("spending", "budget billing"),
    ("invite", "invitation"),
    ("login", "username"),
    ("dev", "=development"),
    ("environment", "codespace workspace"),
    ("block", "exclusion"),
    ("file", "content path"),
    ("warning", "annotation alert"),
    ("unread", "read"),
    ("inbox", "notification"),
    ("sha", "ref commit"),
    ("called", "name"),
    ("named", "name"),
    ("license", "seat"),
    ("confidentially", "private"),
    ("confidential", "private"),
    ("tell", "report notify"),
    ("newest", "latest"),
    ("let", "approve allow"),
    ("nested", "child"),
    ("limit", "restriction"),
    ("pointer", "ref reference"),
    ("ignore", "gitignore"),
    ("export", "migration archive"),
];

static SYNONYMS: LazyLock<HashMap<String, Vec<Synonym>>> = LazyLock::new(|| {
    let mut synonyms: HashMap<String, Vec<Synonym>> = HashMap::new();
    for (word, meanings) in TABLE {
        let meanings = meanings.split(' ').map(|meaning| match meaning.strip_prefix('=') {
            Some(same) => Synonym { term: text::stem(same), same: true },
            None => Synonym { term: text::stem(meaning), same: false },
        });
        synonyms.entry(text::stem(word)).or_default().extend(meanings);
    }
    synonyms
});

/// A term a word may also mean: the same thing in other words (`=` in the table: "PR"
/// and "pull request"), or something near it.
pub(crate) struct Synonym {
    pub(crate) term: String,
    pub(crate) same: bool,
}

/// The stemmed terms a word of a query (its stem) may also mean.
pub(crate) fn of(stem: &str) -> &'static [Synonym] {
    SYNONYMS.get(stem).map_or(&[], Vec::as_slice)
}
