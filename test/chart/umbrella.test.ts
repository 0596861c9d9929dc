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
          compatibility: { openshift: { adaptSecurityContext: 'force' } },
        },
        'uhp-files': {
          ...ciValues('minimal'),
          image: { pullSecrets: ['own-pull', 'corp-pull'] },
          // The wait-for-schema init containers are ours too; a sidecar the user adds keeps its own registry.
          migrate: { mode: 'job' },
          sidecars: [{ name: 'proxy', image: 'docker.io/envoyproxy/envoy:v1.36' }],
        },
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

  it('global.imageRegistry prefixes every image of ours, the migrate Job included, not a sidecar of the user', () => {
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
          container.name === 'proxy'
            ? /^docker\.io\/envoyproxy\/envoy:v1\.36$/
            : /^registry\.corp\.example:5000\/uhp-files-(gateway|storage|worker|migrate):/,
        );
    expect(
      podOwners().filter((owner) => owner.spec.template.spec.initContainers?.[0]?.name === 'wait-for-schema'),
    ).toHaveLength(podOwners().length - 1);
  });

  it('global.compatibility.openshift leaves uid, gid and fsGroup to the SCC on every pod and container', () => {
    const ids = /"(runAsUser|runAsGroup|fsGroup)"/;
    for (const owner of podOwners()) expect(JSON.stringify(owner.spec.template.spec)).not.toMatch(ids);
    expect(podOwners().length).toBeGreaterThan(4);
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
