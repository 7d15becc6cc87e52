//! Instructions per request, counted by callgrind: `bondry-bench instructions`.
//!
//! Timings on a shared 2-core VM swing by a third from run to run; an instruction count
//! repeats to within a fraction of a percent, so the effect of one change on Bondry's own
//! work shows even when it is smaller than the noise of a timing. Bondry runs under
//! callgrind; for each of its workloads one connection opens and warms up, the counters
//! are zeroed, the requests run, and the counters are dumped. The count over the number of
//! requests is the workload's instructions per request: everything the process did for
//! them (the audit thread's work included), in user space only. Workload 5 counts the
//! gateway alone: the rmcp upstream it relays to runs beside it, uncounted; workload 6
//! counts Bondry alone, beside the web service that serves its tool. The kernel's
//! share, which `perf` shows, is not counted. Callgrind's CPU has no SHA extensions, so
//! SHA-256 runs the portable code there, many times the instructions the hardware path
//! takes: its share is shown apart.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::http1::Conn;
use crate::plan::{self, Entry, Peer, Workload};
use crate::servers::{Placement, Server};
use crate::{configs, load};

/// Requests each connection sends before the counters are zeroed.
const WARMUP: usize = 50;

struct Options {
    bin_dir: PathBuf,
    requests: usize,
    out: Option<PathBuf>,
    /// `--keep DIR`: the callgrind dumps (and the servers' files) are written there and
    /// kept, for `callgrind_annotate`.
    keep: Option<PathBuf>,
    /// `--openapi FILE`: instead of the workloads, the first page of `tools/list` and a
    /// `tools/call` of the document's first 100 operations served alone, then inside the
    /// whole document.
    openapi: Option<PathBuf>,
    /// `--search`: instead of the workloads, `bondry.search` over catalogues of 1,000 and
    /// 10,000 searched tools, for a rare term and a common one.
    search: bool,
}

pub async fn run(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let mut options = Options {
        bin_dir: crate::beside_this_program(),
        requests: 1000,
        out: None,
        keep: None,
        openapi: None,
        search: false,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--bin-dir" => options.bin_dir = value()?.into(),
            "--requests" => options.requests = value()?.parse().map_err(|_| "--requests N")?,
            "--out" => options.out = Some(value()?.into()),
            "--keep" => options.keep = Some(value()?.into()),
            "--openapi" => options.openapi = Some(std::path::absolute(value()?).map_err(|error| error.to_string())?),
            "--search" => options.search = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let dir = match &options.keep {
        Some(keep) => std::path::absolute(keep).map_err(|error| format!("{}: {error}", keep.display()))?,
        None => std::env::temp_dir().join(format!("bondry-instructions-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let counted = count(&options, &dir).await;
    if options.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let text = counted?;
    println!("{text}");
    if let Some(out) = &options.out {
        std::fs::write(out, &text).map_err(|error| format!("{}: {error}", out.display()))?;
    }
    Ok(())
}

async fn count(options: &Options, dir: &Path) -> Result<String, String> {
    if let Some(spec) = &options.openapi {
        return count_openapi(options, dir, spec).await;
    }
    if options.search {
        return count_search(options, dir).await;
    }
    let credentials = configs::Credentials::make(dir)?;
    let write = |name: &str, text: String| -> Result<String, String> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|error| format!("{}: {error}", path.display()))?;
        Ok(path.display().to_string())
    };
    let placement = Placement::new(dir.to_path_buf(), None);
    let workloads = plan::workloads(&credentials.token);
    let counter = Counter::new(options, dir)?;
    let mut text = format!(
        "| workload | server | instructions per request | of which SHA-256 (portable) | backend client | audit record | the rest (server side) |\n|---|---|---|---|---|---|---|\n<!-- {} requests each, after {WARMUP} to warm up; the components are callgrind's inclusive counts of {} -->\n",
        options.requests,
        COMPONENTS
            .iter()
            .map(|(name, functions)| format!("{name}: {}", functions.join(" + ")))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let bondry =
        counter.start(&placement, "bondry", write("bondry.toml", configs::bondry(200, Some(&credentials)))?).await?;
    for workload in &workloads {
        for entry in workload.entries.iter().filter(|entry| entry.peer == Peer::Bondry) {
            text.push_str(&counter.measure(&bondry, workload, entry).await?);
        }
    }
    drop(bondry);
    // The relay: the gateway is counted, the rmcp upstream beside it is not.
    let rmcp = options.bin_dir.join("rmcp-peer");
    let listen = ["--listen".to_owned(), "127.0.0.1:{PORT}".to_owned()];
    let upstream = placement.start("rmcp", &rmcp, &listen, &plan::modern_call("/mcp", "x", &[])).await?;
    let gateway = write("gateway.toml", configs::gateway(&format!("http://{}/mcp", upstream.addr)))?;
    let gateway = counter.start(&placement, "bondry-gateway", gateway).await?;
    for workload in &workloads {
        for entry in workload.entries.iter().filter(|entry| entry.peer == Peer::BondryGateway) {
            text.push_str(&counter.measure(&gateway, workload, entry).await?);
        }
    }
    drop((gateway, upstream));
    // A web service's tool: Bondry is counted, the service beside it is not.
    let program = options.bin_dir.join("procedure-service");
    let service = placement.start("service", &program, &listen, &plan::service_call("x")).await?;
    let config = write("service.toml", configs::service(&format!("http://{}/call", service.addr)))?;
    let served = counter.start(&placement, "bondry-service", config).await?;
    for workload in &workloads {
        for entry in workload.entries.iter().filter(|entry| entry.peer == Peer::BondryService) {
            text.push_str(&counter.measure(&served, workload, entry).await?);
        }
    }
    Ok(text)
}

/// How many operations the OpenAPI comparison serves alone.
const ALONE: usize = 100;

/// The same first page and call, the document's first [`ALONE`] operations served alone
/// and inside the whole document: what a large document costs the requests that do not
/// need the rest of it.
async fn count_openapi(options: &Options, dir: &Path, spec: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(spec).map_err(|error| format!("{}: {error}", spec.display()))?;
    let document: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| format!("{}: {error}", spec.display()))?;
    let operations = operations(&document);
    let first: Vec<String> = operations.iter().take(ALONE).map(|(id, _)| id.clone()).collect();
    let callable = operations
        .iter()
        .take(ALONE)
        .find(|(_, bare)| *bare)
        .ok_or("no operation of the first 100 takes no arguments")?;
    let tool = format!(
        "api.{}",
        callable.0.replace(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')), "_")
    );
    let placement = Placement::new(dir.to_path_buf(), None);
    let counter = Counter::new(options, dir)?;
    let program = options.bin_dir.join("procedure-service");
    let listen = ["--listen".to_owned(), "127.0.0.1:{PORT}".to_owned()];
    let service = placement.start("service", &program, &listen, &plan::service_call("x")).await?;
    let base_url = format!("http://{}", service.addr);
    let mut text = format!(
        "| served | request | instructions per request | of which SHA-256 (portable) | backend client | audit record | the rest (server side) |\n|---|---|---|---|---|---|---|\n<!-- {} requests each, after {WARMUP} to warm up; {} operations in the document, {ALONE} alone; the call is {tool} -->\n",
        options.requests,
        operations.len()
    );
    let workload = Workload { id: "openapi", title: "a large OpenAPI document", entries: Vec::new() };
    for (name, include) in [("alone", Some(first.as_slice())), ("whole", None)] {
        let config = dir.join(format!("openapi-{name}.toml"));
        std::fs::write(&config, configs::openapi(spec, &base_url, include)).map_err(|error| error.to_string())?;
        let served = counter.start(&placement, &format!("bondry-openapi-{name}"), config.display().to_string()).await?;
        let list = Entry {
            peer: Peer::Bondry,
            label: format!("{name}: tools/list, first page"),
            script: plan::modern_first_page("/mcp"),
        };
        let call = Entry {
            peer: Peer::BondryService,
            label: format!("{name}: tools/call {tool}"),
            script: plan::modern_call_bare("/mcp", &tool),
        };
        for entry in [list, call] {
            text.push_str(&counter.measure(&served, &workload, &entry).await?);
        }
    }
    Ok(text)
}

/// Tools a rare term is found in, whatever the catalogue's size.
const RARE: usize = 20;
/// The share of tools a common term is found in.
const COMMON_EVERY: usize = 10;

/// `bondry.search` over catalogues of 1,000 and 10,000 searched tools: a term found in
/// [`RARE`] tools at both sizes, whose cost must not grow with the catalogue, and one found
/// in a tenth of them, whose postings do.
async fn count_search(options: &Options, dir: &Path) -> Result<String, String> {
    let placement = Placement::new(dir.to_path_buf(), None);
    let counter = Counter::new(options, dir)?;
    let mut text = format!(
        "| served | request | instructions per request | of which SHA-256 (portable) | backend client | audit record | the rest (server side) |\n|---|---|---|---|---|---|---|\n<!-- {} requests each, after {WARMUP} to warm up; the rare term is in {RARE} tools at each size, the common one in every {COMMON_EVERY}th -->\n",
        options.requests
    );
    let workload = Workload { id: "search", title: "bondry.search", entries: Vec::new() };
    for size in [1_000, 10_000] {
        // An OpenAPI entry serves at most 4,096 operations: the catalogue is four documents.
        let mut specs = Vec::new();
        for part in 0..DOCUMENTS {
            let spec = dir.join(format!("search-{size}-{part}.json"));
            let document = searched_document(size, part).to_string();
            std::fs::write(&spec, document).map_err(|error| format!("{}: {error}", spec.display()))?;
            specs.push(spec);
        }
        let config = dir.join(format!("search-{size}.toml"));
        // Nothing is called: the API's address is never reached.
        let served_text = configs::openapi_searched(&specs, "http://127.0.0.1:9");
        std::fs::write(&config, served_text).map_err(|error| error.to_string())?;
        let served = counter.start(&placement, &format!("bondry-search-{size}"), config.display().to_string()).await?;
        for (term, query) in [("rare", "saffron"), ("common", "copper")] {
            let entry = Entry {
                peer: Peer::Bondry,
                label: format!("{size} tools: a {term} term"),
                script: plan::modern_search("/mcp", query),
            };
            text.push_str(&counter.measure(&served, &workload, &entry).await?);
        }
    }
    Ok(text)
}

/// The documents a searched catalogue is served from.
const DOCUMENTS: usize = 4;

/// Part `part` of [`DOCUMENTS`] of a catalogue of `size` operations, each summarised and
/// described in words from a small vocabulary, so most terms are found in many tools;
/// `saffron` is in [`RARE`] of the catalogue's and `copper` in every [`COMMON_EVERY`]th.
fn searched_document(size: usize, part: usize) -> serde_json::Value {
    const WORDS: [&str; 16] = [
        "account", "billing", "report", "invoice", "customer", "order", "shipment", "refund", "ledger", "payment",
        "address", "contact", "profile", "session", "token", "webhook",
    ];
    let mut paths = serde_json::Map::new();
    let share = size / DOCUMENTS;
    for at in part * share..(part + 1) * share {
        let mut words: Vec<&str> = (0..4).map(|k| WORDS[(at * (k + 3) + k * 7) % WORDS.len()]).collect();
        if at % (size / RARE) == 0 {
            words.push("saffron");
        }
        if at % COMMON_EVERY == 0 {
            words.push("copper");
        }
        let summary = format!("Update the {} {} of a {}", words[0], words[1], words[2]);
        let description = format!("Changes the {} record, with its {}.", words[3..].join(" "), words[1]);
        let operation = serde_json::json!({
            "operationId": format!("op{at}"),
            "summary": summary,
            "description": description,
            "parameters": [{"name": format!("{}_id", words[0]), "in": "query", "schema": {"type": "string"}}],
            "responses": {"204": {"description": "Done"}}
        });
        paths.insert(format!("/items/{at}"), serde_json::json!({"post": operation}));
    }
    serde_json::json!({"openapi": "3.1.0", "info": {"title": "Search", "version": "1"}, "paths": paths})
}

/// A document's operations in its order (paths, then methods as OpenAPI lists them): each
/// one's operationId, and whether it takes no parameters and no body.
fn operations(document: &serde_json::Value) -> Vec<(String, bool)> {
    const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
    let Some(paths) = document["paths"].as_object() else { return Vec::new() };
    let mut found = Vec::new();
    for item in paths.values() {
        for method in METHODS {
            let operation = &item[method];
            let Some(id) = operation["operationId"].as_str() else { continue };
            let bare = item.get("parameters").is_none()
                && operation.get("parameters").is_none()
                && operation.get("requestBody").is_none();
            found.push((id.to_owned(), bare));
        }
    }
    found
}

/// Bondry processes under callgrind, and the dumps they write.
struct Counter {
    valgrind: PathBuf,
    control: PathBuf,
    bondry: PathBuf,
    dumps: PathBuf,
    requests: usize,
}

impl Counter {
    fn new(options: &Options, dir: &Path) -> Result<Counter, String> {
        Ok(Counter {
            valgrind: on_path("valgrind")?,
            control: on_path("callgrind_control")?,
            bondry: std::path::absolute(options.bin_dir.join("bondry")).map_err(|error| error.to_string())?,
            dumps: dir.join("callgrind.out"),
            requests: options.requests,
        })
    }

    /// Bondry serving `config` under callgrind, each process dumping beside the others.
    async fn start(&self, placement: &Placement, name: &str, config: String) -> Result<Server, String> {
        let mut args = vec![
            "--tool=callgrind".to_owned(),
            format!("--callgrind-out-file={}.%p", self.dumps.display()),
            self.bondry.display().to_string(),
        ];
        args.extend(crate::serve_args(config));
        let probe = plan::modern_call("/mcp", "x", &[]);
        placement.start(&format!("{name}-callgrind"), &self.valgrind, &args, &probe).await
    }

    /// One table row: `entry`'s requests to `server`, counted.
    async fn measure(&self, server: &Server, workload: &Workload, entry: &Entry) -> Result<String, String> {
        let pid = server.pid().to_string();
        let callgrind = |command: &str| -> Result<(), String> {
            let status =
                Command::new(&self.control).args([command, &pid]).output().map_err(|error| error.to_string())?;
            match status.status.success() {
                true => Ok(()),
                false => {
                    Err(format!("callgrind_control {command} failed: {}", String::from_utf8_lossy(&status.stderr)))
                }
            }
        };
        let mut conn = Conn::connect(server.addr).await?;
        let request = load::open(&mut conn, &entry.script).await?;
        let mut exchange = async |times: usize| -> Result<(), String> {
            for _ in 0..times {
                load::exchange(&mut conn, &request, entry.script.expect, true)
                    .await
                    .map_err(|error| format!("workload {} {}: {error}", workload.id, entry.label))?;
            }
            Ok(())
        };
        exchange(WARMUP).await?;
        callgrind("--zero")?;
        exchange(self.requests).await?;
        callgrind("--dump")?;
        let dump = self.last_dump(&pid)?;
        let (total, annotated) = (summary(&dump)?, annotate(&dump)?);
        let requests = self.requests as u64;
        let per_request = |count: u64| count / requests;
        let sha256 = inclusive(&annotated, SHA256)?;
        let [client, audit] = COMPONENTS.map(|(_, functions)| {
            functions.iter().map(|function| inclusive(&annotated, function)).sum::<Result<u64, String>>()
        });
        let (client, audit) = (client?, audit?);
        // A function renamed or inlined away would count its component as nothing.
        if client == 0 && matches!(entry.peer, Peer::BondryGateway | Peer::BondryService) {
            return Err(format!(
                "workload {}: no function of the backend client ran; are COMPONENTS' names current?",
                workload.id
            ));
        }
        let rest = total.saturating_sub(client + audit);
        eprintln!("workload {} {}: {} instructions per request", workload.id, entry.label, per_request(total));
        let cells = [total, sha256, client, audit, rest].map(|count| per_request(count).to_string());
        Ok(format!("| {} | {} | {} |\n", workload.id, entry.label, cells.join(" | ")))
    }

    /// The newest dump of process `pid`: callgrind numbers each `--dump` after the first.
    fn last_dump(&self, pid: &str) -> Result<PathBuf, String> {
        let prefix = format!("{}.{pid}.", self.dumps.file_name().and_then(|name| name.to_str()).unwrap_or_default());
        let dir = self.dumps.parent().ok_or("the dumps have no directory")?;
        let entries = std::fs::read_dir(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
        entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| Some((name.strip_prefix(&prefix)?.parse::<u32>().ok()?, name)))
            .max()
            .map(|(_, name)| dir.join(name))
            .ok_or(format!("callgrind wrote no dump for process {pid}"))
    }
}

/// The instruction count a callgrind dump totals.
fn summary(dump: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(dump).map_err(|error| format!("{}: {error}", dump.display()))?;
    let line = text.lines().find_map(|line| line.strip_prefix("summary:")).ok_or("the dump has no summary")?;
    line.trim().parse().map_err(|_| format!("{}: summary {line:?} is not a count", dump.display()))
}

/// The function that compresses SHA-256 blocks, whose share is shown apart.
const SHA256: &str = "sha2::sha256::compress256";

/// Each component a request's count is split into, by the functions whose inclusive
/// counts make it up (neither calls the other, so nothing is counted twice): the
/// backend's client side (an upstream's relay, a web service's procedure), and the audit
/// record (its arguments' and result's SHA-256 digests included). The rest is the server
/// side: HTTP, authentication, the adapter, dispatch, and what SHA-256 a credential needs.
const COMPONENTS: [(&str, &[&str]); 2] = [
    (
        "backend client",
        &[
            "bondry_upstream::relay::call::{{closure}}",
            "<bondry_backends::procedure::call::Procedure as bondry_core::handler::Handler>::call::{{closure}}",
            "<bondry_backends::openapi::call::OperationHandler as bondry_core::handler::Handler>::call::{{closure}}",
        ],
    ),
    ("audit", &["<bondry_http_server::audit::AuditWriter as bondry_core::audit::AuditSink>::record"]),
];

/// `callgrind_annotate`'s inclusive listing of a dump.
fn annotate(dump: &Path) -> Result<String, String> {
    let annotate = on_path("callgrind_annotate")?;
    let output = Command::new(annotate).arg("--inclusive=yes").arg(dump).output().map_err(|error| error.to_string())?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The inclusive count of `function` in an annotated listing; 0 when it never ran.
fn inclusive(annotated: &str, function: &str) -> Result<u64, String> {
    let line = annotated.lines().find(|line| line.contains(&format!(":{function} [")));
    let count = line.and_then(|line| line.split_whitespace().next()).unwrap_or("0");
    count.replace(',', "").parse().map_err(|_| format!("callgrind_annotate printed {count:?} for {function}"))
}

/// Where `program` is on `PATH` (callgrind is from Debian's valgrind).
fn on_path(program: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or(format!("{program} is not on PATH (apt-get install valgrind)"))
}
