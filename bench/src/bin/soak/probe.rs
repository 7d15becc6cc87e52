//! What the soak measures of the server process: resident memory and open descriptors,
//! read from /proc (Linux only, like the machine this runs on).

use std::time::Duration;

/// One reading of the server, with the load counters at that moment.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Since the soak phase began.
    pub elapsed: Duration,
    /// Requests completed (all kinds) and errors, since the soak phase began.
    pub requests: u64,
    pub errors: u64,
    /// VmRSS in bytes.
    pub rss: u64,
    /// Entries of /proc/PID/fd.
    pub fds: u64,
}

/// VmRSS and the number of open descriptors of `pid`.
pub fn read(pid: u32) -> Result<(u64, u64), String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|error| format!("cannot read /proc/{pid}/status: {error}"))?;
    let rss = vm_rss(&status).ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|error| format!("cannot list /proc/{pid}/fd: {error}"))?
        .count() as u64;
    Ok((rss, fds))
}

/// The `VmRSS:   12345 kB` line, in bytes.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// The 1, 5 and 15 minute load averages of the machine, as /proc/loadavg gives them: the
/// soak shares its cores with the server and with whatever else runs.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

pub fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_bytes() {
        assert_eq!(vm_rss("Name:\tbondry\nVmRSS:\t   20480 kB\nThreads:\t4\n"), Some(20 * 1024 * 1024));
        assert_eq!(vm_rss("Name:\tbondry\n"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let (rss, fds) = read(std::process::id()).unwrap();
        assert!(rss > 0 && fds >= 3);
    }
}
