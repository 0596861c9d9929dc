import { describe, expect, it } from 'vitest';
import type { ApiError } from '@app/common';
import { parseResponseRequest } from './response-request';

const LIMITS = { maxInlineFileBytes: 100, maxInputFiles: 3, agentNames: ['report', 'http'] };
const b64 = (text: string) => Buffer.from(text).toString('base64');
const item = (...content: unknown[]) => [{ role: 'user', content }];

function rejection(body: unknown): ApiError {
  try {
    parseResponseRequest(body, LIMITS);
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('accepted');
}

describe('parseResponseRequest', () => {
  it('takes a plain string input', () => {
    expect(parseResponseRequest({ input: 'hi' }, LIMITS)).toMatchObject({
      sessionId: null,
      agent: null,
      parts: [{ kind: 'text', role: 'user', text: 'hi' }],
    });
  });

  it('reads text, inline and by-id files in order, with their params', () => {
    const request = parseResponseRequest(
      {
        session_id: 'sess_x',
        input: item(
          { type: 'input_text', text: 'Summarise' },
          {
            type: 'input_file',
            filename: 'dir/q3.csv',
            file_data: `data:application/octet-stream;base64,${b64('a,b')}`,
          },
          { type: 'input_file', file_id: 'file_abc' },
        ),
      },
      LIMITS,
    );
    expect(request.sessionId).toBe('sess_x');
    expect(request.parts).toEqual([
      { kind: 'text', role: 'user', text: 'Summarise' },
      {
        kind: 'inline',
        param: 'input[0].content[1].file_data',
        filename: 'q3.csv',
        contentType: 'text/csv',
        bytes: Buffer.from('a,b'),
      },
      { kind: 'file_id', param: 'input[0].content[2].file_id', fileId: 'file_abc' },
    ]);
  });

  it('names an inline file without a filename from its media type, and takes data: images', () => {
    const request = parseResponseRequest(
      {
        input: item(
          { type: 'input_file', file_data: `data:application/pdf;base64,${b64('%PDF')}` },
          { type: 'input_image', image_url: `data:image/png;base64,${b64('png')}` },
        ),
      },
      LIMITS,
    );
    expect(request.parts.map((p) => (p.kind === 'inline' ? [p.filename, p.contentType] : null))).toEqual([
      ['input-0-0.pdf', 'application/pdf'],
      ['image-0-1.png', 'image/png'],
    ]);
  });

  it('picks the agent from agent, else from a model that names one', () => {
    expect(parseResponseRequest({ input: 'x', model: 'http' }, LIMITS).agent).toBe('http');
    expect(parseResponseRequest({ input: 'x', model: 'gpt-5' }, LIMITS).agent).toBeNull();
    expect(parseResponseRequest({ input: 'x', model: 'http', agent: 'report' }, LIMITS).agent).toBe('report');
  });

  it('ignores fields that do not change the result', () => {
    const request = parseResponseRequest(
      {
        input: 'x',
        stream: false,
        temperature: 0.2,
        store: true,
        include: [],
        tools: [{ type: 'code_interpreter', container: { type: 'auto' } }],
        text: { format: { type: 'text' } },
        user: 'u',
      },
      LIMITS,
    );
    expect(request.parts).toHaveLength(1);
  });

  it.each([
    [{ input: 'x', stream: true }, 'stream'],
    [{ input: 'x', background: true }, 'background'],
    [{ input: 'x', previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ input: 'x', conversation: 'conv_1' }, 'conversation'],
    [{ input: 'x', prompt: { id: 'p' } }, 'prompt'],
    [{ input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ input: 'x', tools: [{ type: 'code_interpreter', container: 'cntr_1' }] }, 'tools[0].container'],
    [{ input: 'x', text: { format: { type: 'json_schema' } } }, 'text.format'],
    [{ input: 'x', agent: 'gpt' }, 'agent'],
    [{ input: 'x', session_id: 7 }, 'session_id'],
    [{}, 'input'],
    [{ input: 42 }, 'input'],
    [{ input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    [{ input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].type'],
    [{ input: item({ type: 'input_audio' }) }, 'input[0].content[0].type'],
    [{ input: item({ type: 'input_text', text: 1 }) }, 'input[0].content[0].text'],
    [
      { input: item({ type: 'input_text', text: 'a' }, { type: 'input_file', file_url: 'https://x/y.pdf' }) },
      'input[0].content[1].file_url',
    ],
    [{ input: item({ type: 'input_image', image_url: 'https://x/y.png' }) }, 'input[0].content[0].image_url'],
    [{ input: item({ type: 'input_file', file_id: 'file_a', file_data: 'data:;base64,' }) }, 'input[0].content[0]'],
    [{ input: item({ type: 'input_file' }) }, 'input[0].content[0]'],
    [{ input: item(...Array.from({ length: 4 }, () => ({ type: 'input_file', file_id: 'file_a' }))) }, 'input'],
  ])('refuses %j with param %s', (body, param) => {
    const error = rejection(body);
    expect(error.code).toBe('invalid_request');
    expect(error.param).toBe(param);
  });

  it('checks inline filenames and data before anything else happens', () => {
    const badName = rejection({
      input: item({ type: 'input_file', filename: '..', file_data: `data:;base64,${b64('x')}` }),
    });
    expect([badName.code, badName.param]).toEqual(['invalid_filename', 'input[0].content[0].filename']);
    const badData = rejection({
      input: item(
        { type: 'input_text', text: 'x' },
        { type: 'input_file', filename: 'a.txt', file_data: 'data:text/plain,hi' },
      ),
    });
    expect([badData.code, badData.param]).toEqual(['invalid_file_data', 'input[0].content[1].file_data']);
    const tooBig = rejection({
      input: item({
        type: 'input_file',
        filename: 'a.bin',
        file_data: `data:;base64,${Buffer.alloc(101).toString('base64')}`,
      }),
    });
    expect([tooBig.code, tooBig.status, tooBig.param]).toEqual([
      'file_too_large',
      413,
      'input[0].content[0].file_data',
    ]);
  });
});
