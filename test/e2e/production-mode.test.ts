import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api } from '../support/api';
import { stackEnv, TEST_STORAGE_TOKEN, testPort } from '../support/env';
import { type ServiceName, Stack } from '../support/stack';

/**
 * UHP_ENV=production as the built services run it: a laptop-only setting stops the start with one line per
 * variable, safe settings start and keep /metrics off the API port, and development starts with one warning
 * per relaxed default. The wording of each refusal is unit-tested beside the schema (config.spec.ts).
 */
const ROOT = resolve(__dirname, '../..');
const PORT_BASE = testPort(21480);
const SAFE_TOKEN = 'a-production-storage-token-0123456789abcdef';

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function runService(name: ServiceName, env: Record<string, string>): Run {
  const child = spawn(process.execPath, [resolve(ROOT, 'dist/apps', name, 'src/main.js')], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** The test stacks' settings (a loopback public URL, a short token, /metrics on the API port), in production. */
const LAPTOP_SETTINGS_IN_PRODUCTION: Record<string, string> = {
  ...stackEnv(PORT_BASE),
  UHP_ENV: 'production',
  LOG_LEVEL: 'warn',
};

describe('UHP_ENV=production', () => {
  it.each([
    ['gateway', ['UHP_PUBLIC_BASE_URL', 'UHP_API_METRICS', 'STORAGE_TOKEN']],
    ['storage', ['STORAGE_TOKEN']],
    ['worker', ['STORAGE_TOKEN']],
  ] as const)('%s refuses to start on laptop-only settings, one line per variable', async (name, variables) => {
    const run = runService(name, LAPTOP_SETTINGS_IN_PRODUCTION);
    expect(await run.exited).toBe(1);
    const refusals = run
      .output()
      .split('\n')
      .filter((line) => line.startsWith('  - '));
    expect(refusals.map((line) => line.slice(4).split(':')[0])).toEqual(variables);
    for (const line of refusals) expect(line).toMatch(/; set .*\(UHP_ENV=production\)/);
    // The token itself never reaches the output.
    expect(run.output()).not.toContain(TEST_STORAGE_TOKEN);
  });

  describe('with production settings', () => {
    const stack = new Stack(PORT_BASE, {
      UHP_ENV: 'production',
      STORAGE_TOKEN: SAFE_TOKEN,
      UHP_PUBLIC_BASE_URL: 'https://files.example.com',
      UHP_API_METRICS: 'false',
    });
    afterAll(() => stack.stop());

    it('starts, answers the API, and keeps /metrics off the public API port', async () => {
      await stack.start(['storage', 'gateway']);
      expect((await api('GET', '/v1/limits', { who: 'anon', base: stack.baseUrl })).status).toBe(200);
      expect((await fetch(`${stack.baseUrl}/metrics`)).status).toBe(404);
    });
  });
});

describe('UHP_ENV=development', () => {
  it('starts with the laptop settings and warns once for each', async () => {
    const run = runService('gateway', { ...LAPTOP_SETTINGS_IN_PRODUCTION, UHP_ENV: 'development', LOG_LEVEL: 'info' });
    try {
      const deadline = Date.now() + 60_000;
      while (!run.output().includes('"msg":"listening"') && Date.now() < deadline) {
        if (run.child.exitCode !== null) break;
        await new Promise((done) => setTimeout(done, 100));
      }
      expect(run.output()).toContain('"msg":"listening"');
      const warned = run
        .output()
        .split('\n')
        .filter((line) => line.includes('UHP_ENV=production refuses it'))
        .map((line) => JSON.parse(line).variable as string);
      expect(warned).toEqual(['UHP_PUBLIC_BASE_URL', 'UHP_API_METRICS', 'STORAGE_TOKEN']);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });
});
