use super::*;
use crate::pins::Policy;
use crate::spec::{NewEntries, TransportSpec, Trust};
use serde_json::{Value, json};

fn spec(name: &str, prefix: &str) -> UpstreamSpec {
    let stdio = TransportSpec::Stdio { command: "true".into(), args: vec![], env: vec![], cwd: None };
    UpstreamSpec { prefix: prefix.into(), ..UpstreamSpec::new(name, stdio) }
}

fn tools(names: &[&str]) -> Listing {
    let entries = names.iter().map(|name| json!({"name": name, "inputSchema": {"type": "object"}})).collect();
    vec![(CapabilityKind::Tool, KindListing::Listed(entries))]
}

const TRUSTING: Policy = Policy {
    trust: Trust::FirstUse,
    new_capabilities: NewEntries::Trust,
    new_resources: NewEntries::Trust,
    kept_removed: 2000,
};

/// Observes `listing` into `book`, then names every source: the ids served, by source.
fn serve(sources: &mut [(&UpstreamSpec, &mut PinBook, &Listing, bool)]) -> Vec<Vec<(String, String)>> {
    for (spec, book, listing, listed) in sources.iter_mut() {
        if *listed {
            let (kinds, entries) = observation(spec, listing);
            book.observe(&kinds, entries, &TRUSTING, 1);
        }
    }
    let mut named: Vec<Source<'_>> = sources
        .iter_mut()
        .map(|(spec, book, listing, listed)| Source { spec, book, order: order(listing), listed: *listed })
        .collect();
    name_and_serve(&mut Names::of_realm(["x.own"], []), &mut named)
        .into_iter()
        .map(|catalogue| {
            let served = catalogue.served.into_iter();
            served.map(|served| (served.descriptor.id.as_str().to_owned(), served.target.name)).collect()
        })
        .collect()
}

fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(id, name)| (id.to_string(), name.to_string())).collect()
}

#[test]
fn a_kept_id_stays_with_its_entry_whatever_the_order_and_across_upstreams() {
    let (a, b) = (spec("a", "x"), spec("b", "x"));
    let (mut book_a, mut book_b) = (PinBook::default(), PinBook::default());
    let suffixed = |upstream: &str, name: &str| {
        format!("x.t-{}", &bondry_core::canon::sha256_hex(format!("{upstream}/{name}").as_bytes())[..8])
    };
    // The later upstream lists `t` first: it takes `x.t`; the earlier one, listing it
    // later, gets the suffixed id rather than moving the kept one.
    let empty: Listing = tools(&[]);
    let served = serve(&mut [(&a, &mut book_a, &empty, true), (&b, &mut book_b, &tools(&["t"]), true)]);
    assert_eq!(served, [pairs(&[]), pairs(&[("x.t", "t")])]);
    let served = serve(&mut [(&a, &mut book_a, &tools(&["t", "own"]), true), (&b, &mut book_b, &tools(&["t"]), true)]);
    let own = format!("x.own-{}", &bondry_core::canon::sha256_hex(b"a/own")[..8]);
    assert_eq!(served[0], pairs(&[(&suffixed("a", "t"), "t"), (&own, "own")]));
    assert_eq!(served[1], pairs(&[("x.t", "t")]));
    // Names meeting after the alphabet rule, in both orders: neither id moves.
    let first = serve(&mut [(&a, &mut book_a, &tools(&["t u", "t_u"]), true), (&b, &mut book_b, &empty, true)]);
    let again = serve(&mut [(&a, &mut book_a, &tools(&["t_u", "t u"]), true), (&b, &mut book_b, &empty, true)]);
    let sorted = |mut served: Vec<(String, String)>| {
        served.sort();
        served
    };
    assert_eq!(sorted(first[0].clone()), sorted(again[0].clone()));
    // An upstream that has not listed since it started serves nothing, but its kept
    // ids are held for it.
    let mut fresh = PinBook::default();
    let c = spec("c", "x");
    let served = serve(&mut [(&b, &mut book_b, &empty, false), (&c, &mut fresh, &tools(&["t"]), true)]);
    assert_eq!(served, [pairs(&[]), pairs(&[(&suffixed("c", "t"), "t")])]);
}

#[test]
fn an_entry_is_served_only_as_pinned_under_the_ignore_list_it_was_pinned_under() {
    let mut up = spec("a", "x");
    up.pin_ignore_meta = vec!["etag".into()];
    let mut book = PinBook::default();
    let listing: Listing = vec![(
        CapabilityKind::Tool,
        KindListing::Listed(vec![json!({"name": "t", "inputSchema": {}, "_meta": {"etag": "1", "k": 2}})]),
    )];
    let mut sources = [(&up, &mut book, &listing, true)];
    let served = serve(&mut sources);
    assert_eq!(served, [pairs(&[("x.t", "t")])]);
    let mut named = [Source { spec: &up, book: &mut book, order: order(&listing), listed: true }];
    let catalogue = name_and_serve(&mut Names::default(), &mut named).remove(0);
    let verbatim = catalogue.served[0].descriptor.verbatim.as_deref().cloned().unwrap();
    assert_eq!(verbatim["_meta"], json!({"k": 2}), "the ignored key is not served");
    // The ignore list changed without a new listing: the pin no longer covers what
    // would be served, so nothing is.
    let changed = spec("a", "x");
    let mut named = [Source { spec: &changed, book: &mut book, order: order(&listing), listed: true }];
    let catalogue = name_and_serve(&mut Names::default(), &mut named).remove(0);
    assert!(catalogue.served.is_empty());
    let why: Vec<Value> = catalogue.exposed.values().map(|exposed| json!(exposed.unserved)).collect();
    assert_eq!(why, [json!("it differs from its pin under this pin_ignore_meta: it is served once listed again")]);
}
