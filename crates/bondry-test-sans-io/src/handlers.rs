//! The test prompt and resource template handlers, which the protocol crate's tests and
//! the server's test configuration both serve.

use bondry_core::BoxFuture;
use bondry_core::handler::{
    Answer, Completion, CompletionAnswer, CompletionQuery, ContentBlock, Handler, HandlerRequest, Message,
    ResourceBody, ResourceContents, Role,
};

/// Completion values from `values` that start with `prefix`.
fn starting_with(values: &[&str], prefix: &str) -> Completion {
    let values: Vec<String> = values.iter().filter(|v| v.starts_with(prefix)).map(|v| (*v).to_owned()).collect();
    Completion { total: Some(values.len() as u64), has_more: Some(false), values }
}

/// `test.note`: one user message naming the topic and style; completes both arguments.
pub struct NotePrompt;

impl Handler for NotePrompt {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let argument = |name: &str| request.arguments[name].as_str().unwrap_or("short").to_owned();
        let text = format!("Write a {} note about {}", argument("style"), argument("topic"));
        Box::pin(std::future::ready(Answer::Messages {
            description: None,
            messages: vec![Message { role: Role::User, content: ContentBlock::Text { text } }],
        }))
    }

    fn complete(&self, _: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        let values: &[&str] = match query.argument.as_str() {
            "style" => &["short", "long"],
            _ => &["rust", "ruby", "python"],
        };
        Box::pin(std::future::ready(Ok(starting_with(values, &query.value))))
    }
}

/// `test://items/{name}/v{version}`: its (typed) variables, echoed as JSON; names and
/// versions complete from short lists.
pub struct Items;

impl Handler for Items {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(Answer::Contents {
            items: vec![ResourceContents {
                uri: String::new(),
                mime_type: None,
                body: ResourceBody::Text(request.arguments.to_string()),
            }],
        }))
    }

    fn complete(&self, _: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        let values: &[&str] = match query.argument.as_str() {
            "name" => &["apple", "apricot", "banana"],
            _ => &["1", "2", "10"],
        };
        Box::pin(std::future::ready(Ok(starting_with(values, &query.value))))
    }
}
