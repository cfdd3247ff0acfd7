//! `toolhost new NAME --lang rust|js|python|c|go`: scaffold a plugin directory
//! that builds with one command (`make`) and passes `toolhost check` as
//! generated. The templates (`cli/templates/`) and the WIT contract
//! (`wit/0.2`) are embedded in the binary, so the command works anywhere.
//! A Rust plugin depends on the `toolhost-sdk` crate, which carries the WIT
//! itself, so only the other languages get a `wit/` copy; the caller says
//! where the crate comes from (a source tree's `sdk/`, or a registry). This
//! module does not build anything: the generated Makefile does.

use std::path::{Path, PathBuf};

/// A language `new` can scaffold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Js,
    Python,
    C,
    Go,
}

/// Why a plugin could not be scaffolded.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("plugin names are 1 to 40 of [a-z0-9-], starting with a letter: `{0}`")]
    BadName(String),
    #[error("{0} already exists")]
    Exists(PathBuf),
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// The WIT contract, copied as `wit/` into every plugin but a Rust one.
const WIT: [(&str, &str); 5] = [
    ("wit/types.wit", include_str!("../../wit/0.2/types.wit")),
    ("wit/enricher.wit", include_str!("../../wit/0.2/enricher.wit")),
    ("wit/tool.wit", include_str!("../../wit/0.2/tool.wit")),
    ("wit/http.wit", include_str!("../../wit/0.2/http.wit")),
    ("wit/worlds.wit", include_str!("../../wit/0.2/worlds.wit")),
];

fn template(lang: Lang) -> &'static [(&'static str, &'static str)] {
    match lang {
        Lang::Rust => &[
            ("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
            ("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
            ("Makefile", include_str!("../templates/rust/Makefile")),
        ],
        Lang::Js => &[
            ("app.js", include_str!("../templates/js/app.js")),
            ("package.json", include_str!("../templates/js/package.json")),
            ("Makefile", include_str!("../templates/js/Makefile")),
        ],
        Lang::Python => &[
            ("app.py", include_str!("../templates/python/app.py")),
            ("Makefile", include_str!("../templates/python/Makefile")),
        ],
        Lang::C => &[
            ("plugin.c", include_str!("../templates/c/plugin.c")),
            ("Makefile", include_str!("../templates/c/Makefile")),
        ],
        Lang::Go => &[
            (
                "export_toolhost_plugin_enricher/plugin.go",
                include_str!("../templates/go/export_toolhost_plugin_enricher/plugin.go"),
            ),
            ("Makefile", include_str!("../templates/go/Makefile")),
        ],
    }
}

/// The files `lang`'s plugin gets besides its template.
fn wit(lang: Lang) -> &'static [(&'static str, &'static str)] {
    match lang {
        Lang::Rust => &[],
        Lang::Js | Lang::Python | Lang::C | Lang::Go => &WIT,
    }
}

/// `my-plugin2` as `MyPlugin2`: the Rust template's type name.
fn type_name(name: &str) -> String {
    name.split('-')
        .flat_map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
        })
        .collect()
}

fn valid_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The `toolhost-sdk` requirement of the Rust template.
const SDK_REQUIREMENT: &str = "toolhost-sdk = \"0.3\"";

/// Write plugin `name` in `lang` into `parent/name`; returns the directory.
/// `make` there builds `name.wasm`. A Rust plugin takes `toolhost-sdk` from
/// `sdk` (the SDK's directory) when given, else from a registry.
pub fn scaffold(parent: &Path, name: &str, lang: Lang, sdk: Option<&Path>) -> Result<PathBuf, ScaffoldError> {
    if !valid_name(name) {
        return Err(ScaffoldError::BadName(name.to_owned()));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir));
    }
    let crate_name = name.replace('-', "_");
    let type_name = type_name(name);
    // The path as a TOML string (quoted and escaped as TOML reads it).
    let from_sdk = sdk.map(|sdk| {
        let path = toml::Value::String(sdk.display().to_string());
        format!("toolhost-sdk = {{ version = \"0.3\", path = {path} }}")
    });
    for (rel, text) in template(lang).iter().chain(wit(lang)) {
        let path = dir.join(rel);
        let mut text = text
            .replace("{{name}}", name)
            .replace("{{crate}}", &crate_name)
            .replace("{{Type}}", &type_name);
        if let Some(from_sdk) = &from_sdk {
            text = text.replace(SDK_REQUIREMENT, from_sdk);
        }
        let io = |source| ScaffoldError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, text).map_err(io)?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_camel_case() {
        assert_eq!(type_name("my-plugin2"), "MyPlugin2");
        assert_eq!(type_name("a-2x-b"), "A2xB");
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("my-plugin2"));
        for bad in ["", "2x", "My", "a_b", "../x", &"a".repeat(41)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn every_language_gets_its_files_and_the_wit() {
        let tmp = tempfile::tempdir().unwrap();
        for (lang, entry) in [
            (Lang::Rust, "src/lib.rs"),
            (Lang::Js, "app.js"),
            (Lang::Python, "app.py"),
            (Lang::C, "plugin.c"),
            (Lang::Go, "export_toolhost_plugin_enricher/plugin.go"),
        ] {
            let name = format!("p-{lang:?}").to_lowercase();
            let dir = scaffold(tmp.path(), &name, lang, None).unwrap();
            let text = std::fs::read_to_string(dir.join(entry)).unwrap();
            assert!(text.contains(&format!("{name}: loaded")), "{entry}: {text}");
            assert!(!text.contains("{{"), "{entry} has an unfilled placeholder");
            let makefile = std::fs::read_to_string(dir.join("Makefile")).unwrap();
            assert!(makefile.contains(&format!("{name}.wasm:")), "{makefile}");
            // The SDK carries a Rust plugin's WIT.
            assert_eq!(
                dir.join("wit/worlds.wit").is_file(),
                lang != Lang::Rust,
                "{lang:?}"
            );
            assert!(matches!(
                scaffold(tmp.path(), &name, lang, None),
                Err(ScaffoldError::Exists(_))
            ));
        }
        let cargo = std::fs::read_to_string(tmp.path().join("p-rust/Cargo.toml")).unwrap();
        assert!(cargo.contains("name = \"p_rust\""), "{cargo}");
        assert!(cargo.contains(SDK_REQUIREMENT), "{cargo}");
        let lib = std::fs::read_to_string(tmp.path().join("p-rust/src/lib.rs")).unwrap();
        assert!(lib.contains("impl Enricher for PRust"), "{lib}");
        let worlds = std::fs::read_to_string(tmp.path().join("p-js/wit/worlds.wit")).unwrap();
        assert!(worlds.starts_with("package toolhost:plugin@0.2.0;"), "{worlds}");
    }

    #[test]
    fn a_rust_plugin_takes_the_sdk_it_is_given() {
        let tmp = tempfile::tempdir().unwrap();
        // A path TOML must escape: the manifest still reads, naming it.
        let sdk = Path::new("/src/a \"quoted\" \\ \u{7f} tree/sdk");
        let dir = scaffold(tmp.path(), "p", Lang::Rust, Some(sdk)).unwrap();
        let cargo: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        let dependency = &cargo["dependencies"]["toolhost-sdk"];
        assert_eq!(
            dependency["path"].as_str(),
            Some("/src/a \"quoted\" \\ \u{7f} tree/sdk")
        );
        assert_eq!(dependency["version"].as_str(), Some("0.3"));
    }
}
