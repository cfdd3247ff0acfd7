//! What a plugin's store holds, apart from the contract's bindings: the
//! store's state and the CPU budget (`state`), the plugin's log and its cap
//! (`log`), the adaptor turning a guest's stdout and stderr into log lines
//! (`stdout`) and the call-context resource lent to `execute`
//! (`call_context`), and the requests a call started and their caps
//! (`pending`). The WIT imports themselves are implemented per version
//! in `wit`, on [`HostState`].
//!
//! Every value a plugin hands the host is size-checked where it arrives;
//! logging is capped per call so a chatty or hostile plugin cannot flood
//! the host log (the caps are in `bounds`).

mod call_context;
mod log;
mod pending;
mod state;
mod stdout;

pub use call_context::{CallContext, ProgressFn};
pub use log::{LogLevel, LogLine, LogSink, tracing_sink};
pub use pending::Pending;
pub(super) use pending::start as start_request;
pub(super) use state::{CpuExhausted, HostState, PluginIdentity, unless_cancelled};
