import { describe, expect, it } from 'vitest';
import { AgentRegistry } from './agent-registry';
import { AgentFailure } from './agent.port';
import { HttpAgent, parseAnswer } from './http.agent';
import { fileLine, isTextType, previewLines, renderReport, ReportAgent } from './report.agent';

const file = {
  id: 'file_1',
  filename: 'q3.csv',
  bytes: 12,
  sha256: 'ab'.repeat(32),
  contentType: 'text/csv',
  open: async () => {
    throw new Error('unused');
  },
};

describe('report agent', () => {
  it('writes one line per input file with filename, byte count and sha256', () => {
    expect(fileLine(file)).toBe(`- q3.csv: 12 bytes, sha256 ${'ab'.repeat(32)}, text/csv`);
    const report = renderReport(
      {
        responseId: 'resp_1',
        sessionId: 'sess_1',
        instructions: null,
        messages: [{ role: 'user', text: 'Sum ```x```' }],
      },
      [file],
      new Map([['file_1', 'a,b']]),
    );
    expect(report).toContain(fileLine(file));
    expect(report).toContain('````text\nSum ```x```\n````');
    expect(report).toContain('### First lines of q3.csv');
  });

  it('previews text types only, ten lines at most', () => {
    expect(
      ['text/plain', 'text/csv; charset=utf-8', 'application/json', 'application/vnd.api+json'].map(isTextType),
    ).toEqual([true, true, true, true]);
    expect(['application/pdf', 'image/png', 'application/octet-stream'].map(isTextType)).toEqual([false, false, false]);
    expect(
      previewLines(Buffer.from(Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n'))).split('\n'),
    ).toHaveLength(10);
  });

  it('is always available', () => {
    expect(new ReportAgent().unavailableReason()).toBeNull();
  });
});

describe('http agent', () => {
  it('parses text and citations, and refuses anything else', () => {
    expect(parseAnswer('{"text":"see x","citations":[{"file_id":"file_a","start_index":4,"end_index":5}]}')).toEqual({
      text: 'see x',
      citations: [{ fileId: 'file_a', startIndex: 4, endIndex: 5 }],
    });
    expect(parseAnswer('{"text":"plain"}')).toEqual({ text: 'plain', citations: [] });
    for (const bad of [
      'nope',
      '{"citations":[]}',
      '{"text":"x","citations":{}}',
      '{"text":"x","citations":[{"file_id":"f","start_index":"0","end_index":1}]}',
    ]) {
      expect(() => parseAnswer(bad)).toThrow(AgentFailure);
    }
  });

  it('is unavailable without AGENT_HTTP_URL', () => {
    expect(
      new HttpAgent({
        url: undefined,
        token: undefined,
        callbackBaseUrl: 'http://x',
        requestId: () => undefined,
      }).unavailableReason(),
    ).toMatch(/AGENT_HTTP_URL/);
  });
});

describe('agent registry', () => {
  const registry = new AgentRegistry(
    [
      new ReportAgent(),
      new HttpAgent({ url: undefined, token: undefined, callbackBaseUrl: 'http://x', requestId: () => undefined }),
    ],
    'report',
  );

  it('picks the default, a named agent, and refuses unknown or unconfigured ones with param agent', () => {
    expect(registry.pick(null).name).toBe('report');
    expect(registry.names).toEqual(['report', 'http']);
    expect(() => registry.pick('nope')).toThrow(expect.objectContaining({ code: 'invalid_request', param: 'agent' }));
    expect(() => registry.pick('http')).toThrow(expect.objectContaining({ code: 'invalid_request', param: 'agent' }));
  });
});
