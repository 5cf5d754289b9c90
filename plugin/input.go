package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/netns"
)

// Limits on what the runtime passes in CNI_* variables. The verbs check them
// before anything is opened, so a careless or hostile value is refused with
// its name and code 4 (invalid environment variables) instead of failing
// deep in the store or the kernel.
const (
	// Runtimes use 64 hex digits (containerd, CRI-O, Docker); 256 leaves room
	// for others, and the assignment key (ID "/" ifname) stays far under
	// bbolt's 32 KiB key limit (a test pins that).
	maxContainerIDLen  = 256
	maxIfNameLen       = 15 // the kernel's IFNAMSIZ, less the NUL
	maxPodNamespaceLen = 63 // a Kubernetes namespace is a DNS label
	maxPodNameLen      = 253
	maxPodUIDLen       = 128 // a UUID is 36
	maxNetnsPathLen    = 4095
)

// checkInput validates CNI_CONTAINERID, CNI_IFNAME and CNI_ARGS, and returns
// the pod's Kubernetes arguments. It touches nothing.
func checkInput(args *skel.CmdArgs) (podArgs, error) {
	if err := checkContainerID(args.ContainerID); err != nil {
		return podArgs{}, err
	}
	if err := checkIfName(args.IfName); err != nil {
		return podArgs{}, err
	}
	return parsePodArgs(args.Args)
}

// checkContainerID applies the spec's rule: letters, digits, '_', '.' and
// '-', starting with a letter or digit; and a length the store can key.
func checkContainerID(id string) error {
	switch {
	case id == "":
		return badEnv("CNI_CONTAINERID is required")
	case len(id) > maxContainerIDLen:
		return badEnv("CNI_CONTAINERID is %d characters long; at most %d are allowed", len(id), maxContainerIDLen)
	case !isAlnum(rune(id[0])):
		return badEnv("CNI_CONTAINERID %q must start with a letter or a digit", id)
	}
	for _, r := range id {
		if !isAlnum(r) && r != '_' && r != '.' && r != '-' {
			return badEnv("CNI_CONTAINERID %q holds %q: only letters, digits, '_', '.' and '-' are allowed", id, r)
		}
	}
	return nil
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// checkIfName applies the kernel's rule for a link name (dev_valid_name).
func checkIfName(name string) error {
	switch {
	case name == "":
		return badEnv("CNI_IFNAME is required")
	case len(name) > maxIfNameLen:
		return badEnv("CNI_IFNAME %q is %d bytes long; a link name has at most %d", name, len(name), maxIfNameLen)
	case name == "." || name == "..":
		return badEnv("CNI_IFNAME %q is not a link name", name)
	}
	for _, r := range name {
		if r == '/' || r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return badEnv("CNI_IFNAME %q holds %q: a link name has no '/', ':', space or control character", name, r)
		}
	}
	return nil
}

// checkNetnsPath wants an absolute, clean path: the runtime names a bind
// mount or a /proc file, never a path relative to the plugin's directory.
func checkNetnsPath(path string) error {
	switch {
	case path == "":
		return badEnv("CNI_NETNS is required")
	case len(path) > maxNetnsPathLen:
		return badEnv("CNI_NETNS is %d bytes long; a path has at most %d", len(path), maxNetnsPathLen)
	case !filepath.IsAbs(path):
		return badEnv("CNI_NETNS %q is not an absolute path", path)
	case filepath.Clean(path) != path:
		return badEnv("CNI_NETNS %q is not a clean path (it would be %q)", path, filepath.Clean(path))
	}
	return nil
}

// podNetns refuses a CNI_NETNS that must not be wired as a pod: a bad path,
// the node's own namespace, or a file that is not a network namespace, all
// code 4, because the variable's value is wrong and the spec's own code for
// that is 4 (skel says 8 for the node's namespace, a code the library
// defines but the spec does not list, and only after the verb has run). A
// namespace that cannot be opened, usually one already deleted, keeps the
// library's 8.
func (v verbs) podNetns(path string) error {
	if err := checkNetnsPath(path); err != nil {
		return err
	}
	err := v.host.CheckNetns(path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, netns.ErrNodeNetns):
		return badEnv("CNI_NETNS %v: refusing to wire the node as a pod", err)
	case errors.Is(err, netns.ErrNotNetns):
		return badEnv("CNI_NETNS %v", err)
	case errors.Is(err, fs.ErrNotExist):
		return types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %s does not exist", path), "")
	}
	return types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %s: %v", path, err), "")
}

// admit is what ADD and CHECK do before anything else: every input
// checked, the namespace included.
func (v verbs) admit(args *skel.CmdArgs) (podArgs, error) {
	pod, err := checkInput(args)
	if err != nil {
		return pod, err
	}
	return pod, v.podNetns(args.Netns)
}

// badEnv is code 4 with a message; a long value is cut, so that a 40,000
// character ID does not come back in the error.
func badEnv(format string, args ...any) error {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > 80 {
			args[i] = s[:64] + "..."
		}
	}
	return types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf(format, args...), "")
}

// podArgs are the Kubernetes CNI_ARGS.
type podArgs struct {
	Namespace, Name, UID string
}

// parsePodArgs reads the Kubernetes keys of CNI_ARGS; others are ignored.
func parsePodArgs(args string) (podArgs, error) {
	var p podArgs
	for _, kv := range strings.Split(args, ";") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, badEnv("CNI_ARGS: %q is not KEY=VALUE", kv)
		}
		into, limit := p.field(k)
		if into == nil {
			continue
		}
		if len(v) > limit {
			return p, badEnv("CNI_ARGS: %s is %d characters long; at most %d are allowed", k, len(v), limit)
		}
		*into = v
	}
	return p, nil
}

func (p *podArgs) field(key string) (*string, int) {
	switch key {
	case "K8S_POD_NAMESPACE":
		return &p.Namespace, maxPodNamespaceLen
	case "K8S_POD_NAME":
		return &p.Name, maxPodNameLen
	case "K8S_POD_UID":
		return &p.UID, maxPodUIDLen
	}
	return nil, 0
}
