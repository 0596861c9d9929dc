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

{{/* The Redis topology: "sentinel", "cluster" or "single" (checks.yaml refuses both at once). */}}
{{- define "uhp.redisMode" -}}
{{- $r := .Values.redis -}}
{{- if $r.sentinel.enabled }}sentinel{{ else if $r.cluster.enabled }}cluster{{ else }}single{{ end -}}
{{- end -}}

{{/*
REDIS_URL without the password (REDIS_PASSWORD comes from the Secret). Under Sentinel and Cluster the services
take only its scheme (TLS), user and database: its host is then the primary's name, or the first seed node, so
that the URL still reads as what it points to.
*/}}
{{- define "uhp.redisUrl" -}}
{{- $r := .Values.redis -}}
{{- $mode := include "uhp.redisMode" . -}}
{{- $address := printf "%s:%v" $r.host $r.port -}}
{{- if eq $mode "sentinel" }}{{ $address = printf "%s:%v" $r.sentinel.masterSet $r.port }}{{ end -}}
{{- if eq $mode "cluster" }}{{ $address = first $r.cluster.nodes | default "" }}{{ end -}}
{{- $user := "" -}}
{{- if $r.username }}{{ $user = printf "%s@" $r.username }}{{ end -}}
{{- printf "%s://%s%s/%v" (ternary "rediss" "redis" $r.tls) $user $address $r.db -}}
{{- end -}}

{{/* The Redis settings of a ConfigMap (gateway, workers): the URL, the prefix and the topology's own. */}}
{{- define "uhp.redisConfig" -}}
{{- $r := .Values.redis -}}
{{- $mode := include "uhp.redisMode" . -}}
REDIS_URL: {{ include "uhp.redisUrl" . | quote }}
REDIS_KEY_PREFIX: {{ $r.keyPrefix | quote }}
{{- if eq $mode "sentinel" }}
REDIS_SENTINELS: {{ join "," $r.sentinel.hosts | quote }}
REDIS_SENTINEL_MASTER: {{ $r.sentinel.masterSet | quote }}
REDIS_SENTINEL_TLS: {{ $r.sentinel.tls | quote }}
{{- with $r.sentinel.username }}
REDIS_SENTINEL_USERNAME: {{ . | quote }}
{{- end }}
{{- else if eq $mode "cluster" }}
REDIS_CLUSTER_NODES: {{ join "," $r.cluster.nodes | quote }}
{{- end }}
{{- end -}}

{{/* The Redis passwords from the Secret, as env entries: the data nodes', and the sentinels' own. */}}
{{- define "uhp.redisSecretEnv" -}}
{{- if .Values.redis.auth }}
{{ include "uhp.secretEnv" (dict "root" . "name" "REDIS_PASSWORD" "key" "redisPassword") }}
{{- end }}
{{- if and (eq (include "uhp.redisMode" .) "sentinel") .Values.redis.sentinel.auth }}
{{ include "uhp.secretEnv" (dict "root" . "name" "REDIS_SENTINEL_PASSWORD" "key" "redisSentinelPassword") }}
{{- end }}
{{- end -}}

{{/*
"true" when the Secret holds a direct Postgres URL: database.directUrl in the chart's own Secret, or
database.hasDirectUrl for an existingSecret (whose content the chart cannot see).
*/}}
{{- define "uhp.hasDirectUrl" -}}
{{- if .Values.existingSecret -}}
{{- if .Values.database.hasDirectUrl }}true{{ end -}}
{{- else if .Values.database.directUrl -}}
true
{{- end -}}
{{- end -}}

{{/*
The Secret key a migration connects with: the direct URL when there is one (the runner holds a session-level
advisory lock, which PgBouncer's transaction pooling cannot keep), else DATABASE_URL's. Returns the secretKeys
field name.
*/}}
{{- define "uhp.migrateDatabaseKey" -}}
{{- ternary "databaseDirectUrl" "databaseUrl" (eq (include "uhp.hasDirectUrl" .) "true") -}}
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

{{/*
The pod settings of one pod: the top-level values, then the component's own (gateway, storage, a pool completed
from workers.poolDefaults, or migrate). Lists add to the top level's; maps merge key by key with the component
winning; affinity, strategy and the scalars are the component's when it sets them, else the top level's.
(dict "root" $ "own" $v.gateway) -> JSON: `include "uhp.podSettings" … | fromJson`
*/}}
{{- define "uhp.podSettings" -}}
{{- $top := .root.Values -}}
{{- $own := .own | default dict -}}
{{- $out := dict -}}
{{- range $key := list "extraEnv" "extraEnvFrom" "extraVolumes" "extraVolumeMounts" "initContainers" "sidecars" "tolerations" "topologySpreadConstraints" -}}
{{- $_ := set $out $key (concat (get $top $key | default list) (get $own $key | default list)) -}}
{{- end -}}
{{- range $key := list "podAnnotations" "podLabels" "nodeSelector" "deploymentAnnotations" -}}
{{- $_ := set $out $key (merge (deepCopy (get $own $key | default dict)) (deepCopy (get $top $key | default dict))) -}}
{{- end -}}
{{- range $key := list "affinity" "strategy" "priorityClassName" "runtimeClassName" "terminationGracePeriodSeconds" -}}
{{- range $source := list $top $own -}}
{{- $value := get $source $key -}}
{{- /* null, "" and {} leave it unset; a number, 0 included, sets it */ -}}
{{- if or (kindIs "float64" $value) (kindIs "int64" $value) (and (not (kindIs "invalid" $value)) (not (empty $value))) -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
OpenShift adaptation: "true" when global.compatibility.openshift.adaptSecurityContext is force, or auto on a
cluster that serves security.openshift.io/v1. The restricted SCC then picks the uid, gid and fsGroup.
*/}}
{{- define "uhp.openshift" -}}
{{- $mode := ((((.Values.global | default dict).compatibility | default dict).openshift | default dict).adaptSecurityContext | default "auto") -}}
{{- if or (eq $mode "force") (and (eq $mode "auto") (.Capabilities.APIVersions.Has "security.openshift.io/v1")) -}}
true
{{- end -}}
{{- end -}}

{{/* A security context (pod or container) as the cluster takes it: (dict "root" $ "context" $v.podSecurityContext) */}}
{{- define "uhp.securityContext" -}}
{{- if include "uhp.openshift" .root -}}
{{- toYaml (omit .context "runAsUser" "runAsGroup" "fsGroup") -}}
{{- else -}}
{{- toYaml .context -}}
{{- end -}}
{{- end -}}

{{/* The CA bundle of tls.caBundle, mounted in every container of ours (NODE_EXTRA_CA_CERTS names the file). */}}
{{- define "uhp.caBundlePath" -}}/etc/uhp-files/ca/ca.crt{{- end -}}

{{- define "uhp.caBundleEnv" -}}
{{- if or .Values.tls.caBundle.configMap .Values.tls.caBundle.secret }}
- { name: NODE_EXTRA_CA_CERTS, value: {{ include "uhp.caBundlePath" . }} }
{{- end }}
{{- end -}}

{{- define "uhp.caBundleMount" -}}
{{- if or .Values.tls.caBundle.configMap .Values.tls.caBundle.secret }}
- { name: ca-bundle, mountPath: /etc/uhp-files/ca, readOnly: true }
{{- end }}
{{- end -}}

{{- define "uhp.caBundleVolume" -}}
{{- $ca := .Values.tls.caBundle -}}
{{- if $ca.configMap }}
- name: ca-bundle
  configMap:
    name: {{ $ca.configMap }}
    items: [{ key: {{ $ca.key | quote }}, path: ca.crt }]
{{- else if $ca.secret }}
- name: ca-bundle
  secret:
    secretName: {{ $ca.secret }}
    items: [{ key: {{ $ca.key | quote }}, path: ca.crt }]
{{- end }}
{{- end -}}

{{/*
A container's env: the chart's entries (YAML list text), without those extraEnv names again, then extraEnv;
so an extraEnv entry overrides both the chart's env and (as env does) the ConfigMap's.
(dict "generated" $text "extra" $pod.extraEnv)
*/}}
{{- define "uhp.env" -}}
{{- if .extra -}}
{{- $names := list -}}
{{- range .extra }}{{ $names = append $names .name }}{{ end -}}
{{- $kept := list -}}
{{- range (.generated | fromYamlArray) }}{{ if not (has .name $names) }}{{ $kept = append $kept . }}{{ end }}{{ end -}}
{{- toYaml (concat $kept .extra) -}}
{{- else -}}
{{- .generated | trim -}}
{{- end -}}
{{- end -}}

{{/* A map the chart fills, with the user's keys added (the chart's keys win): (dict "chart" $text "user" $map) */}}
{{- define "uhp.mergedMap" -}}
{{- if .user -}}
{{- toYaml (merge (.chart | fromYaml) .user) -}}
{{- else -}}
{{- .chart | trim -}}
{{- end -}}
{{- end -}}

{{/* Metadata of a pod template: labels and annotations. (dict "root" $ "ctx" $ctx "pod" $pod "annotations" $text) */}}
{{- define "uhp.podMetadata" -}}
labels:
  {{- include "uhp.mergedMap" (dict "chart" (include "uhp.labels" .ctx) "user" .pod.podLabels) | nindent 2 }}
{{- $annotations := include "uhp.mergedMap" (dict "chart" (.annotations | default "") "user" .pod.podAnnotations) }}
{{- if $annotations }}
annotations:
  {{- $annotations | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The rollout of a Deployment: strategy when set, else one new pod at a time, none taken down first. */}}
{{- define "uhp.strategy" -}}
strategy:
{{- if .strategy }}
  {{- toYaml .strategy | nindent 2 }}
{{- else }}
  type: RollingUpdate
  rollingUpdate: { maxUnavailable: 0, maxSurge: 1 }
{{- end }}
{{- end -}}

{{/*
initContainers of a pod: in migrate.mode job, first one that waits until the database has every migration of
this release (nothing else orders Deployments after the Job under Flux or kubectl apply); then the user's.
(dict "root" $ "pod" $pod "waitForSchema" true)
*/}}
{{- define "uhp.initContainers" -}}
{{- $v := .root.Values -}}
{{- $wait := and .waitForSchema $v.migrate.enabled (eq $v.migrate.mode "job") -}}
{{- if or $wait .pod.initContainers }}
initContainers:
  {{- if $wait }}
  - name: wait-for-schema
    image: {{ include "uhp.image" (dict "root" .root "component" "migrate") }}
    imagePullPolicy: {{ $v.image.pullPolicy }}
    command: ["/usr/bin/tini", "--"]
    args: ["node", "dist/libs/db/src/migrate/main.js", "--wait"]
    env:
      {{- include "uhp.secretEnv" (dict "root" .root "name" "DATABASE_URL" "key" (include "uhp.migrateDatabaseKey" .root)) | nindent 6 }}
      {{- with include "uhp.caBundleEnv" .root | trim }}{{ . | nindent 6 }}{{ end }}
    resources:
      {{- toYaml $v.migrate.resources | nindent 6 }}
    securityContext:
      {{- include "uhp.securityContext" (dict "root" .root "context" $v.containerSecurityContext) | nindent 6 }}
    volumeMounts:
      - { name: tmp, mountPath: /tmp }
      {{- with include "uhp.caBundleMount" .root | trim }}{{ . | nindent 6 }}{{ end }}
  {{- end }}
  {{- with .pod.initContainers }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* What every pod spec shares: (dict "root" $ "component" "gateway" "pool" "" "pod" $pod) */}}
{{- define "uhp.podCommon" -}}
{{- $v := .root.Values -}}
{{- $pod := .pod -}}
automountServiceAccountToken: false
securityContext:
  {{- include "uhp.securityContext" (dict "root" .root "context" $v.podSecurityContext) | nindent 2 }}
{{- include "uhp.imagePullSecrets" .root }}
{{- with $pod.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $pod.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $pod.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $pod.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $pod.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- if $pod.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml $pod.topologySpreadConstraints | nindent 2 }}
{{- else if and $v.topologySpread.enabled (ne .component "migrate") }}
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
{{- /* A key counts only while something reads it: a key nothing reads (or a chart upgrade adding one) does not
roll the pods. */ -}}
{{- $hasDirectUrl := eq (include "uhp.hasDirectUrl" .) "true" -}}
{{- $sentinelAuth := and (eq (include "uhp.redisMode" .) "sentinel") .Values.redis.sentinel.auth -}}
{{- $keys := omit .Values.secretKeys "redisUsername" "databaseDirectUrl" "redisSentinelPassword" -}}
{{- if .Values.redis.username }}{{ $_ := set $keys "redisUsername" .Values.secretKeys.redisUsername }}{{ end -}}
{{- if $hasDirectUrl }}{{ $_ := set $keys "databaseDirectUrl" .Values.secretKeys.databaseDirectUrl }}{{ end -}}
{{- if $sentinelAuth }}{{ $_ := set $keys "redisSentinelPassword" .Values.secretKeys.redisSentinelPassword }}{{ end -}}
{{- if .Values.existingSecret -}}
{{- printf "%s/%s" .Values.existingSecret (toJson $keys) | sha256sum -}}
{{- else -}}
{{- $inputs := dict "keys" $keys "databaseUrl" .Values.database.url "storageToken" (.Values.storageToken | default "")
  "apiKeys" .Values.apiKeys "redisAuth" .Values.redis.auth "redisPassword" (.Values.redis.password | default "")
  "s3StaticCredentials" .Values.s3.staticCredentials "s3AccessKeyId" (.Values.s3.accessKeyId | default "")
  "s3SecretAccessKey" (.Values.s3.secretAccessKey | default "") "agentHttpUrl" (.Values.agent.httpUrl | default "")
  "agentHttpToken" (.Values.agent.httpToken | default "") -}}
{{- if $hasDirectUrl }}{{ $_ := set $inputs "databaseDirectUrl" .Values.database.directUrl }}{{ end -}}
{{- if $sentinelAuth }}{{ $_ := set $inputs "redisSentinelPassword" (.Values.redis.sentinel.password | default "") }}{{ end -}}
{{- toJson $inputs | sha256sum -}}
{{- end -}}
{{- end -}}

{{/*
An object of an optional API (ScaledObject, ServiceMonitor, HTTPRoute): "true" when enabled is true, or "auto"
and the cluster serves the API. `helm template` and Argo CD see no cluster: they need --api-versions.
(dict "root" $ "enabled" $value "api" "keda.sh/v1alpha1/ScaledObject")
*/}}
{{- define "uhp.apiEnabled" -}}
{{- $enabled := toString .enabled -}}
{{- if or (eq $enabled "true") (and (eq $enabled "auto") (.root.Capabilities.APIVersions.Has .api)) -}}
true
{{- end -}}
{{- end -}}

{{/*
NetworkPolicy egress. DNS: port 53, and 5353 where OpenShift's DNS pods answer. A backend (host, port): a rule
to that port, its peers narrowed where the host tells where it is: an IPv4 address (that address), a Service
name `name.namespace.svc[.cluster.local]` (that namespace), a bare name (this namespace); any other name
(any address: a NetworkPolicy cannot name a DNS name).
*/}}
{{- define "uhp.dnsEgress" -}}
- ports:
    {{- range $port := ternary (list 53 5353) (list 53) (eq (include "uhp.openshift" .) "true") }}
    - { port: {{ $port }}, protocol: UDP }
    - { port: {{ $port }}, protocol: TCP }
    {{- end }}
{{- end -}}

{{/*
The namespace a Service name names: `name.namespace.svc[.cluster.local]`, or a pod of a headless Service
`pod.name.namespace.svc[.cluster.local]` (how sentinels and cluster nodes are often listed); else empty.
*/}}
{{- define "uhp.serviceNamespace" -}}
{{- $host := . | toString | lower | trimSuffix "." -}}
{{- if regexMatch "^([a-z0-9-]+\\.){1,2}[a-z0-9-]+\\.svc(\\.cluster\\.local)?$" $host -}}
{{- $parts := splitList "." (trimSuffix ".cluster.local" $host) -}}
{{- index $parts (sub (len $parts) 2) -}}
{{- end -}}
{{- end -}}

{{/* (dict "root" $ "host" "pg.data.svc" "port" 5432) */}}
{{- define "uhp.backendEgress" -}}
{{- $host := .host | toString | lower -}}
{{- $namespace := include "uhp.serviceNamespace" $host -}}
- ports:
    - { port: {{ .port }}, protocol: TCP }
  {{- if regexMatch "^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $host }}
  to:
    - ipBlock: { cidr: {{ printf "%s/32" $host }} }
  {{- else if $namespace }}
  to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ $namespace }}
  {{- else if regexMatch "^[a-z0-9-]+$" $host }}
  to:
    - podSelector: {}
  {{- end }}
{{- end -}}

{{/* An http(s) URL as a backend: (dict "root" $ "url" "https://s3.example.com") */}}
{{- define "uhp.urlEgress" -}}
{{- $url := urlParse .url -}}
{{- $hostPort := splitList ":" $url.host -}}
{{- $port := ternary 443 80 (eq $url.scheme "https") -}}
{{- if gt (len $hostPort) 1 }}{{ $port = index $hostPort 1 }}{{ end -}}
{{- include "uhp.backendEgress" (dict "root" .root "host" (first $hostPort) "port" $port) -}}
{{- end -}}

{{/* A postgresql:// URL as a backend (default port 5432): (dict "root" $ "url" $v.database.url) */}}
{{- define "uhp.postgresEgress" -}}
{{- $url := urlParse .url -}}
{{- $hostPort := splitList ":" $url.host -}}
{{- include "uhp.backendEgress" (dict "root" .root "host" (first $hostPort) "port" (ternary (index $hostPort 1) 5432 (gt (len $hostPort) 1))) -}}
{{- end -}}

{{/*
The peer of a host whose pods' addresses are learned at run time (the data nodes a sentinel names, the nodes
of a cluster), from the name it was given: a Service name `name.namespace.svc[.cluster.local]` (that namespace),
a bare name (this namespace); empty for an IPv4 address or another name, whose peers may be anywhere.
*/}}
{{- define "uhp.runtimePeer" -}}
{{- $host := . | toString | lower -}}
{{- $namespace := include "uhp.serviceNamespace" $host -}}
{{- if $namespace -}}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ $namespace }}
{{- else if regexMatch "^[a-z0-9-]+$" $host -}}
- podSelector: {}
{{- end -}}
{{- end -}}

{{/*
One rule to the nodes a Redis client learns at run time: (dict "hosts" $hostPorts "ports" $ports). Narrowed to the
namespaces of the given hosts only when every one of them names its namespace; otherwise any address.
*/}}
{{- define "uhp.runtimeEgress" -}}
{{- $peers := list -}}
{{- $narrow := true -}}
{{- range $hostPort := .hosts -}}
{{- $peer := include "uhp.runtimePeer" (first (splitList ":" $hostPort)) -}}
{{- if $peer }}{{ $peers = append $peers $peer }}{{ else }}{{ $narrow = false }}{{ end -}}
{{- end -}}
- ports:
    {{- range $port := .ports | uniq }}
    - { port: {{ $port }}, protocol: TCP }
    {{- end }}
  {{- if $narrow }}
  to:
    {{- range $peer := $peers | uniq }}
    {{- $peer | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end -}}

{{/*
Redis as a backend, by topology. One server: redis.host and port. Sentinel: each sentinel (its own address and
port), then redis.port to the data nodes the sentinels hand out, which run beside them (Bitnami's chart: in the
same pods). Cluster: the seed nodes' ports, to the seeds' namespaces, since the other nodes' addresses come
from the cluster at run time.
*/}}
{{- define "uhp.redisEgress" -}}
{{- $r := .Values.redis -}}
{{- $mode := include "uhp.redisMode" . -}}
{{- if eq $mode "sentinel" -}}
{{- $rules := list -}}
{{- range $hostPort := $r.sentinel.hosts -}}
{{- $rules = append $rules (include "uhp.backendEgress" (dict "root" $ "host" (first (splitList ":" $hostPort)) "port" (last (splitList ":" $hostPort)))) -}}
{{- end -}}
{{- /* Three sentinels behind one Service (or in one namespace) give one rule. */ -}}
{{- range $rule := $rules | uniq }}
{{ $rule }}
{{- end }}
{{ include "uhp.runtimeEgress" (dict "hosts" $r.sentinel.hosts "ports" (list $r.port)) }}
{{- else if eq $mode "cluster" -}}
{{- $ports := list -}}
{{- range $hostPort := $r.cluster.nodes }}{{ $ports = append $ports (last (splitList ":" $hostPort)) }}{{ end }}
{{ include "uhp.runtimeEgress" (dict "hosts" $r.cluster.nodes "ports" $ports) }}
{{- else }}
{{ include "uhp.backendEgress" (dict "root" . "host" $r.host "port" $r.port) }}
{{- end -}}
{{- end -}}

{{/*
Postgres and Redis as backends. Postgres's host and port come from database.url; with existingSecret the URL is
not visible here: port 5432, any address. A direct URL (database.directUrl) adds its own rule: every pod's
wait-for-schema init container uses it, and the CLIs run in the gateway and storage pods.
*/}}
{{- define "uhp.dataEgress" -}}
{{- $root := . -}}
{{- $v := $root.Values -}}
{{- if and $v.database.url (not $v.existingSecret) -}}
{{- include "uhp.postgresEgress" (dict "root" $root "url" $v.database.url) }}
{{- else }}
- ports:
    - { port: 5432, protocol: TCP }
{{- end }}
{{- if and $v.database.directUrl (not $v.existingSecret) }}
{{ include "uhp.postgresEgress" (dict "root" $root "url" $v.database.directUrl) }}
{{- end }}
{{ include "uhp.redisEgress" $root | trim }}
{{- end -}}

{{/* The env var each queue's concurrency goes to. */}}
{{- define "uhp.concurrencyVar" -}}
{{- get (dict "preview" "PREVIEW_CONCURRENCY" "archive" "ARCHIVE_CONCURRENCY" "purge" "PURGE_CONCURRENCY") . -}}
{{- end -}}

{{/*
The worker pools, each completed from workers.poolDefaults: a field the pool sets wins; the maps resources, env,
keda, hpa, podAnnotations, podLabels, nodeSelector and deploymentAnnotations merge key by key. Set by hand, not
with mergeOverwrite, which would not let a pool's false or 0 override a default. keda.enabled comes out a
boolean ("auto" resolved against the cluster's APIs). Returned as JSON: range over `include "uhp.pools" $ | fromJsonArray`.
*/}}
{{- define "uhp.pools" -}}
{{- $defaults := .Values.workers.poolDefaults -}}
{{- $pools := list -}}
{{- range $pool := .Values.workers.pools -}}
{{- $merged := deepCopy $defaults -}}
{{- range $key, $value := $pool -}}
{{- if and (has $key (list "resources" "env" "keda" "hpa" "podAnnotations" "podLabels" "nodeSelector" "deploymentAnnotations")) (kindIs "map" $value) -}}
{{- $sub := deepCopy (get $merged $key | default dict) -}}
{{- range $k, $v := $value }}{{ $_ := set $sub $k $v }}{{ end -}}
{{- $_ := set $merged $key $sub -}}
{{- else -}}
{{- $_ := set $merged $key $value -}}
{{- end -}}
{{- end -}}
{{- $keda := $merged.keda -}}
{{- $_ := set $keda "enabled" (eq (include "uhp.apiEnabled" (dict "root" $ "enabled" $keda.enabled "api" "keda.sh/v1alpha1/ScaledObject")) "true") -}}
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
