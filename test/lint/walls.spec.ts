import { ESLint } from 'eslint';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '../..');
const eslint = new ESLint({ cwd: ROOT });

/** The wall messages ESLint reports for `code` as if it were the file at `path`. */
async function walls(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result.messages.filter((message) => message.ruleId === 'uhp/walls').map((message) => message.message);
}

describe('the import walls of docs/architecture.md', () => {
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
      await walls('apps/gateway/src/files/x.ts', "import { PrismaService } from '@app/db/prisma.service';\n"),
    ).toHaveLength(1);
    expect(await walls('apps/gateway/src/files/x.ts', "import { PrismaClient } from '@prisma/client';\n")).toHaveLength(
      1,
    );
    expect(
      await walls('libs/db/src/lifecycle/object-stager.ts', "import { Prisma } from '../generated/client';\n"),
    ).toHaveLength(1);
    expect(await walls('libs/db/src/repositories/x.ts', "import { Prisma } from '../generated/client';\n")).toEqual([]);
    expect(
      await walls('libs/db/src/lifecycle/unit-of-work.ts', "import { PrismaService } from '../prisma.service';\n"),
    ).toEqual([]);
    expect(await walls('apps/gateway/src/files/x.ts', "import { FileRepository } from '@app/db';\n")).toEqual([]);
  });

  it("child processes start only in the worker's converter sandbox", async () => {
    const code = "import { spawn } from 'node:child_process';\n";
    expect(await walls('apps/worker/src/previews/office/x.ts', code)).toHaveLength(1);
    expect(await walls('apps/gateway/src/x.ts', "const cp = require('child_process');\n")).toHaveLength(1);
    expect(await walls('apps/worker/src/previews/sandbox/sandbox.ts', code)).toEqual([]);
  });
});
