{{/* The image of both containers: the tag defaults to the chart's appVersion, never latest. */}}
{{- define "vpc-cni.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The recommended labels on every object; selectors use app.kubernetes.io/name only, which never changes. */}}
{{- define "vpc-cni.labels" -}}
app.kubernetes.io/name: vpc-cni
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: cni
app.kubernetes.io/part-of: vpc-cni
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: vpc-cni-{{ .Chart.Version }}
{{- end }}

{{/* The loop's --metrics-listen for metrics.bind; empty when off. */}}
{{- define "vpc-cni.metricsListen" -}}
{{- $bind := .Values.metrics.bind -}}
{{- if eq $bind "primary" -}}
[$(HOST_IP)]:{{ .Values.metrics.port }}
{{- else if eq $bind "loopback" -}}
127.0.0.1:{{ .Values.metrics.port }}
{{- else if ne $bind "off" -}}
{{- fail (printf "metrics.bind %q: want primary (the node's primary address), loopback (127.0.0.1) or off" $bind) -}}
{{- end -}}
{{- end }}

{{/* networkPolicy.enforcingMode, checked: the agent takes standard or strict only. */}}
{{- define "vpc-cni.policyMode" -}}
{{- $mode := lower (toString .Values.networkPolicy.enforcingMode) -}}
{{- if not (has $mode (list "standard" "strict")) -}}
{{- fail (printf "networkPolicy.enforcingMode %q: want standard or strict (the agent refuses any other; turn policy off with networkPolicy.enabled=false)" (toString .Values.networkPolicy.enforcingMode)) -}}
{{- end -}}
{{- $mode -}}
{{- end }}

{{/* The service account: for AWS credentials (serviceAccount.create), or the policy agent's API token. */}}
{{- define "vpc-cni.serviceAccount" -}}
{{- if or .Values.serviceAccount.create .Values.networkPolicy.enabled }}{{ .Values.serviceAccount.name }}{{ end -}}
{{- end }}
