{{/* Names, labels and the parts every pod shares. */}}

{{- define "uhp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "uhp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The name of a component's objects: fullname-component (component may be "worker-preview"). */}}
{{- define "uhp.componentName" -}}
{{- printf "%s-%s" (include "uhp.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "uhp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "uhp.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- if .pool }}
uhp-files.io/pool: {{ .pool }}
{{- end }}
{{- end -}}

{{- define "uhp.labels" -}}
{{ include "uhp.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: uhp-files
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of the chart's objects that belong to no single component. */}}
{{- define "uhp.commonLabels" -}}
{{ include "uhp.labels" (dict "root" . "component" "shared") }}
{{- end -}}

{{/* image: registry/repository-component:tag[@digest] */}}
{{- define "uhp.image" -}}
{{- $v := .root.Values.image -}}
{{- $repository := printf "%s-%s" $v.repository .component -}}
{{- $registry := (.root.Values.global | default dict).imageRegistry | default $v.registry -}}
{{- if $registry }}{{ $repository = printf "%s/%s" $registry $repository }}{{ end -}}
{{- $tag := default .root.Chart.AppVersion $v.tag -}}
{{- $digest := get ($v.digests | default dict) .component -}}
{{- if $digest -}}
{{- printf "%s:%s@%s" $repository $tag $digest -}}
{{- else -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "uhp.secretName" -}}
{{- default (include "uhp.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "uhp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "uhp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "uhp.storageServiceAccountName" -}}
{{- if .Values.storage.serviceAccount.create -}}
{{- default (printf "%s-storage" (include "uhp.fullname" .)) .Values.storage.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.storage.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Container ports: fixed, the ones the images expose. */}}
{{- define "uhp.port.gateway" -}}8080{{- end -}}
{{- define "uhp.port.storage" -}}8081{{- end -}}
{{- define "uhp.port.worker" -}}8082{{- end -}}

{{/* REDIS_URL without the password (REDIS_PASSWORD comes from the Secret). */}}
{{- define "uhp.redisUrl" -}}
{{- $r := .Values.redis -}}
{{- $user := "" -}}
{{- if $r.username }}{{ $user = printf "%s@" $r.username }}{{ end -}}
{{- printf "%s://%s%s:%v/%v" (ternary "rediss" "redis" $r.tls) $user $r.host $r.port $r.db -}}
{{- end -}}

{{- define "uhp.storageUrl" -}}
{{- printf "http://%s-storage:%s" (include "uhp.fullname" .) (include "uhp.port.storage" .) -}}
{{- end -}}

{{/* An env entry from the Secret: (dict "root" $ "name" "DATABASE_URL" "key" "databaseUrl") */}}
{{- define "uhp.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName | default (include "uhp.secretName" .root) }}
      key: {{ get .root.Values.secretKeys .key }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/*
The pod's grace period: the preStop pause, then the service's own drain (SHUTDOWN_GRACE_MS, or a longer
body drain), then the 5 s the services give cut handlers to clean up, plus 5 s of margin.
(dict "root" $ "drainMs" 25000)
*/}}
{{- define "uhp.terminationGracePeriodSeconds" -}}
{{- $drainSeconds := div (add (int .drainMs) 999) 1000 -}}
{{- add (int .root.Values.preStopSeconds) $drainSeconds 10 -}}
{{- end -}}

{{- define "uhp.preStop" -}}
lifecycle:
  preStop:
    exec:
      command: ["sleep", "{{ .Values.preStopSeconds }}"]
{{- end -}}

{{/* Probes on the port the service listens on: /healthz (alive), /readyz (its dependencies answer). */}}
{{- define "uhp.probes" -}}
startupProbe:
  httpGet: { path: /healthz, port: http }
  periodSeconds: 2
  failureThreshold: 60
  timeoutSeconds: 2
livenessProbe:
  httpGet: { path: /healthz, port: http }
  periodSeconds: 10
  failureThreshold: 3
  timeoutSeconds: 3
readinessProbe:
  httpGet: { path: /readyz, port: http }
  periodSeconds: 5
  failureThreshold: 2
  timeoutSeconds: 4
{{- end -}}

{{/* What every pod spec shares: (dict "root" $ "component" "gateway" "pool" "") */}}
{{- define "uhp.podCommon" -}}
{{- $v := .root.Values -}}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- include "uhp.imagePullSecrets" .root }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- if $v.topologySpread.enabled }}
topologySpreadConstraints:
  {{- range $key := list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
  - maxSkew: {{ $v.topologySpread.maxSkew }}
    topologyKey: {{ $key }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "uhp.selectorLabels" (dict "root" $.root "component" $.component "pool" $.pool) | nindent 8 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
checksum/secret: computed from values, never from the rendered Secret, whose generated storage token differs
between renders (and between Argo CD syncs, which have no lookup): every pod of one render, and every render
of the same values, carries the same checksum. For an existing Secret: its name and keys (its content is not
visible here).
*/}}
{{- define "uhp.secretChecksum" -}}
{{- if .Values.existingSecret -}}
{{- printf "%s/%s" .Values.existingSecret (toJson .Values.secretKeys) | sha256sum -}}
{{- else -}}
{{- $inputs := dict "keys" .Values.secretKeys "databaseUrl" .Values.database.url "storageToken" (.Values.storageToken | default "")
  "apiKeys" .Values.apiKeys "redisAuth" .Values.redis.auth "redisPassword" (.Values.redis.password | default "")
  "s3StaticCredentials" .Values.s3.staticCredentials "s3AccessKeyId" (.Values.s3.accessKeyId | default "")
  "s3SecretAccessKey" (.Values.s3.secretAccessKey | default "") "agentHttpUrl" (.Values.agent.httpUrl | default "")
  "agentHttpToken" (.Values.agent.httpToken | default "") -}}
{{- toJson $inputs | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* The env var each queue's concurrency goes to. */}}
{{- define "uhp.concurrencyVar" -}}
{{- get (dict "preview" "PREVIEW_CONCURRENCY" "archive" "ARCHIVE_CONCURRENCY" "purge" "PURGE_CONCURRENCY") . -}}
{{- end -}}

{{/*
The worker pools, each completed from workers.poolDefaults: a field the pool sets wins; the maps resources, env,
keda and hpa merge key by key. Set by hand, not with mergeOverwrite, which would not let a pool's false or 0
override a default. Returned as JSON: range over `include "uhp.pools" $ | fromJsonArray`.
*/}}
{{- define "uhp.pools" -}}
{{- $defaults := .Values.workers.poolDefaults -}}
{{- $pools := list -}}
{{- range $pool := .Values.workers.pools -}}
{{- $merged := deepCopy $defaults -}}
{{- range $key, $value := $pool -}}
{{- if and (has $key (list "resources" "env" "keda" "hpa")) (kindIs "map" $value) -}}
{{- $sub := deepCopy (get $merged $key | default dict) -}}
{{- range $k, $v := $value }}{{ $_ := set $sub $k $v }}{{ end -}}
{{- $_ := set $merged $key $sub -}}
{{- else -}}
{{- $_ := set $merged $key $value -}}
{{- end -}}
{{- end -}}
{{- $pools = append $pools $merged -}}
{{- end -}}
{{- toJson $pools -}}
{{- end -}}

{{/* A CPU HorizontalPodAutoscaler of a component's Deployment: (dict "root" $ "component" "gateway" "hpa" $v.gateway.hpa) */}}
{{- define "uhp.cpuHpa" -}}
{{- $ctx := dict "root" .root "component" .component -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "uhp.componentName" $ctx }}
  labels:
    {{- include "uhp.labels" $ctx | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "uhp.componentName" $ctx }}
  minReplicas: {{ .hpa.minReplicas }}
  maxReplicas: {{ .hpa.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: { type: Utilization, averageUtilization: {{ .hpa.targetCPUUtilizationPercentage }} }
{{- end -}}

{{/* imagePullSecrets of a pod: image.pullSecrets, then global.imagePullSecrets (names or {name: …}), each once. */}}
{{- define "uhp.imagePullSecrets" -}}
{{- $names := list -}}
{{- range .Values.image.pullSecrets }}{{ $names = append $names . }}{{ end -}}
{{- range ((.Values.global | default dict).imagePullSecrets | default list) -}}
{{- if kindIs "map" . }}{{ $names = append $names .name }}{{ else }}{{ $names = append $names . }}{{ end -}}
{{- end -}}
{{- with uniq $names }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- end -}}
