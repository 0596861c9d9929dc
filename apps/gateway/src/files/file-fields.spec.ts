import { describe, expect, it } from 'vitest';
import { checkFileField, readFileFields } from './file-fields';

describe('file form fields', () => {
  it('accepts the six purposes and maps fine-tune', () => {
    for (const purpose of ['assistants', 'batch', 'vision', 'user_data', 'evals'])
      expect(readFileFields(new Map([['purpose', purpose]])).purpose).toBe(purpose);
    expect(readFileFields(new Map([['purpose', 'fine-tune']])).purpose).toBe('fine_tune');
    expect(readFileFields(new Map()).purpose).toBe('user_data');
  });

  it('rejects another purpose with param purpose', () => {
    expect(() => checkFileField('purpose', 'bogus')).toThrow(
      expect.objectContaining({ status: 400, param: 'purpose' }),
    );
  });

  it('reads expires_after within 3600..2592000 seconds, both fields or neither', () => {
    const fields = (seconds: string) =>
      new Map([
        ['expires_after[anchor]', 'created_at'],
        ['expires_after[seconds]', seconds],
      ]);
    expect(readFileFields(fields('3600')).expiresInSeconds).toBe(3600);
    expect(readFileFields(fields('2592000')).expiresInSeconds).toBe(2_592_000);
    for (const bad of ['3599', '2592001', '-1', '1e4', ''])
      expect(() => readFileFields(fields(bad))).toThrow(expect.objectContaining({ param: 'expires_after' }));
    expect(() => readFileFields(new Map([['expires_after[seconds]', '4000']]))).toThrow(
      expect.objectContaining({ param: 'expires_after' }),
    );
    expect(() => checkFileField('expires_after[anchor]', 'last_active_at')).toThrow(
      expect.objectContaining({ param: 'expires_after' }),
    );
  });

  it('ignores other fields', () => {
    expect(() => checkFileField('x_note', 'anything')).not.toThrow();
  });
});
