package netns

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net"
)

// VethPrefix starts every host-side veth name by default (contract: as the
// reference); AWS_VPC_K8S_CNI_VETHPREFIX changes it, and every caller that
// names or finds pod veths takes the knob's value (the ...With functions).
const VethPrefix = "eni"

// HostVethName is the reference's host veth name: "eni" + the first 11 hex
// digits of sha1("<pod namespace>.<pod name>"), 14 characters in all.
func HostVethName(podNamespace, podName string) string {
	return hashedName(VethPrefix, podNamespace+"."+podName)
}

// HostVethNameFor is HostVethName, except that a runtime which sends no pod
// namespace and name (plain CNI, not Kubernetes) gets a name derived from the
// container ID, so two such containers never share a veth.
func HostVethNameFor(podNamespace, podName, containerID string) string {
	return HostVethNameWith(VethPrefix, podNamespace, podName, containerID)
}

// HostVethNameWith is HostVethNameFor with another prefix
// (AWS_VPC_K8S_CNI_VETHPREFIX, at most 4 characters); "" is the default.
func HostVethNameWith(prefix, podNamespace, podName, containerID string) string {
	if podNamespace == "" && podName == "" {
		return hashedName(prefix, containerID)
	}
	return hashedName(prefix, podNamespace+"."+podName)
}

func hashedName(prefix, s string) string {
	if prefix == "" {
		prefix = VethPrefix
	}
	sum := sha1.Sum([]byte(s))
	return prefix + hex.EncodeToString(sum[:])[:11]
}

// randomMAC returns a locally administered unicast MAC. With 46 random bits a
// clash among a node's few hundred links is negligible, so unlike the
// reference we do not list the host's links to check. The bits need to be
// unpredictable to no one: math/rand's generator (seeded by the runtime from
// the kernel) spares the ADD crypto/rand's first-use set-up (its vDSO state
// pages).
func randomMAC() net.HardwareAddr {
	mac := binary.LittleEndian.AppendUint64(nil, rand.Uint64())[:6]
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}
