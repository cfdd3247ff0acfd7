//! The one HTTP stack, reqwest on rustls, shared by `web_fetch`, the
//! plugins' HTTP grants and upstream MCP servers reached by URL.
//!
//! reqwest is built without a TLS crypto provider (its default, aws-lc,
//! needs cmake and a C toolchain at build time), so ring, which rustls
//! already uses here, is installed as the process's provider before the
//! first client is built; a client built without one would panic.

/// A client builder, with the crypto provider installed.
pub fn builder() -> reqwest::ClientBuilder {
    // An error means a provider is installed already (by an earlier call,
    // or by the program embedding the library): that one is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
