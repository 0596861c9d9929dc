import { describe, expect, it } from 'vitest';
import { holdsLoneSurrogate } from './json-body.middleware';

describe('holdsLoneSurrogate', () => {
  it('finds half a UTF-16 pair in any string or key, at any depth', () => {
    expect(holdsLoneSurrogate(JSON.parse('{"name":"\\udfff"}'))).toBe(true);
    expect(holdsLoneSurrogate(JSON.parse('{"metadata":{"\\ud800x":"v"}}'))).toBe(true);
    expect(holdsLoneSurrogate(JSON.parse('[[[["a\\ud83d"]]]]'))).toBe(true);
  });

  it('accepts whole pairs, other odd Unicode, and deep nesting', () => {
    expect(holdsLoneSurrogate(JSON.parse('{"e":"\\ud83d\\ude00","bidi":"\\u202e","nul":"\\u0000"}'))).toBe(false);
    expect(holdsLoneSurrogate(JSON.parse('['.repeat(5000) + ']'.repeat(5000)))).toBe(false);
    expect(holdsLoneSurrogate(null)).toBe(false);
  });
});
