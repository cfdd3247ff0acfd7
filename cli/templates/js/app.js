// {{name}}: a toolhost enricher plugin (JavaScript, componentize-js).
// Build with `make`; check with `toolhost check {{name}}.wasm`.
// WIT names are camelCase here; option<T> is `T | undefined`; a `result`
// export returns its ok value or throws its error string.
import { log } from 'toolhost:plugin/host@0.2.0';

export const enricher = {
  supportedCategories() {
    log('info', '{{name}}: loaded');
    return ['issue_tracker'];
  },
  // Says whether calls to `tool` need transformArgs (this plugin maps no
  // arguments); throwing a string undoes this plugin's changes to the tool.
  enrichSchema(tool, schema) {
    if (tool === 'create_issue') {
      try {
        schema.addEnumParam('label', 'Issue label', ['bug', 'feature']);
      } catch (refused) {
        throw `label: the host refused the edit: ${JSON.stringify(refused.payload)}`;
      }
    }
    return { transformsArgs: false };
  },
  transformArgs(_tool, _args) {},
  valueModel(_tool) {
    return undefined;
  },
  projectArgs(_prevTool, _prevResult, _link) {
    return undefined;
  },
  rateLimitHost(_tool, _args) {
    return undefined;
  },
};
