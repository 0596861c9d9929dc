import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, parse, stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHART, ciValues, HELM_ENV, helmBinary, type K8sObject } from './support/helm';

const run = promisify(execFile);

interface PodSpecOwner extends K8sObject {
  spec: {
    template: {
      spec: {
        imagePullSecrets?: Array<{ name: string }>;
        containers: Array<{ name: string; image: string }>;
        initContainers?: Array<{ name: string; image: string }>;
      };
    };
  };
}

/** An umbrella chart that depends on ours through file://, rendered with globals as a platform team sets them. */
describe('as the subchart of an umbrella chart', () => {
  let objects: K8sObject[];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uhp-umbrella-'));
    const version = (parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { version: string }).version;
    writeFileSync(
      join(dir, 'Chart.yaml'),
      stringify({
        apiVersion: 'v2',
        name: 'platform',
        version: '1.0.0',
        dependencies: [{ name: 'uhp-files', version, repository: `file://${CHART}` }],
      }),
    );
    writeFileSync(
      join(dir, 'values.yaml'),
      stringify({
        global: {
          imageRegistry: 'registry.corp.example:5000',
          imagePullSecrets: ['corp-pull', { name: 'mirror-pull' }],
          // Another subchart's global: let through.
          storageClass: 'fast-ssd',
        },
        'uhp-files': { ...ciValues('minimal'), image: { pullSecrets: ['own-pull', 'corp-pull'] } },
      }),
    );
    const helm = helmBinary();
    await run(helm, ['dependency', 'build', dir], { env: HELM_ENV });
    const { stdout } = await run(helm, ['template', 'platform', dir, '--namespace', 'files'], {
      env: HELM_ENV,
      maxBuffer: 64 * 1024 * 1024,
    });
    objects = parseAllDocuments(stdout)
      .map((doc) => doc.toJS() as K8sObject | null)
      .filter((object): object is K8sObject => object !== null);
  }, 120_000);

  const podOwners = () =>
    objects.filter((object) => object.kind === 'Deployment' || object.kind === 'Job') as PodSpecOwner[];

  it('global.imageRegistry prefixes every image of ours, the migrate Job included', () => {
    expect(
      podOwners()
        .map((owner) => owner.kind)
        .sort(),
    ).toContain('Job');
    for (const owner of podOwners())
      for (const container of [
        ...owner.spec.template.spec.containers,
        ...(owner.spec.template.spec.initContainers ?? []),
      ])
        expect(container.image, `${owner.metadata.name}/${container.name}`).toMatch(
          /^registry\.corp\.example:5000\/uhp-files-(gateway|storage|worker|migrate):/,
        );
  });

  it('global.imagePullSecrets add to image.pullSecrets on every pod, each name once', () => {
    for (const owner of podOwners())
      expect(owner.spec.template.spec.imagePullSecrets, owner.metadata.name).toEqual([
        { name: 'own-pull' },
        { name: 'corp-pull' },
        { name: 'mirror-pull' },
      ]);
  });
});
