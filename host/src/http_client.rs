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

/// Whether `url`'s host is a loopback address written as one (`127.0.0.1`,
/// `[::1]`): where a secret may go over cleartext HTTP. A name such as
/// `localhost` is not, since what it resolves to is not the URL's.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(|h| {
        h.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
    })
}
