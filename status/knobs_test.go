package status

import (
	"bytes"
	"strings"
	"testing"

	"vpc-cni/internal/printers"
	"vpc-cni/settings"
)

// Every knob pool status lists carries its default from the registry, and
// -o wide shows it beside the value: a node knob's, the knob another
// defaults to, a profile target's "node's".
func TestKnobsShowTheRegistrysDefault(t *testing.T) {
	e, err := settings.Resolve(settings.Overrides{}, settings.Inputs{Env: func(k string) (string, bool) {
		return map[string]string{"PROFILE_GOLD_WARM_IP_TARGET": "2", settings.MaxENI: "3"}[k], k == "PROFILE_GOLD_WARM_IP_TARGET" || k == settings.MaxENI
	}, Names: func() []string { return []string{"PROFILE_GOLD_WARM_IP_TARGET"} }})
	if err != nil {
		t.Fatal(err)
	}
	knobs := Knobs(e.Values, nil)
	want := map[string]string{settings.WarmENITarget: "1", settings.MaxENI: "0", settings.PodMTU: settings.ENIMTU,
		settings.ClusterName: "", "PROFILE_GOLD_WARM_IP_TARGET": "node's", "PROFILE_GOLD_SNAT": settings.SNATNode}
	for _, k := range knobs {
		if w, ok := want[k.Name]; ok && k.Default != w {
			t.Errorf("%s: default %q, want %q", k.Name, k.Default, w)
		}
		delete(want, k.Name)
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
	var out bytes.Buffer
	tab := func(tab *printers.Table) { KnobRows(tab, "", knobs) }
	if err := printers.Render(&out, "wide", false, knobs, tab); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "DEFAULT") || !strings.Contains(out.String(), "node's") {
		t.Errorf("-o wide:\n%s", out.String())
	}
}
