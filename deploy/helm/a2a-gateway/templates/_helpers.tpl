{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "a2a-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified name of every object: release plus chart name. */}}
{{- define "a2a-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "a2a-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "a2a-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "a2a-gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "a2a-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret the pods take their environment from, if any. */}}
{{- define "a2a-gateway.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else if .Values.secrets.env }}
{{- include "a2a-gateway.fullname" . }}
{{- end }}
{{- end }}

{{/*
The gateway configuration: the user's config with the listeners and the
shutdown bounds the chart's ports and probes depend on.
*/}}
{{- define "a2a-gateway.config" -}}
{{- $set := dict
  "listen" (printf "0.0.0.0:%d" (int .Values.ports.public))
  "admin_listen" (printf "0.0.0.0:%d" (int .Values.ports.admin))
  "shutdown" (dict
    "timeout" (printf "%ds" (int .Values.shutdown.timeoutSeconds))
    "stream_grace" (printf "%ds" (int .Values.shutdown.streamGraceSeconds))) }}
{{- $cfg := mustMergeOverwrite (deepCopy .Values.config) $set }}
{{- if and (gt (int .Values.replicaCount) 1) (not (dig "store" "redis" "addrs" list $cfg)) }}
{{- fail "config.store.redis.addrs is empty: the embedded store is for a single replica only; configure Redis or set replicaCount: 1 and autoscaling.enabled: false" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (dig "store" "redis" "addrs" list $cfg)) }}
{{- fail "autoscaling needs config.store.redis.addrs: replicas share their state through Redis" }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/*
Long enough for the preStop pause, the in-flight requests and the stream
grace, so that SIGKILL never cuts a draining pod.
*/}}
{{- define "a2a-gateway.terminationGracePeriodSeconds" -}}
{{- add .Values.shutdown.preStopSleepSeconds .Values.shutdown.timeoutSeconds .Values.shutdown.streamGraceSeconds .Values.shutdown.marginSeconds }}
{{- end }}

{{/*
The image reference: by digest when image.digest is set (the tag is then
ignored, since a digest names exactly one image), else by tag (the
chart's appVersion unless image.tag is set).
*/}}
{{- define "a2a-gateway.image" -}}
{{- if .Values.image.digest }}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" .Values.image.digest) }}
{{- fail (printf "image.digest %q is not a sha256 digest (sha256:<64 hex digits>)" .Values.image.digest) }}
{{- end }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}
