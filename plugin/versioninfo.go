package plugin

import (
	"encoding/json"
	"io"

	"github.com/containernetworking/cni/pkg/version"
)

// VersionInfo is what VERSION prints and what the verbs accept: the bytes
// of version.PluginSupports(CNIVersions()...), written without reflecting
// over its type, which was most of a VERSION's own work.
func VersionInfo() version.PluginInfo { return versionInfo(CNIVersions()) }

type versionInfo []string

func (v versionInfo) SupportedVersions() []string { return v }

func (v versionInfo) Encode(w io.Writer) error {
	b := append(append([]byte(`{"cniVersion":`), quoteJSON(version.Current())...), `,"supportedVersions":[`...)
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, quoteJSON(s)...)
	}
	_, err := w.Write(append(b, "]}\n"...))
	return err
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
