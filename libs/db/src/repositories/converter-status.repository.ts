import type { PrismaService } from '../prisma.service';

export interface ConverterState {
  name: string;
  available: boolean;
  reason: string | null;
}

/** What each preview converter of the workers can do, as they last found: drives /v1/limits and the 501. */
export class ConverterStatusRepository {
  constructor(private readonly prisma: PrismaService) {}

  async save(states: ConverterState[], now = new Date()): Promise<void> {
    await this.prisma.$transaction(
      states.map((state) =>
        this.prisma.converterStatus.upsert({
          where: { name: state.name },
          create: { ...state, checkedAt: now },
          update: { available: state.available, reason: state.reason, checkedAt: now },
        }),
      ),
    );
  }

  /** Converters some worker found usable within `maxAgeMs`. */
  async available(maxAgeMs: number, now = new Date()): Promise<Set<string>> {
    const rows = await this.prisma.converterStatus.findMany({
      where: { available: true, checkedAt: { gt: new Date(now.getTime() - maxAgeMs) } },
      select: { name: true },
    });
    return new Set(rows.map((row) => row.name));
  }
}
