//! The server under test: the real release binary as a child process, so that the RSS and
//! file descriptors measured are its own and not the load generator's.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the child may take from spawn to its `listening on` banner.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long it may take to exit after SIGTERM: its `shutdown_grace_ms` (10 s in the
/// embedded default, which this config keeps) plus a margin.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// What the soak changes in the embedded default. Audit records go to /dev/null rather
/// than `off`, so the audit writer's work and memory are part of what is soaked without
/// filling a pipe or a disk. All load comes from one loopback address, which is one
/// anonymous principal: the listen-stream cap is raised so that streams the server has
/// not yet noticed are gone (it notices at the next write) cannot push a new one over it.
const SOAK_OVERRIDES: &str = r#"
[realms.default.limits]
listen_streams_per_principal = 64

[audit]
sink = "file"
path = "/dev/null"
"#;

/// A running `bondry serve`, killed and reaped when dropped if not stopped before.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    dir: PathBuf,
}

impl Server {
    /// Writes the soak configuration to a fresh temporary directory, starts `binary serve`
    /// on it with an ephemeral loopback port, and waits for the banner.
    pub fn start(binary: &Path) -> Result<Server, String> {
        let dir = std::env::temp_dir().join(format!("bondry-soak-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
        let config = dir.join("bondry.toml");
        let text = format!("{}{SOAK_OVERRIDES}", bondry::config::EMBEDDED_DEFAULT);
        std::fs::write(&config, text).map_err(|error| format!("cannot write {}: {error}", config.display()))?;
        let mut command = Command::new(binary);
        command.args(["serve", "--listen", "127.0.0.1:0", "--config"]).arg(&config);
        // An inherited BONDRY__ variable would change what is soaked.
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("BONDRY__")) {
            command.env_remove(name);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
        let mut server = Server { child, addr: SocketAddr::from(([127, 0, 0, 1], 0)), dir };
        server.addr = server.banner()?;
        Ok(server)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads stderr up to `listening on http://ADDR/mcp`, then keeps forwarding it, so the
    /// pipe never fills and whatever the server logs shows in the soak's output.
    fn banner(&mut self) -> Result<SocketAddr, String> {
        let stderr = self.child.stderr.take().ok_or("the child's stderr is not piped")?;
        let (found, addr) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let listening = line.split("listening on http://").nth(1).and_then(|rest| rest.strip_suffix("/mcp"));
                match (listening.and_then(|addr| addr.parse::<SocketAddr>().ok()), found.take()) {
                    (Some(addr), Some(found)) => drop(found.send(addr)),
                    (_, found_still) => {
                        found = found_still;
                        eprintln!("  [bondry] {line}");
                    }
                }
            }
        });
        match addr.recv_timeout(START_TIMEOUT) {
            Ok(addr) => Ok(addr),
            Err(_) => Err(match self.child.try_wait() {
                Ok(Some(status)) => format!("the server exited before listening: {status}"),
                _ => format!("no `listening on` banner within {START_TIMEOUT:?}"),
            }),
        }
    }

    /// The exit status, if the child is no longer running.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, then a bounded wait for a graceful exit; SIGKILL past it.
    pub fn stop(mut self) -> Result<ExitStatus, String> {
        if let Some(status) = self.exited() {
            return Err(format!("the server had already exited: {status}"));
        }
        // std can only SIGKILL and `unsafe` is forbidden, so kill(1) sends the SIGTERM.
        let sent = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status();
        if !sent.is_ok_and(|status| status.success()) {
            return Err("kill -TERM failed".to_owned());
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return if status.success() { Ok(status) } else { Err(format!("the server exited with {status}")) };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("the server did not exit within {STOP_TIMEOUT:?} of SIGTERM"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
