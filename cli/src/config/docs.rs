//! `docs/configuration.md` against the configuration types: every key
//! `toolhost.toml` accepts is documented there, and every key documented
//! there is accepted.
//!
//! The accepted keys come from the types themselves, so that a field added
//! to any section fails this test until it is documented: serde hands every
//! struct's field names to `Deserializer::deserialize_struct`, and a
//! deserializer that records them and then feeds each field a placeholder
//! value walks every section, however deep. A key the user chooses (a
//! plugin's or a tool's name in `[plugin.NAME]`, `[tools.NAME]`) is written
//! `<name>`.

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde::de::value::{BorrowedStrDeserializer, Error};
use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use super::Config;
use toolhost::plugin::Manifest;

/// Every key `toolhost.toml` accepts, dotted from the top level.
fn accepted() -> BTreeSet<String> {
    let mut keys = keys_of::<Config>();
    // `[plugin.NAME]` is read as a bare table, then checked as a sidecar
    // manifest laid over the plugin's: its keys are the manifest's.
    keys.retain(|key| !key.starts_with("plugin."));
    keys.extend(
        keys_of::<Manifest>()
            .into_iter()
            .map(|key| format!("plugin.<name>.{key}")),
    );
    keys
}

/// The keys of `T` that hold a value rather than a table of keys.
fn keys_of<T: DeserializeOwned>() -> BTreeSet<String> {
    let paths = RefCell::new(BTreeSet::new());
    // The placeholders may be refused once read (by a check after the
    // fields, say); every key is recorded before its value is read.
    let _ = T::deserialize(Recorder {
        paths: &paths,
        at: String::new(),
    });
    let paths = paths.into_inner();
    paths
        .iter()
        .filter(|path| !paths.iter().any(|other| other.starts_with(&format!("{path}."))))
        .cloned()
        .collect()
}

/// The keys `docs/configuration.md` documents: the first cell, in
/// backquotes, of each row of a table headed `| key |`, under the TOML
/// table the heading above names in backquotes (`` ## `[speculation]` ``;
/// a heading naming none is the top level).
fn documented(text: &str) -> BTreeSet<String> {
    let (mut table, mut in_keys, mut fenced) = (String::new(), false, false);
    let mut keys = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        if line.starts_with('#') {
            table = line
                .split('`')
                .nth(1)
                .filter(|name| name.starts_with('['))
                .map(|name| name.trim_matches(['[', ']']).to_owned())
                .unwrap_or_default();
        }
        in_keys = line.starts_with("| key |") || (in_keys && line.starts_with('|'));
        let key = line.strip_prefix("| `").and_then(|rest| rest.split_once('`'));
        if let (true, Some((key, _))) = (in_keys, key) {
            keys.insert(match table.as_str() {
                "" => key.to_owned(),
                table => format!("{table}.{key}"),
            });
        }
    }
    keys
}

#[test]
fn the_configuration_reference_documents_every_key_and_no_other() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
    let documented = documented(&std::fs::read_to_string(path).expect(path));
    let accepted = accepted();
    // The walk reached the deepest tables and went on past the checked
    // `[[upstream]]` to the sections after it.
    for key in [
        "speculation.budget_tokens",
        "tools.<name>.follow_ups.probability",
        "plugin.<name>.grants.secrets.<name>.env",
        "cluster.key_env",
    ] {
        assert!(
            accepted.contains(key),
            "{key} not found in the types: {accepted:?}"
        );
    }
    let missing: Vec<_> = accepted.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/configuration.md is out of date:\n  accepted, not documented: {missing:?}\n  \
         documented, not accepted: {unknown:?}"
    );
}

#[test]
fn documented_keys_are_read_under_their_tables_and_outside_code() {
    let text = "# `toolhost.toml`\n| key | default | meaning |\n|---|---|---|\n| `plugins` | x | y |\n\n\
                ## `[[upstream]]`\n```toml\n# `[web]`\n| `no` |\n```\n| key | default | meaning |\n\
                | `name` | | |\n\n| what | cap |\n| `no` | |\n";
    assert_eq!(
        documented(text),
        BTreeSet::from(["plugins".to_owned(), "upstream.name".to_owned()])
    );
}

/// Records the path of every struct field it is asked for and hands each
/// a placeholder: `false`, `0`, `""`, one list element, one map entry
/// `<name>`, an enum's first variant.
struct Recorder<'a> {
    paths: &'a RefCell<BTreeSet<String>>,
    at: String,
}

impl Recorder<'_> {
    fn below(&self, key: &str) -> Self {
        Recorder {
            paths: self.paths,
            at: match self.at.as_str() {
                "" => key.to_owned(),
                at => format!("{at}.{key}"),
            },
        }
    }
}

/// The one key of every map: what the user names.
const NAME: &[&str] = &["<name>"];

macro_rules! placeholder {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.$visit($($value)?)
        })*
    };
}

impl<'de> Deserializer<'de> for Recorder<'_> {
    type Error = Error;

    placeholder! {
        // A value of no fixed type (a plugin's own `config`, `cache`'s
        // switch or directory) is a leaf.
        deserialize_any => visit_bool(false),
        deserialize_bool => visit_bool(false),
        // Numbers are 1, not 0: a count that may not be zero
        // (`NonZeroUsize`) takes it, where a refused value would end the
        // walk of its table before the keys after it.
        deserialize_i8 => visit_u64(1),
        deserialize_i16 => visit_u64(1),
        deserialize_i32 => visit_u64(1),
        deserialize_i64 => visit_u64(1),
        deserialize_u8 => visit_u64(1),
        deserialize_u16 => visit_u64(1),
        deserialize_u32 => visit_u64(1),
        deserialize_u64 => visit_u64(1),
        deserialize_f32 => visit_u64(1),
        deserialize_f64 => visit_u64(1),
        deserialize_char => visit_str(""),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_identifier => visit_str(""),
        deserialize_bytes => visit_bytes(b""),
        deserialize_byte_buf => visit_bytes(b""),
        deserialize_unit => visit_unit(),
        deserialize_ignored_any => visit_unit(),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_seq(One(Some(self)))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(Table {
            keys: NAME.iter(),
            value: None,
            at: self,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        for field in fields {
            self.paths.borrow_mut().insert(self.below(field).at);
        }
        visitor.visit_map(Table {
            keys: fields.iter(),
            value: None,
            at: self,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(variants[0].into_deserializer())
    }
}

/// A table of `keys`, each with a placeholder value below it.
struct Table<'a> {
    keys: std::slice::Iter<'static, &'static str>,
    value: Option<&'static str>,
    at: Recorder<'a>,
}

impl<'de> MapAccess<'de> for Table<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some(&key) = self.keys.next() else {
            return Ok(None);
        };
        self.value = Some(key);
        // Borrowed: some keys are read as `&str` (`toml::Spanned`'s).
        seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let key = self.value.take().expect("a key before its value");
        seed.deserialize(self.at.below(key))
    }
}

/// A list of one placeholder element.
struct One<'a>(Option<Recorder<'a>>);

impl<'de> SeqAccess<'de> for One<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        // An element whose placeholders are refused (an `[[upstream]]` needs
        // a `command` or a `url`; an origin, a host) leaves the list empty:
        // its keys are recorded by then, and the walk goes on.
        Ok(self.0.take().and_then(|element| seed.deserialize(element).ok()))
    }
}
