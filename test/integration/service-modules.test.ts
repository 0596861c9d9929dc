import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '../..');

/** The npm packages a built service's root module loads, read from a fresh Node's require cache. */
function packagesLoadedBy(app: 'gateway' | 'storage' | 'worker'): string[] {
  const script = `
    require(process.argv[1]);
    const names = new Set();
    for (const file of Object.keys(require.cache)) {
      const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file);
      if (match) names.add(match[1]);
    }
    console.log(JSON.stringify([...names]));
  `;
  const module = join(ROOT, 'dist/apps', app, 'src', `${app}.module.js`);
  return JSON.parse(execFileSync(process.execPath, ['-e', script, module], { cwd: ROOT, encoding: 'utf8' }));
}

describe('what each built service loads', () => {
  it('storage queues nothing and loads no queue client; the gateway and the worker do', () => {
    // Kept out of storage so its resting heap stays small: it has no queue work, and BullMQ is not free to load.
    const storage = packagesLoadedBy('storage');
    expect(storage).toContain('@aws-sdk/client-s3');
    expect(storage).not.toContain('bullmq');
    expect(storage).not.toContain('@nestjs/bullmq');
    expect(packagesLoadedBy('gateway')).toContain('bullmq');
    expect(packagesLoadedBy('worker')).toContain('bullmq');
  });
});
