package plugin

import (
	"bytes"
	"slices"
	"testing"

	"github.com/containernetworking/cni/pkg/version"
)

// VERSION prints what version.PluginSupports prints, byte for byte.
func TestVersionInfoAsPluginSupports(t *testing.T) {
	var got, want bytes.Buffer
	if err := VersionInfo().Encode(&got); err != nil {
		t.Fatal(err)
	}
	lib := version.PluginSupports(CNIVersions()...)
	if err := lib.Encode(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("VERSION prints\n%s\nPluginSupports prints\n%s", got.Bytes(), want.Bytes())
	}
	if !slices.Equal(VersionInfo().SupportedVersions(), lib.SupportedVersions()) {
		t.Fatalf("versions %v, want %v", VersionInfo().SupportedVersions(), lib.SupportedVersions())
	}
}
