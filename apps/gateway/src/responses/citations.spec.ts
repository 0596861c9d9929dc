import { describe, expect, it } from 'vitest';
import { AgentFailure } from '../agents/agent.port';
import { checkCitations } from './citations';

const files = new Map([['file_a', 'report.md']]);

describe('checkCitations', () => {
  it('keeps citations of container files inside the text, with their filenames', () => {
    expect(checkCitations('see report.md', [{ fileId: 'file_a', startIndex: 4, endIndex: 13 }], files)).toEqual([
      { file_id: 'file_a', filename: 'report.md', start_index: 4, end_index: 13 },
    ]);
  });

  it.each([
    ['an empty span', { fileId: 'file_a', startIndex: 3, endIndex: 3 }],
    ['a span past the end', { fileId: 'file_a', startIndex: 0, endIndex: 14 }],
    ['a negative start', { fileId: 'file_a', startIndex: -1, endIndex: 2 }],
    ['a fractional index', { fileId: 'file_a', startIndex: 0.5, endIndex: 2 }],
    ['a file outside the container', { fileId: 'file_b', startIndex: 0, endIndex: 3 }],
  ])('fails the response for %s', (_label, citation) => {
    expect(() => checkCitations('see report.md', [citation], files)).toThrow(AgentFailure);
  });
});
