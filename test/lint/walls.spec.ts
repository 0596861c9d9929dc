import { ESLint } from 'eslint';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '../..');
const eslint = new ESLint({ cwd: ROOT });

/** The wall messages ESLint reports for `code` as if it were the file at `path`. */
async function walls(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result.messages.filter((message) => message.ruleId === 'uhp/walls').map((message) => message.message);
}

describe('the import walls of docs/architecture.md', () => {
  // The first lint loads the config and typescript-eslint's parser: slow on a busy machine, not what is tested.
  beforeAll(() => eslint.lintText('', { filePath: join(ROOT, 'apps/gateway/src/x.ts') }), 60_000);

  it('no app imports another', async () => {
    expect(
      await walls(
        'apps/gateway/src/files/x.ts',
        "import { ObjectsService } from '../../../storage/src/objects/objects.service';\n",
      ),
    ).toEqual([expect.stringMatching(/apps\/gateway must not import apps\/storage/)]);
    expect(await walls('apps/worker/src/x.ts', "export * from '../../gateway/src/auth/api-key';\n")).toHaveLength(1);
    expect(await walls('apps/gateway/src/files/x.ts', "import { FilesService } from './files.service';\n")).toEqual([]);
  });

  it('libs never import apps', async () => {
    expect(
      await walls(
        'libs/common/src/x.ts',
        "import { GatewayModule } from '../../../apps/gateway/src/gateway.module';\n",
      ),
    ).toEqual([expect.stringMatching(/libs never import apps/)]);
  });

  it('only apps/storage talks to S3', async () => {
    const code = "import { S3Client } from '@aws-sdk/client-s3';\n";
    expect(await walls('apps/worker/src/x.ts', code)).toEqual([
      expect.stringMatching(/only apps\/storage talks to S3/),
    ]);
    expect(await walls('libs/common/src/x.ts', code)).toHaveLength(1);
    expect(await walls('apps/storage/src/objects/x.ts', code)).toEqual([]);
  });

  it('only repositories and the unit of work touch the Prisma client', async () => {
    expect(
      await walls('apps/gateway/src/files/x.ts', "import { PrismaService } from '@app/db/prisma';\n"),
    ).toHaveLength(1);
    expect(await walls('apps/gateway/src/files/x.ts', "import { PrismaClient } from '@prisma/client';\n")).toHaveLength(
      1,
    );
    expect(
      await walls('libs/lifecycle/src/object-stager.ts', "import { PrismaService } from '@app/db/prisma';\n"),
    ).toEqual([expect.stringMatching(/only repositories and transactions/)]);
    expect(await walls('libs/db/src/repositories/x.ts', "import { Prisma } from '../generated/client';\n")).toEqual([]);
    expect(await walls('libs/db/src/transactions.ts', "import { PrismaService } from './prisma.service';\n")).toEqual(
      [],
    );
    expect(await walls('apps/gateway/src/files/x.ts', "import { FileRepository } from '@app/db';\n")).toEqual([]);
  });

  it("child processes start only in the worker's converter sandbox", async () => {
    const code = "import { spawn } from 'node:child_process';\n";
    expect(await walls('apps/worker/src/previews/office/x.ts', code)).toHaveLength(1);
    expect(await walls('apps/gateway/src/x.ts', "const cp = require('child_process');\n")).toHaveLength(1);
    expect(await walls('apps/worker/src/previews/sandbox/sandbox.ts', code)).toEqual([]);
  });

  it('a library is reached through an entry tsconfig.json declares, never by a deep or relative path', async () => {
    expect(
      await walls(
        'apps/storage/src/x.ts',
        "import { S3MultipartRepository } from '@app/db/repositories/s3-multipart.repository';\n",
      ),
    ).toEqual([expect.stringMatching(/through an entry tsconfig.json declares, never by a deep path/)]);
    expect(await walls('apps/worker/src/x.ts', "import { JobBus } from '@app/common/queue';\n")).toHaveLength(1);
    expect(
      await walls(
        'libs/lifecycle/src/x.ts',
        "import { FileRepository } from '../../db/src/repositories/file.repository';\n",
      ),
    ).toEqual([expect.stringMatching(/never by a relative path/)]);
    expect(await walls('apps/gateway/src/x.ts', "import { UnitOfWork } from '@app/lifecycle';\n")).toEqual([]);
    expect(await walls('libs/db/src/repositories/x.ts', "import { ApiError } from '@app/common';\n")).toEqual([]);
  });

  it('libraries import only the libraries below them: the database knows no queue and no object store', async () => {
    expect(await walls('libs/db/src/x.ts', "import { JobBus } from '@app/queue';\n")).toEqual(
      expect.arrayContaining([expect.stringMatching(/libs\/db must not import libs\/queue/)]),
    );
    expect(await walls('libs/db/src/x.ts', "import { ObjectStager } from '@app/lifecycle';\n")).toEqual(
      expect.arrayContaining([expect.stringMatching(/libs\/db must not import libs\/lifecycle/)]),
    );
    expect(await walls('libs/common/src/x.ts', "import { FileRepository } from '@app/db';\n")).toEqual([
      expect.stringMatching(/libs\/common must not import libs\/db/),
    ]);
    expect(await walls('libs/queue/src/x.ts', "import { UnitOfWork } from '@app/lifecycle';\n")).toEqual([
      expect.stringMatching(/libs\/queue must not import libs\/lifecycle/),
    ]);
    expect(await walls('libs/lifecycle/src/x.ts', "import { JobBus } from '@app/queue';\n")).toEqual([]);
  });

  it('the queue is for the gateway and the worker only', async () => {
    for (const code of ["import { Queue } from 'bullmq';\n", "import { JobBus } from '@app/queue';\n"]) {
      expect(await walls('apps/storage/src/objects/x.ts', code)).toEqual([
        expect.stringMatching(/the queue is for the gateway and the worker/),
      ]);
      expect(await walls('libs/db/src/x.ts', code)).not.toEqual([]);
    }
    expect(await walls('libs/common/src/x.ts', "import { BullModule } from '@nestjs/bullmq';\n")).toHaveLength(1);
    expect(await walls('apps/worker/src/x.ts', "import { Queue } from 'bullmq';\n")).toEqual([]);
  });

  it('Express types stay at the HTTP edge, out of services', async () => {
    const code = "import type { Request } from 'express';\n";
    expect(await walls('apps/gateway/src/files/files.service.ts', code)).toEqual([
      expect.stringMatching(/Express types stay at the HTTP edge/),
    ]);
    expect(
      await walls(
        'apps/worker/src/archives/x.ts',
        "import { NestExpressApplication } from '@nestjs/platform-express';\n",
      ),
    ).toHaveLength(1);
    expect(await walls('libs/lifecycle/src/x.ts', code)).toHaveLength(1);
    expect(await walls('apps/gateway/src/files/files.controller.ts', code)).toEqual([]);
    expect(await walls('apps/gateway/src/http/response-writer.ts', code)).toEqual([]);
    expect(await walls('apps/gateway/src/auth/api-key.middleware.ts', code)).toEqual([]);
  });
});
