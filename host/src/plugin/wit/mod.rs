//! The WIT contract, one binding module per released version of
//! `toolhost:plugin`, and the one place that knows which version a plugin
//! speaks.
//!
//! Each `since_v*` module is one `bindgen!` of its frozen `wit/<version>/`
//! directory. The latest version's types are the host's working form at the
//! boundary: an older version's values are converted into the latest's (in
//! its own module) and the latest's into the host's own types (`convert`),
//! so each conversion to a host type is written once. An older version's
//! host imports delegate to the latest's implementation.
//!
//! [`Enricher`] and [`Tool`] hold one instance's exports of whichever
//! version the component was built for and dispatch each call to it. No
//! generated type leaves `plugin`: `calls` turns the latest's values into
//! host types after checking them.

mod convert;
mod since_v0_1;
mod since_v0_2;
pub(super) mod since_v0_3;

use since_v0_2::Same;
pub(super) use since_v0_3 as latest;

use wasmtime::component::{InstancePre, Linker, Resource};
use wasmtime::{AsContextMut, Store};

use super::host_api::{CallContext, HostState};
use crate::args_edit::ArgsEdit;
use crate::schema::SchemaEdit;

pub(super) use convert::{
    Override, after_call as convert_after_call, extent, output as convert_output, output_to_wit,
};

/// The package every version shares.
pub const PACKAGE: &str = "toolhost:plugin";

/// A version of the contract this host implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `toolhost:plugin@0.1`.
    V0_1,
    /// `toolhost:plugin@0.2`.
    V0_2,
    /// `toolhost:plugin@0.3`.
    V0_3,
}

impl Version {
    /// Every version this host loads, oldest first.
    pub const ALL: [Version; 3] = [Version::V0_1, Version::V0_2, Version::V0_3];

    /// The version as the WIT package names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1.0",
            Self::V0_2 => "0.2.0",
            Self::V0_3 => "0.3.0",
        }
    }

    /// The version an export name's `@x.y.z` asks for: same major and, for
    /// 0.x, same minor (semver's compatibility for 0.x); a patch release of
    /// a version is that version.
    pub fn of_export(version: &str) -> Option<Self> {
        let theirs: Vec<&str> = version.split('.').collect();
        if theirs.len() != 3 || theirs.iter().any(|p| p.parse::<u32>().is_err()) {
            return None;
        }
        Self::ALL.into_iter().find(|v| {
            let ours: Vec<&str> = v.as_str().split('.').collect();
            theirs[..2] == ours[..2]
        })
    }

    /// `toolhost:plugin@0.1.0, toolhost:plugin@0.2.0, ...`, for messages.
    pub fn supported() -> String {
        Self::ALL
            .iter()
            .map(|v| format!("{PACKAGE}@{}", v.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every version's host imports, side by side in one linker: each version
/// has its own instance names (`toolhost:plugin/host@0.1.0`, `...@0.3.0`).
pub(super) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    since_v0_1::FullPlugin::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    since_v0_2::FullPlugin::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    since_v0_3::FullPlugin::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    Ok(())
}

/// Where a component's enricher and tool exports are, found once per plugin.
pub(super) enum Indices {
    V0_1 {
        enricher: Option<since_v0_1::enricher::GuestIndices>,
        tool: Option<since_v0_1::tool::GuestIndices>,
    },
    V0_2 {
        enricher: Option<since_v0_2::enricher::GuestIndices>,
        tool: Option<since_v0_2::tool::GuestIndices>,
    },
    V0_3 {
        enricher: Option<latest::enricher::GuestIndices>,
        tool: Option<latest::tool::GuestIndices>,
    },
}

impl Indices {
    /// Look the exports the component has up in `pre`.
    pub fn new(
        version: Version,
        pre: &InstancePre<HostState>,
        enricher: bool,
        tool: bool,
    ) -> Result<Self, String> {
        fn find<T>(
            wanted: bool,
            what: &str,
            f: impl FnOnce() -> wasmtime::Result<T>,
        ) -> Result<Option<T>, String> {
            wanted
                .then(f)
                .transpose()
                .map_err(|e| format!("bad {what} export: {e:#}"))
        }
        Ok(match version {
            Version::V0_1 => Self::V0_1 {
                enricher: find(enricher, "enricher", || {
                    since_v0_1::enricher::GuestIndices::new(pre)
                })?,
                tool: find(tool, "tool", || since_v0_1::tool::GuestIndices::new(pre))?,
            },
            Version::V0_2 => Self::V0_2 {
                enricher: find(enricher, "enricher", || {
                    since_v0_2::enricher::GuestIndices::new(pre)
                })?,
                tool: find(tool, "tool", || since_v0_2::tool::GuestIndices::new(pre))?,
            },
            Version::V0_3 => Self::V0_3 {
                enricher: find(enricher, "enricher", || latest::enricher::GuestIndices::new(pre))?,
                tool: find(tool, "tool", || latest::tool::GuestIndices::new(pre))?,
            },
        })
    }

    /// The exports of one new instance.
    pub fn load(
        &self,
        mut store: impl AsContextMut,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<(Option<Enricher>, Option<Tool>)> {
        Ok(match self {
            Self::V0_1 { enricher, tool } => (
                enricher
                    .as_ref()
                    .map(|i| i.load(&mut store, instance).map(Enricher::V0_1))
                    .transpose()?,
                tool.as_ref()
                    .map(|i| i.load(&mut store, instance).map(Tool::V0_1))
                    .transpose()?,
            ),
            Self::V0_2 { enricher, tool } => (
                enricher
                    .as_ref()
                    .map(|i| i.load(&mut store, instance).map(Enricher::V0_2))
                    .transpose()?,
                tool.as_ref()
                    .map(|i| i.load(&mut store, instance).map(Tool::V0_2))
                    .transpose()?,
            ),
            Self::V0_3 { enricher, tool } => (
                enricher
                    .as_ref()
                    .map(|i| i.load(&mut store, instance).map(Enricher::V0_3))
                    .transpose()?,
                tool.as_ref()
                    .map(|i| i.load(&mut store, instance).map(Tool::V0_3))
                    .transpose()?,
            ),
        })
    }
}

type R<T> = wasmtime::Result<T>;
type S<'a> = &'a mut Store<HostState>;

/// One instance's enricher export.
pub(super) enum Enricher {
    V0_1(since_v0_1::enricher::Guest),
    V0_2(since_v0_2::enricher::Guest),
    V0_3(latest::enricher::Guest),
}

impl Enricher {
    pub async fn supported_categories(&self, store: S<'_>) -> R<Result<Vec<String>, String>> {
        match self {
            Self::V0_1(g) => g.call_supported_categories(store).await,
            Self::V0_2(g) => g.call_supported_categories(store).await,
            Self::V0_3(g) => g.call_supported_categories(store).await,
        }
    }

    /// A 0.1 enricher cannot say which tools it transforms, so it is
    /// entered for every call of its categories.
    pub async fn enrich_schema(
        &self,
        store: S<'_>,
        tool: &str,
        schema: Resource<SchemaEdit>,
    ) -> R<Result<latest::enricher::Enriched, String>> {
        match self {
            Self::V0_1(g) => {
                g.call_enrich_schema(store, tool, schema).await?;
                Ok(Ok(latest::enricher::Enriched {
                    transforms_args: true,
                }))
            }
            Self::V0_2(g) => Ok(g.call_enrich_schema(store, tool, schema).await?.map(Same::same)),
            Self::V0_3(g) => g.call_enrich_schema(store, tool, schema).await,
        }
    }

    pub async fn transform_args(
        &self,
        store: S<'_>,
        tool: &str,
        args: Resource<ArgsEdit>,
    ) -> R<Result<(), String>> {
        match self {
            Self::V0_1(g) => g.call_transform_args(store, tool, args).await,
            Self::V0_2(g) => g.call_transform_args(store, tool, args).await,
            Self::V0_3(g) => g.call_transform_args(store, tool, args).await,
        }
    }

    pub async fn value_model(
        &self,
        store: S<'_>,
        tool: &str,
    ) -> R<Option<latest::value_model_types::ToolValueModel>> {
        Ok(match self {
            Self::V0_1(g) => g.call_value_model(store, tool).await?.map(Into::into),
            Self::V0_2(g) => g.call_value_model(store, tool).await?.same(),
            Self::V0_3(g) => g.call_value_model(store, tool).await?,
        })
    }

    pub async fn project_args(
        &self,
        store: S<'_>,
        prev_tool: &str,
        prev_result: &latest::types::Json,
        link: &latest::value_model_types::FollowUpLink,
    ) -> R<Option<Vec<String>>> {
        match self {
            Self::V0_1(g) => {
                g.call_project_args(store, prev_tool, prev_result, &link.clone().into())
                    .await
            }
            Self::V0_2(g) => {
                g.call_project_args(store, prev_tool, prev_result, &link.clone().same())
                    .await
            }
            Self::V0_3(g) => g.call_project_args(store, prev_tool, prev_result, link).await,
        }
    }

    pub async fn rate_limit_host(
        &self,
        store: S<'_>,
        tool: &str,
        args: Resource<ArgsEdit>,
    ) -> R<Option<String>> {
        match self {
            Self::V0_1(g) => g.call_rate_limit_host(store, tool, args).await,
            Self::V0_2(g) => g.call_rate_limit_host(store, tool, args).await,
            Self::V0_3(g) => g.call_rate_limit_host(store, tool, args).await,
        }
    }
}

/// One instance's tool export.
pub(super) enum Tool {
    V0_1(since_v0_1::tool::Guest),
    V0_2(since_v0_2::tool::Guest),
    V0_3(latest::tool::Guest),
}

impl Tool {
    pub async fn list_tools(&self, store: S<'_>) -> R<Result<Vec<latest::tool::ToolDefinition>, String>> {
        Ok(match self {
            Self::V0_1(g) => g
                .call_list_tools(store)
                .await?
                .map(|tools| tools.into_iter().map(Into::into).collect()),
            Self::V0_2(g) => g.call_list_tools(store).await?.map(Same::same),
            Self::V0_3(g) => g.call_list_tools(store).await?,
        })
    }

    pub async fn prepare_arguments(
        &self,
        store: S<'_>,
        tool: &str,
        args: Resource<ArgsEdit>,
    ) -> R<Result<(), String>> {
        match self {
            Self::V0_1(g) => g.call_prepare_arguments(store, tool, args).await,
            Self::V0_2(g) => g.call_prepare_arguments(store, tool, args).await,
            Self::V0_3(g) => g.call_prepare_arguments(store, tool, args).await,
        }
    }

    pub async fn before_call(
        &self,
        store: S<'_>,
        tool: &str,
        args: Resource<ArgsEdit>,
    ) -> R<latest::tool::BeforeCallDecision> {
        Ok(match self {
            Self::V0_1(g) => g.call_before_call(store, tool, args).await?.into(),
            Self::V0_2(g) => g.call_before_call(store, tool, args).await?.same(),
            Self::V0_3(g) => g.call_before_call(store, tool, args).await?,
        })
    }

    /// The answer to a question `before-call` asked: `None` from a plugin
    /// of a version that cannot ask (0.1, 0.2).
    pub async fn after_ask(
        &self,
        store: S<'_>,
        tool: &str,
        args: Resource<ArgsEdit>,
        answer: &latest::tool::AskAnswer,
    ) -> R<Option<latest::tool::BeforeCallDecision>> {
        Ok(match self {
            Self::V0_1(_) | Self::V0_2(_) => None,
            Self::V0_3(g) => Some(g.call_after_ask(store, tool, args, answer).await?),
        })
    }

    pub async fn execute(
        &self,
        store: S<'_>,
        tool: &str,
        args: &latest::types::Json,
        ctx: Resource<CallContext>,
    ) -> R<Result<latest::tool::ToolResult, latest::tool::ToolError>> {
        Ok(match self {
            Self::V0_1(g) => g
                .call_execute(store, tool, args, ctx)
                .await?
                .map(Into::into)
                .map_err(Into::into),
            Self::V0_2(g) => g
                .call_execute(store, tool, args, ctx)
                .await?
                .map(Same::same)
                .map_err(Same::same),
            Self::V0_3(g) => g.call_execute(store, tool, args, ctx).await?,
        })
    }

    pub async fn after_call(
        &self,
        store: S<'_>,
        tool: &str,
        outcome: &latest::tool::ToolResult,
        is_error: bool,
    ) -> R<Option<Override>> {
        Ok(match self {
            Self::V0_1(g) => g
                .call_after_call(store, tool, &outcome.clone().into(), is_error)
                .await?
                .map(Override::from),
            Self::V0_2(g) => g
                .call_after_call(store, tool, &outcome.clone().same(), is_error)
                .await?
                .map(Override::from),
            Self::V0_3(g) => g
                .call_after_call(store, tool, outcome, is_error)
                .await?
                .map(Override::from),
        })
    }

    pub async fn render_call(
        &self,
        store: S<'_>,
        tool: &str,
        args: &latest::types::Json,
        width: u32,
    ) -> R<Option<String>> {
        match self {
            Self::V0_1(g) => g.call_render_call(store, tool, args, width).await,
            Self::V0_2(g) => g.call_render_call(store, tool, args, width).await,
            Self::V0_3(g) => g.call_render_call(store, tool, args, width).await,
        }
    }

    pub async fn render_result(
        &self,
        store: S<'_>,
        tool: &str,
        outcome: &latest::tool::ToolResult,
        options: latest::tool::RenderOptions,
    ) -> R<Option<String>> {
        match self {
            Self::V0_1(g) => {
                g.call_render_result(store, tool, &outcome.clone().into(), options.into())
                    .await
            }
            Self::V0_2(g) => {
                g.call_render_result(store, tool, &outcome.clone().same(), options.same())
                    .await
            }
            Self::V0_3(g) => g.call_render_result(store, tool, outcome, options).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_match_on_minor() {
        assert_eq!(Version::of_export("0.1.0"), Some(Version::V0_1));
        assert_eq!(Version::of_export("0.1.7"), Some(Version::V0_1));
        assert_eq!(Version::of_export("0.2.0"), Some(Version::V0_2));
        assert_eq!(Version::of_export("0.3.0"), Some(Version::V0_3));
        assert_eq!(Version::of_export("0.4.0"), None);
        assert_eq!(Version::of_export("1.1.0"), None);
        assert_eq!(Version::of_export(""), None);
        assert_eq!(Version::of_export("0.2"), None);
    }
}
