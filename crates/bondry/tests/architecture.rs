//! Enforces the crate layering from `cargo metadata`.
//!
//! - `bondry-core` holds capabilities, policy, the registry and audit records. It knows no
//!   MCP and no runtime, so it depends on no other Bondry crate and on nothing that does I/O.
//! - `bondry-mcp-proto` is the sans-IO MCP adapter: bytes and a principal in, a reply or a
//!   dispatch plan out. It builds on the core only and pulls in no async runtime, HTTP
//!   stack or storage client, so it can be driven by any transport and tested without one.
//! - `bondry-http-server` is the runtime around the adapter; it must not reach back into the
//!   `bondry` crate that assembles it from configuration.
//! - The backends (`bondry-upstream`, and any crate named in [`BACKENDS`]) sit behind core's
//!   handler interface: neither the runtime nor the protocol crate learns of them.
//! - `bondry-catalogue` holds what every backend shares (the naming rule, the canonical hash
//!   of a definition): it builds on the core alone, with no runtime and no I/O.
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

/// The backend crates: each turns someone else's service into capabilities behind core's
/// handler interface. A name here need not be a crate yet; once it is, it is held to the
/// same rules with no edit to the tests.
const BACKENDS: [&str; 2] = ["bondry-upstream", "bondry-backends"];

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
    for root in ["bondry-core", "bondry-mcp-proto", "bondry-catalogue"] {
        assert_no_path(root, &RUNTIME_AND_IO, "it is sans-IO; the runtime lives in bondry-http-server");
    }
}

#[test]
fn the_binary_names_a_backend_crate_only_in_its_factory() {
    // `serve`, reload, assembly and the CLI hold backends through core's interface; each
    // kind's own types stay beside its entry in `backends/`.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = std::collections::BTreeMap::new();
    collect_sources(&src, &src, &mut files);
    // The binary's `main.rs` too, which the module graph leaves out as a crate of its own.
    files.insert("main".to_owned(), vec![std::fs::read_to_string(src.join("main.rs")).expect("main.rs is readable")]);
    let crate_names: Vec<String> = BACKENDS.iter().map(|name| name.replace('-', "_")).collect();
    let mut named = Vec::new();
    for (module, texts) in files.iter().filter(|(module, _)| *module != "backends") {
        for text in texts {
            let code = production(text);
            named.extend(
                crate_names.iter().filter(|name| code.contains(name.as_str())).map(|name| format!("{module}: {name}")),
            );
        }
    }
    assert!(
        files.contains_key("backends") && files.contains_key("assemble"),
        "the sources are read: {:?}",
        files.keys()
    );
    assert!(named.is_empty(), "a backend crate named outside backends/:\n  {}", named.join("\n  "));
}

#[test]
fn backend_requests_leave_only_through_the_outbound_client() {
    // One place decides how Bondry reaches what it fronts (pooling, redirects, proxies,
    // roots), so that a change to it changes every backend's requests.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut builders = Vec::new();
    for backend in BACKENDS {
        let src = root.join(backend).join("src");
        let mut files = std::collections::BTreeMap::new();
        collect_sources(&src, &src, &mut files);
        assert!(!files.is_empty(), "{backend}'s sources are read");
        for (module, texts) in &files {
            let building = texts.iter().any(|text| {
                let code = production(text);
                code.contains("Client::builder") || code.contains("Client::new")
            });
            if building {
                builders.push(format!("{backend}: {module}"));
            }
        }
    }
    assert!(builders.is_empty(), "a backend builds an HTTP client of its own:\n  {}", builders.join("\n  "));
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

#[test]
fn the_upstream_crate_builds_on_core_and_proto_only() {
    assert_no_path(
        "bondry-upstream",
        &["bondry-http-server", "bondry", "axum"],
        "a backend sits behind core's handler interface; the runtime's pipeline does not learn of it",
    );
}

#[test]
fn the_runtime_and_the_protocol_crate_know_no_backend() {
    // Guards against passing vacuously: the assembling crate does reach a backend.
    assert!(!graph().paths_to("bondry", &BACKENDS).is_empty(), "the backends are found in the graph");
    for root in ["bondry-http-server", "bondry-mcp-proto"] {
        assert_no_path(
            root,
            &BACKENDS,
            "a backend sits behind core's handler interface; the runtime is not built on it",
        );
    }
}

#[test]
fn the_catalogue_builds_on_the_core_alone() {
    // Every other member by name (a crate added later included), and the backends.
    let mut others: Vec<&str> = graph()
        .members
        .keys()
        .map(String::as_str)
        .filter(|&name| name != "bondry-core" && name != "bondry-catalogue")
        .collect();
    others.extend(BACKENDS);
    for named in ["bondry-mcp-proto", "bondry-http-server", "bondry-upstream"] {
        assert!(others.contains(&named), "{named} is looked for: {others:?}");
    }
    assert_eq!(graph().paths_to("bondry-catalogue", &["bondry-core"]), ["bondry-catalogue -> bondry-core"]);
    assert_no_path(
        "bondry-catalogue",
        &others,
        "every backend shares it, so it knows no protocol, no runtime and no backend",
    );
}

#[test]
fn no_shipped_crate_depends_on_test_tools() {
    for root in
        ["bondry-core", "bondry-catalogue", "bondry-mcp-proto", "bondry-http-server", "bondry-upstream", "bondry"]
    {
        assert_no_path(
            root,
            &["bondry-test-support", "bondry-test-sans-io", "rmcp"],
            "test tools stay out of the data path",
        );
    }
}

#[test]
fn the_protocol_crates_tests_stand_on_the_protocol_crate_alone() {
    // What proto's tests share is built on the core and proto, so a change to the runtime,
    // a backend or the binary never rebuilds or breaks them.
    let others = ["bondry", "bondry-http-server", "bondry-upstream", "bondry-backends", "bondry-test-support", "tokio"];
    assert_no_path("bondry-test-sans-io", &others, "proto's tests depend on proto alone");
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bondry-mcp-proto/Cargo.toml");
    let manifest: toml::Table = std::fs::read_to_string(manifest).unwrap().parse().unwrap();
    let dev: Vec<&String> = manifest["dev-dependencies"].as_table().unwrap().keys().collect();
    let bondry: Vec<&&String> = dev.iter().filter(|name| name.starts_with("bondry")).collect();
    assert_eq!(bondry, [&"bondry-test-sans-io"], "proto's dev-dependencies: {dev:?}");
}

/// ARCHITECTURE.md stays a map: short enough to read at once, and naming only source
/// files that exist, so a rename that forgets it fails here.
#[test]
fn the_architecture_map_is_short_and_names_real_files() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable");
    let words = map.split_whitespace().count();
    assert!(words <= 2_500, "ARCHITECTURE.md has {words} words; a map has at most 2,500");
    let mut files = Vec::new();
    collect_rust_files(&root.join("crates"), &mut files);
    collect_rust_files(&root.join("bench"), &mut files);
    let named: Vec<&str> = map.split('`').skip(1).step_by(2).filter(|code| code.ends_with(".rs")).collect();
    assert!(named.len() > 20, "the map's file names are found: {named:?}");
    for name in named {
        assert!(
            files.iter().any(|file| file.ends_with(name)),
            "ARCHITECTURE.md names `{name}`, which no source file is"
        );
    }
}

/// Where a bare or partial path of ARCHITECTURE.md may be the tail of a file or folder.
const MAP_ROOTS: [&str; 6] = ["crates/*/src", "crates/*/tests", "bench", "docs", "scripts", "fuzz"];

/// Whether a backticked token of ARCHITECTURE.md names a path: it ends with `.rs`, `.md`,
/// `.toml` or `/`, or holds a `/`; and it is no code (no space, `::`, `(`, `=`, `*`, `…`).
fn is_path(token: &str) -> bool {
    let code = [" ", "::", "(", "=", "*", "…"].iter().any(|mark| token.contains(mark));
    !token.is_empty()
        && !code
        && ([".rs", ".md", ".toml", "/"].iter().any(|end| token.ends_with(end)) || token.contains('/'))
}

/// Every file and folder under `dir` (build output and installed packages left out), as
/// its path components from the repository root and whether it is a folder.
fn collect_entries(dir: &std::path::Path, base: &[String], into: &mut Vec<(Vec<String>, bool)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if matches!(name.as_str(), "target" | "node_modules" | ".git") {
            continue;
        }
        let path = entry.path();
        let components: Vec<String> = base.iter().cloned().chain([name]).collect();
        if path.is_dir() {
            collect_entries(&path, &components, into);
            into.push((components, true));
        } else {
            into.push((components, false));
        }
    }
}

/// The files and folders under [`MAP_ROOTS`], a `*` standing for every folder there.
fn map_entries(root: &std::path::Path) -> Vec<(Vec<String>, bool)> {
    let mut bases: Vec<Vec<String>> = Vec::new();
    for pattern in MAP_ROOTS {
        let mut expanded: Vec<Vec<String>> = vec![Vec::new()];
        for part in pattern.split('/') {
            expanded = expanded
                .into_iter()
                .flat_map(|base| {
                    let dir = base.iter().fold(root.to_path_buf(), |dir, part| dir.join(part));
                    if part == "*" {
                        let mut children: Vec<Vec<String>> = std::fs::read_dir(&dir)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .filter(|entry| entry.path().is_dir())
                            .map(|entry| {
                                base.iter().cloned().chain([entry.file_name().to_string_lossy().into()]).collect()
                            })
                            .collect();
                        children.sort();
                        children
                    } else {
                        vec![base.into_iter().chain([part.to_owned()]).collect()]
                    }
                })
                .collect();
        }
        bases.extend(expanded);
    }
    let mut entries = Vec::new();
    for base in bases {
        let dir = base.iter().fold(root.to_path_buf(), |dir, part| dir.join(part));
        if dir.is_dir() {
            collect_entries(&dir, &base, &mut entries);
            entries.push((base, true));
        }
    }
    entries
}

/// Whether `token` (a path of ARCHITECTURE.md) exists: from the repository root, or as the
/// last components of one of `entries`. A trailing `/` asks for a folder.
fn path_exists(root: &std::path::Path, entries: &[(Vec<String>, bool)], token: &str) -> bool {
    let folder = token.ends_with('/');
    let from_root = root.join(token.trim_end_matches('/'));
    if from_root.exists() && (!folder || from_root.is_dir()) {
        return true;
    }
    let tail: Vec<&str> = token.trim_end_matches('/').split('/').collect();
    entries.iter().any(|(components, is_dir)| {
        (!folder || *is_dir)
            && components.len() >= tail.len()
            && components[components.len() - tail.len()..].iter().zip(&tail).all(|(have, want)| have == want)
    })
}

/// Whether `token`, a path only by its `/`, is an MCP method (`subscriptions/listen`): a
/// string the protocol crate's sources spell in quotes.
fn is_protocol_method(root: &std::path::Path, token: &str) -> bool {
    let mut sources = Vec::new();
    collect_rust_files(&root.join("crates/bondry-mcp-proto/src"), &mut sources);
    let extension = [".rs", ".md", ".toml", "/"].iter().any(|end| token.ends_with(end));
    !extension
        && sources
            .iter()
            .any(|file| std::fs::read_to_string(file).is_ok_and(|text| text.contains(&format!("\"{token}\""))))
}

/// Every path ARCHITECTURE.md names exists, and no link of it leaves the repository: a
/// rename, a move to another crate or a deleted folder that forgets the map fails here.
#[test]
fn the_architecture_map_names_only_paths_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable");
    let entries = map_entries(&root);
    assert!(
        entries.iter().any(|(path, _)| path.ends_with(&["call".to_owned(), "drive.rs".to_owned()])),
        "the crates' sources are found"
    );
    let named: Vec<&str> = map.split('`').skip(1).step_by(2).filter(|token| is_path(token)).collect();
    assert!(named.len() > 20, "the map's paths are found: {named:?}");
    let missing: Vec<&str> = named
        .iter()
        .copied()
        .filter(|token| !path_exists(&root, &entries, token) && !is_protocol_method(&root, token))
        .collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
    let outside: Vec<&str> = map.lines().filter(|line| line.contains("http://") || line.contains("https://")).collect();
    assert!(outside.is_empty(), "ARCHITECTURE.md links out of the repository:\n  {}", outside.join("\n  "));
    let mut broken = Vec::new();
    for link in map.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default();
        let file = target.split('#').next().unwrap_or_default().split_whitespace().next().unwrap_or_default();
        // A link within the map itself (`#section`) needs no file.
        if target.starts_with('#') {
            continue;
        }
        if file.is_empty() || file.contains(':') || !root.join(file).exists() {
            broken.push(target);
        }
    }
    assert!(broken.is_empty(), "ARCHITECTURE.md links to what is no file of the repository: {broken:?}");
}

#[test]
fn the_map_tells_paths_from_code() {
    for path in [
        "crates/bondry/tests/architecture.rs",
        "call/drive.rs",
        "endpoint.rs",
        "docs/fuzzing.md",
        "client/",
        "Cargo.toml",
        "interop/ts",
    ] {
        assert!(is_path(path), "{path} is a path");
    }
    for code in
        ["Registry::swap", "lto = \"fat\"", "Mcp-Param-*", "BONDRY__…", "Box<dyn Future>", "serve", "fn(a/b)", ""]
    {
        assert!(!is_path(code), "{code} is not a path");
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let entries = map_entries(&root);
    for real in
        ["call/drive.rs", "drive.rs", "client/", "docs/fuzzing.md", "crates/bondry/tests", "tests/architecture.rs"]
    {
        assert!(path_exists(&root, &entries, real), "{real} exists");
    }
    for unreal in ["call/nowhere.rs", "rive.rs", "drive.rs/", "endpoint/", "docs/nowhere.md"] {
        assert!(!path_exists(&root, &entries, unreal), "{unreal} does not exist");
    }
    assert!(is_protocol_method(&root, "subscriptions/listen") && is_protocol_method(&root, "notifications/cancelled"));
    assert!(!is_protocol_method(&root, "subscriptions/nowhere") && !is_protocol_method(&root, "call/drive.rs"));
}

fn collect_rust_files(dir: &std::path::Path, into: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") && !path.ends_with("node_modules") {
            collect_rust_files(&path, into);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            into.push(path.to_string_lossy().into_owned());
        }
    }
}

/// The modules of one crate and which of them each one names: a module is a file or
/// directory right under `src/` (a nested module belongs to its top-level one), and it
/// names another through a `crate::` path, directly or through a name the crate root
/// re-exports. Test code (from a `#[cfg(test)]` line on) is left out: tests may reach
/// anywhere.
struct Modules {
    uses: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
}

impl Modules {
    fn of(src: &std::path::Path) -> Self {
        let mut files: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        collect_sources(src, src, &mut files);
        let names: std::collections::BTreeSet<String> = files.keys().filter(|m| *m != "lib").cloned().collect();
        // What the crate root re-exports, by the module that defines it.
        let mut exported: HashMap<String, String> = HashMap::new();
        for text in files.get("lib").into_iter().flatten() {
            for line in production(text).lines().map(str::trim) {
                let Some(path) = line.strip_prefix("pub use ").and_then(|rest| rest.strip_suffix(';')) else {
                    continue;
                };
                let Some((module, items)) = path.split_once("::") else { continue };
                for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
                    let item = item.trim().rsplit("::").next().unwrap_or_default();
                    let item = item.split(" as ").last().unwrap_or(item).trim();
                    if !item.is_empty() && names.contains(module) {
                        exported.insert(item.to_owned(), module.to_owned());
                    }
                }
            }
        }
        let mut uses: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
        for (module, texts) in files.iter().filter(|(module, _)| *module != "lib") {
            let named = uses.entry(module.clone()).or_default();
            for text in texts {
                for first in crate_paths(&production(text)) {
                    // A name neither a module nor re-exported is defined in the root itself.
                    let target = if names.contains(&first) {
                        first
                    } else {
                        exported.get(&first).cloned().unwrap_or("lib".into())
                    };
                    if &target != module {
                        named.insert(target);
                    }
                }
            }
        }
        // The root's own code (past its `mod` and `pub use` lines) names modules by their
        // bare paths.
        let root = uses.entry("lib".to_owned()).or_default();
        for text in files.get("lib").into_iter().flatten() {
            let code = production(text);
            let own = code.lines().filter(|line| {
                let line = line.trim_start();
                !(line.starts_with("mod ")
                    || line.starts_with("pub mod ")
                    || line.starts_with("pub use ")
                    || line.starts_with("pub(crate) mod "))
            });
            for line in own {
                for module in &names {
                    let mut rest = line;
                    while let Some(at) = rest.find(&format!("{module}::")) {
                        let preceded =
                            rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
                        if !preceded {
                            root.insert(module.clone());
                            break;
                        }
                        rest = &rest[at + module.len() + 2..];
                    }
                }
            }
        }
        Self { uses }
    }

    /// A cycle among the modules, as the path that closes it, if there is one.
    fn cycle(&self) -> Option<Vec<String>> {
        fn visit(
            modules: &Modules,
            at: &str,
            path: &mut Vec<String>,
            done: &mut std::collections::BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(start) = path.iter().position(|seen| seen == at) {
                let mut cycle = path[start..].to_vec();
                cycle.push(at.to_owned());
                return Some(cycle);
            }
            if !done.insert(at.to_owned()) {
                return None;
            }
            path.push(at.to_owned());
            for next in modules.uses.get(at).into_iter().flatten() {
                // `done` also holds the modules on the path, so look at those again.
                if (path.contains(next) || !done.contains(next))
                    && let Some(cycle) = visit(modules, next, path, done)
                {
                    return Some(cycle);
                }
            }
            path.pop();
            None
        }
        let mut done = std::collections::BTreeSet::new();
        self.uses.keys().find_map(|module| visit(self, module, &mut Vec::new(), &mut done))
    }
}

/// Every `.rs` file under `dir`, by the top-level module it belongs to.
fn collect_sources(
    src: &std::path::Path,
    dir: &std::path::Path,
    files: &mut std::collections::BTreeMap<String, Vec<String>>,
) {
    for entry in std::fs::read_dir(dir).expect("the source directory is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_sources(src, &path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(src).expect("under src");
            let top = relative.components().next().expect("a file").as_os_str().to_string_lossy();
            let module = top.trim_end_matches(".rs");
            // Binaries under `src/bin` and the binary's `main.rs` are crates of their own;
            // a `tests.rs` is a `#[cfg(test)]` module's file.
            if module == "bin" || module == "main" || path.file_name().is_some_and(|name| name == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file is readable");
            files.entry(module.to_owned()).or_default().push(text);
        }
    }
}

/// A file's text up to its tests, without line comments.
fn production(text: &str) -> String {
    text.lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every `crate::` path in `code`, groups (`crate::{a, b::c}`) included.
fn crate_paths(code: &str) -> Vec<String> {
    let mut firsts = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded = rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth < 0
                })
                .map_or(group.len(), |(end, _)| end);
            let mut depth = 0;
            let mut item = String::new();
            for c in group[..end].chars().chain([',']) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        firsts.push(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            firsts.push(ident(rest));
        }
    }
    firsts.retain(|first| !first.is_empty());
    firsts
}

fn ident(text: &str) -> String {
    text.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

#[test]
fn no_crate_has_a_cycle_among_its_modules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (mut checked, mut cycles) = (Vec::new(), Vec::new());
    for member in graph().members.keys() {
        let dir = if member == "bondry-bench" { root.join("bench") } else { root.join("crates").join(member) };
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let modules = Modules::of(&src);
        if let Some(cycle) = modules.cycle() {
            cycles.push(format!("{member}: {}", cycle.join(" -> ")));
        }
        checked.push(member.as_str());
    }
    assert!(cycles.is_empty(), "modules that name each other, in a circle:\n  {}", cycles.join("\n  "));
    assert!(checked.contains(&"bondry-mcp-proto") && checked.len() >= 5, "every crate is looked at: {checked:?}");
}

#[test]
fn the_module_graph_sees_crate_paths() {
    // Guards the cycle test against passing vacuously on a misread source.
    let code =
        "use crate::{Call, state::{self, Seal}, tools::X};\nfn f() { crate::jsonrpc::parse(); }\n// crate::comment\n";
    assert_eq!(crate_paths(&production(code)), ["Call", "state", "tools", "jsonrpc"]);
    let proto = Modules::of(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bondry-mcp-proto/src"));
    assert!(proto.uses["listing"].contains("cursor"), "{:?}", proto.uses["listing"]);
    // A circle through a name the root re-exports, and one through the root itself.
    let dir = std::env::temp_dir().join(format!("bondry-modules-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("c")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use b::Thing;\npub struct Root;\nfn f() { c::g(); }\n");
    write("a.rs", "use crate::Thing;\n");
    write("b.rs", "use crate::a::X;\n#[cfg(test)]\nuse crate::c::Y;\n");
    write("c/mod.rs", "use crate::Root;\n");
    let modules = Modules::of(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(modules.cycle(), Some(vec!["a".to_owned(), "b".into(), "a".into()]));
    assert!(modules.uses["c"].contains("lib") && modules.uses["lib"].contains("c"), "{:?}", modules.uses);
    assert!(!modules.uses["b"].contains("c"), "test code is left out");
}

/// The branches of each `select!` in `source`, by the line it starts on: its `=>` arms at
/// the top level of its braces (a handler's own `match` is deeper).
fn select_branches(source: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices("select! {") {
        let line = source[..at].lines().count();
        let body = &source[at + "select! ".len()..];
        let (mut depth, mut branches, mut previous) = (0usize, 0usize, ' ');
        for character in body.chars() {
            match character {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                '>' if previous == '=' && depth == 1 => branches += 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            previous = character;
        }
        found.push((line, branches));
    }
    found
}

#[test]
fn the_upstream_crate_is_short_files_and_loops_that_wait_on_four_things_at_most() {
    assert_eq!(
        select_branches("tokio::select! {\n a = x() => match a { B => 1, C => 2 },\n () = y() => {}\n}"),
        [(1, 2)]
    );
    let mut files = Vec::new();
    collect_rust_files(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bondry-upstream/src"), &mut files);
    let mut over = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        // A file past this holds more than one job; a module splits into a directory.
        let lines = source.lines().count();
        if lines > 350 {
            over.push(format!("{file} is {lines} lines"));
        }
        for (line, branches) in select_branches(&source) {
            if branches > 4 {
                over.push(format!("{file}:{line} selects over {branches}"));
            }
        }
    }
    assert!(!files.is_empty());
    assert!(
        over.is_empty(),
        "a long file or a loop waiting on more than four things does more than one job: {over:#?}"
    );
}
