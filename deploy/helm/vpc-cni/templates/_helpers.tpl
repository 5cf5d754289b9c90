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

{{/* The fields of a network profile's keys, PROFILE_<NAME>_<FIELD> (settings.ProfileFields; deploy/chart_test.go holds them equal). */}}
{{- define "vpc-cni.profileFields" -}}
SECURITY_GROUPS|SUBNETS|SNAT|NAMESPACES|WARM_IP_TARGET|MINIMUM_IP_TARGET|WARM_ENI_TARGET|WARM_PREFIX_TARGET
{{- end }}

{{/* The network profiles config sets, as JSON: name -> the namespaces PROFILE_<NAME>_NAMESPACES binds it to ([] for none). */}}
{{- define "vpc-cni.profiles" -}}
{{- $re := printf "^PROFILE_([A-Z0-9_]+)_(%s)$" (include "vpc-cni.profileFields" .) -}}
{{- $out := dict -}}
{{- range $key, $value := .Values.config -}}
{{- if and (not (kindIs "invalid" $value)) (ne (toString $value) "") (regexMatch $re $key) -}}
{{- $name := regexReplaceAll $re $key "${1}" | replace "_" "-" | lower -}}
{{- if not (hasKey $out $name) }}{{ $_ := set $out $name (list) }}{{ end -}}
{{- if eq (regexReplaceAll $re $key "${2}") "NAMESPACES" -}}
{{- $_ := set $out $name (regexSplit "[,\\s]+" (toString $value) -1 | compact) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{ toJson $out }}
{{- end }}

{{/* "true" when the profiles' admission policy is rendered: profileAdmission.create true, or auto and config sets a profile. */}}
{{- define "vpc-cni.profileAdmission" -}}
{{- $create := .Values.profileAdmission.create -}}
{{- if kindIs "invalid" $create }}{{ $create = "auto" }}{{ end -}}
{{- if eq (toString $create) "true" -}}
true
{{- else if eq (toString $create) "auto" -}}
{{- if include "vpc-cni.profiles" . | fromJson }}true{{ end -}}
{{- else if ne (toString $create) "false" -}}
{{- fail (printf "profileAdmission.create %q: want auto (on when config sets a profile), true or false" (toString $create)) -}}
{{- end -}}
{{- end }}

{{/* The policy's map namespace -> profiles, as JSON: profileAdmission.allowed, plus each profile for the namespaces its PROFILE_<NAME>_NAMESPACES names. */}}
{{- define "vpc-cni.profileAllowed" -}}
{{- $allowed := dict -}}
{{- range $ns, $ps := .Values.profileAdmission.allowed | default dict -}}
{{- $_ := set $allowed $ns (concat (list) $ps) -}}
{{- end -}}
{{- range $name, $nss := include "vpc-cni.profiles" . | fromJson -}}
{{- range $ns := $nss -}}
{{- $_ := set $allowed $ns (append (get $allowed $ns | default list) $name | uniq) -}}
{{- end -}}
{{- end -}}
{{ toJson $allowed }}
{{- end }}

{{/* The profiles any pod may pick with the policy off: served (PROFILES, when set) and bound to no namespace; comma-separated. */}}
{{- define "vpc-cni.openProfiles" -}}
{{- $served := regexSplit "[,\\s]+" (toString (.Values.config.PROFILES | default "")) -1 | compact -}}
{{- $open := list -}}
{{- range $name, $nss := include "vpc-cni.profiles" . | fromJson -}}
{{- if and (not $nss) (or (not $served) (has $name $served)) }}{{ $open = append $open $name }}{{ end -}}
{{- end -}}
{{ join ", " $open }}
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
