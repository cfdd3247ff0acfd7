// tool-js: a tool plugin in JavaScript (componentize-js), exercising the
// whole tool interface: list-tools, execute with the call context
// (call id, progress, cancellation), the prepare-arguments, before-call and
// after-call hooks, and both renderers. One tool, `js_text_stats`.
//
// Conventions of componentize-js: WIT names are camelCase, `option<T>` is
// `T | undefined`, variants are `{ tag, val }`, flags are an object of
// booleans, and a `result` export returns its ok value or throws its error.

import { log } from 'toolhost:plugin/host@0.2.0';

const TOOL = 'js_text_stats';

const SCHEMA = {
  type: 'object',
  properties: {
    text: { type: 'string', description: 'The text to measure' },
    top: { type: 'integer', description: 'How many most frequent words to list (default 3)' },
  },
  required: ['text'],
};

// The structured result of every successful call (what `stats` returns).
const OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    words: { type: 'integer', minimum: 0 },
    chars: { type: 'integer', minimum: 0 },
    lines: { type: 'integer', minimum: 0 },
    top: {
      type: 'array',
      items: {
        type: 'object',
        properties: { word: { type: 'string' }, count: { type: 'integer', minimum: 1 } },
        required: ['word', 'count'],
      },
    },
  },
  required: ['words', 'chars', 'lines', 'top'],
};

function words(text) {
  // No Unicode property escapes: StarlingMonkey is built without them.
  return text.toLowerCase().match(/[a-z0-9\u00c0-\uffff']+/g) || [];
}

function stats(text, top) {
  const counts = new Map();
  for (const w of words(text)) counts.set(w, (counts.get(w) || 0) + 1);
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return {
    words: words(text).length,
    chars: [...text].length,
    lines: text === '' ? 0 : text.split('\n').length,
    top: ranked.slice(0, top).map(([word, count]) => ({ word, count })),
  };
}

export const tool = {
  listTools() {
    return [
      {
        name: TOOL,
        title: 'Text statistics',
        description: 'Count words, characters and lines of a text and list its most frequent words.',
        parametersSchema: JSON.stringify(SCHEMA),
        outputSchema: JSON.stringify(OUTPUT_SCHEMA),
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
        snippet: 'js_text_stats: word, character and line counts of a text',
        guidelines: ['Use js_text_stats instead of counting words yourself.'],
        category: undefined,
        hooks: { prepareArguments: true, beforeCall: true, afterCall: true, renderCall: true, renderResult: true },
      },
    ];
  },

  // Models sometimes send `content` (the legacy name): fold it into `text`.
  prepareArguments(_tool, args) {
    const legacy = args.get('content');
    if (legacy !== undefined && args.get('text') === undefined) {
      args.set('text', legacy);
      args.remove('content');
    }
  },

  beforeCall(_tool, args) {
    const text = JSON.parse(args.get('text') ?? '""');
    if (typeof text === 'string' && text.trim() === '') {
      return { tag: 'block', val: 'js_text_stats: the text is empty' };
    }
    return { tag: 'allow' };
  },

  execute(_tool, argsJson, ctx) {
    const args = JSON.parse(argsJson);
    if (typeof args.text !== 'string') {
      throw { tag: 'invalid-args', val: 'text: expected a string' };
    }
    const top = Number.isInteger(args.top) && args.top >= 0 ? args.top : 3;
    ctx.reportProgress(0, 1, 'counting');
    if (ctx.isCancelled()) throw { tag: 'cancelled' };
    const result = stats(args.text, top);
    ctx.reportProgress(1, 1, undefined);
    log('debug', `js_text_stats: ${result.words} words (call ${ctx.callId()})`);
    return {
      content: [
        { tag: 'text', val: `${result.words} words, ${result.chars} characters, ${result.lines} lines` },
      ],
      structured: JSON.stringify(result),
      details: JSON.stringify({ callId: ctx.callId() }),
    };
  },

  // Mark a result with no words as an error for the model.
  afterCall(_tool, outcome, isError) {
    if (isError || outcome.structured === undefined || JSON.parse(outcome.structured).words > 0) return undefined;
    return { content: undefined, structured: undefined, details: undefined, isError: true };
  },

  renderCall(_tool, argsJson, width) {
    const args = JSON.parse(argsJson);
    const text = typeof args.text === 'string' ? args.text.replace(/\s+/g, ' ') : '';
    const line = `text stats: "${text}"`;
    return line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;
  },

  renderResult(_tool, outcome, options) {
    if (options.isError || outcome.structured === undefined) return undefined;
    const r = JSON.parse(outcome.structured);
    const head = `${r.words} words · ${r.chars} chars · ${r.lines} lines`;
    if (!options.expanded) return head;
    return [head, ...r.top.map((t) => `  ${t.word}: ${t.count}`)].join('\n');
  },
};
