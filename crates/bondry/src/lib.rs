//! Bondry, the MCP gateway, as a library: load a configuration, register builtin
//! handlers, and start the runtime. The `bondry` binary is a thin CLI over this.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use bondry::{assemble::{Overrides, assemble}, builtins::Builtins, config};
//! let loaded = config::load(None, std::env::vars())?;
//! let assembled = assemble(&loaded, &Builtins::demo(), &Overrides::default(), true)?;
//! let running = bondry_http_server::start(assembled.server).await?;
//! println!("{:?}", running.local_addrs());
//! running.shutdown().await;
//! # Ok(()) }
//! ```

pub mod assemble;
pub mod backends;
pub mod builtins;
pub mod config;
pub mod credentials;
pub mod data_dir;
pub mod descriptors;
pub mod logging;
pub mod reload;
pub mod upstream_cli;
