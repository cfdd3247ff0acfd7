// Package export_toolhost_plugin_enricher is {{name}}: a toolhost enricher
// plugin (Go). Build with `make`; check with `toolhost check {{name}}.wasm`.
// Bindings come from `wit-bindgen go`, which names this package and calls
// its functions: `result` is witTypes.Result, `option` witTypes.Option, and
// an export must Drop() every handle it is lent before it returns.
package export_toolhost_plugin_enricher

import (
	enricher "wit_component/toolhost_plugin_enricher"
	"wit_component/toolhost_plugin_host"
	"wit_component/toolhost_plugin_types"
	vm "wit_component/toolhost_plugin_value_model_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

func SupportedCategories() witTypes.Result[[]string, string] {
	toolhost_plugin_host.Log(toolhost_plugin_host.LogLevel_Info, "{{name}}: loaded")
	return witTypes.Ok[[]string, string]([]string{"issue_tracker"})
}

// EnrichSchema says whether calls to `tool` need TransformArgs (this plugin
// maps no arguments); an Err undoes this plugin's changes to the tool.
func EnrichSchema(tool string, schema *toolhost_plugin_types.ToolSchema) witTypes.Result[enricher.Enriched, string] {
	defer schema.Drop()
	if tool == "create_issue" {
		if r := schema.AddEnumParam("label", "Issue label", []string{"bug", "feature"}); r.IsErr() {
			return witTypes.Err[enricher.Enriched]("label: the host refused the edit")
		}
	}
	return witTypes.Ok[enricher.Enriched, string](enricher.Enriched{TransformsArgs: false})
}

func TransformArgs(tool string, args *toolhost_plugin_types.ToolArgs) witTypes.Result[witTypes.Unit, string] {
	args.Drop()
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

func ValueModel(tool string) witTypes.Option[vm.ToolValueModel] {
	return witTypes.None[vm.ToolValueModel]()
}

func ProjectArgs(prevTool string, prevResult string, link vm.FollowUpLink) witTypes.Option[[]string] {
	return witTypes.None[[]string]()
}

func RateLimitHost(tool string, args *toolhost_plugin_types.ToolArgs) witTypes.Option[string] {
	args.Drop()
	return witTypes.None[string]()
}
