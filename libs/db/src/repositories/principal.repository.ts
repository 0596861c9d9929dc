import { Prisma } from '../generated/client';
import type { PrismaService } from '../prisma.service';

export type ApiKeySource = 'cli' | 'bootstrap';

export class AmbiguousKeyError extends Error {
  override readonly name = 'AmbiguousKeyError';
  constructor(prefix: string, matches: number) {
    super(`the prefix ${prefix} matches ${matches} live keys; revoke one by its id`);
  }
}

export interface PrincipalRow {
  id: string;
  name: string;
}

export interface ApiKeyRow {
  id: string;
  principalName: string;
  keyPrefix: string;
  label: string | null;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Principals and their hashed API keys. */
export class PrincipalRepository {
  constructor(private readonly prisma: PrismaService) {}

  async findByKeyHash(keyHash: string): Promise<PrincipalRow | null> {
    const key = await this.prisma.apiKey.findUnique({
      where: { keyHash },
      select: { revokedAt: true, principal: { select: { id: true, name: true } } },
    });
    if (!key || key.revokedAt) return null;
    return key.principal;
  }

  /**
   * Idempotent: the principal and the key exist afterwards. A key an operator revoked stays revoked; a
   * bootstrap key revoked only because UHP_API_KEYS stopped listing it works again when listed again.
   */
  async ensureKey(
    principalName: string,
    keyHash: string,
    keyPrefix: string,
    label: string | null,
    source: ApiKeySource = 'cli',
  ): Promise<PrincipalRow> {
    return this.prisma.$transaction(async (tx) => {
      // Prisma's upsert reads, then inserts: two gateways starting together on an empty database would both
      // insert. One at a time (a transaction-scoped lock, which a transaction pooler keeps); each statement then
      // sees what the other committed.
      await tx.$queryRaw(Prisma.sql`SELECT pg_advisory_xact_lock(hashtext('api-keys'))::text`);
      const principal = await tx.principal.upsert({
        where: { name: principalName },
        create: { name: principalName },
        update: {},
        select: { id: true, name: true },
      });
      const existing = await tx.apiKey.findUnique({ where: { keyHash }, select: { principalId: true } });
      if (existing && existing.principalId !== principal.id)
        throw new Error(`that key already belongs to another principal`);
      if (!existing) await tx.apiKey.create({ data: { principalId: principal.id, keyHash, keyPrefix, label, source } });
      else if (source === 'bootstrap') {
        await tx.apiKey.updateMany({ where: { keyHash, unlisted: true }, data: { revokedAt: null, unlisted: false } });
      }
      return principal;
    });
  }

  async listKeys(principalName?: string): Promise<ApiKeyRow[]> {
    const keys = await this.prisma.apiKey.findMany({
      where: principalName ? { principal: { name: principalName } } : {},
      orderBy: { createdAt: 'asc' },
      select: {
        id: true,
        keyPrefix: true,
        label: true,
        createdAt: true,
        revokedAt: true,
        principal: { select: { name: true } },
      },
    });
    return keys.map(({ principal, ...key }) => ({ ...key, principalName: principal.name }));
  }

  /**
   * Revokes one key by its id or by its visible prefix: 1 when it was revoked, 0 when no live key
   * matches. A prefix that more than one live key shares is refused (AmbiguousKeyError): revoke by id.
   */
  async revoke(idOrPrefix: string): Promise<number> {
    const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrPrefix);
    const where = { revokedAt: null, ...(isUuid ? { id: idOrPrefix } : { keyPrefix: idOrPrefix }) };
    return this.prisma.$transaction(async (tx) => {
      const matches = await tx.apiKey.count({ where });
      if (matches > 1) throw new AmbiguousKeyError(idOrPrefix, matches);
      return (await tx.apiKey.updateMany({ where, data: { revokedAt: new Date() } })).count;
    });
  }

  /** Keys not revoked, of every principal. */
  async countLiveKeys(): Promise<number> {
    return this.prisma.apiKey.count({ where: { revokedAt: null } });
  }

  /** Bootstrap keys the environment no longer lists are revoked; keys made with the CLI are left alone. */
  async revokeBootstrapKeysExcept(keyHashes: string[]): Promise<number> {
    const { count } = await this.prisma.apiKey.updateMany({
      where: { source: 'bootstrap', revokedAt: null, keyHash: { notIn: keyHashes } },
      data: { revokedAt: new Date(), unlisted: true },
    });
    return count;
  }
}
