//go:build cluster

package main

// controllerManifest runs the controller as its chart does (its own service
// account, non-root, nothing added), one replica without leader election;
// it acts once the chart's ConfigMap switch says so. On the host's network,
// as in EKS's control plane: in strict mode a pod no policy selects is
// denied, and the controller is what programs the policies.
const controllerManifest = `apiVersion: v1
kind: ServiceAccount
metadata: {name: network-policy-controller, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: network-policy-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: controller-k8s}
subjects: [{kind: ServiceAccount, name: network-policy-controller, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: network-policy-controller, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: controller-k8s}
subjects: [{kind: ServiceAccount, name: network-policy-controller, namespace: kube-system}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: network-policy-controller, namespace: kube-system}
spec:
  replicas: 1
  selector: {matchLabels: {app: network-policy-controller}}
  template:
    metadata: {labels: {app: network-policy-controller}}
    spec:
      serviceAccountName: network-policy-controller
      hostNetwork: true
      priorityClassName: system-cluster-critical
      tolerations: [{operator: Exists}]
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      containers:
      - name: controller
        image: ` + controllerRef + `
        imagePullPolicy: Never
        args: [--enable-leader-election=false, --enable-configmap-check=true]
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
        readinessProbe: {httpGet: {path: /readyz, port: 8081}}
`

// corednsManifest is kubeadm's CoreDNS with an offline Corefile (no
// upstream resolver here: no forward, no loop), and the policy EKS's docs
// ask for in strict mode: CoreDNS open both ways.
const corednsManifest = `apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 5s
        }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        cache 30
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      # kubeadm's: a drained node's CoreDNS moves, as any pod's.
      tolerations: [{key: CriticalAddonsOnly, operator: Exists}, {key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
      containers:
      - name: coredns
        image: ` + corednsRef + `
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        livenessProbe: {httpGet: {path: /health, port: 8080}}
        readinessProbe: {httpGet: {path: /ready, port: 8181}}
        securityContext:
          readOnlyRootFilesystem: true
          allowPrivilegeEscalation: false
          capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: ` + dnsIP + `
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
  - {name: metrics, port: 9153, protocol: TCP}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: coredns, namespace: kube-system}
spec: {podSelector: {matchLabels: {k8s-app: kube-dns}}, policyTypes: [Ingress, Egress], ingress: [{}], egress: [{}]}
`
