import type { K8sObject } from './helm';

/** The parts of rendered pod specs the chart's tests read. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
}
export interface Probe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
}
export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown> & {
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: Record<string, unknown> & { seccompProfile?: { type: string } };
  terminationGracePeriodSeconds?: number;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  topologySpreadConstraints?: Array<{ topologyKey: string; labelSelector: { matchLabels: Record<string, string> } }>;
  volumes?: Array<{ name: string; emptyDir?: { sizeLimit?: string; medium?: string } }>;
}
export interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    selector?: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
}

export const workloads = (objects: K8sObject[]): Workload[] =>
  objects.filter((object): object is Workload => object.kind === 'Deployment' || object.kind === 'Job');
export const deployments = (objects: K8sObject[]): Workload[] =>
  objects.filter((object): object is Workload => object.kind === 'Deployment');

/** Which service a workload runs, from the script its container starts. */
export function serviceOf(workload: Workload): 'gateway' | 'storage' | 'worker' | 'migrate' {
  const script = [...(workload.spec.template.spec.containers[0]!.args ?? [])].join(' ');
  const match = /dist\/(?:apps\/(gateway|storage|worker)\/src\/main\.js|libs\/db\/src\/(migrate)\/main\.js)/.exec(
    script,
  );
  if (!match) throw new Error(`${workload.metadata.name}: starts neither service nor migrations (${script})`);
  return (match[1] ?? match[2]) as 'gateway' | 'storage' | 'worker' | 'migrate';
}

export type ResolvedEnv = Record<string, { value: string } | { secret: string; key: string }>;

/** A container's environment as Kubernetes builds it: envFrom ConfigMaps first, then env (which wins). */
export function resolveEnv(container: Container, objects: K8sObject[]): ResolvedEnv {
  const env: ResolvedEnv = {};
  for (const source of container.envFrom ?? []) {
    if (!source.configMapRef) throw new Error(`${container.name}: envFrom other than a ConfigMap`);
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === source.configMapRef!.name);
    if (!configMap) throw new Error(`${container.name}: ConfigMap ${source.configMapRef.name} is not rendered`);
    for (const [name, value] of Object.entries((configMap as K8sObject & { data: Record<string, string> }).data))
      env[name] = { value };
  }
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) env[entry.name] = { value: entry.value };
    else if (entry.valueFrom?.secretKeyRef)
      env[entry.name] = { secret: entry.valueFrom.secretKeyRef.name, key: entry.valueFrom.secretKeyRef.key };
    else throw new Error(`${container.name}: ${entry.name} comes from neither a value nor a Secret`);
  }
  return env;
}

export const plainValue = (env: ResolvedEnv, name: string): string | undefined => {
  const entry = env[name];
  return entry && 'value' in entry ? entry.value : undefined;
};
