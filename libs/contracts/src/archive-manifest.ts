import { createHash, type Hash } from 'node:crypto';

/** What an archive holds of one artifact; the manifest hash is over these, in the session's order. */
export interface ManifestItem {
  id: string;
  /** Null while the artifact's source file is "uploaded" (not hashed yet). */
  sha256: string | null;
  bytes: bigint | number;
  filename: string;
}

export interface Manifest {
  /** Hex SHA-256 over the ordered items: the same set of artifacts, in the same order, gives the same hash. */
  hash: string;
  filesTotal: number;
  bytesTotal: bigint;
}

/**
 * Hashes a session's artifacts one at a time (the gateway and the worker read them in batches, so
 * memory does not grow with the session). Each item is a JSON array on its own line: no filename,
 * whatever it holds, can make two different lists hash alike.
 */
export class ManifestHasher {
  private readonly hash: Hash = createHash('sha256');
  private files = 0;
  private bytes = 0n;

  add(item: ManifestItem): void {
    const bytes = BigInt(item.bytes);
    this.hash.update(`${JSON.stringify([item.id, item.sha256, bytes.toString(), item.filename])}\n`);
    this.files += 1;
    this.bytes += bytes;
  }

  digest(): Manifest {
    return { hash: this.hash.digest('hex'), filesTotal: this.files, bytesTotal: this.bytes };
  }
}

export function manifestOf(items: Iterable<ManifestItem>): Manifest {
  const hasher = new ManifestHasher();
  for (const item of items) hasher.add(item);
  return hasher.digest();
}
