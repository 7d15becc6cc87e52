//! What a tool does to what it acts on, and what a query asks to have done: reading,
//! creating, changing or deleting. A tool names it with the first verb of its id
//! (`list-…`, `create-…`, `delete-…`), else its annotations say it; a query with its first
//! words ("show me…", "open a new…", "which…?"). The words alone weigh little, being in
//! many tools, yet they tell apart tools that share every other word.

use crate::capability::Annotations;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Reading many: listing, searching.
    List,
    /// Reading one: getting, checking.
    Get,
    /// Reading, one or many.
    Read,
    Create,
    Change,
    Delete,
}

impl Action {
    /// How well doing `done` answers asking for `self`: 1 the same, 0 another way of
    /// writing (creating for changing), -1 reading for writing or deleting for making.
    pub(crate) fn agreement(self, done: Action) -> f32 {
        use Action::*;
        match (self, done) {
            _ if self == done => 1.0,
            (Read, List | Get) | (List | Get, Read) => 1.0,
            (List, Get) | (Get, List) => 0.0,
            (Create, Change) | (Change, Create) | (Change, Delete) => 0.0,
            _ => -1.0,
        }
    }
}

/// Words naming an action, in a tool's id or at the start of a query.
const VERBS: &[(&str, Action)] = &[
    ("accept", Action::Change),
    ("add", Action::Create),
    ("approve", Action::Change),
    ("archive", Action::Change),
    ("are", Action::Get),
    ("assign", Action::Create),
    ("block", Action::Change),
    ("can", Action::Get),
    ("cancel", Action::Delete),
    ("change", Action::Change),
    ("check", Action::Get),
    ("clear", Action::Delete),
    ("configure", Action::Change),
    ("copy", Action::Create),
    ("create", Action::Create),
    ("delete", Action::Delete),
    ("did", Action::Get),
    ("disable", Action::Change),
    ("dismiss", Action::Change),
    ("display", Action::Read),
    ("do", Action::Read),
    ("does", Action::Get),
    ("download", Action::Get),
    ("drop", Action::Delete),
    ("edit", Action::Change),
    ("enable", Action::Change),
    ("erase", Action::Delete),
    ("export", Action::Create),
    ("fetch", Action::Get),
    ("find", Action::List),
    ("follow", Action::Change),
    ("generate", Action::Create),
    ("get", Action::Get),
    ("give", Action::Create),
    ("has", Action::Get),
    ("how", Action::Read),
    ("is", Action::Get),
    ("list", Action::List),
    ("lock", Action::Change),
    ("look", Action::Get),
    ("make", Action::Create),
    ("mark", Action::Change),
    ("merge", Action::Change),
    ("modify", Action::Change),
    ("move", Action::Change),
    ("new", Action::Create),
    ("open", Action::Create),
    ("pin", Action::Change),
    ("post", Action::Create),
    ("publish", Action::Create),
    ("put", Action::Create),
    ("react", Action::Create),
    ("read", Action::Read),
    ("register", Action::Create),
    ("remove", Action::Delete),
    ("rename", Action::Change),
    ("replace", Action::Change),
    ("report", Action::Create),
    ("retrieve", Action::Get),
    ("revoke", Action::Delete),
    ("search", Action::List),
    ("see", Action::Read),
    ("set", Action::Change),
    ("share", Action::Create),
    ("show", Action::Read),
    ("shut", Action::Change),
    ("star", Action::Change),
    ("start", Action::Create),
    ("stop", Action::Change),
    ("submit", Action::Create),
    ("suspend", Action::Change),
    ("tell", Action::Create),
    ("transfer", Action::Change),
    ("turn", Action::Change),
    ("unblock", Action::Change),
    ("unfollow", Action::Delete),
    ("unlock", Action::Change),
    ("unpin", Action::Change),
    ("unstar", Action::Delete),
    ("update", Action::Change),
    ("upload", Action::Create),
    ("view", Action::Read),
    ("what", Action::Read),
    ("where", Action::Read),
    ("which", Action::List),
    ("who", Action::List),
];

fn verb(word: &str) -> Option<Action> {
    VERBS.binary_search_by(|(verb, _)| verb.cmp(&word)).ok().map(|at| VERBS[at].1)
}

/// How many of a query's first words may name its action.
const QUERY_VERB_WINDOW: usize = 2;

/// What a tool does: its id's first verb, else what its annotations say.
pub(crate) fn of_tool(id_words: &[String], annotations: &Annotations) -> Option<Action> {
    id_words.iter().find_map(|word| verb(word)).or(match annotations {
        Annotations { read_only: Some(true), .. } => Some(Action::Read),
        Annotations { destructive: Some(true), .. } => Some(Action::Delete),
        _ => None,
    })
}

/// Verbs whose meaning their particle changes: "set up" makes, "look up" reads.
const PHRASAL: &[(&str, &str, Action)] = &[
    ("bring", "back", Action::Change),
    ("look", "up", Action::Get),
    ("set", "up", Action::Create),
    ("spin", "up", Action::Create),
];

/// What a query asks to have done, named by one of its first words.
pub(crate) fn of_query(words: &[String]) -> Option<Action> {
    (0..words.len().min(QUERY_VERB_WINDOW)).find_map(|at| {
        let next = words.get(at + 1).map(String::as_str);
        let phrasal = PHRASAL.iter().find(|(verb, particle, _)| words[at] == *verb && next == Some(particle));
        phrasal.map(|(_, _, action)| *action).or_else(|| verb(&words[at]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_sorted_for_their_search() {
        assert!(VERBS.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }
}
