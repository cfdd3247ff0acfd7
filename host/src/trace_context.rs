//! W3C Trace Context as it crosses the host ([`TraceParent`]): a client's
//! `traceparent` (from a request's `params._meta`) is taken only when it
//! is well-formed, and the host's own span under it is passed on in the
//! `_meta` of the upstream requests a call makes, so a trace continues
//! through the gateway. Owns the header's parsing, its bounds and new span
//! ids; not the spans that carry it (`mcp`'s `telemetry`), nor their
//! export (`mcp`'s `otlp`).

use std::fmt;

/// The longest `traceparent` read: version `00` is 55 characters, a later
/// version may append fields, and nothing past this is a trace context.
const MAX_TRACEPARENT: usize = 256;

/// One span's place in a trace: its trace id, its span id and its flags
/// (bit 0: the caller sampled it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// `text` if it is a W3C `traceparent`: `VERSION-TRACEID-SPANID-FLAGS`
    /// in lowercase hex, the ids not all zero, the version not `ff`;
    /// version `00` exactly, a later one possibly followed by `-` and
    /// fields of its own (ignored). `None` for anything else, which is
    /// then ignored, never echoed.
    pub fn parse(text: &str) -> Option<Self> {
        // ASCII only: the fields are then cut on character boundaries.
        if text.len() > MAX_TRACEPARENT || text.len() < 55 || !text.is_ascii() {
            return None;
        }
        let bytes = text.as_bytes();
        let version = from_hex::<1>(&text[0..2])?[0];
        let fits = match version {
            0xff => false,
            0 => text.len() == 55,
            _ => text.len() == 55 || bytes[55] == b'-',
        };
        if !fits || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let trace_id = from_hex::<16>(&text[3..35])?;
        let span_id = from_hex::<8>(&text[36..52])?;
        let flags = from_hex::<1>(&text[53..55])?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            flags,
        })
    }

    /// A new span in the same trace, under this one.
    pub fn child(&self) -> Self {
        Self {
            span_id: random_span_id(),
            ..*self
        }
    }

    /// The first span of a new trace, sampled if the host `records` its
    /// spans (it exports them: `[telemetry]`); else not, and the host only
    /// lets its logs and its upstreams' join the trace.
    pub fn root(records: bool) -> Self {
        let mut trace_id = [0u8; 16];
        fill(&mut trace_id);
        Self {
            trace_id,
            span_id: random_span_id(),
            flags: u8::from(records),
        }
    }

    /// Whether the trace is sampled (flag bit 0): its spans are recorded.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The trace id's bytes.
    pub fn trace_id_bytes(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The span id's bytes.
    pub fn span_id_bytes(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace id, as 32 hex digits.
    pub fn trace_id(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// The span id, as 16 hex digits.
    pub fn span_id(&self) -> String {
        hex::encode(self.span_id)
    }
}

/// As a version `00` `traceparent` header value.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id(), self.span_id(), self.flags)
    }
}

/// `N` bytes from `2 * N` lowercase hex digits (upper case is invalid in a
/// `traceparent`).
fn from_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

fn random_span_id() -> [u8; 8] {
    let mut id = [0u8; 8];
    // All zero is no span id: draw again (once in 2^64).
    while id == [0; 8] {
        fill(&mut id);
    }
    id
}

/// Random bytes from the thread's generator (ChaCha, seeded and reseeded
/// from the system's): as unguessable as the system's, without a system
/// call per id.
fn fill(bytes: &mut [u8]) {
    rand::RngCore::fill_bytes(&mut rand::rng(), bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_well_formed_traceparent_is_read_and_its_child_keeps_the_trace() {
        let parent = TraceParent::parse(GOOD).unwrap();
        assert_eq!(parent.to_string(), GOOD);
        let child = parent.child();
        assert_eq!(child.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_ne!(child.span_id(), parent.span_id());
        assert!(child.to_string().ends_with("-01") && child.sampled());
        assert!(TraceParent::root(true).sampled() && !TraceParent::root(false).sampled());
        // A later version's extra fields are ignored; it is passed on as 00.
        let later = TraceParent::parse(&format!("01{}-what-comes-next", &GOOD[2..])).unwrap();
        assert_eq!(later.to_string(), GOOD);
    }

    #[test]
    fn a_malformed_traceparent_is_refused() {
        let long = format!("{GOOD}{}", "-x".repeat(200));
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
            "00-0af7651916cd43dd8448eb211c8031\u{e9}-b7ad6b716920333-01",
            "00-+af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            long.as_str(),
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }
}
