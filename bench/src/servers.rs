//! The servers under load, each its own process on loopback, pinned to the core the load
//! generator leaves free, so that what is measured is the server's own work and its
//! resident set is its own.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::{Instant, sleep};

use crate::http1::Conn;
use crate::load::{self, Script};

/// How long a server may take to answer its first request, an npm peer or a gateway
/// whose upstream connects first included.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running server, killed and reaped when dropped.
pub struct Server {
    pub name: String,
    pub addr: SocketAddr,
    child: Child,
    log: PathBuf,
}

/// Where servers run: the core they are pinned to, if the machine has one to spare.
pub struct Placement {
    pub server_core: Option<usize>,
    pub dir: PathBuf,
}

impl Placement {
    /// Servers pinned to `server_core` when given (`scripts/bench` gives the last core and
    /// pins the generator to the others); children otherwise inherit the generator's cores.
    pub fn new(dir: PathBuf, server_core: Option<usize>) -> Placement {
        Placement { server_core, dir }
    }

    /// Starts `program` with `args`, in which `{PORT}` is replaced by a free loopback
    /// port, and waits until `probe` is answered as it expects.
    pub async fn start(&self, name: &str, program: &Path, args: &[String], probe: &Script) -> Result<Server, String> {
        self.start_at(free_port()?, name, program, args, probe).await
    }

    /// As [`Placement::start`], on a port chosen before, for a server configured by a file.
    pub async fn start_at(
        &self,
        port: u16,
        name: &str,
        program: &Path,
        args: &[String],
        probe: &Script,
    ) -> Result<Server, String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let args: Vec<String> = args.iter().map(|arg| arg.replace("{PORT}", &port.to_string())).collect();
        // The server runs in the bench's directory, so a relative path would not find it.
        let program = std::path::absolute(program).map_err(|error| format!("{}: {error}", program.display()))?;
        let log = self.dir.join(format!("{name}.log"));
        let output = std::fs::File::create(&log).map_err(|error| format!("{}: {error}", log.display()))?;
        let mut command = match self.server_core {
            Some(core) => {
                let mut command = Command::new("taskset");
                command.args(["-c", &core.to_string()]).arg(&program);
                command
            }
            None => Command::new(&program),
        };
        command
            .args(&args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stderr(output.try_clone().map_err(|e| e.to_string())?)
            .stdout(output);
        // A BONDRY__ variable of the caller's would change what is measured.
        for (key, _) in std::env::vars().filter(|(key, _)| key.starts_with("BONDRY__")) {
            command.env_remove(key);
        }
        let child = command.spawn().map_err(|error| format!("cannot start {}: {error}", program.display()))?;
        let server = Server { name: name.to_owned(), addr, child, log };
        server.ready(probe).await?;
        Ok(server)
    }
}

impl Server {
    /// Probes until the server answers as a measured request would, or fails with the
    /// tail of its log.
    async fn ready(&self, probe: &Script) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::new();
        while Instant::now() < deadline {
            match self.probe(probe).await {
                Ok(()) => return Ok(()),
                Err(error) => last = error,
            }
            sleep(Duration::from_millis(100)).await;
        }
        Err(format!("{} was not ready in {READY_TIMEOUT:?}: {last}\n{}", self.name, self.log_tail()))
    }

    async fn probe(&self, probe: &Script) -> Result<(), String> {
        let mut conn = Conn::connect(self.addr).await?;
        let request = load::open(&mut conn, probe).await?;
        let response = conn.exchange(&request).await?;
        let body = String::from_utf8_lossy(response.body);
        if response.status == 200 && body.contains(probe.expect) {
            Ok(())
        } else {
            Err(format!("answered {}: {}", response.status, &body[..body.len().min(600)]))
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident set in KiB, from the kernel's accounting.
    pub fn rss_kib(&self) -> Result<u64, String> {
        let path = format!("/proc/{}/status", self.pid());
        let status = std::fs::read_to_string(&path).map_err(|error| format!("{path}: {error}"))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| format!("{path} has no VmRSS"))
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on now; the server binds it a moment later.
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|error| format!("no free port: {error}"))?;
    listener.local_addr().map(|addr| addr.port()).map_err(|error| error.to_string())
}
