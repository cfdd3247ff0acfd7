"""reference-py: the reference enricher for "acme", a fictional issue tracker,
in Python (componentize-py). Identical in behaviour to reference-rust, -js and
-c; the spec is docs/plugins/reference.md, the comparison tests/languages.rs.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.enricher import Enriched
from wit_world.imports import host
from wit_world.imports.value_model_types import (
    CostModel,
    FollowUpLink,
    SideEffect,
    ToolValueModel,
    ValueClass,
)

# --- sanitize: a port of toolhost_sdk::sanitize_field_name -------------------

MAX_FIELD_NAME_LEN = 64
_CYRILLIC = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e",
    "ж": "zh", "з": "z", "и": "i", "й": "i", "к": "k", "л": "l", "м": "m",
    "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t", "у": "u",
    "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch",
    "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "iu", "я": "ia", "і": "i",
    "ї": "i", "є": "ie", "ґ": "g", "ў": "u",
}


def fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def sanitize_field_name(name: str) -> str:
    raw = []
    non_ascii = False
    for c in name:
        if c.isascii() and c.isalnum():
            raw.append(c.lower())
            continue
        if not c.isascii():
            non_ascii = True
            latin = _CYRILLIC.get(c.lower()[:1])
            if latin is not None:
                raw.append(latin)
                continue
        raw.append("_")
    slug = ""
    for c in "".join(raw):
        if c == "_" and (not slug or slug.endswith("_")):
            continue
        slug += c
    slug = slug.rstrip("_")
    prefix, hash_len = "cf_", 9
    too_long = len(prefix) + len(slug) > MAX_FIELD_NAME_LEN
    hashed = non_ascii or not slug or too_long
    if hashed:
        slug = slug[: MAX_FIELD_NAME_LEN - len(prefix) - hash_len].rstrip("_")
    out = prefix + slug
    if hashed:
        if slug:
            out += "_"
        out += "%08x" % fnv1a32(name.encode("utf-8"))
    return out


# --- config -------------------------------------------------------------------


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _string_at(obj, key, at):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, str):
        raise ValueError(f"config: {at}.{key} must be a string")
    return value


def _parse_field(f, at):
    field_id = _string_at(f, "id", at)
    name = _string_at(f, "name", at)
    kind = f.get("type")
    options = None
    if kind == "select":
        bad = f"config: {at}.options must be a non-empty array of {{id, name}} strings"
        raw = f.get("options")
        if not isinstance(raw, list) or not raw:
            raise ValueError(bad)
        options = []
        for o in raw:
            if not (isinstance(o, dict) and isinstance(o.get("id"), str) and isinstance(o.get("name"), str)):
                raise ValueError(bad)
            options.append((o["id"], o["name"]))
    elif kind not in ("number", "text"):
        raise ValueError(f"config: {at}.type must be number, select or text")
    return {"id": field_id, "name": name, "param": sanitize_field_name(name), "type": kind, "options": options}


def _parse_config(config):
    if not isinstance(config, dict) or not isinstance(config.get("host"), str):
        raise ValueError("config: host must be a string")
    projects = config.get("projects")
    if not isinstance(projects, list) or not projects or not all(isinstance(p, str) for p in projects):
        raise ValueError("config: projects must be a non-empty array of strings")
    raw_fields = config.get("custom_fields", [])
    if not isinstance(raw_fields, list):
        raise ValueError("config: custom_fields must be an array")
    fields = [_parse_field(f, f"custom_fields[{i}]") for i, f in enumerate(raw_fields)]
    return {"host": config["host"], "projects": projects, "fields": fields}


_state = None


def _acme():
    """The parsed config, built once per instance (on the first call)."""
    global _state
    if _state is None:
        _state = _parse_config(json.loads(host.config()))
        host.log(host.LogLevel.INFO, f"acme: {len(_state['fields'])} custom fields, {len(_state['projects'])} projects")
    return _state


# --- the enricher -------------------------------------------------------------


class Enricher(exports.Enricher):
    def supported_categories(self):
        try:
            _acme()
        except ValueError as e:
            raise Err(str(e))
        return ["issue_tracker"]

    def enrich_schema(self, tool, schema):
        acme = _acme()
        try:
            self._enrich(tool, schema, acme)
        except Err as refused:
            # The host's edit-error, passed on as the message.
            raise Err(f"{tool}: edit refused: {refused.value}")
        # Custom fields are mapped back for the two tools that get them.
        return Enriched(transforms_args=tool in ("create_issue", "update_issue"))

    def _enrich(self, tool, schema, acme):
        if tool in ("create_issue", "update_issue"):
            schema.remove_params(["points", "customFields", "components"])
            if "projectId" in schema.property_names():
                schema.set_enum("projectId", acme["projects"])
                if tool == "create_issue":
                    schema.set_required("projectId", True)
            for f in acme["fields"]:
                if f["type"] == "number":
                    prop = {"type": "number", "description": f["name"]}
                elif f["type"] == "select":
                    prop = {"type": "string", "enum": [n for _, n in f["options"]], "description": f["name"]}
                else:
                    prop = {"type": "string", "description": f["name"]}
                schema.set_property(f["param"], _dump(prop))
        elif tool == "get_issues":
            schema.remove_params(["nativeQuery"])
            schema.add_enum_param("stateCategory", "Workflow state category", ["todo", "in_progress", "done"])

    def transform_args(self, tool, args):
        if tool not in ("create_issue", "update_issue"):
            return
        collected = {}
        for f in _acme()["fields"]:
            raw = args.remove(f["param"])
            if raw is None:
                continue
            value = json.loads(raw)
            if f["type"] == "select":
                wanted = value if isinstance(value, str) else _dump(value)
                match = [oid for oid, oname in f["options"] if oname == wanted]
                if not match:
                    names = ", ".join(n for _, n in f["options"])
                    raise Err(f"{f['name']}: unknown option '{wanted}' (expected {names})")
                value = {"id": match[0]}
            collected[f["id"]] = value
        if not collected:
            return
        existing = args.get("customFields")
        merged = json.loads(existing) if existing is not None else None
        if not isinstance(merged, dict):
            merged = {}
        merged.update(collected)
        args.set("customFields", _dump(merged))

    def value_model(self, tool):
        empty = dict(value_class=None, side_effect=None, cost=None, field_groups=None, follow_ups=None,
                     invalidates=None, fail_fast_after_n=None, rate_limit_host=None, speculate=None)
        if tool == "get_issues":
            return ToolValueModel(**{**empty,
                "value_class": ValueClass.SUPPORTING, "side_effect": SideEffect.READ_ONLY,
                "cost": CostModel(typical_kb=4.0, max_kb=40.0, latency_ms_p50=450, dollars=None, freshness_ttl_s=60),
                "follow_ups": [FollowUpLink("get_issue", 0.55, "key", "key")]})
        if tool == "get_issue":
            return ToolValueModel(**{**empty,
                "value_class": ValueClass.CRITICAL, "side_effect": SideEffect.READ_ONLY,
                "cost": CostModel(typical_kb=2.0, max_kb=None, latency_ms_p50=None, dollars=None, freshness_ttl_s=60),
                "follow_ups": [FollowUpLink("get_issue_comments", 0.5, "key", "key")]})
        if tool in ("create_issue", "update_issue"):
            return ToolValueModel(**{**empty,
                "side_effect": SideEffect.MUTATES_EXTERNAL, "invalidates": ["get_issues", "get_issue"]})
        return None

    def project_args(self, prev_tool, prev_result, link):
        if prev_tool != "get_issues" or link.tool not in ("get_issue", "get_issue_comments"):
            return None
        try:
            result = json.loads(prev_result)
        except ValueError:
            result = None
        issues = result.get("issues") if isinstance(result, dict) else None
        keys = []
        for issue in issues if isinstance(issues, list) else []:
            key = issue.get("key") if isinstance(issue, dict) else None
            if isinstance(key, str) and key not in keys:
                keys.append(key)
                if len(keys) == 3:
                    break
        return [_dump({"key": k}) for k in keys]

    def rate_limit_host(self, tool, args):
        return _acme()["host"]
