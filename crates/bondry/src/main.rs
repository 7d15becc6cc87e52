//! The `bondry` command: `serve` and `check`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bondry::assemble::{Overrides, assemble};
use bondry::builtins::Builtins;
use bondry::config;
use clap::{Parser, Subcommand};

/// Bondry: an MCP gateway.
#[derive(Parser)]
#[command(name = "bondry", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over Streamable HTTP until SIGINT or SIGTERM.
    Serve {
        /// The configuration file; without it, the embedded demo default is served.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Overrides the address of the one configured listener.
        #[arg(long, value_name = "ADDR")]
        listen: Option<SocketAddr>,
    },
    /// Validate a configuration file without serving.
    Check {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let result = match cli.command {
        Command::Serve { config, listen } => serve(config, listen),
        Command::Check { config } => check(config),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bondry: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn check(path: PathBuf) -> anyhow::Result<()> {
    let loaded = config::load(Some(&path), std::env::vars())?;
    assemble(&loaded, &Builtins::demo(), &Overrides::default(), false)?;
    println!("{}: ok", path.display());
    Ok(())
}

fn serve(path: Option<PathBuf>, listen: Option<SocketAddr>) -> anyhow::Result<()> {
    let loaded = config::load(path.as_deref(), std::env::vars())?;
    let assembled = assemble(&loaded, &Builtins::demo(), &Overrides { listen }, true)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        // Listen for signals before announcing readiness: a signal sent right after the
        // banner must start a graceful shutdown, not kill the process.
        let signal = shutdown_signal()?;
        let running = bondry_http_server::start(assembled.server).await?;
        for (_, addr) in running.local_addrs() {
            eprintln!("listening on http://{addr}/mcp");
        }
        signal.await;
        tracing::info!("shutting down");
        if !running.shutdown().await {
            tracing::warn!("some requests did not finish within shutdown_grace_ms");
        }
        anyhow::Ok(())
    })?;
    // Whatever outlived the grace period is dropped now, so that its `cancelled` audit
    // records reach the sink before it closes.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if let Some(audit) = assembled.audit {
        audit.close();
    }
    Ok(())
}

/// Installs SIGINT and SIGTERM handlers now; the returned future resolves on either.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}
