//! Enforces the crate layering from `cargo metadata`.
//!
//! - `bondry-core` holds capabilities, policy, the registry and audit records. It knows no
//!   MCP and no runtime, so it depends on no other Bondry crate and on nothing that does I/O.
//! - `bondry-mcp-proto` is the sans-IO MCP adapter: bytes and a principal in, a reply or a
//!   dispatch plan out. It builds on the core only and pulls in no async runtime, HTTP
//!   stack or storage client, so it can be driven by any transport and tested without one.
//! - `bondry-http-server` is the runtime around the adapter; it must not reach back into the
//!   `bondry` crate that assembles it from configuration.
//!
//! Only normal dependencies count (not dev- or build-dependencies), followed transitively,
//! so a forbidden crate cannot sneak in through a third-party dependency either. Failures
//! print the dependency path that leads to the offender.

use std::collections::{HashMap, VecDeque};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// Crates that do I/O or run an async runtime; none may be under the sans-IO crates.
const RUNTIME_AND_IO: [&str; 9] =
    ["tokio", "hyper", "axum", "reqwest", "mio", "redis", "rusqlite", "tower", "tower-http"];

/// The normal-dependency graph of the workspace.
struct Graph {
    /// Package id to package name.
    names: HashMap<String, String>,
    /// Package id to the ids of its normal dependencies.
    normal: HashMap<String, Vec<String>>,
    /// Workspace member name to package id.
    members: HashMap<String, String>,
}

fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--manifest-path"])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .output()
            .expect("cargo metadata runs");
        assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
        let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
        Graph::from_metadata(&metadata)
    })
}

fn str_of(value: &Value) -> String {
    value.as_str().unwrap_or_else(|| panic!("expected a string, got {value}")).to_owned()
}

impl Graph {
    fn from_metadata(metadata: &Value) -> Self {
        let names: HashMap<String, String> = metadata["packages"]
            .as_array()
            .expect("packages is an array")
            .iter()
            .map(|package| (str_of(&package["id"]), str_of(&package["name"])))
            .collect();
        let mut normal = HashMap::new();
        for node in metadata["resolve"]["nodes"].as_array().expect("resolve.nodes is an array") {
            let deps = node["deps"]
                .as_array()
                .expect("deps is an array")
                .iter()
                .filter(|dep| {
                    dep["dep_kinds"]
                        .as_array()
                        .expect("dep_kinds is an array")
                        .iter()
                        .any(|kind| kind["kind"].is_null())
                })
                .map(|dep| str_of(&dep["pkg"]))
                .collect();
            normal.insert(str_of(&node["id"]), deps);
        }
        let members = metadata["workspace_members"]
            .as_array()
            .expect("workspace_members is an array")
            .iter()
            .map(|id| {
                let id = str_of(id);
                (names[&id].clone(), id)
            })
            .collect();
        Self { names, normal, members }
    }

    fn member(&self, name: &str) -> &str {
        self.members.get(name).unwrap_or_else(|| panic!("{name} is a workspace member: {:?}", self.members.keys()))
    }

    /// Every package reachable from `root` through normal dependencies, each mapped to the
    /// package it was first reached from (breadth first, so paths are shortest).
    fn closure(&self, root: &str) -> HashMap<&str, Option<&str>> {
        let root = self.member(root);
        let mut reached: HashMap<&str, Option<&str>> = HashMap::from([(root, None)]);
        let mut queue = VecDeque::from([root]);
        while let Some(id) = queue.pop_front() {
            for dep in self.normal.get(id).into_iter().flatten() {
                if !reached.contains_key(dep.as_str()) {
                    reached.insert(dep, Some(id));
                    queue.push_back(dep);
                }
            }
        }
        reached
    }

    /// The dependency paths from `root` to every reachable package called one of `names`,
    /// as `root -> a -> b`.
    fn paths_to(&self, root: &str, names: &[&str]) -> Vec<String> {
        let reached = self.closure(root);
        let mut paths: Vec<String> = reached
            .keys()
            .filter(|&&id| names.contains(&self.names[id].as_str()))
            .map(|&id| {
                let mut chain = vec![self.names[id].as_str()];
                let mut at = id;
                while let Some(Some(parent)) = reached.get(at) {
                    chain.push(self.names[*parent].as_str());
                    at = parent;
                }
                chain.reverse();
                chain.join(" -> ")
            })
            .collect();
        paths.sort();
        paths
    }
}

#[track_caller]
fn assert_no_path(root: &str, names: &[&str], why: &str) {
    let paths = graph().paths_to(root, names);
    assert!(paths.is_empty(), "{root} must not depend on {names:?} ({why}), but:\n  {}", paths.join("\n  "));
}

#[test]
fn the_graph_sees_normal_dependencies() {
    // Guards the other tests against passing vacuously on a misread graph.
    assert_eq!(graph().paths_to("bondry-http-server", &["tokio"]), ["bondry-http-server -> tokio"]);
    assert_eq!(graph().paths_to("bondry-mcp-proto", &["bondry-core"]), ["bondry-mcp-proto -> bondry-core"]);
    assert!(!graph().paths_to("bondry", &["axum"]).is_empty());
}

#[test]
fn the_sans_io_crates_pull_in_no_runtime_and_no_io() {
    for root in ["bondry-core", "bondry-mcp-proto"] {
        assert_no_path(root, &RUNTIME_AND_IO, "it is sans-IO; the runtime lives in bondry-http-server");
    }
}

#[test]
fn the_core_depends_on_no_other_bondry_crate() {
    let others: Vec<&str> = graph().members.keys().map(String::as_str).filter(|&name| name != "bondry-core").collect();
    assert!(others.len() >= 3, "the other members are found: {others:?}");
    assert_no_path("bondry-core", &others, "the core knows no MCP, no runtime and no configuration");
}

#[test]
fn the_protocol_crate_builds_on_the_core_only() {
    assert_no_path(
        "bondry-mcp-proto",
        &["bondry-http-server", "bondry"],
        "the adapter is driven by the runtime, not the reverse",
    );
}

#[test]
fn the_http_server_does_not_depend_on_the_binary_crate() {
    assert_no_path("bondry-http-server", &["bondry"], "the binary assembles the server, not the reverse");
}
