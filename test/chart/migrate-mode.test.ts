import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DIGEST_FILE, migrationsDigest } from '../../k8s/tools/chart-migrations.mjs';
import { byKind, ciValuesFile, HELM_ENV, helmBinary, ROOT, render, type K8sObject } from './support/helm';
import { deployments, resolveEnv, workloads, type Workload } from './support/workloads';

const run = promisify(execFile);

/** migrate.mode: a Helm hook (default) or a Job of the release for Argo CD, Flux and kubectl apply. */
const jobMode = (extra: Record<string, unknown> = {}) => ({ migrate: { mode: 'job', ...extra } });
const jobsOf = (objects: K8sObject[]) => byKind(objects, 'Job') as Workload[];

/** `helm template` of another copy of the chart (a directory or a packaged .tgz), as text. */
const template = async (chart: string, ...args: string[]) =>
  (
    await run(
      helmBinary(),
      ['template', 'uhp', chart, '--namespace', 'files', '-f', ciValuesFile('minimal'), ...args],
      {
        env: HELM_ENV,
        maxBuffer: 64 * 1024 * 1024,
      },
    )
  ).stdout;

describe('migrate.mode job', () => {
  it('a Job named after the image and the migrations, an Argo CD Sync hook, reading the release Secret', async () => {
    const objects = await render({ values: 'minimal', overrides: jobMode() });
    const [job] = jobsOf(objects);
    expect(job!.metadata.name).toMatch(/^uhp-uhp-files-migrate-[0-9a-f]{10}$/);
    expect(job!.metadata.annotations).toEqual({
      'argocd.argoproj.io/hook': 'Sync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
    });
    // No Helm hook, and no hook Secret of its own: the release's Secret exists when a plain Job runs.
    expect(JSON.stringify(objects)).not.toContain('helm.sh/hook');
    expect(resolveEnv(job!.spec.template.spec.containers[0]!, objects).DATABASE_URL).toEqual({
      secret: 'uhp-uhp-files',
      key: 'database-url',
    });
  });

  it('a new image tag or new migrations give a new Job name; the same values the same name', async () => {
    const name = async (overrides: Record<string, unknown>) =>
      jobsOf(await render({ values: 'minimal', overrides }))[0]!.metadata.name;
    const base = await name(jobMode());
    expect(await name(jobMode())).toBe(base);
    expect(await name({ ...jobMode(), image: { tag: '9.9.9' } })).not.toBe(base);
    expect(await name({ ...jobMode(), image: { digests: { migrate: `sha256:${'a'.repeat(64)}` } } })).not.toBe(base);
    // The same chart with one more migration.
    const chart = mkdtempSync(join(tmpdir(), 'uhp-chart-copy-'));
    cpSync(join(ROOT, 'k8s/charts/uhp-files'), chart, { recursive: true });
    appendFileSync(join(chart, 'files/migrations.sha256'), `${'b'.repeat(64)}  29991231000000_next\n`);
    const copied = (await template(chart, '--set', 'migrate.mode=job')).match(/name: (uhp-uhp-files-migrate-\w+)/)![1];
    expect(copied).not.toBe(base);
  });

  it('every Deployment waits for the schema first; the Job takes pod annotations and the escape hatches', async () => {
    const objects = await render({
      values: 'minimal',
      overrides: jobMode({
        podAnnotations: { 'sidecar.istio.io/inject': 'false' },
        extraEnv: [{ name: 'PGAPPNAME', value: 'migrate' }],
        initContainers: [{ name: 'proxy-ready', image: 'busybox' }],
      }),
    });
    for (const deployment of deployments(objects)) {
      const [wait] = deployment.spec.template.spec.initContainers!;
      expect(wait!.name).toBe('wait-for-schema');
      expect(wait!.image).toMatch(/uhp-files-migrate:/);
      expect(wait!.args).toEqual(['node', 'dist/libs/db/src/migrate/main.js', '--wait']);
      expect(resolveEnv(wait!, objects).DATABASE_URL).toEqual({ secret: 'uhp-uhp-files', key: 'database-url' });
      expect(wait!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true });
    }
    const [job] = jobsOf(objects);
    expect(job!.spec.template.metadata.annotations!['sidecar.istio.io/inject']).toBe('false');
    expect(job!.spec.template.spec.initContainers!.map((c) => c.name)).toEqual(['proxy-ready']);
    expect(job!.spec.template.spec.containers[0]!.env!.map((e) => e.name)).toEqual(['DATABASE_URL', 'PGAPPNAME']);
  });

  it('hook mode (the default) keeps the Helm hook and adds no wait to the Deployments', async () => {
    const objects = await render({ values: 'minimal' });
    expect(jobsOf(objects)[0]!.metadata.annotations!['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    for (const workload of workloads(objects)) expect(workload.spec.template.spec.initContainers).toBeUndefined();
  });

  it('files/migrations.sha256 lists the migrations as they are (npm run chart:migrations)', () => {
    expect(readFileSync(DIGEST_FILE, 'utf8'), 'stale: run npm run chart:migrations').toBe(migrationsDigest());
  });
});

describe('npm run chart:package', () => {
  it('packs uhp-files-<version>.tgz, version and appVersion those of package.json and of the image tags', async () => {
    const out = mkdtempSync(join(tmpdir(), 'uhp-chart-package-'));
    await run(process.execPath, [join(ROOT, 'k8s/tools/chart-package.mjs'), out], { cwd: ROOT });
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const tgz = join(out, `uhp-files-${version}.tgz`);
    const { stdout } = await run('tar', ['-xzOf', tgz, 'uhp-files/Chart.yaml']);
    const chart = parse(stdout) as { version: string; appVersion: string };
    expect(chart).toMatchObject({ version, appVersion: version });
    // The packaged chart deploys exactly the tags `npm run images` builds.
    const tags = (await run('bash', [join(ROOT, 'infra/docker/build-images.sh'), '--print-tags'])).stdout
      .trim()
      .split('\n');
    const images = [...(await template(tgz, '--set', 'migrate.mode=job')).matchAll(/image: (\S+)/g)].map((m) => m[1]);
    expect([...new Set(images)].sort()).toEqual([...tags].sort());
    expect(tags).toEqual(['gateway', 'storage', 'worker', 'migrate'].map((c) => `uhp-files-${c}:${version}`));
  });
});
