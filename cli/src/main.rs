//! The `toolhost` command line.

mod log;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use toolhost::mcp::ClientLog;
use toolhost::plugin::{Recorder, Runtime, RuntimeOptions, tracing_sink};
use toolhost_cli::config::{CacheSetting, Config};
use toolhost_cli::{
    call, check, consent, install, lock, pin, plugins, replay, scaffold, serve, setup, signing, stats, tools,
};

// A call allocates many small, short-lived values on several threads (the
// MCP layers, the plugin boundary's strings); mimalloc serves them with less
// work and contention than glibc's allocator. Without transparent huge
// pages (the `no_thp` feature): with them, the memory a plugin's compilation
// freed stayed resident, twice glibc's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "Host for AI-agent tools extended by sandboxed WebAssembly plugins"
)]
struct Cli {
    /// Configuration file (default: ./toolhost.toml if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Plugin directory (default: from the configuration, else ./plugins,
    /// else the bundled build/plugins).
    #[arg(long, global = true, env = "TOOLHOST_PLUGINS")]
    plugins: Option<PathBuf>,
    /// The directory read, glob, grep and ls are confined to (default:
    /// `root` of the configuration, else the working directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Use no cache directory: plugins compiled without the on-disk code
    /// cache, and no statistics file unless `[speculation] stats_file`
    /// names one.
    #[arg(long, global = true)]
    no_cache: bool,
    /// Keep compiled plugin code in DIR, whatever the configuration's
    /// `cache` says, and with --no-cache too (which then leaves out only
    /// the statistics file): runs and hosts on one machine share one
    /// compile of each plugin.
    #[arg(long, global = true, value_name = "DIR", env = "TOOLHOST_CODE_CACHE")]
    code_cache: Option<PathBuf>,
    /// More log output (-v, -vv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List loaded plugins: order, categories, worlds, limits, status.
    Plugins {
        #[arg(long)]
        json: bool,
        /// Show what each component imports and what it is granted, with
        /// its signature, lock and approval (nothing is run).
        #[arg(long)]
        grants: bool,
    },
    /// Write plugins.lock: from now on only these plugins, with these
    /// digests and grants, load.
    Lock,
    /// Approve what plugin NAME imports and is granted, as it is now.
    Approve { name: String },
    /// Pin the tools as `serve` shows them to the model now (name, title,
    /// description, schemas, annotations, and the source of each): from
    /// then on, `serve` holds back every difference.
    Pin {
        /// Show each difference from the pin, naming its source; exit 1
        /// if there is one.
        #[arg(long, conflicts_with = "accept")]
        review: bool,
        /// Take the difference of tool NAME into the pin (repeatable).
        #[arg(long, value_name = "NAME")]
        accept: Vec<String>,
    },
    /// Install plugin NAME from an OCI registry: REF is
    /// REGISTRY/NAMESPACE/NAME:TAG or ...@sha256:DIGEST (http://REF for a
    /// registry on a loopback address). It must be signed by a key of
    /// `[trust] keys`; its authority is shown for approval.
    Add {
        #[arg(value_name = "REF")]
        reference: String,
        /// Approve without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Resolve the tag of each plugin installed with `add` (or of NAME)
    /// again; show what a new one changes and install it once approved.
    Update {
        name: Option<String>,
        /// Only report what is newer; exit 1 if anything is.
        #[arg(long)]
        check: bool,
        /// Approve without asking.
        #[arg(long, conflicts_with = "check")]
        yes: bool,
    },
    /// Push a plugin component (and its NAME.toml, if beside it) to an OCI
    /// registry, signed with --key if given. Credentials come from
    /// TOOLHOST_REGISTRY_USERNAME and TOOLHOST_REGISTRY_PASSWORD, else the
    /// Docker config.
    Publish {
        file: PathBuf,
        #[arg(value_name = "REF")]
        reference: String,
        /// Sign it first with this secret key (`toolhost keygen`).
        #[arg(long, value_name = "NAME.key")]
        key: Option<PathBuf>,
    },
    /// Make a vendor's key pair: NAME.key (secret) and NAME.pub.
    Keygen {
        name: String,
        /// Where to write them (default: the current directory).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Sign a plugin component with a secret key from `toolhost keygen`.
    Sign {
        file: PathBuf,
        #[arg(long, value_name = "NAME.key")]
        key: PathBuf,
        /// Write the signature to FILE.sig instead of embedding it.
        #[arg(long)]
        detached: bool,
    },
    /// List the tools `serve` serves, as enriched by the loaded plugins.
    Tools {
        #[arg(long)]
        json: bool,
        /// Also list the tools known but not served, with why.
        #[arg(long)]
        all: bool,
        /// Show which plugin changed what in one tool's schema, or why it
        /// is not served.
        #[arg(long, value_name = "NAME")]
        explain: Option<String>,
    },
    /// Load one plugin, call every export, and report what it found.
    Check {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        /// The vendor's golden cases (TOML; its format is in cli/src/expect.rs).
        #[arg(long, value_name = "FILE")]
        expect: Option<PathBuf>,
    },
    /// Scaffold a plugin directory NAME that builds with `make`.
    New {
        name: String,
        #[arg(long, value_enum)]
        lang: scaffold::Lang,
        /// Where to create it (default: the current directory).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Serve the tools over MCP: stdio by default, streamable HTTP with --http.
    Serve {
        /// Listen for streamable HTTP at ADDR (served at /mcp).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Reload the plugin directory when a plugin or manifest in it
        /// changes, and tell the clients the tool list changed.
        #[arg(long)]
        watch: bool,
        /// Serve --http on a non-loopback address without authorization
        /// (no `[auth]` in toolhost.toml): anyone who reaches it may call
        /// every tool.
        #[arg(long)]
        insecure: bool,
        /// Record every call into a plugin (export, inputs, answer, time;
        /// secrets redacted) to a new file in DIR, for `toolhost replay`.
        #[arg(long, value_name = "DIR")]
        record: Option<PathBuf>,
    },
    /// Run the calls `serve --record DIR` recorded again, against your
    /// plugins (--plugins, or the configuration's), and print every
    /// difference. Offline unless --execute.
    Replay {
        /// A recording directory, or one of its files.
        dir: PathBuf,
        /// Let plugins reach what their grants reach, with their secrets,
        /// and run recorded `execute` calls too: only for a recording you
        /// trust.
        #[arg(long)]
        execute: bool,
        /// Run the calls of a plugin recorded with another component than
        /// the one installed (a vendor's regression check), instead of
        /// refusing them.
        #[arg(long)]
        changed: bool,
    },
    /// Show what speculation did in the last `toolhost serve`.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the pipeline. On a terminal, print the
    /// call and its result as the tool renders them (or plainly); else, or
    /// with --json, print the result as JSON.
    Call {
        tool: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}")]
        args: String,
        /// Print JSON even on a terminal.
        #[arg(long)]
        json: bool,
    },
}

/// `serve`'s runtime is its transport's ([`serve::runtime`]); the other
/// commands are short: they get a worker per core.
fn async_runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    match command {
        Command::Serve { http, .. } => serve::runtime(http.is_some()),
        _ => tokio::runtime::Runtime::new(),
    }
}

fn main() -> ExitCode {
    // Run by this program itself to compile one plugin (`setup::compiler`).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == setup::COMPILE_WORKER_ARG)
    {
        return toolhost::plugin::run_worker();
    }
    let cli = Cli::parse();
    let filter = match cli.verbose {
        // rmcp's HTTP client logs every failed connection to an upstream
        // as an error, in Rust's debug form; toolhost names the server and
        // why in its own line, and tries an unreached one again for as long
        // as it serves, which would repeat rmcp's line each time. rmcp's
        // service warns of every error answer it sends, in the same form: a
        // client's mistake (a prompt that does not exist), or a server's
        // request toolhost declines and logs itself where it matters (the
        // roots a server asks for as it starts, before the client came).
        0 => {
            "warn,toolhost_cli::stats=info,toolhost_cli::watch=info,rmcp::transport::worker=off,rmcp::service=error"
        }
        // rmcp logs whole messages at info (an upstream's log lines, before
        // their secrets are redacted) and wasmtime-wasi a guest's stdout
        // bytes at debug (before the plugin's secrets are): both kept quiet.
        1 => "info,plugin=debug,rmcp::service=warn",
        _ => "debug,rmcp::service=warn,wasmtime_wasi=info",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| filter.into()),
        )
        .with_writer(log::RedactedStderr)
        // Colours for a person at a terminal only: a client that launched
        // `serve` keeps its stderr in a log file, where escape codes are
        // noise around every line.
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none(),
        )
        .init();
    // The environment and memory of this process hold every secret it is
    // given; any process of the same user could read both from `/proc`
    // (a stdio upstream server it starts, which is not given the secrets
    // held for another use, among them), and a core dump would write them
    // to disk. Undumpable, they are readable only to a process allowed to
    // trace any other. Not inherited: the programs it starts are dumpable.
    if let Err(e) = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable) {
        tracing::warn!("cannot keep this process's memory from other processes of the user: {e}");
    }
    let runtime = match async_runtime(&cli.command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        // What was printed was read as far as the reader wanted.
        Err(e) if toolhost_cli::output::closed(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", toolhost::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let mut config = Config::discover(cli.config.as_deref())?;
    if let Some(root) = cli.root {
        config.root = Some(root);
    }
    if cli.no_cache {
        config.cache = Some(CacheSetting::Enabled(false));
    }
    let cache_dir = cli.code_cache.or_else(|| config.cache_dir());
    let plugin_dir = setup::plugin_dir(cli.plugins.as_deref(), &config);
    let record = match &cli.command {
        Command::Serve {
            record: Some(dir), ..
        } => {
            let recorder = Recorder::create(dir)
                .map_err(|e| anyhow::anyhow!("cannot record to {}: {e}", dir.display()))?;
            tracing::info!("recording every plugin call to {}", recorder.path().display());
            Some(std::sync::Arc::new(recorder))
        }
        _ => None,
    };
    // Plugin and upstream log lines go to the host's log and to MCP clients.
    let client_log = ClientLog::default();
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir,
        compiler: setup::compiler(),
        plugin_settings: config.plugin_settings(),
        log: client_log.sink(tracing_sink()),
        record,
        offline: matches!(cli.command, Command::Replay { execute: false, .. }),
    })?;
    match cli.command {
        Command::Check { file, json, expect } => check::run(&runtime, &file, json, expect.as_deref()).await,
        Command::Serve {
            http,
            watch,
            insecure,
            record: _,
        } => {
            let front = serve::Front {
                http,
                insecure,
                log: client_log,
            };
            serve::serve(&runtime, &config, plugin_dir.as_deref(), front, watch).await
        }
        Command::Call { tool, args, json } => {
            call::run(&runtime, &config, plugin_dir.as_deref(), &tool, &args, json).await
        }
        Command::Stats { json } => stats::run(&config, json).await,
        Command::New { name, lang, dir } => {
            let sdk = setup::sdk_of_this_build().filter(|_| lang == scaffold::Lang::Rust);
            let dir = toolhost_cli::scaffold::scaffold(&dir, &name, lang, sdk.as_deref())?;
            toolhost_cli::say!("created {0}: build it with `make -C {0}`", dir.display())?;
            match (lang, sdk) {
                (scaffold::Lang::Rust, Some(sdk)) => {
                    toolhost_cli::say!("it builds on the SDK in {}", sdk.display())?
                }
                (scaffold::Lang::Rust, None) => toolhost_cli::say!(
                    "it builds on toolhost-sdk 0.3 from your registry; to build on a copy of the \
                     SDK instead, name its directory in Cargo.toml: {{ version = \"0.3\", path = \"...\" }}"
                )?,
                _ => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins { json, grants: false } => {
            plugins::run(&runtime, &config, plugin_dir.as_deref(), json).await
        }
        Command::Plugins { json, grants: true } => {
            consent::grants(&runtime, &config, &needs_dir(plugin_dir)?, json).await
        }
        Command::Lock => lock::run(&runtime, &config, &needs_dir(plugin_dir)?).await,
        Command::Approve { name } => {
            consent::approve(&runtime, &config, &needs_dir(plugin_dir)?, &name).await
        }
        Command::Replay {
            dir,
            execute,
            changed,
        } => {
            let options = replay::Options { execute, changed };
            replay::run(&runtime, &config, &dir, plugin_dir.as_deref(), options).await
        }
        Command::Pin { review, accept } => {
            let action = match (review, accept.is_empty()) {
                (true, _) => pin::Action::Review,
                (false, false) => pin::Action::Accept(accept),
                (false, true) => pin::Action::Record,
            };
            pin::run(&runtime, &config, plugin_dir.as_deref(), action).await
        }
        Command::Add { reference, yes } => {
            let approval = install::Approval { yes };
            install::add(&runtime, &config, &needs_dir(plugin_dir)?, &reference, approval).await
        }
        Command::Update { name, check, yes } => {
            let dir = needs_dir(plugin_dir)?;
            let approval = install::Approval { yes };
            install::update(&runtime, &config, &dir, name.as_deref(), check, approval).await
        }
        Command::Publish { file, reference, key } => {
            install::publish(&file, &reference, key.as_deref()).await
        }
        Command::Keygen { name, dir } => signing::keygen(&dir, &name),
        Command::Sign { file, key, detached } => signing::sign(&file, &key, detached),
        Command::Tools { json, all, explain } => {
            tools::run(
                &runtime,
                &config,
                plugin_dir.as_deref(),
                json,
                all,
                explain.as_deref(),
            )
            .await
        }
    }
}

/// The plugin directory a command cannot do without.
fn needs_dir(dir: Option<PathBuf>) -> Result<PathBuf> {
    dir.ok_or_else(|| {
        anyhow::anyhow!(
            "no plugin directory: pass --plugins DIR, set `plugins` in toolhost.toml or create ./plugins"
        )
    })
}
