package install

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"vpc-cni/store"
)

// The shipped conflist is what install writes with both chained plugins present.
func TestShippedConflistIsWhatInstallWrites(t *testing.T) {
	in := &installer{Layout: Layout{StateDir: store.DefaultDir, Config: "/etc/vpc-cni/config"}}
	got, _ := in.conflistFor(nil, func(string) bool { return true })
	shipped, err := os.ReadFile("../deploy/10-vpc-cni.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(shipped, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("deploy/10-vpc-cni.conflist differs from install's:\n%s", got)
	}
}
