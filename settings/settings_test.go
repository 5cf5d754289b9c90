package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(kv map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func envIn(kv map[string]string) Inputs { return Inputs{Env: envOf(kv)} }

func intp(n int) *int { return &n }

func fileOf(t *testing.T, text string) *File {
	t.Helper()
	f, err := ParseFile("/etc/vpc-cni/config", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDefaultsWhenNothingIsSet(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Pool.WarmENITarget != 1 || e.Pool.WarmIPTarget != 0 || e.Pool.Cooldown != 30*time.Second || e.MTU != 9001 {
		t.Fatalf("defaults: %+v mtu %d", e.Pool, e.MTU)
	}
	if e.Pool.ReleaseDelay <= e.Pool.Cooldown {
		t.Fatalf("release delay %v must exceed cooldown %v", e.Pool.ReleaseDelay, e.Pool.Cooldown)
	}
	if got := e.Source(WarmENITarget); got != FromDefault {
		t.Fatalf("source = %q", got)
	}
}

// The documented order, highest first: store, environment, file, default.
func TestPrecedenceStoreOverEnvOverFile(t *testing.T) {
	in := Inputs{
		Env:  envOf(map[string]string{WarmIPTarget: "3", MinIPTarget: "7"}),
		File: fileOf(t, "WARM_IP_TARGET=1\nMINIMUM_IP_TARGET=2\n# comment\n\nWARM_ENI_TARGET=2\n"),
	}
	e, err := Resolve(Overrides{WarmIP: intp(4)}, in)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name  string
		got   int
		want  int
		src   Source
		where string
	}{
		{WarmIPTarget, e.Pool.WarmIPTarget, 4, FromStore, ""},
		{MinIPTarget, e.Pool.MinIPTarget, 7, FromEnv, ""},
		{WarmENITarget, e.Pool.WarmENITarget, 2, FromFile, "/etc/vpc-cni/config:5"},
		{WarmPrefixTarget, e.Pool.WarmPrefixTarget, 0, FromDefault, ""},
	}
	for _, c := range checks {
		v := e.Value(c.name)
		if c.got != c.want || v.Source != c.src || v.Where != c.where {
			t.Errorf("%s = %d from %s %q, want %d from %s %q", c.name, c.got, v.Source, v.Where, c.want, c.src, c.where)
		}
	}
}

func TestBadValuesNameTheVariableAndWhere(t *testing.T) {
	cases := []struct {
		env  map[string]string
		file string
		want []string
	}{
		{map[string]string{WarmIPTarget: "abc"}, "", []string{"WARM_IP_TARGET", "env"}},
		{map[string]string{WarmIPTarget: "-1"}, "", []string{"WARM_IP_TARGET"}},
		{map[string]string{MinIPTarget: "1.5"}, "", []string{"MINIMUM_IP_TARGET"}},
		{map[string]string{PrefixDelegation: "maybe"}, "", []string{"ENABLE_PREFIX_DELEGATION"}},
		{map[string]string{Cooldown: "-5"}, "", []string{"IP_COOLDOWN_PERIOD"}},
		{map[string]string{ENIMTU: "100"}, "", []string{"AWS_VPC_ENI_MTU"}},
		{map[string]string{Cooldown: "120", ReleaseDelay: "60"}, "", []string{"RELEASE_DELAY", "env"}},
		{nil, "# targets\nWARM_IP_TARGET=three\n", []string{"WARM_IP_TARGET", "file /etc/vpc-cni/config:2"}},
		{nil, "IP_COOLDOWN_PERIOD=10m\nRELEASE_DELAY=5m\n", []string{"RELEASE_DELAY", "RELEASE_DELAY from file /etc/vpc-cni/config:2", "IP_COOLDOWN_PERIOD from file /etc/vpc-cni/config:1"}},
	}
	for _, c := range cases {
		in := envIn(c.env)
		if c.file != "" {
			in.File = fileOf(t, c.file)
		}
		_, err := Resolve(Overrides{}, in)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v %q: err = %v, want one naming %q", c.env, c.file, err, w)
			}
		}
	}
}

// A bad value in the environment is an error even when the file has a good
// one: the environment wins, and nothing falls back.
func TestBadEnvironmentValueIsNotHiddenByTheFile(t *testing.T) {
	in := Inputs{Env: envOf(map[string]string{WarmIPTarget: "x"}), File: fileOf(t, "WARM_IP_TARGET=3")}
	if _, err := Resolve(Overrides{}, in); err == nil || !strings.Contains(err.Error(), "(env)") {
		t.Fatalf("err = %v", err)
	}
}

func TestCooldownAcceptsSecondsAndDurations(t *testing.T) {
	for text, want := range map[string]time.Duration{"0": 0, "45": 45 * time.Second, "1m": time.Minute} {
		e, err := Resolve(Overrides{}, envIn(map[string]string{Cooldown: text}))
		if err != nil || e.Pool.Cooldown != want {
			t.Errorf("%q: %v %v", text, e.Pool.Cooldown, err)
		}
	}
}

func TestEC2BudgetsFromTheEnvironmentAndTheFile(t *testing.T) {
	d, m, err := EC2Budgets(Inputs{Env: envOf(map[string]string{EC2DescribeRate: "5"}), File: fileOf(t, EC2MutatingRate+"=2")})
	if err != nil || d != (Budget{Rate: 5, Burst: 50}) || m != (Budget{Rate: 2, Burst: 20}) {
		t.Fatalf("describe %+v mutating %+v err %v", d, m, err)
	}
	for _, bad := range []string{"fast", "0", "-1", "5000"} {
		if _, _, err := EC2Budgets(envIn(map[string]string{EC2MutatingRate: bad})); err == nil || !strings.Contains(err.Error(), EC2MutatingRate) {
			t.Errorf("%q: err = %v, want one naming %s", bad, err, EC2MutatingRate)
		}
	}
}

func TestFileSyntax(t *testing.T) {
	f := fileOf(t, "  # comment\nWARM_IP_TARGET = 3\nCLUSTER_NAME=\"prod\"\nMINIMUM_IP_TARGET=\n")
	e, err := Resolve(Overrides{}, Inputs{File: f})
	if err != nil {
		t.Fatal(err)
	}
	if e.Pool.WarmIPTarget != 3 || e.ClusterName != "prod" || e.Source(MinIPTarget) != FromDefault {
		t.Fatalf("parsed %+v cluster %q min from %s", e.Pool, e.ClusterName, e.Source(MinIPTarget))
	}
}

func TestFileErrorsNameTheLine(t *testing.T) {
	cases := map[string][]string{
		"WARM_IP_TARGET 3":                   {"config:1", "KEY=VALUE"},
		"\nWARM_IP_TARGTE=3":                 {"config:2", "did you mean WARM_IP_TARGET"},
		"WARM_IP_TARGET=3\nWARM_IP_TARGET=4": {"config:2", "line 1"},
		"AWS_REGION=us-east-1":               {"AWS_REGION", "environment"},
		"FOO=1":                              {"unknown key FOO"},
	}
	for text, want := range cases {
		_, err := ParseFile("/etc/vpc-cni/config", []byte(text))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: err = %v, want %q", text, err, w)
			}
		}
	}
}

func TestMissingFileIsAnErrorOnlyWhenNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if f, err := ReadFile(path, false); err != nil || f.Path != path {
		t.Fatalf("default file missing: %v", err)
	}
	if _, err := ReadFile(path, true); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("named file missing: err = %v", err)
	}
	if err := os.WriteFile(path, []byte("MAX_ENI=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := Resolve(Overrides{}, Inputs{File: f}); err != nil || e.Pool.MaxENI != 2 || e.Value(MaxENI).Where != path+":1" {
		t.Fatalf("%+v %v", e.Value(MaxENI), err)
	}
}

func TestChangesComparesNormalisedValues(t *testing.T) {
	last, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "WARM_IP_TARGET=3\nIP_COOLDOWN_PERIOD=30")})
	if err != nil {
		t.Fatal(err)
	}
	now, err := Resolve(Overrides{}, envIn(map[string]string{WarmIPTarget: "5", Cooldown: "30s", MinIPTarget: "0"}))
	if err != nil {
		t.Fatal(err)
	}
	cs := Changes(last.Values, now.Values)
	if len(cs) != 1 || cs[0].Name != WarmIPTarget {
		t.Fatalf("changes %+v; want only WARM_IP_TARGET", cs)
	}
	msg := cs[0].String()
	for _, w := range []string{"WARM_IP_TARGET=5 (env)", "3 (file /etc/vpc-cni/config:1)"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
	if len(FromEnvironment(cs)) != 1 || len(Changes(nil, now.Values)) != 0 {
		t.Errorf("FromEnvironment or the no-last-pass case is wrong")
	}
}
func TestAdaptiveGrowthWindow(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration
		bad  bool
	}{{"", 0, false}, {"60", time.Minute, false}, {"90s", 90 * time.Second, false}, {"-1", 0, true}, {"soon", 0, true}} {
		e, err := Resolve(Overrides{}, envIn(map[string]string{AdaptiveGrowthWindow: c.text}))
		if (err != nil) != c.bad || e.Pool.AdaptiveWindow != c.want {
			t.Errorf("%s=%q: window %s, err %v; want %s, error %v", AdaptiveGrowthWindow, c.text, e.Pool.AdaptiveWindow, err, c.want, c.bad)
		}
	}
}

// A store override hides a bad value from the pool, not from the check: the
// value under it (file or environment) is an error on every path that
// resolves, naming the key and where it was set.
func TestOverrideDoesNotHideABadValue(t *testing.T) {
	cases := []struct {
		name string
		in   Inputs
		want string
	}{
		{"file", Inputs{File: fileOf(t, "# pool\nWARM_IP_TARGET=abc\n")}, `WARM_IP_TARGET="abc" (file /etc/vpc-cni/config:2): not an integer`},
		{"env", envIn(map[string]string{WarmIPTarget: "-3"}), `WARM_IP_TARGET="-3" (env): out of range`},
	}
	for _, c := range cases {
		_, err := Resolve(Overrides{WarmIP: intp(12)}, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "override 12") {
			t.Errorf("%s: err = %v, want one saying %q and naming the override", c.name, err, c.want)
		}
	}
	e, err := Resolve(Overrides{WarmIP: intp(12)}, Inputs{File: fileOf(t, "WARM_IP_TARGET=3\n")})
	if err != nil || e.Pool.WarmIPTarget != 12 {
		t.Fatalf("a good value under the override: %d, %v", e.Pool.WarmIPTarget, err)
	}
}

// The knobs other code applies (node rules, EC2 budget) are checked by
// Resolve, so every command and verb refuses a bad one, naming the key and
// the file's line.
func TestResolveChecksTheKnobsAppliedElsewhere(t *testing.T) {
	cases := map[string]string{
		ConnMark:         "0",
		RandomizeSNAT:    "foo",
		ExcludeSNATCIDRs: "10.0.0.0/8,fd00::/8",
		ExternalSNAT:     "yes please",
		NodePortSupport:  "2",
		EC2DescribeRate:  "fast",
	}
	for key, value := range cases {
		f := fileOf(t, "WARM_ENI_TARGET=1\n"+key+"="+value+"\n")
		_, err := Resolve(Overrides{}, Inputs{File: f})
		want := key + "=" + `"` + value + `" (file /etc/vpc-cni/config:2)`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s in the file: err = %v, want one naming %s", key, value, err, want)
		}
		_, err = Resolve(Overrides{}, envIn(map[string]string{key: value}))
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "(env)") {
			t.Errorf("%s=%s in the environment: err = %v", key, value, err)
		}
	}
}
