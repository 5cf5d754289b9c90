package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// keptStates names each state file a pass set aside as another instance's
// (reconcile.KeptPrefix + instance ID + time): nothing in it was used, and
// it stays until the operator has read it.
func keptStates(st *store.Store, thisInstance string) []Finding {
	paths, _ := filepath.Glob(filepath.Join(st.Dir(), reconcile.KeptPrefix+"i-*"))
	var out []Finding
	for _, p := range paths {
		id, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(p), reconcile.KeptPrefix), ".")
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		this := ""
		if thisInstance != "" {
			this = " (" + thisInstance + ")"
		}
		out = append(out, Finding{"kept state", true, fmt.Sprintf(
			"%s is instance %s's state file, set aside when this instance%s found it in the state dir (a state dir baked into an image or copied from another node); "+
				"nothing in it was used: read it if you need to, then remove it", p, id, this)})
	}
	return out
}
