// reference-js: the reference enricher for "acme", a fictional issue tracker,
// in JavaScript (componentize-js). Identical in behaviour to reference-rust,
// -py and -c; the spec is docs/plugins/reference.md, the comparison
// tests/languages.rs.
//
// Conventions of componentize-js: WIT names are camelCase, `option<T>` is
// `T | undefined`, enums are their kebab-case names, and a `result` export
// returns its ok value or throws its err value.

import { log, config as hostConfig } from 'toolhost:plugin/host@0.2.0';

// --- sanitize: a port of toolhost_sdk::sanitize_field_name -----------------

const MAX_FIELD_NAME_LEN = 64;
const CYRILLIC = {
  а: 'a', б: 'b', в: 'v', г: 'g', д: 'd', е: 'e', ё: 'e', ж: 'zh', з: 'z',
  и: 'i', й: 'i', к: 'k', л: 'l', м: 'm', н: 'n', о: 'o', п: 'p', р: 'r',
  с: 's', т: 't', у: 'u', ф: 'f', х: 'kh', ц: 'ts', ч: 'ch', ш: 'sh',
  щ: 'shch', ъ: '', ы: 'y', ь: '', э: 'e', ю: 'iu', я: 'ia', і: 'i', ї: 'i',
  є: 'ie', ґ: 'g', ў: 'u',
};

function fnv1a32(bytes) {
  let hash = 0x811c9dc5;
  for (const b of bytes) {
    hash = Math.imul(hash ^ b, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

function utf8(s) {
  // TextEncoder is part of StarlingMonkey, but this keeps the plugin free of
  // any engine feature beyond the language itself.
  return Array.from(unescape(encodeURIComponent(s)), (c) => c.charCodeAt(0));
}

export function sanitizeFieldName(name) {
  let raw = '';
  let nonAscii = false;
  for (const c of name) {
    if (/^[A-Za-z0-9]$/.test(c)) {
      raw += c.toLowerCase();
      continue;
    }
    if (c.codePointAt(0) > 0x7f) {
      nonAscii = true;
      const latin = CYRILLIC[[...c.toLowerCase()][0]];
      if (latin !== undefined) {
        raw += latin;
        continue;
      }
    }
    raw += '_';
  }
  let slug = raw.replace(/_+/g, '_').replace(/^_/, '').replace(/_$/, '');
  const prefix = 'cf_';
  const hashLen = 9;
  const hashed = nonAscii || slug === '' || prefix.length + slug.length > MAX_FIELD_NAME_LEN;
  if (hashed) {
    slug = slug.slice(0, MAX_FIELD_NAME_LEN - prefix.length - hashLen).replace(/_+$/, '');
  }
  let out = prefix + slug;
  if (hashed) {
    if (slug !== '') out += '_';
    out += fnv1a32(utf8(name)).toString(16).padStart(8, '0');
  }
  return out;
}

// --- config ------------------------------------------------------------------

const isString = (v) => typeof v === 'string';
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function stringAt(obj, key, at) {
  const v = isObject(obj) ? obj[key] : undefined;
  if (!isString(v)) throw `config: ${at}.${key} must be a string`;
  return v;
}

function parseField(f, at) {
  const id = stringAt(f, 'id', at);
  const name = stringAt(f, 'name', at);
  const type = f.type;
  let options = null;
  if (type === 'select') {
    const bad = `config: ${at}.options must be a non-empty array of {id, name} strings`;
    if (!Array.isArray(f.options) || f.options.length === 0) throw bad;
    options = f.options.map((o) => {
      if (!isObject(o) || !isString(o.id) || !isString(o.name)) throw bad;
      return { id: o.id, name: o.name };
    });
  } else if (type !== 'number' && type !== 'text') {
    throw `config: ${at}.type must be number, select or text`;
  }
  return { id, name, param: sanitizeFieldName(name), type, options };
}

function parseConfig(c) {
  if (!isObject(c) || !isString(c.host)) throw 'config: host must be a string';
  const projects = c.projects;
  if (!Array.isArray(projects) || projects.length === 0 || !projects.every(isString)) {
    throw 'config: projects must be a non-empty array of strings';
  }
  const raw = c.custom_fields === undefined ? [] : c.custom_fields;
  if (!Array.isArray(raw)) throw 'config: custom_fields must be an array';
  const fields = raw.map((f, i) => parseField(f, `custom_fields[${i}]`));
  return { host: c.host, projects, fields };
}

let state = null;

// The parsed config, built once per instance (on the first call).
function acme() {
  if (state === null) {
    state = parseConfig(JSON.parse(hostConfig()));
    log('info', `acme: ${state.fields.length} custom fields, ${state.projects.length} projects`);
  }
  return state;
}

// --- the enricher ------------------------------------------------------------

function fieldSchema(f) {
  switch (f.type) {
    case 'number':
      return { type: 'number', description: f.name };
    case 'select':
      return { type: 'string', enum: f.options.map((o) => o.name), description: f.name };
    default:
      return { type: 'string', description: f.name };
  }
}

const ISSUE_WRITES = ['create_issue', 'update_issue'];

// Every edit the acme enricher makes; a refused one throws.
function enrich(tool, schema, { projects, fields }) {
  if (ISSUE_WRITES.includes(tool)) {
    schema.removeParams(['points', 'customFields', 'components']);
    if (schema.propertyNames().includes('projectId')) {
      schema.setEnum('projectId', projects);
      if (tool === 'create_issue') schema.setRequired('projectId', true);
    }
    for (const f of fields) schema.setProperty(f.param, JSON.stringify(fieldSchema(f)));
  } else if (tool === 'get_issues') {
    schema.removeParams(['nativeQuery']);
    schema.addEnumParam('stateCategory', 'Workflow state category', ['todo', 'in_progress', 'done']);
  }
}

export const enricher = {
  supportedCategories() {
    acme();
    return ['issue_tracker'];
  },

  enrichSchema(tool, schema) {
    const config = acme();
    try {
      enrich(tool, schema, config);
    } catch (refused) {
      // The host's edit-error (componentize-js throws it with a `payload`),
      // passed on as the message.
      throw `${tool}: edit refused: ${JSON.stringify(refused.payload ?? String(refused))}`;
    }
    // Custom fields are mapped back for the two tools that get them.
    return { transformsArgs: ISSUE_WRITES.includes(tool) };
  },

  transformArgs(tool, args) {
    if (!ISSUE_WRITES.includes(tool)) return;
    const collected = {};
    let any = false;
    for (const f of acme().fields) {
      const raw = args.remove(f.param);
      if (raw === undefined) continue;
      let value = JSON.parse(raw);
      if (f.type === 'select') {
        const wanted = isString(value) ? value : JSON.stringify(value);
        const option = f.options.find((o) => o.name === wanted);
        if (option === undefined) {
          const names = f.options.map((o) => o.name).join(', ');
          throw `${f.name}: unknown option '${wanted}' (expected ${names})`;
        }
        value = { id: option.id };
      }
      collected[f.id] = value;
      any = true;
    }
    if (!any) return;
    const existing = args.get('customFields');
    let merged = existing === undefined ? {} : JSON.parse(existing);
    if (!isObject(merged)) merged = {};
    Object.assign(merged, collected);
    args.set('customFields', JSON.stringify(merged));
  },

  valueModel(tool) {
    const model = (m) => ({
      valueClass: undefined, sideEffect: undefined, cost: undefined, fieldGroups: undefined,
      followUps: undefined, invalidates: undefined, failFastAfterN: undefined,
      rateLimitHost: undefined, speculate: undefined, ...m,
    });
    const cost = (c) => ({
      typicalKb: undefined, maxKb: undefined, latencyMsP50: undefined, dollars: undefined,
      freshnessTtlS: undefined, ...c,
    });
    const link = (t, probability) => ({ tool: t, probability, projection: 'key', projectionArg: 'key' });
    switch (tool) {
      case 'get_issues':
        return model({
          valueClass: 'supporting', sideEffect: 'read-only',
          cost: cost({ typicalKb: 4, maxKb: 40, latencyMsP50: 450, freshnessTtlS: 60 }),
          followUps: [link('get_issue', 0.55)],
        });
      case 'get_issue':
        return model({
          valueClass: 'critical', sideEffect: 'read-only',
          cost: cost({ typicalKb: 2, freshnessTtlS: 60 }),
          followUps: [link('get_issue_comments', 0.5)],
        });
      case 'create_issue':
      case 'update_issue':
        return model({ sideEffect: 'mutates-external', invalidates: ['get_issues', 'get_issue'] });
      default:
        return undefined;
    }
  },

  projectArgs(prevTool, prevResult, link) {
    if (prevTool !== 'get_issues' || !['get_issue', 'get_issue_comments'].includes(link.tool)) {
      return undefined;
    }
    let result = null;
    try {
      result = JSON.parse(prevResult);
    } catch {
      result = null;
    }
    const issues = isObject(result) && Array.isArray(result.issues) ? result.issues : [];
    const keys = [];
    for (const issue of issues) {
      const key = isObject(issue) ? issue.key : undefined;
      if (isString(key) && !keys.includes(key)) {
        keys.push(key);
        if (keys.length === 3) break;
      }
    }
    return keys.map((key) => JSON.stringify({ key }));
  },

  rateLimitHost(_tool, _args) {
    return acme().host;
  },
};
