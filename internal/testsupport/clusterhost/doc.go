// Package clusterhost is what the cluster tier (e2e/cluster) reads of the
// machine it runs on: the cgroup hierarchy its kubelets and containerd are
// set up for, and, when a bring-up fails, the first error in a component's
// log. Parsing only: the callers read the files.
package clusterhost
