/* {{name}}: a toolhost enricher plugin (C). Build with `make`; check with
 * `toolhost check {{name}}.wasm`. Bindings come from `wit-bindgen c`: strings
 * are (ptr, len), an export returning `result` returns true for ok, and the
 * generated code frees what an export returns, so return malloc'd memory. */
#include <stdlib.h>
#include <string.h>

#include "enricher_plugin.h"

static enricher_plugin_string_t borrowed(const char *s) {
    enricher_plugin_string_t out = {(uint8_t *)s, strlen(s)};
    return out;
}

bool exports_toolhost_plugin_enricher_supported_categories(exports_toolhost_plugin_enricher_list_category_t *ret,
                                                           enricher_plugin_string_t *err) {
    (void)err;
    enricher_plugin_string_t msg = borrowed("{{name}}: loaded");
    toolhost_plugin_host_log(TOOLHOST_PLUGIN_HOST_LOG_LEVEL_INFO, &msg);
    ret->len = 1;
    ret->ptr = malloc(sizeof *ret->ptr);
    enricher_plugin_string_dup(&ret->ptr[0], "issue_tracker");
    return true;
}

/* Says whether calls to `tool` need transform-args (this plugin maps no
 * arguments); returning false with *err undoes this plugin's changes to it. */
bool exports_toolhost_plugin_enricher_enrich_schema(enricher_plugin_string_t *tool,
                                                    toolhost_plugin_types_borrow_tool_schema_t schema,
                                                    exports_toolhost_plugin_enricher_enriched_t *ret,
                                                    enricher_plugin_string_t *err) {
    bool ok = true;
    if (tool->len == strlen("create_issue") && memcmp(tool->ptr, "create_issue", tool->len) == 0) {
        enricher_plugin_string_t values[2] = {borrowed("bug"), borrowed("feature")};
        enricher_plugin_list_string_t list = {values, 2};
        enricher_plugin_string_t name = borrowed("label"), desc = borrowed("Issue label");
        toolhost_plugin_types_edit_error_t e;
        if (!toolhost_plugin_types_method_tool_schema_add_enum_param(schema, &name, &desc, &list, &e)) {
            toolhost_plugin_types_edit_error_free(&e);
            enricher_plugin_string_dup(err, "label: the host refused the edit");
            ok = false;
        }
    }
    ret->transforms_args = false;
    enricher_plugin_string_free(tool);
    toolhost_plugin_types_tool_schema_drop_borrow(schema); /* a lent handle must be dropped */
    return ok;
}

bool exports_toolhost_plugin_enricher_transform_args(enricher_plugin_string_t *tool,
                                                     toolhost_plugin_types_borrow_tool_args_t args,
                                                     enricher_plugin_string_t *err) {
    (void)err;
    toolhost_plugin_types_tool_args_drop_borrow(args);
    enricher_plugin_string_free(tool);
    return true;
}

bool exports_toolhost_plugin_enricher_value_model(enricher_plugin_string_t *tool,
                                                  exports_toolhost_plugin_enricher_tool_value_model_t *ret) {
    (void)ret;
    enricher_plugin_string_free(tool);
    return false;
}

bool exports_toolhost_plugin_enricher_project_args(enricher_plugin_string_t *prev_tool,
                                                   exports_toolhost_plugin_enricher_json_t *prev_result,
                                                   exports_toolhost_plugin_enricher_follow_up_link_t *link,
                                                   exports_toolhost_plugin_enricher_list_json_t *ret) {
    (void)ret;
    enricher_plugin_string_free(prev_tool);
    enricher_plugin_string_free(prev_result);
    toolhost_plugin_value_model_types_follow_up_link_free(link);
    return false;
}

bool exports_toolhost_plugin_enricher_rate_limit_host(enricher_plugin_string_t *tool,
                                                      toolhost_plugin_types_borrow_tool_args_t args,
                                                      enricher_plugin_string_t *ret) {
    (void)ret;
    toolhost_plugin_types_tool_args_drop_borrow(args);
    enricher_plugin_string_free(tool);
    return false;
}
