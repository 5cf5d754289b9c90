{{/* The image of both containers. */}}
{{- define "vpc-cni.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}
