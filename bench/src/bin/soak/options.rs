//! The soak's options: positional `[DURATION [FRACTION [INTERVAL]]]`, `--name value`
//! flags, and `SOAK_*` environment variables under both.

use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
usage: soak [DURATION [FRACTION [INTERVAL]]] [--duration D] [--fraction F] [--interval I]
            [--connections N] [--sessions-per-second S] [--listen-streams K] [--bondry PATH]
  DURATION  the soak phase, e.g. 600, 90s, 10m, 1h (default 10m; env SOAK_DURATION)
  FRACTION  of the measured saturation to soak at, in (0, 1] (default 0.70; env SOAK_FRACTION)
  INTERVAL  between RSS and fd samples (default 10s; env SOAK_INTERVAL)
  --connections N          keep-alive connections of the modern load (default 16; env SOAK_CONNECTIONS)
  --sessions-per-second S  handshake-era session cycles (default 8)
  --listen-streams K       subscriptions/listen streams open at any time (default 4)
  --bondry PATH            the server binary (default: `bondry` beside this binary)";

#[derive(Debug)]
pub struct Options {
    /// The soak phase, after the warm-up and the saturation measurement.
    pub duration: Duration,
    pub fraction: f64,
    pub interval: Duration,
    pub connections: usize,
    pub sessions_per_second: f64,
    pub listen_streams: usize,
    /// How long each listen stream is held once acknowledged.
    pub listen_hold: Duration,
    /// The closed-loop warm-up, then the saturation measurement after it.
    pub warm_up: Duration,
    pub saturation: Duration,
    pub bondry: PathBuf,
}

impl Options {
    /// The part of the soak excluded from the growth trend: 20 % of it, at least 60 s,
    /// but never more than half, so a short run still has a trend to fit.
    pub fn trend_warm_up(&self) -> Duration {
        self.duration.mul_f64(0.2).max(Duration::from_secs(60)).min(self.duration / 2)
    }
}

/// Reads the options from `args` (without the program name) over `env`.
pub fn parse(args: Vec<String>, env: impl Fn(&str) -> Option<String>) -> Result<Options, String> {
    let mut options = Options {
        duration: env("SOAK_DURATION").map_or(Ok(Duration::from_secs(600)), |v| duration(&v))?,
        fraction: env("SOAK_FRACTION").map_or(Ok(0.70), |v| number(&v))?,
        interval: env("SOAK_INTERVAL").map_or(Ok(Duration::from_secs(10)), |v| duration(&v))?,
        connections: env("SOAK_CONNECTIONS").map_or(Ok(16), |v| count(&v))?,
        sessions_per_second: 8.0,
        listen_streams: 4,
        listen_hold: Duration::from_secs(4),
        warm_up: Duration::from_secs(3),
        saturation: Duration::from_secs(10),
        bondry: default_bondry(),
    };
    let mut positional = 0;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Err(USAGE.to_owned()),
            "--duration" => options.duration = duration(&value()?)?,
            "--fraction" => options.fraction = number(&value()?)?,
            "--interval" => options.interval = duration(&value()?)?,
            "--connections" => options.connections = count(&value()?)?,
            "--sessions-per-second" => options.sessions_per_second = number(&value()?)?,
            "--listen-streams" => options.listen_streams = count(&value()?)?,
            "--bondry" => options.bondry = PathBuf::from(value()?),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}\n{USAGE}")),
            _ => {
                match positional {
                    0 => options.duration = duration(&arg)?,
                    1 => options.fraction = number(&arg)?,
                    2 => options.interval = duration(&arg)?,
                    _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
                }
                positional += 1;
            }
        }
    }
    check(&options)?;
    Ok(options)
}

/// Bounds that keep every loop finite and leave enough samples to judge a trend.
fn check(options: &Options) -> Result<(), String> {
    if !(Duration::from_secs(30)..=Duration::from_secs(24 * 3600)).contains(&options.duration) {
        return Err("the duration must be between 30s and 24h".to_owned());
    }
    if !(options.fraction > 0.0 && options.fraction <= 1.0) {
        return Err("the fraction must be in (0, 1]".to_owned());
    }
    if options.interval < Duration::from_secs(1) {
        return Err("the sample interval must be at least 1s".to_owned());
    }
    let warm_samples = (options.duration - options.trend_warm_up()).as_secs_f64() / options.interval.as_secs_f64();
    if warm_samples < 3.0 {
        return Err(format!(
            "a {:?} soak sampled every {:?} leaves fewer than 3 samples after its {:?} warm-up; shorten the interval",
            options.duration,
            options.interval,
            options.trend_warm_up()
        ));
    }
    if !(1..=256).contains(&options.connections) || !(1..=64).contains(&options.listen_streams) {
        return Err("connections must be 1 to 256 and listen streams 1 to 64".to_owned());
    }
    if !(options.sessions_per_second > 0.0 && options.sessions_per_second <= 100.0) {
        return Err("sessions per second must be in (0, 100]".to_owned());
    }
    Ok(())
}

/// `600`, `600s`, `10m`, `1h`, `500ms`.
fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (value, unit) = text.split_at(split);
    let value: f64 = value.parse().map_err(|_| format!("{text:?} is not a duration like 90s or 10m"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("{text:?} is not a duration like 90s or 10m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?} is not a duration like 90s or 10m"))
}

fn number(text: &str) -> Result<f64, String> {
    text.trim().parse().map_err(|_| format!("{text:?} is not a number"))
}

fn count(text: &str) -> Result<usize, String> {
    text.trim().parse().map_err(|_| format!("{text:?} is not a count"))
}

/// `bondry` in the directory of this binary: both are built into target/release.
fn default_bondry() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("bondry")))
        .unwrap_or_else(|| PathBuf::from("target/release/bondry"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(duration("600"), Ok(Duration::from_secs(600)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(duration("ten").is_err() && duration("5d").is_err());
    }

    #[test]
    fn positionals_and_flags_override_the_environment() {
        let env = |name: &str| (name == "SOAK_FRACTION").then(|| "0.5".to_owned());
        let options = parse(args(&["90s"]), env).unwrap();
        assert_eq!(options.duration, Duration::from_secs(90));
        assert_eq!(options.fraction, 0.5);
        let options = parse(args(&["--fraction", "0.6", "--interval", "5s"]), env).unwrap();
        assert_eq!((options.fraction, options.interval), (0.6, Duration::from_secs(5)));
    }

    #[test]
    fn the_defaults_are_ten_minutes_at_seventy_percent() {
        let options = parse(Vec::new(), |_| None).unwrap();
        assert_eq!(
            (options.duration, options.fraction, options.interval.as_secs()),
            (Duration::from_secs(600), 0.7, 10)
        );
        assert_eq!(options.trend_warm_up(), Duration::from_secs(120));
    }

    #[test]
    fn too_short_a_soak_to_judge_is_refused() {
        assert!(parse(args(&["30s", "0.7", "10s"]), |_| None).is_err());
        assert!(parse(args(&["30s", "0.7", "3s"]), |_| None).is_ok());
        assert!(parse(args(&["--fraction", "1.5"]), |_| None).is_err());
    }
}
