import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1';
import type { K8sObject } from './helm';

/**
 * The schema of every kind the chart renders: Kubernetes' own (kubernetes-models, generated from the API's
 * OpenAPI), KEDA's CRDs (@kubernetes-models/keda), prometheus-operator's (@kubernetes-models/prometheus-operator)
 * and the Gateway API's (@kubernetes-models/gateway-api).
 * A kind the chart starts to render without a schema here fails the test rather than pass unchecked.
 */
type Model = new (data: never) => { validate(): void };
const MODELS: Record<string, Model> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthentication,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'gateway.networking.k8s.io/v1/HTTPRoute': HTTPRoute,
};

/** Validates one rendered object against its kind's schema; throws with the schema's complaint. */
export function validateObject(object: K8sObject): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind} (${object.metadata.name})`);
  try {
    new Model(object as never).validate();
  } catch (error) {
    throw new Error(`${object.kind}/${object.metadata.name}: ${(error as Error).message}`, { cause: error });
  }
}
