/* reference-c: the reference enricher for "acme", a fictional issue tracker,
 * in C (wit-bindgen's C generator, zig cc, wasi-libc). Identical in
 * behaviour to reference-rust, -js and -py; the spec is
 * docs/plugins/reference.md, the comparison tests/languages.rs.
 *
 * Conventions of wit-bindgen C: strings are (ptr, len) and not
 * NUL-terminated; an export returning `result` returns true for ok and
 * fills `err` otherwise; whatever an export returns is freed by the
 * generated code after the call (so it must be malloc'd). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enricher_plugin.h"
#include "json.h"

typedef enricher_plugin_string_t wstr;

/* --- strings ------------------------------------------------------------- */

static char *cstr(const wstr *s) {
    char *out = malloc(s->len + 1);
    memcpy(out, s->ptr, s->len);
    out[s->len] = 0;
    return out;
}

static int wstr_eq(const wstr *s, const char *c) {
    return s->len == strlen(c) && memcmp(s->ptr, c, s->len) == 0;
}

/* A wit string owning a malloc'd copy of `c`. */
static wstr wdup(const char *c) {
    wstr s;
    enricher_plugin_string_dup(&s, c);
    return s;
}

/* A wit string borrowing `c` (for arguments to imports). */
static wstr wref(const char *c) {
    wstr s = {(uint8_t *)c, strlen(c)};
    return s;
}

/* --- sanitize: a port of toolhost_sdk::sanitize_field_name ---------------- */

#define MAX_FIELD_NAME_LEN 64

static uint32_t fnv1a32(const char *s) {
    uint32_t h = 0x811c9dc5u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x01000193u;
    return h;
}

/* Decode one UTF-8 code point at *p and advance. */
static uint32_t next_cp(const char **p) {
    const uint8_t *s = (const uint8_t *)*p;
    uint32_t cp;
    int n;
    if (s[0] < 0x80) { cp = s[0]; n = 1; }
    else if ((s[0] & 0xE0) == 0xC0) { cp = s[0] & 0x1F; n = 2; }
    else if ((s[0] & 0xF0) == 0xE0) { cp = s[0] & 0x0F; n = 3; }
    else { cp = s[0] & 0x07; n = 4; }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) { *p += i; return 0xFFFD; }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *p += n;
    return cp;
}

/* Latin for a Cyrillic letter (either case), or NULL. */
static const char *transliterate(uint32_t cp) {
    static const char *basic[32] = {"a", "b", "v", "g", "d", "e", "zh", "z", "i", "i", "k",
                                    "l", "m", "n", "o", "p", "r", "s", "t", "u", "f", "kh",
                                    "ts", "ch", "sh", "shch", "", "y", "", "e", "iu", "ia"};
    if (cp >= 0x0410 && cp <= 0x042F) return basic[cp - 0x0410]; /* А-Я */
    if (cp >= 0x0430 && cp <= 0x044F) return basic[cp - 0x0430]; /* а-я */
    switch (cp) {
    case 0x0401: case 0x0451: return "e";  /* Ё ё */
    case 0x0406: case 0x0456: return "i";  /* І і */
    case 0x0407: case 0x0457: return "i";  /* Ї ї */
    case 0x0404: case 0x0454: return "ie"; /* Є є */
    case 0x0490: case 0x0491: return "g";  /* Ґ ґ */
    case 0x040E: case 0x045E: return "u";  /* Ў ў */
    default: return NULL;
    }
}

static char *sanitize_field_name(const char *name) {
    size_t cap = strlen(name) * 4 + 1;
    char *raw = malloc(cap), *slug = malloc(cap);
    size_t n = 0, m = 0;
    int non_ascii = 0;
    for (const char *p = name; *p;) {
        uint32_t cp = next_cp(&p);
        if (cp < 0x80 && ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9'))) { raw[n++] = (char)cp; continue; }
        if (cp >= 'A' && cp <= 'Z') { raw[n++] = (char)(cp - 'A' + 'a'); continue; }
        if (cp >= 0x80) {
            non_ascii = 1;
            const char *latin = transliterate(cp);
            if (latin) { memcpy(raw + n, latin, strlen(latin)); n += strlen(latin); continue; }
        }
        raw[n++] = '_';
    }
    /* Collapse runs of '_', drop leading and trailing ones. */
    for (size_t i = 0; i < n; i++) {
        if (raw[i] == '_' && (m == 0 || slug[m - 1] == '_')) continue;
        slug[m++] = raw[i];
    }
    while (m > 0 && slug[m - 1] == '_') m--;
    const size_t prefix = 3, hash_len = 9;
    int hashed = non_ascii || m == 0 || prefix + m > MAX_FIELD_NAME_LEN;
    if (hashed) {
        if (m > MAX_FIELD_NAME_LEN - prefix - hash_len) m = MAX_FIELD_NAME_LEN - prefix - hash_len;
        while (m > 0 && slug[m - 1] == '_') m--;
    }
    slug[m] = 0;
    char *out = malloc(MAX_FIELD_NAME_LEN + 1);
    if (hashed)
        snprintf(out, MAX_FIELD_NAME_LEN + 1, "cf_%s%s%08x", slug, m ? "_" : "", (unsigned)fnv1a32(name));
    else
        snprintf(out, MAX_FIELD_NAME_LEN + 1, "cf_%s", slug);
    free(raw);
    free(slug);
    return out;
}

/* --- config ---------------------------------------------------------------- */

enum kind { NUMBER, SELECT, TEXT };

typedef struct {
    const char *id, *name;
    char *param;
    enum kind kind;
    const jvalue *options; /* SELECT: array of {id, name} */
} field;

typedef struct {
    jvalue *config;
    const char *host;
    const jvalue *projects;
    field *fields;
    size_t nfields;
} acme_t;

static acme_t *acme_state;
static char error_text[256];

static int fail(const char *fmt, const char *at, const char *key) {
    snprintf(error_text, sizeof error_text, fmt, at, key);
    return 0;
}

static int parse_field(const jvalue *f, const char *at, field *out) {
    if (!json_str(json_get(f, "id"))) return fail("config: %s.%s must be a string", at, "id");
    if (!json_str(json_get(f, "name"))) return fail("config: %s.%s must be a string", at, "name");
    out->id = json_str(json_get(f, "id"));
    out->name = json_str(json_get(f, "name"));
    const char *type = json_str(json_get(f, "type"));
    out->options = NULL;
    if (type && strcmp(type, "number") == 0) out->kind = NUMBER;
    else if (type && strcmp(type, "text") == 0) out->kind = TEXT;
    else if (type && strcmp(type, "select") == 0) {
        const jvalue *o = json_get(f, "options");
        int ok = o && o->type == J_ARRAY && o->len > 0;
        for (size_t i = 0; ok && i < o->len; i++)
            ok = json_str(json_get(o->items[i], "id")) && json_str(json_get(o->items[i], "name"));
        if (!ok) return fail("config: %s.%s must be a non-empty array of {id, name} strings", at, "options");
        out->kind = SELECT;
        out->options = o;
    } else return fail("config: %s.%s must be number, select or text", at, "type");
    out->param = sanitize_field_name(out->name);
    return 1;
}

/* The parsed config, built once per instance; NULL with error_text set if
 * it is malformed. */
static acme_t *acme(void) {
    if (acme_state) return acme_state;
    enricher_plugin_string_t text;
    toolhost_plugin_host_config(&text);
    jvalue *c = json_parse((const char *)text.ptr, text.len);
    enricher_plugin_string_free(&text);
    const jvalue *projects = json_get(c, "projects");
    const jvalue *fields = json_get(c, "custom_fields");
    int ok = 1;
    if (!json_str(json_get(c, "host"))) ok = fail("config: %s%s must be a string", "", "host");
    if (ok) {
        ok = projects && projects->type == J_ARRAY && projects->len > 0;
        for (size_t i = 0; ok && i < projects->len; i++) ok = projects->items[i]->type == J_STRING;
        if (!ok) fail("config: %s%s must be a non-empty array of strings", "", "projects");
    }
    if (ok && fields && fields->type != J_ARRAY) ok = fail("config: %s%s must be an array", "", "custom_fields");
    acme_t *a = calloc(1, sizeof *a);
    a->nfields = fields ? fields->len : 0;
    a->fields = calloc(a->nfields + 1, sizeof *a->fields);
    for (size_t i = 0; ok && i < a->nfields; i++) {
        char at[48];
        snprintf(at, sizeof at, "custom_fields[%zu]", i);
        ok = parse_field(fields->items[i], at, &a->fields[i]);
    }
    if (!ok) {
        json_free(c);
        free(a->fields);
        free(a);
        return NULL;
    }
    a->config = c;
    a->host = json_str(json_get(c, "host"));
    a->projects = projects;
    char line[96];
    snprintf(line, sizeof line, "acme: %zu custom fields, %zu projects", a->nfields, projects->len);
    wstr msg = wref(line);
    toolhost_plugin_host_log(TOOLHOST_PLUGIN_HOST_LOG_LEVEL_INFO, &msg);
    acme_state = a;
    return a;
}

/* --- host handles ------------------------------------------------------------ */

typedef toolhost_plugin_types_borrow_tool_schema_t schema_t;
typedef toolhost_plugin_types_borrow_tool_args_t args_t;

/* A list of borrowed wit strings (the list itself is malloc'd). */
static enricher_plugin_list_string_t wlist(const char *const *items, size_t n) {
    enricher_plugin_list_string_t l = {malloc((n ? n : 1) * sizeof(wstr)), n};
    for (size_t i = 0; i < n; i++) l.ptr[i] = wref(items[i]);
    return l;
}

static void remove_params(schema_t s, const char *const *names, size_t n) {
    enricher_plugin_list_string_t l = wlist(names, n);
    toolhost_plugin_types_method_tool_schema_remove_params(s, &l);
    free(l.ptr);
}

static int has_property(schema_t s, const char *name) {
    enricher_plugin_list_string_t names;
    toolhost_plugin_types_method_tool_schema_property_names(s, &names);
    int found = 0;
    for (size_t i = 0; i < names.len; i++) found |= wstr_eq(&names.ptr[i], name);
    enricher_plugin_list_string_free(&names);
    return found;
}

static void log_edit_error(const char *what, toolhost_plugin_types_edit_error_t *e) {
    char line[128];
    snprintf(line, sizeof line, "acme: %s refused (edit-error %d)", what, (int)e->tag);
    wstr msg = wref(line);
    toolhost_plugin_host_log(TOOLHOST_PLUGIN_HOST_LOG_LEVEL_ERROR, &msg);
    toolhost_plugin_types_edit_error_free(e);
}

/* A refused schema edit: its message in error_text, for enrich-schema's err (the
 * host then undoes this plugin's changes to the tool and logs it). */
static bool refused(const char *what, toolhost_plugin_types_edit_error_t *e) {
    snprintf(error_text, sizeof error_text, "%s refused (edit-error %d)", what, (int)e->tag);
    toolhost_plugin_types_edit_error_free(e);
    return false;
}

static bool enrich_issue(acme_t *a, int create, schema_t s) {
    static const char *const gone[] = {"points", "customFields", "components"};
    toolhost_plugin_types_edit_error_t err;
    bool ok = true;
    remove_params(s, gone, 3);
    if (has_property(s, "projectId")) {
        const char **names = malloc((a->projects->len + 1) * sizeof *names);
        for (size_t i = 0; i < a->projects->len; i++) names[i] = a->projects->items[i]->text;
        enricher_plugin_list_string_t values = wlist(names, a->projects->len);
        wstr name = wref("projectId");
        if (!toolhost_plugin_types_method_tool_schema_set_enum(s, &name, &values, &err)) ok = refused("set-enum", &err);
        free(values.ptr);
        free(names);
        if (ok && create && !toolhost_plugin_types_method_tool_schema_set_required(s, &name, true, &err))
            ok = refused("set-required", &err);
    }
    for (size_t i = 0; ok && i < a->nfields; i++) {
        field *f = &a->fields[i];
        jvalue *prop = json_new(J_OBJECT);
        json_set(prop, "type", json_new_string(f->kind == NUMBER ? "number" : "string"));
        if (f->kind == SELECT) {
            jvalue *names = json_new(J_ARRAY);
            for (size_t j = 0; j < f->options->len; j++)
                json_push(names, json_new_string(json_str(json_get(f->options->items[j], "name"))));
            json_set(prop, "enum", names);
        }
        json_set(prop, "description", json_new_string(f->name));
        char *text = json_print(prop, NULL);
        json_free(prop);
        wstr name = wref(f->param), schema = wref(text);
        bool replaced;
        if (!toolhost_plugin_types_method_tool_schema_set_property(s, &name, &schema, &replaced, &err))
            ok = refused("set-property", &err);
        free(text);
    }
    return ok;
}

/* --- the enricher exports ------------------------------------------------------ */

bool exports_toolhost_plugin_enricher_supported_categories(exports_toolhost_plugin_enricher_list_category_t *ret,
                                                           enricher_plugin_string_t *err) {
    if (!acme()) {
        *err = wdup(error_text);
        return false;
    }
    ret->len = 1;
    ret->ptr = malloc(sizeof *ret->ptr);
    ret->ptr[0] = wdup("issue_tracker");
    return true;
}

bool exports_toolhost_plugin_enricher_enrich_schema(enricher_plugin_string_t *tool, schema_t schema,
                                                    exports_toolhost_plugin_enricher_enriched_t *ret,
                                                    enricher_plugin_string_t *err) {
    acme_t *a = acme();
    bool ok = true;
    /* Custom fields are mapped back for the two tools that get them. */
    ret->transforms_args = wstr_eq(tool, "create_issue") || wstr_eq(tool, "update_issue");
    if (a && ret->transforms_args) {
        ok = enrich_issue(a, wstr_eq(tool, "create_issue"), schema);
    } else if (a && wstr_eq(tool, "get_issues")) {
        static const char *const gone[] = {"nativeQuery"};
        static const char *const states[] = {"todo", "in_progress", "done"};
        remove_params(schema, gone, 1);
        wstr name = wref("stateCategory"), desc = wref("Workflow state category");
        enricher_plugin_list_string_t values = wlist(states, 3);
        toolhost_plugin_types_edit_error_t refusal;
        if (!toolhost_plugin_types_method_tool_schema_add_enum_param(schema, &name, &desc, &values, &refusal))
            ok = refused("add-enum-param", &refusal);
        free(values.ptr);
    }
    enricher_plugin_string_free(tool);
    toolhost_plugin_types_tool_schema_drop_borrow(schema); /* a lent handle must be dropped */
    if (!ok) *err = wdup(error_text);
    return ok;
}

/* Map one custom-field argument to what the backend takes; NULL with
 * error_text set for an unknown option. Takes `value`. */
static jvalue *backend_value(const field *f, jvalue *value) {
    if (f->kind != SELECT) return value;
    char *wanted = value->type == J_STRING ? strdup(value->text) : json_print(value, NULL);
    json_free(value);
    for (size_t j = 0; j < f->options->len; j++) {
        const jvalue *o = f->options->items[j];
        if (strcmp(json_str(json_get(o, "name")), wanted) == 0) {
            jvalue *out = json_new(J_OBJECT);
            json_set(out, "id", json_new_string(json_str(json_get(o, "id"))));
            free(wanted);
            return out;
        }
    }
    size_t n = (size_t)snprintf(error_text, sizeof error_text, "%s: unknown option '%s' (expected ", f->name, wanted);
    for (size_t j = 0; j < f->options->len && n < sizeof error_text; j++)
        n += (size_t)snprintf(error_text + n, sizeof error_text - n, "%s%s", j ? ", " : "",
                              json_str(json_get(f->options->items[j], "name")));
    if (n < sizeof error_text) snprintf(error_text + n, sizeof error_text - n, ")");
    free(wanted);
    return NULL;
}

static bool transform_args(enricher_plugin_string_t *tool, args_t args, enricher_plugin_string_t *err) {
    acme_t *a = acme();
    int applies = a && (wstr_eq(tool, "create_issue") || wstr_eq(tool, "update_issue"));
    enricher_plugin_string_free(tool);
    if (!applies) return true;
    jvalue *collected = json_new(J_OBJECT);
    toolhost_plugin_types_edit_error_t edit;
    for (size_t i = 0; i < a->nfields; i++) {
        field *f = &a->fields[i];
        wstr key = wref(f->param);
        toolhost_plugin_types_option_json_t removed;
        if (!toolhost_plugin_types_method_tool_args_remove(args, &key, &removed, &edit)) {
            log_edit_error("remove", &edit);
            continue;
        }
        if (!removed.is_some) continue;
        jvalue *value = json_parse((const char *)removed.val.ptr, removed.val.len);
        enricher_plugin_string_free(&removed.val);
        if (!value) continue;
        jvalue *mapped = backend_value(f, value);
        if (!mapped) {
            json_free(collected);
            *err = wdup(error_text);
            return false;
        }
        json_set(collected, f->id, mapped);
    }
    if (collected->len > 0) {
        wstr key = wref("customFields");
        toolhost_plugin_types_json_t existing;
        jvalue *merged = NULL;
        if (toolhost_plugin_types_method_tool_args_get(args, &key, &existing)) {
            merged = json_parse((const char *)existing.ptr, existing.len);
            enricher_plugin_string_free(&existing);
        }
        if (!merged || merged->type != J_OBJECT) {
            json_free(merged);
            merged = json_new(J_OBJECT);
        }
        for (size_t i = 0; i < collected->len; i++) {
            json_set(merged, collected->keys[i], collected->items[i]);
            collected->items[i] = NULL;
        }
        char *text = json_print(merged, NULL);
        json_free(merged);
        wstr value = wref(text);
        if (!toolhost_plugin_types_method_tool_args_set(args, &key, &value, &edit)) log_edit_error("set", &edit);
        free(text);
    }
    json_free(collected);
    return true;
}

bool exports_toolhost_plugin_enricher_transform_args(enricher_plugin_string_t *tool, args_t args,
                                                     enricher_plugin_string_t *err) {
    bool ok = transform_args(tool, args, err);
    toolhost_plugin_types_tool_args_drop_borrow(args); /* a lent handle must be dropped */
    return ok;
}

static void link_to(toolhost_plugin_value_model_types_follow_up_link_t *l, const char *tool, float p) {
    l->tool = wdup(tool);
    l->probability = p;
    l->projection.is_some = true;
    l->projection.val = wdup("key");
    l->projection_arg.is_some = true;
    l->projection_arg.val = wdup("key");
}

bool exports_toolhost_plugin_enricher_value_model(enricher_plugin_string_t *tool,
                                                  exports_toolhost_plugin_enricher_tool_value_model_t *ret) {
    int issues = wstr_eq(tool, "get_issues"), issue = wstr_eq(tool, "get_issue");
    int writes = wstr_eq(tool, "create_issue") || wstr_eq(tool, "update_issue");
    enricher_plugin_string_free(tool);
    if (!issues && !issue && !writes) return false;
    memset(ret, 0, sizeof *ret); /* every option: none */
    if (writes) {
        ret->side_effect.is_some = true;
        ret->side_effect.val = TOOLHOST_PLUGIN_VALUE_MODEL_TYPES_SIDE_EFFECT_MUTATES_EXTERNAL;
        ret->invalidates.is_some = true;
        ret->invalidates.val.len = 2;
        ret->invalidates.val.ptr = malloc(2 * sizeof(wstr));
        ret->invalidates.val.ptr[0] = wdup("get_issues");
        ret->invalidates.val.ptr[1] = wdup("get_issue");
        return true;
    }
    ret->value_class.is_some = true;
    ret->value_class.val = issues ? TOOLHOST_PLUGIN_VALUE_MODEL_TYPES_VALUE_CLASS_SUPPORTING
                                  : TOOLHOST_PLUGIN_VALUE_MODEL_TYPES_VALUE_CLASS_CRITICAL;
    ret->side_effect.is_some = true;
    ret->side_effect.val = TOOLHOST_PLUGIN_VALUE_MODEL_TYPES_SIDE_EFFECT_READ_ONLY;
    ret->cost.is_some = true;
    ret->cost.val.typical_kb.is_some = true;
    ret->cost.val.typical_kb.val = issues ? 4.0f : 2.0f;
    ret->cost.val.freshness_ttl_s.is_some = true;
    ret->cost.val.freshness_ttl_s.val = 60;
    if (issues) {
        ret->cost.val.max_kb.is_some = true;
        ret->cost.val.max_kb.val = 40.0f;
        ret->cost.val.latency_ms_p50.is_some = true;
        ret->cost.val.latency_ms_p50.val = 450;
    }
    ret->follow_ups.is_some = true;
    ret->follow_ups.val.len = 1;
    ret->follow_ups.val.ptr = malloc(sizeof *ret->follow_ups.val.ptr);
    if (issues) link_to(&ret->follow_ups.val.ptr[0], "get_issue", 0.55f);
    else link_to(&ret->follow_ups.val.ptr[0], "get_issue_comments", 0.5f);
    return true;
}

bool exports_toolhost_plugin_enricher_project_args(enricher_plugin_string_t *prev_tool, exports_toolhost_plugin_enricher_json_t *prev_result,
                                                   exports_toolhost_plugin_enricher_follow_up_link_t *link,
                                                   exports_toolhost_plugin_enricher_list_json_t *ret) {
    int applies = wstr_eq(prev_tool, "get_issues") &&
                  (wstr_eq(&link->tool, "get_issue") || wstr_eq(&link->tool, "get_issue_comments"));
    jvalue *result = applies ? json_parse((const char *)prev_result->ptr, prev_result->len) : NULL;
    enricher_plugin_string_free(prev_tool);
    enricher_plugin_string_free(prev_result);
    toolhost_plugin_value_model_types_follow_up_link_free(link);
    if (!applies) return false;
    const jvalue *issues = json_get(result, "issues");
    const char *keys[3];
    size_t n = 0;
    for (size_t i = 0; issues && issues->type == J_ARRAY && i < issues->len && n < 3; i++) {
        const char *key = json_str(json_get(issues->items[i], "key"));
        int seen = !key;
        for (size_t j = 0; !seen && j < n; j++) seen = strcmp(keys[j], key) == 0;
        if (!seen) keys[n++] = key;
    }
    ret->len = n;
    ret->ptr = malloc((n ? n : 1) * sizeof *ret->ptr);
    for (size_t i = 0; i < n; i++) {
        jvalue *item = json_new(J_OBJECT);
        json_set(item, "key", json_new_string(keys[i]));
        char *text = json_print(item, NULL);
        ret->ptr[i] = wdup(text);
        free(text);
        json_free(item);
    }
    json_free(result);
    return true;
}

bool exports_toolhost_plugin_enricher_rate_limit_host(enricher_plugin_string_t *tool, args_t args,
                                                      enricher_plugin_string_t *ret) {
    toolhost_plugin_types_tool_args_drop_borrow(args); /* a lent handle must be dropped */
    enricher_plugin_string_free(tool);
    acme_t *a = acme();
    if (!a) return false;
    *ret = wdup(a->host);
    return true;
}
