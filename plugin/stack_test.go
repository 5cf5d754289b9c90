package plugin

import (
	"errors"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
)

// grown passes each verb its arguments and returns its error, and leaves a
// verb the plugin does not have nil (skel answers those itself).
func TestGrownCallsEachVerb(t *testing.T) {
	var called []string
	verb := func(name string) func(*skel.CmdArgs) error {
		return func(args *skel.CmdArgs) error {
			called = append(called, name+":"+args.ContainerID)
			return errors.New(name)
		}
	}
	f := grown(skel.CNIFuncs{Add: verb("add"), Del: verb("del"), Check: verb("check"), GC: verb("gc")})
	if f.Status != nil {
		t.Fatal("a missing verb became non-nil")
	}
	args := &skel.CmdArgs{ContainerID: "c1"}
	for name, fn := range map[string]func(*skel.CmdArgs) error{"add": f.Add, "del": f.Del, "check": f.Check, "gc": f.GC} {
		if err := fn(args); err == nil || err.Error() != name {
			t.Errorf("%s returned %v", name, err)
		}
	}
	if len(called) != 4 {
		t.Fatalf("verbs called: %v", called)
	}
}
