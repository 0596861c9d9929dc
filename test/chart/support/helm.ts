import { execFile } from 'node:child_process';
import { helmBinary, HELM_ENV } from '../../../k8s/tools/helm.mjs';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';

/** The chart's helm (k8s/tools/helm.mjs): unpacked from an npm package, no download, no cluster. */
const run = promisify(execFile);
export const ROOT = resolve(__dirname, '../../..');
export const CHART = join(ROOT, 'k8s/charts/uhp-files');
export const CI_VALUES = ['minimal', 'production', 'previews-off'] as const;
export type CiValues = (typeof CI_VALUES)[number];
export const ciValuesFile = (name: CiValues) => join(CHART, 'ci', `${name}-values.yaml`);
export { helmBinary, HELM_ENV };

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface RenderOptions {
  values?: CiValues | CiValues[];
  /** Further values files (absolute paths), after the ci/ ones. */
  files?: string[];
  set?: Record<string, string>;
  /** Values given as an object (written to a values file after the others; lists replace lists). */
  overrides?: Record<string, unknown>;
  release?: string;
  namespace?: string;
  /** APIs the cluster is taken to serve (`--api-versions`), as Argo CD passes them. */
  apiVersions?: string[];
}

/** A values file holding `values`, in a scratch directory of the OS. */
export function valuesFile(values: Record<string, unknown>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'uhp-chart-values-')), 'values.yaml');
  writeFileSync(file, stringify(values));
  return file;
}

function helmArgs(options: RenderOptions): string[] {
  const values = options.values === undefined ? [] : [options.values].flat();
  const overrides = options.overrides ? [valuesFile(options.overrides)] : [];
  return [
    ...values.flatMap((name) => ['-f', ciValuesFile(name)]),
    ...[...(options.files ?? []), ...overrides].flatMap((file) => ['-f', file]),
    ...Object.entries(options.set ?? {}).flatMap(([key, value]) => ['--set-string', `${key}=${value}`]),
    ...(options.apiVersions ?? []).flatMap((api) => ['--api-versions', api]),
  ];
}

/** `helm template` of the chart; every rendered object, parsed. Rejects with helm's message when it fails. */
export async function render(options: RenderOptions = {}): Promise<K8sObject[]> {
  const { stdout } = await run(
    helmBinary(),
    ['template', options.release ?? 'uhp', CHART, '--namespace', options.namespace ?? 'files', ...helmArgs(options)],
    { env: HELM_ENV, maxBuffer: 64 * 1024 * 1024 },
  );
  return parseAllDocuments(stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`helm rendered invalid YAML: ${doc.errors[0]!.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((object): object is K8sObject => object !== null);
}

/** The values of a ci/ file, parsed (to derive variants from). */
export const ciValues = (name: CiValues) =>
  parseAllDocuments(readFileSync(ciValuesFile(name), 'utf8'))[0]!.toJS() as Record<string, unknown>;

/** helm's error message of a render that must fail (throws when it renders). */
export async function renderFailure(options: RenderOptions): Promise<string> {
  try {
    await render(options);
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
  throw new Error('the chart rendered, but should have refused');
}

export async function lint(options: RenderOptions): Promise<string> {
  const { stdout } = await run(helmBinary(), ['lint', '--strict', CHART, ...helmArgs(options)], {
    env: HELM_ENV,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

export const byKind = (objects: K8sObject[], kind: string) => objects.filter((object) => object.kind === kind);
export function named<T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string, name: string): T {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found)
    throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found as T;
}
