package hostnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// sysctl is one kernel setting the node needs, by its path under
// /proc/sys (the calling thread's namespace for net/).
type sysctl struct{ path, want string }

func (s sysctl) file() string { return filepath.Join("/proc/sys", s.path) }

// rpFilter is the primary link's loose reverse-path filter, when cfg needs
// it (the fwmark path: a marked reply leaves by the primary ENI while its
// connection came in elsewhere).
func (c Config) rpFilter() (sysctl, bool) {
	if !c.fwmark() || c.PrimaryIf == "" {
		return sysctl{}, false
	}
	return sysctl{filepath.Join("net/ipv4/conf", c.PrimaryIf, "rp_filter"), rpFilterLoose}, true
}

func readSysctl(s sysctl) (string, error) {
	b, err := os.ReadFile(s.file())
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", s.path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadOnlyError: settings differ from what the node needs and this process
// may not write /proc/sys (a container that is not privileged, where the
// runtime mounts it read-only, or systemd's ProtectKernelTunables). The rest
// of the node rules are in place; whoever set up the node sets these.
type ReadOnlyError struct {
	Unset []string // "net/ipv4/conf/eth0/rp_filter is 1, want 2"
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("%s: /proc/sys is read-only in this process (a container that is not privileged, "+
		"or systemd's ProtectKernelTunables); 'vpcctl install' run as root on the node sets it, as the chart's "+
		"install init container does, or sysctl -w", strings.Join(e.Unset, "; "))
}

// ensureSysctls writes each setting that differs. Those the process may
// not write come back together as a *ReadOnlyError, after the others are
// set.
func ensureSysctls(want []sysctl) (set []string, err error) {
	var ro ReadOnlyError
	for _, s := range want {
		got, err := readSysctl(s)
		if err != nil {
			return set, err
		}
		if got == s.want {
			continue
		}
		err = os.WriteFile(s.file(), []byte(s.want), 0o644)
		switch {
		case err == nil:
			set = append(set, s.path+"="+s.want)
		case readOnly(err):
			ro.Unset = append(ro.Unset, fmt.Sprintf("%s is %s, want %s", s.path, got, s.want))
		default:
			return set, fmt.Errorf("setting %s to %s: %w", s.path, s.want, err)
		}
	}
	if len(ro.Unset) > 0 {
		return set, &ro
	}
	return set, nil
}

// readOnly: a write refused because of where it runs, not what it wrote.
func readOnly(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}
