//! Writes the `wit_bindgen::generate!` calls of `src/bindings.rs` with the
//! contract version read from `wit/worlds.wit`, so the version is written in
//! one place, the WIT itself: wit-bindgen's `with:` keys are string literals
//! that name it (`toolhost:plugin/types@0.2.0`), and a macro cannot build a
//! literal from parts.

use std::path::Path;

fn main() {
    let worlds = Path::new("wit/worlds.wit");
    println!("cargo:rerun-if-changed=wit");
    let text =
        std::fs::read_to_string(worlds).unwrap_or_else(|e| panic!("cannot read {}: {e}", worlds.display()));
    let version = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("package toolhost:plugin@"))
        .and_then(|rest| rest.strip_suffix(';'))
        .unwrap_or_else(|| {
            panic!(
                "{} does not start with `package toolhost:plugin@VERSION;`",
                worlds.display()
            )
        });
    let interface = |name: &str| format!("\"toolhost:plugin/{name}@{version}\"");
    let shared = |name: &str| {
        let module = name.replace('-', "_");
        format!(
            "{}: crate::bindings::shared::toolhost::plugin::{module},",
            interface(name)
        )
    };
    let world = |world: &str, imports: &[&str], macro_name: &str, module: &str| {
        let with: String = imports
            .iter()
            .map(|i| shared(i))
            .collect::<Vec<_>>()
            .join("\n            ");
        format!(
            r#"wit_bindgen::generate!({{
        path: "wit",
        world: "{world}",
        with: {{
            {with}
        }},
        pub_export_macro: true,
        export_macro_name: "{macro_name}",
        default_bindings_module: "toolhost_sdk::bindings::{module}",
    }});"#
        )
    };
    let code = format!(
        r#"/// Imports shared by every world: `types`, `host`, `http`,
/// `value-model-types`.
pub mod shared {{
    wit_bindgen::generate!({{
        path: "wit",
        world: "plugin-imports",
        generate_unused_types: true,
    }});
}}

/// The `enricher-plugin` world: imports `host`, exports `enricher`.
pub mod enricher_plugin {{
    {enricher}
}}

/// The `tool-plugin` world: imports `host` and `http`, exports `tool`.
pub mod tool_plugin {{
    {tool}
}}
"#,
        enricher = world(
            "enricher-plugin",
            &["types", "host", "value-model-types"],
            "export_enricher_world",
            "enricher_plugin"
        ),
        tool = world(
            "tool-plugin",
            &["types", "host", "http"],
            "export_tool_world",
            "tool_plugin"
        ),
    );
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("bindings.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
