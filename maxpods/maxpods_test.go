package maxpods

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/internal/usage"
	"vpc-cni/settings"
)

// eniMaxPods reads the reference's file: "type value" lines, # comments.
func eniMaxPods(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open("testdata/eni-max-pods.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil {
			t.Fatalf("eni-max-pods.txt: %q", sc.Text())
		}
		out[fields[0]] = n
	}
	return out
}

// nodeadmMaxPods is nodeadm's own max pods from its instance data:
// defaultMaxENIs × (ipv4AddressesPerInterface − 1) + 2.
func nodeadmMaxPods(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile("testdata/instance-info.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v struct {
			InstanceType string `json:"instanceType"`
			ENIs         int    `json:"defaultMaxENIs"`
			IPv4         int    `json:"ipv4AddressesPerInterface"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		out[v.InstanceType] = v.ENIs*(v.IPv4-1) + 2
	}
	return out
}

// defaults is the default configuration: no file, no environment.
var defaults = settings.Inputs{}

// For every instance type in the built-in table,
// the offline answer in secondary-IP mode with the default configuration is
// the reference's eni-max-pods.txt value. 193 types are newer than that
// file's last update (it left amazon-eks-ami with AL2); they are held to
// nodeadm's instance data, its successor, which agrees with the file on
// every type both list. One type is in neither: c7i.32xlarge (EC2 offers no
// such size; the table's row is held to the formula by the pool's tests).
// No type of the table disagrees with the file: its max_enis is card 0's
// limit, which is what the file counts on multi-card types (c6in.32xlarge:
// 8 ENIs, 394 pods; dividing by the 2 cards gave 198).
func TestOfflineMatchesENIMaxPodsForEveryBuiltinType(t *testing.T) {
	file, nodeadm := eniMaxPods(t), nodeadmMaxPods(t)
	for typ, want := range file {
		if n, ok := nodeadm[typ]; ok && n != want {
			t.Errorf("the references disagree on %s: eni-max-pods.txt %d, nodeadm %d", typ, want, n)
		}
	}
	unlisted := map[string]bool{"c7i.32xlarge": true}
	fromFile, fromNodeadm := 0, 0
	for _, typ := range cloud.BuiltinTypes() {
		want, ok := file[typ]
		if ok {
			fromFile++
		} else if want, ok = nodeadm[typ]; ok {
			fromNodeadm++
		}
		if !ok {
			if !unlisted[typ] {
				t.Errorf("%s: in neither reference; name it in the test with why", typ)
			}
			continue
		}
		r, err := Offline(typ, defaults)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if r.MaxPods != want || r.Capacity.Mode != "secondary-ip" {
			t.Errorf("%s: max pods %d (%s), the reference says %d", typ, r.MaxPods, r.Capacity.Mode, want)
		}
	}
	if fromFile < 1190 {
		t.Errorf("only %d types checked against eni-max-pods.txt", fromFile)
	}
	t.Logf("%d types checked against eni-max-pods.txt, %d against nodeadm's instance data", fromFile, fromNodeadm)
}

// Offline reads the knobs: prefix delegation, custom networking, MAX_ENI
// and MAX_PODS_CAP from the file as every vpc-cni process does.
func TestOfflineFollowsTheConfiguration(t *testing.T) {
	cases := []struct {
		typ, config string
		want        int
		mode        string
	}{
		{"m5.large", "", 29, "secondary-ip"},
		{"m5.large", "ENABLE_PREFIX_DELEGATION=true", 110, "prefix"},
		{"m5.large", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true", 20, "secondary-ip"},
		{"m5.large", "MAX_ENI=2", 20, "secondary-ip"},
		{"m5.24xlarge", "ENABLE_PREFIX_DELEGATION=true\nMAX_PODS_CAP=250", 250, "prefix"},
		{"t3.nano", "ENABLE_PREFIX_DELEGATION=true", 2*1*16 + 2, "prefix"}, // 2 ENIs x 1 slot: under the ceiling
		// Xen cannot hold prefixes: the knob is ignored, as a pass does.
		{"m4.large", "ENABLE_PREFIX_DELEGATION=true", 2*9 + 2, "secondary-ip"},
		{"m5.large", "ENABLE_IPv6=true\nENABLE_IPv4=false\nENABLE_PREFIX_DELEGATION=true", 110, "ipv6"},
		{"c6in.32xlarge", "", 394, "secondary-ip"},
	}
	for _, tc := range cases {
		f, err := settings.ParseFile("test", []byte(tc.config))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Offline(tc.typ, settings.Inputs{File: f})
		if err != nil {
			t.Fatalf("%s %q: %v", tc.typ, tc.config, err)
		}
		if r.MaxPods != tc.want || r.Capacity.Mode != tc.mode {
			t.Errorf("%s %q: %d %s, want %d %s (%+v)", tc.typ, tc.config, r.MaxPods, r.Capacity.Mode, tc.want, tc.mode, r.Capacity)
		}
		if r.Karpenter.MaxPods != r.MaxPods || !strings.Contains(r.Nodeadm.YAML, "maxPods: "+strconv.Itoa(r.MaxPods)) {
			t.Errorf("%s: the values to paste do not say %d: %+v %+v", tc.typ, r.MaxPods, r.Karpenter, r.Nodeadm)
		}
	}
}

// An unknown type is the caller's mistake, with the names it probably meant.
func TestOfflineUnknownTypeSuggests(t *testing.T) {
	for typ, want := range map[string]string{"m5.larg": "m5.large", "m5.huge": "m5.large", "xyzzy": "e.g. m5.large"} {
		_, err := Offline(typ, defaults)
		if !usage.Is(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), typ) {
			t.Errorf("%s: %v, want a usage error naming %q", typ, err, want)
		}
	}
}

// A bad knob is the caller's mistake too, named.
func TestOfflineBadKnob(t *testing.T) {
	f, err := settings.ParseFile("test", []byte("MAX_PODS_CAP=-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Offline("m5.large", settings.Inputs{File: f}); !usage.Is(err) || !strings.Contains(err.Error(), "MAX_PODS_CAP") {
		t.Errorf("got %v", err)
	}
}

// Each profile the node serves takes at least one ENI from the default
// pool's reach; max pods still counts every pool's addresses.
func TestProfilesTakeENISlotsFromTheDefaultPool(t *testing.T) {
	f, err := settings.ParseFile("test", []byte("PROFILE_GOLD_SNAT=none\nPROFILE_BLUE_SNAT=node\nPROFILE_RED_SNAT=node\nPROFILES=gold,blue\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Offline("m5.large", settings.Inputs{File: f}) // 3 ENIs x 9 slots
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxPods != 29 || len(r.Profiles) != 2 || r.DefaultPoolPods != 9 {
		t.Fatalf("max pods %d, profiles %v, default pool %d; want 29, gold and blue (red is not served), 9", r.MaxPods, r.Profiles, r.DefaultPoolPods)
	}
	if !strings.Contains(strings.Join(r.Capacity.Notes, "\n"), "network profiles blue, gold") {
		t.Fatalf("notes %v", r.Capacity.Notes)
	}
}
