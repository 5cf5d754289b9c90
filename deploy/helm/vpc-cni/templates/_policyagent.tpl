{{/* The reference's policy agent container, with aws-node's manifest's privileges, mounts and
flags (v1.23.1), policy on. Its CNI calls come from vpc-cni's plugin; its start-up call is
answered by the loop. */}}
{{- define "vpc-cni.policyAgent" -}}
{{- $ipv6 := get .Values.config "ENABLE_IPv6" | toString | lower | eq "true" -}}
- name: aws-eks-nodeagent
  image: {{ .Values.networkPolicy.image.repository }}:{{ .Values.networkPolicy.image.tag }}
  {{- with .Values.networkPolicy.image.pullPolicy }}
  imagePullPolicy: {{ . }}
  {{- end }}
  args:
    - --enable-ipv6={{ $ipv6 }}
    - --enable-network-policy=true
    - --enable-cloudwatch-logs=false
    - --enable-policy-event-logs=false
    - --log-file=/var/log/aws-routed-eni/network-policy-agent.log
    - --metrics-bind-addr=:8162
    - --health-probe-bind-addr=:8163
    - --conntrack-cache-cleanup-period=300
    - --conntrack-cache-table-size=524288
    - --log-level={{ .Values.networkPolicy.logLevel }}
  env:
    - name: MY_NODE_NAME
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
  ports:
    - {name: agentmetrics, containerPort: 8162}
  {{- with .Values.networkPolicy.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    # eBPF programs on every pod's host veth, pinned maps: as aws-node's manifest runs it.
    privileged: true
    capabilities:
      add: ["NET_ADMIN"]
  volumeMounts:
    - {name: cni-bin, mountPath: /host/opt/cni/bin}
    - {name: bpf-pin-path, mountPath: /sys/fs/bpf}
    - {name: agent-log-dir, mountPath: /var/log/aws-routed-eni}
    - {name: run-dir, mountPath: /var/run/aws-node}
    - {name: agent-token, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}
{{- end }}
