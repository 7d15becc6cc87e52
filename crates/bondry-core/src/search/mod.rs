//! Ranked search over a catalogue's search-listed tools, for callers who find tools by
//! asking instead of listing them all.
//!
//! One [`Index`] per catalogue: postings from each term to the tools it occurs in, each
//! with the term's BM25F frequency in that tool already computed (ids and titles count
//! more than descriptions and parameter names). A query adds up the postings of its
//! terms and of their synonyms, skipping tools outside the caller's view ([`Members`],
//! a bit per indexed tool, made with the view) and weighing each term by its rarity in
//! that view, so its cost follows its terms' postings, never the size of the catalogue
//! or of the view, and nothing the caller may not see changes its ranking but the
//! average lengths of the fields.

mod action;
mod query;
mod synonyms;
mod text;

use std::collections::HashMap;
use std::sync::Arc;

use crate::registry::Capability;
use action::Action;
use query::Query;

/// How much a word counts, by where it occurs, and how much the length of that field
/// discounts it (BM25F): a tool is named and titled for what it does; a description also
/// says much else.
const FIELDS: [Field; 4] = [
    Field { weight: 3.0, length_discount: 0.3 },  // id
    Field { weight: 3.0, length_discount: 0.5 },  // title
    Field { weight: 1.0, length_discount: 0.75 }, // description
    Field { weight: 1.5, length_discount: 0.5 },  // parameter names
];

struct Field {
    weight: f32,
    length_discount: f32,
}

/// BM25's saturation: how fast repeating a term stops adding to its weight.
const K1: f32 = 2.0;

/// Words read from one field of a tool, at most: a description's first words say what
/// it does; the rest would only grow the index.
const MAX_FIELD_WORDS: usize = 400;

/// How much a tool matching every term of the query outranks one matching a few: its
/// score is scaled by `1 - COVERAGE + COVERAGE × (terms matched / terms asked)`.
const COVERAGE: f32 = 0.6;

/// How much a tool doing what the query asks (reading, creating, changing, deleting) is
/// raised, and one doing otherwise lowered.
const ACTION: f32 = 0.35;

/// How much a tool whose name (id and title) the query says whole outranks one whose
/// name it says in part: its score is scaled by
/// `1 - NAMED + NAMED × (name terms matched / name terms)`.
const NAMED: f32 = 0.6;

/// The search index of one catalogue's search-listed tools.
#[derive(Debug, Default)]
pub struct Index {
    postings: HashMap<Box<str>, Vec<Posting>>,
    tools: Vec<Arc<Capability>>,
    /// What each tool does, when its id or annotations say.
    actions: Vec<Option<Action>>,
    /// How many distinct terms each tool's name (its id less the source's prefix, and
    /// its title) has, at most 32 counted.
    name_terms: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    tool: u32,
    /// The term's weighted frequency in the tool, saturated (BM25F's tf part): its weight
    /// there once multiplied by the term's rarity in the caller's view.
    saturated: f32,
    /// The term's bit among the tool's name terms; 0 when its name does not have it.
    name_bit: u32,
}

/// The indexed tools one view holds: a bit per tool, in the index's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    bits: Vec<u64>,
    count: usize,
}

impl Members {
    /// Members from whether each indexed tool, in the index's order, is in the view.
    pub fn from_flags(flags: impl IntoIterator<Item = bool>) -> Self {
        let mut members = Self::default();
        for (at, member) in flags.into_iter().enumerate() {
            if at % 64 == 0 {
                members.bits.push(0);
            }
            if member {
                members.bits[at / 64] |= 1 << (at % 64);
                members.count += 1;
            }
        }
        members
    }

    fn contains(&self, tool: u32) -> bool {
        let tool = tool as usize;
        self.bits.get(tool / 64).is_some_and(|word| word & (1 << (tool % 64)) != 0)
    }

    /// How many indexed tools the view holds.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The positions in the index of the tools the view holds.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter().enumerate().flat_map(|(word_at, &word)| {
            (0..64).filter(move |bit| word & (1 << bit) != 0).map(move |bit| word_at * 64 + bit)
        })
    }
}

/// A tool a query found, with its score (higher is better).
#[derive(Debug, Clone)]
pub struct Hit<'a> {
    pub capability: &'a Arc<Capability>,
    pub score: f32,
}

impl Index {
    /// The index of `tools`, in the order [`Members`] refer to them by.
    pub fn build(tools: Vec<Arc<Capability>>) -> Self {
        let fields: Vec<[Vec<String>; 4]> = tools.iter().map(|tool| fields_of(tool)).collect();
        let actions = tools
            .iter()
            .map(|tool| {
                let words: Vec<String> = text::words(tool.id().as_str()).skip(prefix_words(tool)).collect();
                action::of_tool(&words, &tool.descriptor.annotations)
            })
            .collect();
        let count = tools.len().max(1) as f32;
        let mut average = [0f32; 4];
        for tool in &fields {
            for (field, words) in tool.iter().enumerate() {
                average[field] += words.len() as f32 / count;
            }
        }
        // Each term's weighted frequency in each tool, its fields' lengths discounted.
        let mut frequencies: HashMap<&str, Vec<(u32, f32, u32)>> = HashMap::new();
        let mut name_terms = Vec::with_capacity(fields.len());
        for (at, tool) in fields.iter().enumerate() {
            let mut name_bits: HashMap<&str, u32> = HashMap::new();
            let prefix = tools[at].id().as_str().split_once('.').map_or(0, |(prefix, _)| text::terms(prefix).count());
            for word in tool[0].iter().skip(prefix).chain(&tool[1]) {
                if name_bits.len() == 32 {
                    break;
                }
                let next = 1 << name_bits.len();
                name_bits.entry(word.as_str()).or_insert(next);
            }
            name_terms.push(name_bits.len() as u32);
            let mut own: HashMap<&str, f32> = HashMap::new();
            for (field, words) in tool.iter().enumerate() {
                let Field { weight, length_discount } = FIELDS[field];
                let relative = if average[field] > 0.0 { words.len() as f32 / average[field] } else { 1.0 };
                let discount = 1.0 - length_discount + length_discount * relative;
                for word in words {
                    *own.entry(word.as_str()).or_default() += weight / discount;
                }
            }
            for (term, frequency) in own {
                let name_bit = name_bits.get(term).copied().unwrap_or(0);
                frequencies.entry(term).or_default().push((at as u32, frequency, name_bit));
            }
        }
        let postings = frequencies
            .into_iter()
            .map(|(term, occurrences)| {
                let postings = occurrences
                    .into_iter()
                    .map(|(tool, frequency, name_bit)| Posting {
                        tool,
                        saturated: frequency * (K1 + 1.0) / (frequency + K1),
                        name_bit,
                    })
                    .collect();
                (term.into(), postings)
            })
            .collect();
        Self { postings, tools, actions, name_terms }
    }

    /// The tools indexed, in the order [`Members`] refer to them by.
    pub fn tools(&self) -> &[Arc<Capability>] {
        &self.tools
    }

    /// At most `limit` of `members` that best match `query`, best first; ties in id order.
    pub fn search(&self, query: &str, members: &Members, limit: usize) -> Vec<Hit<'_>> {
        let query = Query::parse(query);
        // Per tool: its score, which of the asked words it matched and which of its name's
        // terms were (a bit each).
        let mut found: HashMap<u32, (f32, u32, u32)> = HashMap::new();
        // A term's rarity among the tools the caller may call, not the catalogue's: what
        // the caller may not see weighs on no ranking.
        let viewed = members.count().max(1) as f32;
        for term in &query.terms {
            let Some(postings) = self.postings.get(term.term.as_str()) else { continue };
            let seen = postings.iter().filter(|posting| members.contains(posting.tool)).count() as f32;
            let idf = (1.0 + (viewed - seen + 0.5) / (seen + 0.5)).ln();
            for posting in postings.iter().filter(|posting| members.contains(posting.tool)) {
                let entry = found.entry(posting.tool).or_default();
                entry.0 += term.weight * idf * posting.saturated;
                entry.1 |= term.words;
                entry.2 |= posting.name_bit;
            }
        }
        let asked = query.words.max(1) as f32;
        let mut hits: Vec<(u32, f32)> = found
            .into_iter()
            .map(|(tool, (score, matched, named))| {
                let coverage = 1.0 - COVERAGE + COVERAGE * matched.count_ones() as f32 / asked;
                let name_terms = self.name_terms[tool as usize].max(1) as f32;
                let named = 1.0 - NAMED + NAMED * named.count_ones() as f32 / name_terms;
                let action = match (query.wanted, self.actions[tool as usize]) {
                    (Some(wanted), Some(done)) => 1.0 + ACTION * wanted.agreement(done),
                    _ => 1.0,
                };
                (tool, score * coverage * named * action)
            })
            .collect();
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits.into_iter().map(|(tool, score)| Hit { capability: &self.tools[tool as usize], score }).collect()
    }
}

/// How many words of `tool`'s id are its source's prefix (`github` in `github.repos_get`),
/// which names no operation.
fn prefix_words(tool: &Capability) -> usize {
    tool.id().as_str().split_once('.').map_or(0, |(prefix, _)| text::words(prefix).count())
}

/// A tool's words by field: its id, title, description and parameter names (those of
/// its input's properties, and of an object property's own properties).
fn fields_of(tool: &Capability) -> [Vec<String>; 4] {
    let descriptor = &tool.descriptor;
    let terms = |text: &str| text::terms(text).take(MAX_FIELD_WORDS).collect::<Vec<_>>();
    let mut parameters = Vec::new();
    if let Some(properties) = descriptor.input_schema.get("properties").and_then(|p| p.as_object()) {
        for (name, property) in properties {
            parameters.extend(terms(name));
            let nested = property.get("properties").and_then(|p| p.as_object());
            for name in nested.into_iter().flat_map(|nested| nested.keys()) {
                parameters.extend(terms(name));
            }
        }
    }
    parameters.truncate(MAX_FIELD_WORDS);
    [
        terms(descriptor.id.as_str()),
        terms(descriptor.title.as_deref().unwrap_or_default()),
        terms(descriptor.summary.as_deref().unwrap_or_default()),
        parameters,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::{Binding, CapabilityId, CapabilityKind, Descriptor, Listing};
    use crate::handler::{Answer, Handler, HandlerRequest};
    use crate::registry::{Catalogue, Registration};
    use crate::schema::SchemaBounds;

    struct Nothing;

    impl Handler for Nothing {
        fn call(&self, _: HandlerRequest) -> crate::BoxFuture<'static, Answer> {
            Box::pin(std::future::ready(Answer::Failure { code: "nothing".into(), detail: None }))
        }
    }

    /// The index of searched tools `(id, description)`, in id order.
    fn indexed(tools: &[(&str, &str)]) -> Index {
        let handler: Arc<dyn Handler> = Arc::new(Nothing);
        let registrations = tools
            .iter()
            .map(|(id, description)| {
                let descriptor = Descriptor {
                    summary: Some((*description).into()),
                    listing: Listing::Searched,
                    ..Descriptor::new(
                        CapabilityId::new(id).unwrap(),
                        CapabilityKind::Tool,
                        serde_json::json!({"type": "object"}),
                        Binding { kind: "builtin".into(), target: "nothing".into() },
                    )
                };
                Registration { descriptor: Arc::new(descriptor), handler: Arc::clone(&handler) }
            })
            .collect();
        let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &[]).unwrap();
        Index::build(catalogue.searched().to_vec())
    }

    fn ids(hits: Vec<Hit<'_>>) -> Vec<&str> {
        hits.into_iter().map(|hit| hit.capability.id().as_str()).collect()
    }

    #[test]
    fn a_search_finds_only_members_and_what_is_hidden_weighs_on_no_ranking() {
        // Every tool two terms long in each field, so the average lengths are the same
        // with the hidden one or without it.
        let tools = [("api.alpha", "Rotate a vault."), ("api.beta", "Seal a vault."), ("api.gamma", "Rotate, rotate.")];
        let index = indexed(&tools);
        let everyone = Members::from_flags([true, true, true]);
        let seen = Members::from_flags([true, true, false]);
        assert_eq!(ids(index.search("rotate", &everyone, 5)), ["api.gamma", "api.alpha"]);
        assert_eq!(ids(index.search("rotate", &seen, 5)), ["api.alpha"]);
        assert_eq!(ids(index.search("rotate", &Members::default(), 5)), Vec::<&str>::new());
        // The same scores whether a hidden tool holds the words or not: each term's
        // rarity is counted among the tools the caller may call.
        let without = indexed(&tools[..2]);
        let scores = |index: &Index| {
            index
                .search("rotate vault", &seen, 5)
                .into_iter()
                .map(|hit| (hit.capability.id().clone(), hit.score))
                .collect::<Vec<_>>()
        };
        assert_eq!(scores(&index), scores(&without));
        assert_eq!(ids(index.search("rotate", &everyone, 0)), Vec::<&str>::new());
        assert_eq!(ids(index.search("", &everyone, 5)), Vec::<&str>::new());
    }

    #[test]
    fn a_tools_action_is_named_by_its_own_verb_not_its_sources_prefix() {
        let index = indexed(&[("search.create_index", "Make an index."), ("search.list_indexes", "Every index.")]);
        assert_eq!(index.actions, [Some(Action::Create), Some(Action::List)]);
        let everyone = Members::from_flags([true, true]);
        assert_eq!(ids(index.search("make a new index", &everyone, 1)), ["search.create_index"]);
        assert_eq!(ids(index.search("show every index", &everyone, 1)), ["search.list_indexes"]);
    }
}
