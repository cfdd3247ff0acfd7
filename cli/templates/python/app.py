"""{{name}}: a toolhost enricher plugin (Python, componentize-py).

Build with `make`; check with `toolhost check {{name}}.wasm`. A `result`
export returns its ok value or raises `componentize_py_types.Err(message)`.
"""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.enricher import Enriched
from wit_world.imports import host


class Enricher(exports.Enricher):
    def supported_categories(self):
        host.log(host.LogLevel.INFO, "{{name}}: loaded")
        return ["issue_tracker"]

    # Says whether calls to `tool` need transform_args (this plugin maps no
    # arguments); raising Err(message) undoes this plugin's changes to it.
    def enrich_schema(self, tool, schema):
        if tool == "create_issue":
            try:
                schema.add_enum_param("label", "Issue label", ["bug", "feature"])
            except Err as refused:
                raise Err(f"label: the host refused the edit: {refused.value}")
        return Enriched(transforms_args=False)

    def transform_args(self, tool, args):
        return None

    def value_model(self, tool):
        return None

    def project_args(self, prev_tool, prev_result, link):
        return None

    def rate_limit_host(self, tool, args):
        return None
