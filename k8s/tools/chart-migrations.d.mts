export function migrationsDigest(): string;
export const DIGEST_FILE: string;
