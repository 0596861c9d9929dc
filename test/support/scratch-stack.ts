import pg from 'pg';
import { scratchDatabase } from './db';
import { TEST_BUCKET } from './env';
import { emptyBucket, ensureBucket } from './s3';
import { Stack, type ServiceName } from './stack';

/**
 * A stack of its own on a scratch database and bucket, so that what the doctor finds in them afterwards is this
 * test's doing alone. Start it in beforeAll, stop it in afterAll (what it made goes, also after a failed start).
 */
export class ScratchStack {
  readonly bucket: string;
  private database?: Awaited<ReturnType<typeof scratchDatabase>>;
  private pool?: pg.Pool;
  private running?: Stack;

  constructor(
    private readonly label: string,
    private readonly portBase: number,
  ) {
    this.bucket = `${TEST_BUCKET}-${label.replaceAll('_', '-')}`;
  }

  get stack(): Stack {
    if (!this.running) throw new Error(`the ${this.label} stack is not started`);
    return this.running;
  }

  get databaseUrl(): string {
    if (!this.database) throw new Error(`the ${this.label} database is not made`);
    return this.database.url;
  }

  /** A pool on the scratch database, for the test's own reads. */
  get sql(): pg.Pool {
    if (!this.pool) throw new Error(`the ${this.label} database is not made`);
    return this.pool;
  }

  async start(env: Record<string, string>, services?: ServiceName[]): Promise<Stack> {
    await ensureBucket(this.bucket);
    await emptyBucket(this.bucket); // the last run's objects would be orphans to the fresh database
    this.database = await scratchDatabase(this.label);
    this.pool = new pg.Pool({ connectionString: this.database.url, max: 2 });
    this.running = new Stack(this.portBase, { ...env, DATABASE_URL: this.database.url, S3_BUCKET: this.bucket });
    await this.running.start(services);
    return this.running;
  }

  async stop(): Promise<void> {
    await this.running?.stop();
    await this.pool?.end();
    await this.database?.drop();
    await emptyBucket(this.bucket).catch(() => undefined);
  }
}
