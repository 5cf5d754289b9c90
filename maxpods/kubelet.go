package maxpods

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"vpc-cni/internal/atomicfile"
	"vpc-cni/pool"
)

// Where the kubelet's configuration is, by default. DropInName sorts late
// among the drop-ins (the kubelet merges them in name order, the last
// wins), so the node's capacity overrides a bootstrap's guess.
const (
	KubeletConfig    = "/var/lib/kubelet/config.yaml"
	KubeletConfigDir = "/etc/kubernetes/kubelet.conf.d"
	DropInName       = "40-vpc-cni-max-pods.conf"
)

// DropIn is a kubelet configuration drop-in (--config-dir) that sets
// maxPods. The kubelet refuses a drop-in without apiVersion and kind.
func DropIn(maxPods int) []byte {
	return fmt.Appendf(nil, `# Written by vpcctl max-pods: the pods this node's ENIs and vpc-cni's configuration hold.
# vpc-cni-max-pods.service rewrites it at boot, before the kubelet starts; edit MAX_PODS or
# MAX_PODS_CAP in /etc/vpc-cni/config rather than this file.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: %d
`, maxPods)
}

// WriteDropIn writes the drop-in at path unless it already says maxPods;
// changed reports whether it wrote. The kubelet reads it only at start.
func WriteDropIn(path string, maxPods int) (changed bool, err error) {
	data := DropIn(maxPods)
	if atomicfile.Same(path, data, 0o644) {
		return false, nil
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return false, fmt.Errorf("writing the kubelet drop-in %s: %w", path, err)
	}
	return true, nil
}

// KubeletSetting is the kubelet's maxPods and the file it came from.
type KubeletSetting struct {
	MaxPods int    `json:"maxPods"`
	From    string `json:"from"` // a file, or "the kubelet's default"
}

// ReadKubelet finds the kubelet's maxPods as it starts with config and the
// drop-in dir: the config file, then each *.conf drop-in in name order, the
// last one that sets it winning; the kubelet's default (110) when none does.
// found is false when the config file does not exist (not a kubelet node,
// or another path).
func ReadKubelet(config, dropInDir string) (s KubeletSetting, found bool, err error) {
	s = KubeletSetting{MaxPods: pool.LowPodCap, From: "the kubelet's default"}
	files := []string{config}
	if _, err := os.Stat(config); errors.Is(err, fs.ErrNotExist) {
		return s, false, nil
	}
	if dropInDir != "" {
		entries, err := os.ReadDir(dropInDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s, true, err
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
				files = append(files, filepath.Join(dropInDir, e.Name()))
			}
		}
		slices.Sort(files[1:])
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return s, true, err
		}
		n, ok, err := parseMaxPods(data)
		if err != nil {
			return s, true, fmt.Errorf("%s: %w", f, err)
		}
		if ok {
			s = KubeletSetting{MaxPods: n, From: f}
		}
	}
	return s, true, nil
}

// parseMaxPods reads a KubeletConfiguration's top-level maxPods, from JSON
// (nodeadm writes JSON) or YAML; a YAML parser is not linked into the
// binary for one key.
func parseMaxPods(data []byte) (int, bool, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		var v struct {
			MaxPods *int `json:"maxPods"`
		}
		if err := json.Unmarshal(t, &v); err != nil {
			return 0, false, err
		}
		return derefOr(v.MaxPods), v.MaxPods != nil, nil
	}
	n, found := 0, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if v, ok := strings.CutPrefix(line, "maxPods:"); ok { // top level: no indentation
			v, _, _ = strings.Cut(v, "#")
			var err error
			if n, err = strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"'`)); err != nil {
				return 0, false, fmt.Errorf("maxPods is not a number: %q", line)
			}
			found = true
		}
	}
	return n, found, sc.Err()
}

func derefOr(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
