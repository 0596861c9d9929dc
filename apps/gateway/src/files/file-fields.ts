import { ApiError } from '@app/common';
import type { FilePurpose } from '@app/db';

export const PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] as const;
const PURPOSE_IN: Record<string, FilePurpose> = { 'fine-tune': 'fine_tune' };

export const MIN_EXPIRY_SECONDS = 3600;
export const MAX_EXPIRY_SECONDS = 2_592_000;

export function toPurpose(value: string, param = 'purpose'): FilePurpose {
  if (!(PURPOSES as readonly string[]).includes(value))
    throw ApiError.invalid(`purpose must be one of ${PURPOSES.join(', ')}.`, param);
  return PURPOSE_IN[value] ?? (value as FilePurpose);
}

/** Checks the upload's form fields as they arrive (the SDK sends them after the file part). */
export function checkFileField(name: string, value: string): void {
  if (name === 'purpose') toPurpose(value);
  if (name === 'expires_after[anchor]' && value !== 'created_at')
    throw ApiError.invalid('expires_after[anchor] must be created_at.', 'expires_after');
  if (name === 'expires_after[seconds]') expirySeconds(value);
}

function expirySeconds(value: string): number {
  const seconds = /^\d{1,8}$/.test(value) ? Number(value) : NaN;
  if (!(seconds >= MIN_EXPIRY_SECONDS && seconds <= MAX_EXPIRY_SECONDS)) {
    throw ApiError.invalid(
      `expires_after[seconds] must be an integer from ${MIN_EXPIRY_SECONDS} to ${MAX_EXPIRY_SECONDS}.`,
      'expires_after',
    );
  }
  return seconds;
}

/** purpose (default user_data) and expiry of a completed upload; expires_after needs both fields. */
export function readFileFields(fields: Map<string, string>): { purpose: FilePurpose; expiresInSeconds: number | null } {
  const purpose = toPurpose(fields.get('purpose') ?? 'user_data');
  const anchor = fields.get('expires_after[anchor]');
  const seconds = fields.get('expires_after[seconds]');
  if ((anchor === undefined) !== (seconds === undefined))
    throw ApiError.invalid('expires_after needs both [anchor] and [seconds].', 'expires_after');
  return { purpose, expiresInSeconds: seconds === undefined ? null : expirySeconds(seconds) };
}
