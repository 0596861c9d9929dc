import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { ApiError, type GatewayConfig } from '@app/common';
import { describe, expect, it } from 'vitest';
import {
  jsonShapeOf,
  JsonBodyMiddleware,
  MAX_JSON_CONTAINERS,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  refuseUnsafeJson,
} from './json-body.middleware';

/** What the error filter would answer for `run`: the status and code, or `accepted`. */
function answerFor(run: () => void): { status: number; code: string; message: string } | 'accepted' {
  try {
    run();
    return 'accepted';
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, code: error.code, message: error.message };
  }
}

const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const nestedObjects = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
const tooDeep = expect.objectContaining({ status: 400, code: 'invalid_json', message: expect.stringMatching(/deep/) });
const loneSurrogate = expect.objectContaining({
  status: 400,
  code: 'invalid_json',
  message: expect.stringMatching(/lone surrogate/),
});

describe('refuseUnsafeJson', () => {
  it('finds half a UTF-16 pair in any string or key, at any depth the limit allows', () => {
    expect(answerFor(() => refuseUnsafeJson(JSON.parse('{"name":"\\udfff"}')))).toEqual(loneSurrogate);
    expect(answerFor(() => refuseUnsafeJson(JSON.parse('{"metadata":{"\\ud800x":"v"}}')))).toEqual(loneSurrogate);
    expect(answerFor(() => refuseUnsafeJson(JSON.parse('[[[["a\\ud83d"]]]]')))).toEqual(loneSurrogate);
    const deepValue = '{"k":'.repeat(MAX_JSON_DEPTH - 1) + '["x\\udc00"]' + '}'.repeat(MAX_JSON_DEPTH - 1);
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(deepValue)))).toEqual(loneSurrogate);
    const deepKey = '[{"k":'.repeat(MAX_JSON_DEPTH / 2 - 1) + '{"\\ud800":1}' + '}]'.repeat(MAX_JSON_DEPTH / 2 - 1);
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(deepKey)))).toEqual(loneSurrogate);
  });

  it('accepts whole pairs, other odd Unicode, scalars and an empty body', () => {
    expect(
      answerFor(() => refuseUnsafeJson(JSON.parse('{"e":"\\ud83d\\ude00","bidi":"\\u202e","nul":"\\u0000"}'))),
    ).toBe('accepted');
    for (const value of [null, undefined, 0, 'text', true])
      expect(answerFor(() => refuseUnsafeJson(value))).toBe('accepted');
  });

  it(`accepts nesting of exactly ${MAX_JSON_DEPTH} levels and refuses one more, in arrays and objects`, () => {
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(nestedArrays(MAX_JSON_DEPTH))))).toBe('accepted');
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(nestedObjects(MAX_JSON_DEPTH))))).toBe('accepted');
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(nestedArrays(MAX_JSON_DEPTH + 1))))).toEqual(tooDeep);
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(nestedObjects(MAX_JSON_DEPTH + 1))))).toEqual(tooDeep);
    // Depth counts enclosing containers, not siblings: a wide body at the limit is as good as a narrow one.
    const wide = `{"a":[${Array.from({ length: 50 }, () => nestedArrays(MAX_JSON_DEPTH - 2)).join(',')}]}`;
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(wide)))).toBe('accepted');
  });

  it('refuses 100,000 nested arrays or objects with a 400, where recursion would overflow the stack', () => {
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(nestedArrays(100_000))))).toEqual(tooDeep);
    expect(answerFor(() => refuseUnsafeJson(JSON.parse(nestedObjects(100_000))))).toEqual(tooDeep);
  });

  it('walks a 300,000-element array of strings, which spreading into push() could not', () => {
    const partIds = Array.from({ length: 300_000 }, (_, i) => `part_${String(i).padStart(24, '0')}`);
    expect(answerFor(() => refuseUnsafeJson({ part_ids: partIds }))).toBe('accepted');
    partIds[299_999] = 'part_\udfff';
    expect(answerFor(() => refuseUnsafeJson({ part_ids: partIds }))).toEqual(loneSurrogate);
  });
});

describe('jsonShapeOf (the raw text, before parsing)', () => {
  const shape = (text: string) => jsonShapeOf(Buffer.from(text));
  const deep = (levels: number) => `{"a":${nestedArrays(levels - 1)}}`;

  it('counts arrays and objects outside strings only', () => {
    expect(shape(deep(MAX_JSON_DEPTH))).toBe(null);
    expect(shape(deep(MAX_JSON_DEPTH + 1))).toBe('too_deep');
    expect(shape(`["${'['.repeat(100)}", "${'{'.repeat(100)}"]`)).toBe(null);
    expect(shape(`["\\\\", ${nestedArrays(MAX_JSON_DEPTH)}]`)).toBe('too_deep');
    expect(shape(`["\\"", "${'['.repeat(100)}"]`)).toBe(null);
    expect(shape(`["é${'['.repeat(100)} ✓"]`)).toBe(null);
  });

  it('agrees with the walk of the parsed body on where the depth limit lies', () => {
    for (const depth of [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
      for (const text of [nestedArrays(depth), nestedObjects(depth)])
        expect(jsonShapeOf(Buffer.from(text)) === 'too_deep').toBe(
          answerFor(() => refuseUnsafeJson(JSON.parse(text))) !== 'accepted',
        );
  });

  it('bounds how many arrays, objects and values the parser would build; commas in strings do not count', () => {
    expect(shape(`[${'[],'.repeat(MAX_JSON_CONTAINERS - 2)}[]]`)).toBe(null);
    expect(shape(`[${'[],'.repeat(MAX_JSON_CONTAINERS - 1)}[]]`)).toBe('too_many_values');
    expect(shape(`[${'0,'.repeat(MAX_JSON_VALUES - 1)}0]`)).toBe(null);
    expect(shape(`[${'0,'.repeat(MAX_JSON_VALUES)}0]`)).toBe('too_many_values');
    expect(shape(`["${','.repeat(2 * MAX_JSON_VALUES)}"]`)).toBe(null);
  });
});

describe('JsonBodyMiddleware', () => {
  const config = {
    UHP_MAX_REQUEST_BYTES: 16 * 1024 * 1024,
    UHP_MAX_INLINE_FILE_BYTES: 1024,
    UHP_DRAIN_TIMEOUT_MS: 1000,
  } as GatewayConfig;

  const request = (body: string) =>
    Object.assign(Readable.from([Buffer.from(body)]), {
      method: 'POST',
      complete: true,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    }) as unknown as IncomingMessage & { body?: unknown };

  /** Runs the middleware over `body`: the error it throws, or what it parsed. */
  async function read(body: string): Promise<{ status: number; code: string } | { parsed: unknown }> {
    const req = request(body);
    try {
      await new JsonBodyMiddleware(config).use(req, {}, () => undefined);
      return { parsed: req.body };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return { status: error.status, code: error.code };
    }
  }

  it('answers the 10 MB body of 300,000 part ids by parsing it, not with a RangeError', async () => {
    const body = JSON.stringify({ part_ids: Array.from({ length: 300_000 }, (_, i) => `part_${i}`.padEnd(29, '0')) });
    const answer = await read(body);
    expect(answer).toHaveProperty('parsed.part_ids.length', 300_000);
  });

  it('answers 400 invalid_json to 100,000 nested arrays before any route sees them', async () => {
    expect(await read(`{"metadata":${nestedArrays(100_000)}}`)).toEqual({ status: 400, code: 'invalid_json' });
  });

  it('refuses 8 million nested arrays, and 4 million side by side (under the size limit), from the text, without parsing them', async () => {
    const bodies = [nestedArrays(8_000_000), `[${'[],'.repeat(4_000_000)}[]]`];
    const parse = JSON.parse;
    let parsed = false;
    JSON.parse = (...args: Parameters<typeof JSON.parse>) => {
      parsed = true;
      return parse(...args);
    };
    try {
      expect(await read(bodies[0])).toEqual({ status: 400, code: 'invalid_json' });
      expect(await read(bodies[1])).toEqual({ status: 413, code: 'request_too_large' });
    } finally {
      JSON.parse = parse;
    }
    expect(parsed).toBe(false);
  });
});
