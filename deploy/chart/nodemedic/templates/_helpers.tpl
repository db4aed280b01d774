{{/*
Names are fixed, not derived from the release: the stack's Pod Identity association names the
service account, and one agent per node is the rule (a second release would share the host's
state directory and port), so a second install is refused by the names it would reuse.
*/}}
{{- define "nodemedic.agentName" -}}nodemedic-agent{{- end }}

{{- define "nodemedic.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodemedic.agentName" . }}
{{- end }}

{{- define "nodemedic.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: nodemedic
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodemedic.image" -}}
{{- $repository := required "image.repository is required: where you pushed the agent image (deploy/image/Dockerfile)" .Values.image.repository -}}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end }}

{{/*
"true" when the agent's metrics endpoint listens on the node's loopback only: nothing off the
node can scrape it, so neither a ServiceMonitor nor prometheus.io annotations may point at it.
*/}}
{{- define "nodemedic.metrics.loopback" -}}
{{- has .Values.agent.metrics.address (list "127.0.0.1" "localhost" "::1") -}}
{{- end }}

{{/* Where the container sees the host's paths. */}}
{{- define "nodemedic.mount.sys" -}}/host/sys{{- end }}
{{- define "nodemedic.mount.pstore" -}}/host/pstore{{- end }}
{{- define "nodemedic.mount.state" -}}/var/lib/nodemedic{{- end }}
