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
//! (`__export_toolhost_plugin_enricher_0_3_0_cabi`) and `#[macro_export]`s it
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
//! The `generate!` calls are written by `build.rs`, which reads the contract
//! version from `wit/worlds.wit` (the `with:` keys name it), so the version
//! is written once, in the WIT. `wit/` is the repository's `wit/0.3`.
//!
//! Nothing here is a stable API; use the types and traits at the crate root.

#![allow(missing_docs, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
