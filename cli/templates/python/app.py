"""{{name}}: a toolhost enricher plugin (Python, componentize-py).

Build with `make`; check with `toolhost check {{name}}.wasm`. A `result`
export returns its ok value or raises `componentize_py_types.Err(message)`.
"""

from wit_world import exports
from wit_world.imports import host


class Enricher(exports.Enricher):
    def supported_categories(self):
        host.log(host.LogLevel.INFO, "{{name}}: loaded")
        return ["issue_tracker"]

    def enrich_schema(self, tool, schema):
        if tool == "create_issue":
            schema.add_enum_param("label", "Issue label", ["bug", "feature"])

    def transform_args(self, tool, args):
        return None

    def value_model(self, tool):
        return None

    def project_args(self, prev_tool, prev_result, link):
        return None

    def rate_limit_host(self, tool, args):
        return None
