// {{name}}: a toolhost enricher plugin (JavaScript, componentize-js).
// Build with `make`; check with `toolhost check {{name}}.wasm`.
// WIT names are camelCase here; option<T> is `T | undefined`; a `result`
// export returns its ok value or throws its error string.
import { log } from 'toolhost:plugin/host@0.1.0';

export const enricher = {
  supportedCategories() {
    log('info', '{{name}}: loaded');
    return ['issue_tracker'];
  },
  enrichSchema(tool, schema) {
    if (tool === 'create_issue') schema.addEnumParam('label', 'Issue label', ['bug', 'feature']);
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
