//! Generated WIT bindings (hidden): one set of import types, shared by every
//! plugin world.
//!
//! `shared` is generated from the `plugin-imports` world: the `types`, `host`,
//! `http` and `value-model-types` interfaces. Each plugin world
//! (`enricher-plugin`, `tool-plugin`, `full-plugin`) is then generated with
//! `with:` pointing at those modules, so `tool-schema`, `tool-args`, the value
//! model records and the HTTP records are one Rust type each, whatever world a
//! plugin uses. Only the export side is generated per world.
//!
//! Each world has a public export macro (`pub_export_macro`) with a distinct
//! name; the SDK's own `export_enricher!` / `export_tools!` / `export_plugin!`
//! macros call them.
//!
//! `full-plugin` is deliberately *not* generated: wit-bindgen names the
//! per-interface export macro after the interface
//! (`__export_toolhost_plugin_enricher_0_1_0_cabi`) and `#[macro_export]`s it
//! at the crate root, so two worlds exporting `enricher` cannot both have
//! public export macros in one crate (E0428). `export_plugin!` instead
//! invokes both the `enricher-plugin` and the `tool-plugin` export macros;
//! `wit-component` merges the two worlds' type sections into a component
//! that imports `host` (+ `http` if used) and exports `enricher` and `tool`,
//! which is exactly the `full-plugin` world. It also means there is one
//! generated `enricher` `Guest` trait and one `tool` `Guest` trait, so each
//! adapter is written once. Because the export macros are public, wit-bindgen puts
//! only the import half of each world in this library's custom sections
//! (unused imports are dropped by `wit-component`) and the full world,
//! exports included, into the plugin crate where the macro is invoked: a
//! plugin exports exactly what its macro names.
//!
//! Nothing here is a stable API; use the types and traits at the crate root.

#![allow(missing_docs, clippy::all)]

/// Imports shared by every world: `types`, `host`, `http`,
/// `value-model-types`.
pub mod shared {
    wit_bindgen::generate!({
        path: "../wit/0.1",
        world: "plugin-imports",
        generate_unused_types: true,
    });
}

/// The `enricher-plugin` world: imports `host`, exports `enricher`.
pub mod enricher_plugin {
    wit_bindgen::generate!({
        path: "../wit/0.1",
        world: "enricher-plugin",
        with: {
            "toolhost:plugin/types@0.1.0": crate::bindings::shared::toolhost::plugin::types,
            "toolhost:plugin/host@0.1.0": crate::bindings::shared::toolhost::plugin::host,
            "toolhost:plugin/value-model-types@0.1.0": crate::bindings::shared::toolhost::plugin::value_model_types,
        },
        pub_export_macro: true,
        export_macro_name: "export_enricher_world",
        default_bindings_module: "toolhost_sdk::bindings::enricher_plugin",
    });
}

/// The `tool-plugin` world: imports `host` and `http`, exports `tool`.
pub mod tool_plugin {
    wit_bindgen::generate!({
        path: "../wit/0.1",
        world: "tool-plugin",
        with: {
            "toolhost:plugin/types@0.1.0": crate::bindings::shared::toolhost::plugin::types,
            "toolhost:plugin/host@0.1.0": crate::bindings::shared::toolhost::plugin::host,
            "toolhost:plugin/http@0.1.0": crate::bindings::shared::toolhost::plugin::http,
        },
        pub_export_macro: true,
        export_macro_name: "export_tool_world",
        default_bindings_module: "toolhost_sdk::bindings::tool_plugin",
    });
}
