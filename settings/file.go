package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"vpc-cni/internal/fileguard"
	"vpc-cni/internal/suggest"
)

// The one configuration file every vpc-cni process reads: the plugin (run
// with kubelet's environment), the timer's reconcile and an operator's shell.
const (
	DefaultFile = "/etc/vpc-cni/config"
	FileEnv     = "VPC_CNI_CONFIG" // names another file, as --config does
)

// File is a parsed configuration file: KEY=VALUE lines with the knob names,
// blank lines and # comments. A nil *File holds nothing.
type File struct {
	Path string
	vals map[string]fileValue
}

type fileValue struct {
	text string
	line int
}

// ReadFile reads and parses the file at path. A missing file is empty unless
// it was named explicitly (a flag, VPC_CNI_CONFIG, a conflist key): then the
// operator meant a file that is not there, which is an error.
// A file another user owns, or that group or others may write, is refused
// (fileguard's rule, as for the state dir): every root process on the node
// acts on it.
func ReadFile(path string, named bool) (*File, error) {
	data, err := fileRule.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !named {
		return &File{Path: path}, nil
	}
	if errors.Is(err, fileguard.ErrUnsafe) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return ParseFile(path, data)
}

// fileRule: root installs the file for every process (vpcctl install, the
// DaemonSet's init container); a user's own copy (--config) is theirs.
var fileRule = fileguard.Rule{What: "configuration file", RootMayOwn: true, Mode: 0o644}

// ParseFile parses the file's text; path is only used in messages. Unknown
// keys are errors (a misspelt knob would otherwise be silently ignored).
func ParseFile(path string, data []byte) (*File, error) {
	f := &File{Path: path, vals: map[string]fileValue{}}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("%s:%d: %q is not a KEY=VALUE line", path, n, line)
		}
		if err := knownKey(key); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if prev, dup := f.vals[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is already set on line %d", path, n, key, prev.line)
		}
		f.vals[key] = fileValue{text: unquote(strings.TrimSpace(val)), line: n}
	}
	return f, nil
}

// unquote strips one pair of matching quotes, as systemd's EnvironmentFile
// does, so an old env file can be renamed to the config file as it is.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// KnownKey is nil for a key the configuration file may set, else an error
// that says why not, with the nearest key when one is near.
func KnownKey(key string) error { return knownKey(key) }

func knownKey(key string) error {
	for _, k := range FileKeys {
		if k == key {
			return nil
		}
	}
	if v, ok := LookupAWSNodeVar(key); ok && v.Fate != Carried {
		return errors.New(v.refusal())
	}
	if strings.HasPrefix(key, ENIConfigPrefix) && len(key) > len(ENIConfigPrefix) {
		return nil // one per availability zone
	}
	if strings.HasPrefix(key, ProfilePrefix) {
		_, _, err := ParseProfileKey(key) // one set per network profile
		return err
	}
	// aws-node's AWS_VPC_* names are knobs (a misspelt one gets the
	// suggestion below); other AWS_* names are the SDK's.
	if strings.HasPrefix(key, "AWS_") && !strings.HasPrefix(key, "AWS_VPC_") {
		return fmt.Errorf("%s is not read from this file: the AWS SDK reads it from the environment", key)
	}
	if s := suggest.Closest(key, FileKeys, 3); s != "" {
		return fmt.Errorf("unknown key %s (did you mean %s?)", key, s)
	}
	return fmt.Errorf("unknown key %s; the keys are %s", key, strings.Join(FileKeys, ", "))
}

// lookup returns a key's text and where it was set ("path:line").
func (f *File) lookup(name string) (text, where string, ok bool) {
	if f == nil {
		return "", "", false
	}
	v, ok := f.vals[name]
	if !ok {
		return "", "", false
	}
	return v.text, f.Path + ":" + strconv.Itoa(v.line), true
}

// keys lists the file's keys.
func (f *File) keys() []string {
	if f == nil {
		return nil
	}
	out := make([]string, 0, len(f.vals))
	for k, v := range f.vals {
		if v.text != "" {
			out = append(out, k)
		}
	}
	return out
}
