import { describe, expect, it } from 'vitest';
import { listBody, parseListQuery } from './list-query';

describe('parseListQuery', () => {
  it('defaults to 100 newest first', () => {
    expect(parseListQuery({})).toEqual({ limit: 100, order: 'desc', after: undefined });
    expect(parseListQuery({}, { order: 'asc' }).order).toBe('asc');
  });

  it('reads limit, order and after', () => {
    expect(parseListQuery({ limit: '1000', order: 'asc', after: 'file_x' })).toEqual({
      limit: 1000,
      order: 'asc',
      after: 'file_x',
    });
  });

  it.each([{ limit: '0' }, { limit: '1001' }, { limit: 'ten' }, { order: 'sideways' }, { limit: ['1', '2'] }])(
    'rejects %j with its param',
    (query) => {
      expect(() => parseListQuery(query)).toThrow(
        expect.objectContaining({ code: 'invalid_request', param: Object.keys(query)[0] }),
      );
    },
  );
});

describe('listBody', () => {
  it('always carries has_more and the ids at both ends', () => {
    expect(listBody([], false)).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    expect(listBody([{ id: 'a' }, { id: 'b' }], true)).toMatchObject({ first_id: 'a', last_id: 'b', has_more: true });
  });
});
