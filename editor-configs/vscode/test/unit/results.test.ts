import assert from 'node:assert/strict';
import { test } from 'node:test';

import { errorMessage, fenced, formatResult, locationLink } from '../../src/results';

const at = (line: number) => ({
  uri: 'file:///p/shop/pricing.py',
  range: { start: { line, character: 0 }, end: { line, character: 0 } },
});

test('a location links to its 1-based line', () => {
  assert.equal(locationLink(at(10)), '[pricing.py:11](file:///p/shop/pricing.py#L11)');
  assert.equal(locationLink(undefined), '');
});

test('fences survive backticks in the text', () => {
  assert.equal(fenced('x = 1', 'python'), '```python\nx = 1\n```');
  assert.equal(fenced('a ```` b'), '`````\na ```` b\n`````');
});

test('expectedType: the type as Python, and where it is annotated', () => {
  const text = formatResult('expectedType', { content: { kind: 'plaintext', value: 'Price' }, location: at(26) }, 'cart.py:29:16');
  assert.equal(text, '# Expected type at cart.py:29:16\n\n```python\nPrice\n```\n\nAnnotated at [pricing.py:27](file:///p/shop/pricing.py#L27)\n');
});

test('relevantTypes: one section per definition, with its location', () => {
  const result = {
    contents: [{ kind: 'plaintext', value: '@dataclass\nclass Price:\n    cents: int' }],
    locations: [at(10)],
  };
  const text = formatResult('relevantTypes', result);
  assert.match(text, /^# Relevant types\n/);
  assert.match(text, /## 1\. \[pricing\.py:11\]\(file:\/\/\/p\/shop\/pricing\.py#L11\)\n\n```python\n@dataclass\nclass Price:/);
  assert.match(formatResult('relevantHeaders', { contents: [], locations: [] }), /No functions in scope/);
});

test('aiTutorial: its text is Markdown already', () => {
  const text = formatResult('aiTutorial', { content: { kind: 'plaintext', value: '## Project facts\n- Language: Python 3.11' } });
  assert.match(text, /\n## Project facts\n- Language: Python 3\.11\n$/);
});

test('errorReport: verdict, diagnostics 1-based, and the prompt feedback', () => {
  const result = {
    needsRepair: true,
    diagnostics: [{ range: { start: { line: 28, character: 24 } }, message: "Instance of 'Cart' has no 'totl' member", severity: 1, code: 'E1101' }],
    content: { kind: 'plaintext', value: 'Line 29: `return self.totl()`' },
  };
  const text = formatResult('errorReport', result);
  assert.match(text, /\*\*Needs repair\.\*\*/);
  assert.match(text, /- line 29, column 25: error `E1101`: Instance of 'Cart' has no 'totl' member/);
  assert.match(text, /## Feedback for a prompt\n\n```text\nLine 29: `return self.totl\(\)`\n```/);
  assert.match(formatResult('errorReport', { needsRepair: false, diagnostics: [], content: { kind: 'plaintext', value: '' } }), /No errors/);
});

test('explain: the completion, the facts and the trace', () => {
  const none = formatResult('explain', { uri: 'file:///p/a.py', completion: null, steered: false, trace: null });
  assert.match(none, /No completion in this document yet/);
  const result = {
    uri: 'file:///p/a.py',
    completion: 'model_dump()',
    steered: true,
    prompt_tokens: 120,
    context: ['expected_type'],
    rounds: 0,
    trace: { triggers: [{}], queries: [{}, {}], walks: [], waited_ms: 12.4 },
  };
  const text = formatResult('explain', result, 'a.py');
  assert.match(text, /```python\nmodel_dump\(\)\n```/);
  assert.match(text, /- steered: yes\n- prompt tokens: 120\n- ChatLSP context in the prompt: expected_type\n- error rounds before it: 0/);
  assert.match(text, /triggers: 1, queries: 2, walks: 0, waited 12 ms for pylsp/);
  assert.match(text, /```json\n\{\n  "triggers"/);
});

test('no result and request errors', () => {
  assert.equal(formatResult('expectedType', null), '# Expected type\n\n_No result._\n');
  assert.equal(errorMessage('steerlsp: Expected type', new Error('ChatLSP is disabled')), 'steerlsp: Expected type: ChatLSP is disabled');
});
