//go:build cluster

package main

import (
	"fmt"
	"os"
	goruntime "runtime"

	"vpc-cni/internal/ociimage"
)

const kubeProxyRef = "localhost/vpc-cni-cluster/kube-proxy:" + kubeVersion

// kubeProxyManifest is kube-proxy as kubeadm deploys it (a host-network
// DaemonSet with its own service account and a kubeconfig that names the
// API server), in nftables mode. Its image holds only the static binary:
// nft and its libraries come from the node's /usr (hostPath, read-only).
// It leaves the machine-wide conntrack sysctls alone.
var kubeProxyManifest = fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-proxy, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kube-proxy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:node-proxier}
subjects: [{kind: ServiceAccount, name: kube-proxy, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-proxy, namespace: kube-system}
data:
  kubeconfig: |
    apiVersion: v1
    kind: Config
    clusters:
    - name: default
      cluster:
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
        server: https://%s:6443
    users:
    - name: default
      user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}
    contexts:
    - name: default
      context: {cluster: default, user: default}
    current-context: default
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-proxy
  namespace: kube-system
  labels: {k8s-app: kube-proxy}
spec:
  selector: {matchLabels: {k8s-app: kube-proxy}}
  template:
    metadata: {labels: {k8s-app: kube-proxy}}
    spec:
      hostNetwork: true
      priorityClassName: system-node-critical
      serviceAccountName: kube-proxy
      tolerations: [{operator: Exists}]
      containers:
      - name: kube-proxy
        image: %s
        imagePullPolicy: Never
        command: ["/kube-proxy", "--kubeconfig=/var/lib/kube-proxy/kubeconfig", "--proxy-mode=nftables",
                  "--hostname-override=$(NODE_NAME)", "--conntrack-max-per-core=0",
                  "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0"]
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        securityContext: {privileged: true}
        volumeMounts:
        - {name: config, mountPath: /var/lib/kube-proxy}
        - {name: usr, mountPath: /usr, readOnly: true}
        - {name: lib, mountPath: /lib, readOnly: true}
        - {name: lib64, mountPath: /lib64, readOnly: true}
      volumes:
      - {name: config, configMap: {name: kube-proxy}}
      - {name: usr, hostPath: {path: /usr}}
      - {name: lib, hostPath: {path: /usr/lib}}
      - {name: lib64, hostPath: {path: /usr/lib64}}
`, ctlIP, kubeProxyRef)

func (c *cluster) kubeProxyImage() (ociimage.Image, error) {
	b, err := os.ReadFile(c.tools.k("kube-proxy"))
	return ociimage.Image{Ref: kubeProxyRef, Arch: goruntime.GOARCH, Files: map[string]ociimage.File{"kube-proxy": exe(b)},
		Entrypoint: []string{"/kube-proxy"}, Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}}, err
}

func (c *cluster) installKubeProxy() error {
	_, err := c.kubectlOut([]byte(kubeProxyManifest), "apply", "-f", "-")
	return err
}
