// Package awsnode reads the IPAM checkpoint of the reference daemon
// (amazon-vpc-cni-k8s's ipamd, the aws-node pod): the pods it had given
// addresses to when it stopped, so `vpcctl migrate` can take them over.
//
// The format, as ipamd writes it on every assign and unassign
// (checkpoint.go, data_store.go in that project):
//
//	{"version":"vpc-cni-ipam/1",
//	 "allocations":[{"networkName":"aws-cni","containerID":"<sandbox>","ifName":"eth0",
//	                 "ipv4":"10.0.1.23","allocationTimestamp":1700000000000000000,
//	                 "metadata":{"k8sPodNamespace":"ns","k8sPodName":"p","interfacesCount":1}}]}
//
// In its IPv6 mode an allocation carries "ipv6" instead of "ipv4".
//
// Network card n>0 has its own file, "<base>-nic-<n>.json" (NICFiles).
package awsnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultPath is where ipamd keeps its checkpoint (AWS_VPC_K8S_CNI_BACKING_STORE).
const DefaultPath = "/var/run/aws-node/ipam.json"

// Version is the only checkpoint version ipamd has written, and the one
// this package reads.
const Version = "vpc-cni-ipam/1"

// Errors a caller can tell apart.
var (
	ErrMalformed      = errors.New("malformed checkpoint")
	ErrUnknownVersion = errors.New("unknown checkpoint version")
)

// Pod is one pod interface the reference had given an address to.
type Pod struct {
	Network     string     // the conflist's name ("aws-cni")
	ContainerID string     // the sandbox ID, as the runtime's DEL names it
	IfName      string     // the interface in the pod ("eth0")
	IP          netip.Addr // IPv4; invalid for an IPv6 pod
	IPv6        netip.Addr // the checkpoint's "ipv6" (the reference's IPv6 mode, a /128 of the ENI's /80)
	Time        time.Time  // when ipamd assigned it; zero if not recorded
	Namespace   string     // the Kubernetes pod namespace, "" if not recorded
	Name        string     // the Kubernetes pod name, "" if not recorded
}

// Key is the pod interface's key: "<containerID>/<ifName>", as the store's.
func (p Pod) Key() string { return p.ContainerID + "/" + p.IfName }

type fileJSON struct {
	Version     *string          `json:"version"`
	Allocations []allocationJSON `json:"allocations"`
}

type allocationJSON struct {
	NetworkName         string `json:"networkName"`
	ContainerID         string `json:"containerID"`
	IfName              string `json:"ifName"`
	IPv4                string `json:"ipv4"`
	IPv6                string `json:"ipv6"`
	AllocationTimestamp int64  `json:"allocationTimestamp"`
	Metadata            struct {
		K8SPodNamespace string `json:"k8sPodNamespace"`
		K8SPodName      string `json:"k8sPodName"`
	} `json:"metadata"`
}

// ReadFile parses the checkpoint at path.
func ReadFile(path string) ([]Pod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pods, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pods, nil
}

// Parse reads a checkpoint: one JSON object of a known version, every
// allocation with a container ID, an interface and an IPv4 or IPv6 address, no
// address or interface twice. Any problem is an error naming the entry;
// nothing is half-read. Fields ipamd may add later are ignored.
func Parse(data []byte) ([]Pod, error) {
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	switch {
	case f.Version == nil:
		return nil, fmt.Errorf("%w: no \"version\" field", ErrMalformed)
	case *f.Version != Version:
		return nil, fmt.Errorf("%w %q: this vpcctl reads %q only", ErrUnknownVersion, *f.Version, Version)
	}
	pods := make([]Pod, 0, len(f.Allocations))
	byIP, byKey := map[netip.Addr]string{}, map[string]bool{}
	for i, a := range f.Allocations {
		p, err := a.pod()
		if err != nil {
			return nil, fmt.Errorf("%w: allocation %d (container %q): %v", ErrMalformed, i, a.ContainerID, err)
		}
		ip := p.IP
		if !ip.IsValid() {
			ip = p.IPv6
		}
		if other, dup := byIP[ip]; dup {
			return nil, fmt.Errorf("%w: address %s is allocated twice, to %s and %s", ErrMalformed, ip, other, p.Key())
		}
		if byKey[p.Key()] {
			return nil, fmt.Errorf("%w: interface %s is allocated twice", ErrMalformed, p.Key())
		}
		byIP[ip], byKey[p.Key()] = p.Key(), true
		pods = append(pods, p)
	}
	return pods, nil
}

func (a allocationJSON) pod() (Pod, error) {
	p := Pod{Network: a.NetworkName, ContainerID: a.ContainerID, IfName: a.IfName,
		Namespace: a.Metadata.K8SPodNamespace, Name: a.Metadata.K8SPodName}
	switch {
	case a.ContainerID == "":
		return p, errors.New("no containerID")
	case strings.ContainsAny(a.ContainerID, "/\x00") || strings.ContainsAny(a.IfName, "/\x00"):
		return p, errors.New("containerID or ifName contains '/' or NUL")
	case a.IfName == "":
		return p, errors.New("no ifName")
	case a.IPv4 == "" && a.IPv6 == "":
		return p, errors.New("no ipv4 or ipv6 address")
	case a.AllocationTimestamp < 0:
		return p, fmt.Errorf("negative allocationTimestamp %d", a.AllocationTimestamp)
	}
	if a.AllocationTimestamp > 0 {
		p.Time = time.Unix(0, a.AllocationTimestamp).UTC()
	}
	if a.IPv4 == "" {
		ip, err := netip.ParseAddr(a.IPv6)
		if err != nil || !ip.Is6() || ip.Is4In6() || ip.Zone() != "" || !ip.IsGlobalUnicast() {
			return p, fmt.Errorf("ipv6 %q is not a global unicast IPv6 address", a.IPv6)
		}
		p.IPv6 = ip
		return p, nil
	}
	ip, err := netip.ParseAddr(a.IPv4)
	if err != nil || !ip.Is4() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsLoopback() {
		return p, fmt.Errorf("ipv4 %q is not a unicast IPv4 address", a.IPv4)
	}
	p.IP = ip
	return p, nil
}

// NICFiles are the checkpoints of network cards other than 0 next to path
// ("ipam.json" → "ipam-nic-1.json", ...), which ipamd writes only with
// ENABLE_MULTI_NIC.
func NICFiles(path string) ([]string, error) {
	return filepath.Glob(strings.TrimSuffix(path, ".json") + "-nic-*.json")
}
