//! The replicas' shared key, and the seal it puts on every value a replica
//! stores in Redis for the others to serve: an HMAC-SHA-256 over the Redis
//! key and the value, so that a value written by anyone without the key (a
//! `SET` by whoever reaches the Redis) or moved from the key it was sealed
//! for to another is refused when read, never served.
//!
//! Not here: what is sealed and how it is bounded (`prefetches`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::ClusterError;

/// The shortest key accepted: a guessable key seals nothing.
pub const MIN_KEY_BYTES: usize = 32;

/// Hex digits of a seal (an HMAC-SHA-256 tag) ahead of the value.
const SEAL_HEX: usize = 64;

/// The replicas' shared secret. Its value is never shown, logged or put in
/// an error.
#[derive(Clone)]
pub struct ClusterKey(Hmac<Sha256>);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    /// A key from its bytes: at least [`MIN_KEY_BYTES`] of them.
    pub fn new(secret: &[u8]) -> Result<Self, ClusterError> {
        if secret.len() < MIN_KEY_BYTES {
            return Err(ClusterError::ShortKey { bytes: secret.len() });
        }
        let mac = Hmac::<Sha256>::new_from_slice(secret)
            .map_err(|_| ClusterError::ShortKey { bytes: secret.len() })?;
        Ok(Self(mac))
    }

    /// The key in the environment variable `var`, which must be set.
    pub fn from_env(var: &str) -> Result<Self, ClusterError> {
        let secret = std::env::var_os(var).ok_or_else(|| ClusterError::NoKey { var: var.to_owned() })?;
        if let Some(text) = secret.to_str() {
            crate::secrets::held::hold([("cluster-key", text)]);
        }
        Self::new(secret.as_encoded_bytes()).map_err(|e| match e {
            ClusterError::ShortKey { bytes } => ClusterError::ShortEnvKey {
                var: var.to_owned(),
                bytes,
            },
            other => other,
        })
    }

    fn mac(&self, key: &str, value: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.0.clone();
        // The key's length first: no key and value pair reads as another.
        mac.update(&(key.len() as u64).to_be_bytes());
        mac.update(key.as_bytes());
        mac.update(value);
        mac
    }

    /// A key for another use, derived from this one by `label`: the same on
    /// every replica, and giving nothing of this one away.
    pub(crate) fn derive(&self, label: &str) -> [u8; 32] {
        self.mac("derive", label.as_bytes())
            .finalize()
            .into_bytes()
            .into()
    }

    /// `value` sealed for the Redis key `key`: the seal's hex, then `value`.
    pub(super) fn seal(&self, key: &str, value: &str) -> String {
        let tag = self.mac(key, value.as_bytes()).finalize().into_bytes();
        let mut sealed = hex::encode(tag);
        sealed.push_str(value);
        sealed
    }

    /// The value `sealed` holds if it was sealed for `key` with this key.
    pub(super) fn open<'a>(&self, key: &str, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let (seal, value) = sealed.split_at_checked(SEAL_HEX)?;
        let tag = hex::decode(seal).ok()?;
        // `verify_slice` compares in constant time.
        self.mac(key, value).verify_slice(&tag).ok()?;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> ClusterKey {
        ClusterKey::new(&[byte; MIN_KEY_BYTES]).unwrap()
    }

    #[test]
    fn a_value_opens_only_under_its_key_with_the_same_secret() {
        let sealed = key(1).seal("p:tool:aa", "{\"x\":1}");
        assert_eq!(
            key(1).open("p:tool:aa", sealed.as_bytes()),
            Some(&b"{\"x\":1}"[..])
        );
        assert_eq!(key(1).open("p:tool:bb", sealed.as_bytes()), None, "moved");
        assert_eq!(
            key(2).open("p:tool:aa", sealed.as_bytes()),
            None,
            "another secret"
        );
        let forged = sealed.replace("\"x\":1", "\"x\":2");
        assert_eq!(key(1).open("p:tool:aa", forged.as_bytes()), None, "edited");
        assert_eq!(key(1).open("p:tool:aa", b"{\"x\":1}"), None, "unsealed");
        // The key's length is sealed too: `ab` + `c…` is not `a` + `bc…`.
        let split = key(1).seal("ab", "cd");
        assert_eq!(
            key(1).open("a", format!("{}bcd", &split[..SEAL_HEX]).as_bytes()),
            None
        );
    }

    #[test]
    fn short_or_missing_keys_are_refused_without_their_value() {
        let short = ClusterKey::new(b"hunter2").unwrap_err().to_string();
        assert!(short.contains("7 bytes") && !short.contains("hunter2"), "{short}");
        let missing = ClusterKey::from_env("TOOLHOST_TEST_NO_SUCH_KEY")
            .unwrap_err()
            .to_string();
        assert!(missing.contains("TOOLHOST_TEST_NO_SUCH_KEY"), "{missing}");
        assert_eq!(format!("{:?}", key(7)), "ClusterKey(..)");
    }
}
