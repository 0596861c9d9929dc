// Prisma CLI configuration (CLI process only; the apps build their own client in libs/db).
// The JS schema engine with the pg adapter lets `migrate deploy` run offline: the classic path
// needs a native schema engine downloaded from outside the npm registry.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { PrismaPg } from '@prisma/adapter-pg';

const databaseUrl = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/uhp';
process.env.DATABASE_URL = databaseUrl;

const PG_NAME_OID = 19;
const PG_TEXT_OID = 25;

/**
 * prisma/orm#27403: the adapter cannot deserialize pg_catalog's `name` columns, which the migration
 * engine reads. They are plain text, so report them as text. Patched once on the shared queryable
 * prototype, which covers connections and transactions alike.
 */
interface PerformIO {
  performIO(query: unknown): Promise<{ fields: { dataTypeID: number }[] }>;
  __uhpReadsNameAsText?: boolean;
}

function readNameColumnsAsText(queryable: object): void {
  let proto: PerformIO | null = queryable as PerformIO;
  while (proto && !Object.prototype.hasOwnProperty.call(proto, 'performIO')) proto = Object.getPrototypeOf(proto);
  if (!proto || proto.__uhpReadsNameAsText) return;
  const performIO = proto.performIO;
  proto.performIO = async function (query: unknown) {
    const result = await performIO.call(this, query);
    for (const field of result.fields) if (field.dataTypeID === PG_NAME_OID) field.dataTypeID = PG_TEXT_OID;
    return result;
  };
  proto.__uhpReadsNameAsText = true;
}

export default defineConfig({
  experimental: { adapter: true },
  schema: path.join('libs', 'db', 'prisma', 'schema.prisma'),
  migrations: { path: path.join('libs', 'db', 'prisma', 'migrations') },
  engine: 'js',
  async adapter() {
    const factory = new PrismaPg({ connectionString: databaseUrl });
    const connect = factory.connect.bind(factory);
    factory.connect = async () => {
      const adapter = await connect();
      readNameColumnsAsText(adapter);
      return adapter;
    };
    return factory;
  },
});
