//! The methods both eras serve alike, once a request is attributed to its era: lists,
//! calls, gets, reads and completion, each only where the realm announces its feature.

use bondry_core::capability::CapabilityKind;

use crate::discover::Announced;
use crate::request::Request;
use crate::{Csprng, Step, completion, listing, prompts, resources, tools};

/// Whether `method` is one both eras serve, with its feature announced.
pub fn is_shared(method: &str, announced: &Announced) -> bool {
    match method {
        "tools/list" | "tools/call" => announced.tools,
        "prompts/list" | "prompts/get" => announced.prompts,
        "resources/list" | "resources/templates/list" | "resources/read" => announced.resources,
        "completion/complete" => announced.completions,
        _ => false,
    }
}

/// Serves a method [`is_shared`] accepted.
pub fn shared(request: Request<'_>, rng: &mut dyn Csprng) -> Step {
    let list = |request: &Request<'_>, kind| Step::Reply(listing::list(request, kind));
    match request.method {
        "tools/list" => list(&request, CapabilityKind::Tool),
        "tools/call" => tools::call(request, rng),
        "prompts/list" => list(&request, CapabilityKind::Prompt),
        "prompts/get" => prompts::get(request, rng),
        "resources/list" => list(&request, CapabilityKind::Resource),
        "resources/templates/list" => list(&request, CapabilityKind::ResourceTemplate),
        "resources/read" => resources::read(request, rng),
        _ => completion::complete(request, rng),
    }
}
