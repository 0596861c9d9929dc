import type { PrismaService } from '../prisma.service';

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

  /** Idempotent: the principal and the key exist afterwards (a revoked bootstrap key stays revoked). */
  async ensureKey(
    principalName: string,
    keyHash: string,
    keyPrefix: string,
    label: string | null,
  ): Promise<PrincipalRow> {
    return this.prisma.$transaction(async (tx) => {
      const principal = await tx.principal.upsert({
        where: { name: principalName },
        create: { name: principalName },
        update: {},
        select: { id: true, name: true },
      });
      const existing = await tx.apiKey.findUnique({ where: { keyHash }, select: { principalId: true } });
      if (existing && existing.principalId !== principal.id)
        throw new Error(`that key already belongs to another principal`);
      if (!existing) await tx.apiKey.create({ data: { principalId: principal.id, keyHash, keyPrefix, label } });
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

  /** Revokes by key id or by the key's visible prefix; returns how many keys were revoked. */
  async revoke(idOrPrefix: string): Promise<number> {
    const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrPrefix);
    const { count } = await this.prisma.apiKey.updateMany({
      where: { revokedAt: null, ...(isUuid ? { id: idOrPrefix } : { keyPrefix: idOrPrefix }) },
      data: { revokedAt: new Date() },
    });
    return count;
  }
}
