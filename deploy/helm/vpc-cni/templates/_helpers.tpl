{{/* The image of both containers. */}}
{{- define "vpc-cni.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
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
