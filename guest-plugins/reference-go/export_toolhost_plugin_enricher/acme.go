// Package export_toolhost_plugin_enricher is reference-go: the reference
// enricher for "acme", a fictional issue tracker, in Go (wit-bindgen's Go
// generator, GOOS=wasip1, the WASI preview-1 reactor adapter). Identical in
// behaviour to reference-rust, -js, -py and -c; the spec is
// docs/plugins/reference.md, the comparison tests/languages.rs.
//
// wit-bindgen's Go bindings call the functions of this package (its name is
// the generator's): `result` is witTypes.Result, `option` witTypes.Option,
// enums are uint8 constants, and lent handles are *ToolSchema/*ToolArgs that
// each export must Drop() before it returns (the host traps otherwise).
package export_toolhost_plugin_enricher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	enricher "wit_component/toolhost_plugin_enricher"
	"wit_component/toolhost_plugin_host"
	"wit_component/toolhost_plugin_types"
	vm "wit_component/toolhost_plugin_value_model_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// --- sanitize: a port of toolhost_sdk::sanitize_field_name ------------------

const maxFieldNameLen = 64

var cyrillic = map[rune]string{
	'а': "a", 'б': "b", 'в': "v", 'г': "g", 'д': "d", 'е': "e", 'ё': "e",
	'ж': "zh", 'з': "z", 'и': "i", 'й': "i", 'к': "k", 'л': "l", 'м': "m",
	'н': "n", 'о': "o", 'п': "p", 'р': "r", 'с': "s", 'т': "t", 'у': "u",
	'ф': "f", 'х': "kh", 'ц': "ts", 'ч': "ch", 'ш': "sh", 'щ': "shch",
	'ъ': "", 'ы': "y", 'ь': "", 'э': "e", 'ю': "iu", 'я': "ia", 'і': "i",
	'ї': "i", 'є': "ie", 'ґ': "g", 'ў': "u",
}

func fnv1a32(s string) uint32 {
	h := uint32(0x811c9dc5)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 0x01000193
	}
	return h
}

func sanitizeFieldName(name string) string {
	var raw strings.Builder
	nonASCII := false
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			raw.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			raw.WriteRune(c - 'A' + 'a')
		case c >= 0x80:
			nonASCII = true
			if latin, ok := cyrillic[unicode.ToLower(c)]; ok {
				raw.WriteString(latin)
			} else {
				raw.WriteByte('_')
			}
		default:
			raw.WriteByte('_')
		}
	}
	// Collapse runs of '_', drop leading and trailing ones.
	var slug []byte
	for _, b := range []byte(raw.String()) {
		if b == '_' && (len(slug) == 0 || slug[len(slug)-1] == '_') {
			continue
		}
		slug = append(slug, b)
	}
	s := strings.TrimRight(string(slug), "_")
	const prefix, hashLen = "cf_", 9
	hashed := nonASCII || s == "" || len(prefix)+len(s) > maxFieldNameLen
	if !hashed {
		return prefix + s
	}
	s = strings.TrimRight(s[:min(len(s), maxFieldNameLen-len(prefix)-hashLen)], "_")
	if s != "" {
		s += "_"
	}
	return fmt.Sprintf("%s%s%08x", prefix, s, fnv1a32(name))
}

// --- JSON objects that keep their key order ------------------------------------

type member struct {
	key   string
	value json.RawMessage
}

// object is a JSON object in insertion order (Go maps sort their keys).
type object []member

func (o *object) set(key string, value json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = value
			return
		}
	}
	*o = append(*o, member{key, value})
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(dump(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// parseObject reads a JSON object keeping its key order; false if the text
// is not one.
func parseObject(text string) (object, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var o object
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		o.set(key.(string), value)
	}
	return o, true
}

// dump is compact JSON text without HTML escaping, like the other languages.
func dump(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only our own plain values are dumped
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// --- config ----------------------------------------------------------------------

type option struct{ id, name string }

type field struct {
	id, name, param, kind string
	options               []option // select only
}

type acme struct {
	host     string
	projects []string
	fields   []field
}

func stringAt(obj any, key, at string) (string, error) {
	m, _ := obj.(map[string]any)
	s, ok := m[key].(string)
	if !ok {
		return "", fmt.Errorf("config: %s.%s must be a string", at, key)
	}
	return s, nil
}

func parseField(f any, at string) (field, error) {
	id, err := stringAt(f, "id", at)
	if err != nil {
		return field{}, err
	}
	name, err := stringAt(f, "name", at)
	if err != nil {
		return field{}, err
	}
	m := f.(map[string]any)
	out := field{id: id, name: name, param: sanitizeFieldName(name)}
	out.kind, _ = m["type"].(string)
	switch out.kind {
	case "number", "text":
	case "select":
		raw, _ := m["options"].([]any)
		if len(raw) == 0 {
			return field{}, fmt.Errorf("config: %s.options must be a non-empty array of {id, name} strings", at)
		}
		for _, o := range raw {
			om, _ := o.(map[string]any)
			oid, okID := om["id"].(string)
			oname, okName := om["name"].(string)
			if !okID || !okName {
				return field{}, fmt.Errorf("config: %s.options must be a non-empty array of {id, name} strings", at)
			}
			out.options = append(out.options, option{oid, oname})
		}
	default:
		return field{}, fmt.Errorf("config: %s.type must be number, select or text", at)
	}
	return out, nil
}

func parseConfig(text string) (*acme, error) {
	var c map[string]any
	_ = json.Unmarshal([]byte(text), &c) // not an object: the checks below say what is missing
	host, ok := c["host"].(string)
	if !ok {
		return nil, fmt.Errorf("config: host must be a string")
	}
	a := &acme{host: host}
	rawProjects, _ := c["projects"].([]any)
	for _, p := range rawProjects {
		if s, ok := p.(string); ok {
			a.projects = append(a.projects, s)
		}
	}
	if len(rawProjects) == 0 || len(a.projects) != len(rawProjects) {
		return nil, fmt.Errorf("config: projects must be a non-empty array of strings")
	}
	rawFields, ok := c["custom_fields"].([]any)
	if _, present := c["custom_fields"]; present && !ok {
		return nil, fmt.Errorf("config: custom_fields must be an array")
	}
	for i, f := range rawFields {
		parsed, err := parseField(f, fmt.Sprintf("custom_fields[%d]", i))
		if err != nil {
			return nil, err
		}
		a.fields = append(a.fields, parsed)
	}
	return a, nil
}

var state *acme

// config is the parsed config, built once per instance (on the first call).
func config() (*acme, error) {
	if state != nil {
		return state, nil
	}
	a, err := parseConfig(toolhost_plugin_host.Config())
	if err != nil {
		return nil, err
	}
	toolhost_plugin_host.Log(toolhost_plugin_host.LogLevel_Info,
		fmt.Sprintf("acme: %d custom fields, %d projects", len(a.fields), len(a.projects)))
	state = a
	return a, nil
}

// mustConfig is for the exports after `supported-categories`, which has
// already refused a malformed config (the plugin is then not loaded).
func mustConfig() *acme {
	a, err := config()
	if err != nil {
		panic(err)
	}
	return a
}

// --- the enricher exports ----------------------------------------------------------

func SupportedCategories() witTypes.Result[[]string, string] {
	if _, err := config(); err != nil {
		return witTypes.Err[[]string](err.Error())
	}
	return witTypes.Ok[[]string, string]([]string{"issue_tracker"})
}

// logRefused logs an edit the host refused (it never should here).
func logRefused[T any](what string, r witTypes.Result[T, toolhost_plugin_types.EditError]) {
	if r.IsErr() {
		toolhost_plugin_host.Log(toolhost_plugin_host.LogLevel_Error,
			fmt.Sprintf("acme: %s refused (edit-error %d)", what, r.Err().Tag()))
	}
}

type property struct {
	Type        string   `json:"type"`
	Enum        []string `json:"enum,omitempty"`
	Description string   `json:"description"`
}

// EnrichSchema reports whether the tool's arguments are transformed (custom
// fields are mapped back for the two tools that get them), or the first
// edit the host refused.
func EnrichSchema(tool string, schema *toolhost_plugin_types.ToolSchema) witTypes.Result[enricher.Enriched, string] {
	defer schema.Drop() // a lent handle must be dropped
	if err := enrich(tool, schema, mustConfig()); err != nil {
		return witTypes.Err[enricher.Enriched](err.Error())
	}
	return witTypes.Ok[enricher.Enriched, string](enricher.Enriched{
		TransformsArgs: tool == "create_issue" || tool == "update_issue",
	})
}

// refused is the edit the host refused, or nil.
func refused[T any](what string, r witTypes.Result[T, toolhost_plugin_types.EditError]) error {
	if r.IsErr() {
		return fmt.Errorf("%s refused (edit-error %d)", what, r.Err().Tag())
	}
	return nil
}

func enrich(tool string, schema *toolhost_plugin_types.ToolSchema, a *acme) error {
	switch tool {
	case "create_issue", "update_issue":
		schema.RemoveParams([]string{"points", "customFields", "components"})
		for _, p := range schema.PropertyNames() {
			if p == "projectId" {
				if err := refused("set-enum", schema.SetEnum("projectId", a.projects)); err != nil {
					return err
				}
				if tool == "create_issue" {
					if err := refused("set-required", schema.SetRequired("projectId", true)); err != nil {
						return err
					}
				}
			}
		}
		for _, f := range a.fields {
			prop := property{Type: "string", Description: f.name}
			switch f.kind {
			case "number":
				prop.Type = "number"
			case "select":
				for _, o := range f.options {
					prop.Enum = append(prop.Enum, o.name)
				}
			}
			if err := refused("set-property", schema.SetProperty(f.param, string(dump(prop)))); err != nil {
				return err
			}
		}
	case "get_issues":
		schema.RemoveParams([]string{"nativeQuery"})
		return refused("add-enum-param", schema.AddEnumParam("stateCategory", "Workflow state category",
			[]string{"todo", "in_progress", "done"}))
	}
	return nil
}

// backendValue maps one custom-field argument to what the backend takes.
func backendValue(f field, value json.RawMessage) (json.RawMessage, error) {
	if f.kind != "select" {
		return value, nil
	}
	var wanted string
	if json.Unmarshal(value, &wanted) != nil {
		var compact bytes.Buffer
		_ = json.Compact(&compact, value) // the host sends valid JSON
		wanted = compact.String()
	}
	names := make([]string, len(f.options))
	for i, o := range f.options {
		if o.name == wanted {
			return dump(object{{"id", dump(o.id)}}), nil
		}
		names[i] = o.name
	}
	return nil, fmt.Errorf("%s: unknown option '%s' (expected %s)", f.name, wanted, strings.Join(names, ", "))
}

func TransformArgs(tool string, args *toolhost_plugin_types.ToolArgs) witTypes.Result[witTypes.Unit, string] {
	defer args.Drop() // a lent handle must be dropped
	ok := witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
	if tool != "create_issue" && tool != "update_issue" {
		return ok
	}
	var collected object
	for _, f := range mustConfig().fields {
		removed := args.Remove(f.param)
		if removed.IsErr() {
			logRefused("remove", removed)
			continue
		}
		if removed.Ok().IsNone() {
			continue
		}
		value, err := backendValue(f, json.RawMessage(removed.Ok().Some()))
		if err != nil {
			return witTypes.Err[witTypes.Unit](err.Error())
		}
		collected.set(f.id, value)
	}
	if len(collected) == 0 {
		return ok
	}
	var merged object
	if existing := args.Get("customFields"); existing.IsSome() {
		merged, _ = parseObject(existing.Some()) // not an object: replaced
	}
	for _, m := range collected {
		merged.set(m.key, m.value)
	}
	logRefused("set", args.Set("customFields", string(dump(merged))))
	return ok
}

func followUp(tool string, probability float32) []vm.FollowUpLink {
	return []vm.FollowUpLink{{
		Tool:          tool,
		Probability:   probability,
		Projection:    witTypes.Some("key"),
		ProjectionArg: witTypes.Some("key"),
	}}
}

func ValueModel(tool string) witTypes.Option[vm.ToolValueModel] {
	switch tool {
	case "get_issues":
		return witTypes.Some(vm.ToolValueModel{
			ValueClass: witTypes.Some(vm.ValueClass_Supporting),
			SideEffect: witTypes.Some(vm.SideEffect_ReadOnly),
			Cost: witTypes.Some(vm.CostModel{
				TypicalKb:     witTypes.Some[float32](4),
				MaxKb:         witTypes.Some[float32](40),
				LatencyMsP50:  witTypes.Some[uint32](450),
				FreshnessTtlS: witTypes.Some[uint32](60),
			}),
			FollowUps: witTypes.Some(followUp("get_issue", 0.55)),
		})
	case "get_issue":
		return witTypes.Some(vm.ToolValueModel{
			ValueClass: witTypes.Some(vm.ValueClass_Critical),
			SideEffect: witTypes.Some(vm.SideEffect_ReadOnly),
			Cost: witTypes.Some(vm.CostModel{
				TypicalKb:     witTypes.Some[float32](2),
				FreshnessTtlS: witTypes.Some[uint32](60),
			}),
			FollowUps: witTypes.Some(followUp("get_issue_comments", 0.5)),
		})
	case "create_issue", "update_issue":
		return witTypes.Some(vm.ToolValueModel{
			SideEffect:  witTypes.Some(vm.SideEffect_MutatesExternal),
			Invalidates: witTypes.Some([]string{"get_issues", "get_issue"}),
		})
	}
	return witTypes.None[vm.ToolValueModel]()
}

func ProjectArgs(prevTool string, prevResult string, link vm.FollowUpLink) witTypes.Option[[]string] {
	if prevTool != "get_issues" || (link.Tool != "get_issue" && link.Tool != "get_issue_comments") {
		return witTypes.None[[]string]()
	}
	var result struct {
		Issues []any `json:"issues"`
	}
	_ = json.Unmarshal([]byte(prevResult), &result) // not the expected shape: no keys
	keys := []string{}
	for _, issue := range result.Issues {
		m, _ := issue.(map[string]any)
		key, ok := m["key"].(string)
		if !ok || contains(keys, key) {
			continue
		}
		keys = append(keys, key)
		if len(keys) == 3 {
			break
		}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(dump(object{{"key", dump(k)}}))
	}
	return witTypes.Some(out)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func RateLimitHost(tool string, args *toolhost_plugin_types.ToolArgs) witTypes.Option[string] {
	args.Drop() // a lent handle must be dropped
	return witTypes.Some(mustConfig().host)
}
