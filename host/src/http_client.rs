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

/// Why [`whole_body`] has no body.
#[derive(Debug)]
pub enum BodyError {
    /// It passed the cap: the bytes seen by then (the length it declared,
    /// if that was over already).
    TooLarge(u64),
    /// It broke off.
    Broken(reqwest::Error),
}

/// `response`'s whole body, read no further than `cap` bytes: a body
/// declared or found longer is refused, never cut, since what reads it
/// (JSON, a plugin's response) needs it whole.
pub async fn whole_body(response: &mut reqwest::Response, cap: usize) -> Result<Vec<u8>, BodyError> {
    if let Some(declared) = response.content_length().filter(|&n| n > cap as u64) {
        return Err(BodyError::TooLarge(declared));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Broken)? {
        if chunk.len() > cap - body.len() {
            return Err(BodyError::TooLarge((body.len() + chunk.len()) as u64));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
