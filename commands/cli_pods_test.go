package commands

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// podsState is a reconciled node where pod shop/web-0 holds an address, an
// interface added without Kubernetes arguments holds another, and an event
// names web-0's assignment.
func podsState(t *testing.T) (dir string, env []string) {
	t.Helper()
	_, env = newSim(t, "m5.large")
	dir = t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	st, err := store.OpenNew(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = st.Update(func(tx *store.Tx) error {
		if _, err := tx.Take(store.Assignment{ContainerID: "c0ffee01", IfName: "eth0", PodNamespace: "shop", PodName: "web-0"}, now, pool.Config{}); err != nil {
			return err
		}
		if _, err := tx.Take(store.Assignment{ContainerID: "bare02", IfName: "net1"}, now, pool.Config{}); err != nil {
			return err
		}
		return tx.AddEvent(store.Event{Time: now, Kind: "lost-assignment",
			Message: "address 100.64.0.9 of c0ffee01/eth0 is gone from EC2 while assigned; the pod must be recreated"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, env
}

// pool status names the pod holding each address: a POD section in the
// table, a POD column in wide, and pods with container ID and interface in
// JSON and YAML.
func TestPoolStatusNamesPods(t *testing.T) {
	dir, env := podsState(t)
	table := vpc(t, env, "--state-dir", dir, "pool", "status")
	table.want(t, 0)
	if !regexp.MustCompile(`(?m)^POD\s+ADDRESS\s+ENI\s+SINCE$`).MatchString(table.stdout) ||
		!regexp.MustCompile(`(?m)^shop/web-0\s+100\.64\.`).MatchString(table.stdout) ||
		!regexp.MustCompile(`(?m)^-\s+100\.64\.`).MatchString(table.stdout) {
		t.Errorf("table lacks the POD rows for shop/web-0 and the unnamed interface:\n%s", table.stdout)
	}
	wide := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "wide")
	wide.want(t, 0)
	if !regexp.MustCompile(`(?m)^100\.64\.\S+\s+\S+\s+eni-\S+\s+assigned\s+\S+\s+shop/web-0\s+c0ffee01/eth0$`).MatchString(wide.stdout) {
		t.Errorf("wide: no address row assigned to shop/web-0 (c0ffee01/eth0):\n%s", wide.stdout)
	}
	for _, format := range []string{"json", "yaml"} {
		r := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", format)
		r.want(t, 0)
		for _, want := range []string{"shop/web-0", "c0ffee01", "eth0", "bare02", "net1"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("-o %s lacks %q:\n%s", format, want, r.stdout)
			}
		}
	}
	var st PoolStatus
	r := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	want := map[string]PodStatus{
		"shop/web-0": {Pod: "shop/web-0", Namespace: "shop", Name: "web-0", ContainerID: "c0ffee01", IfName: "eth0"},
		"-":          {Pod: "-", ContainerID: "bare02", IfName: "net1"},
	}
	if len(st.Pods) != len(want) {
		t.Fatalf("pods %+v, want %d", st.Pods, len(want))
	}
	owners := map[string]string{}
	for _, e := range st.ENIs {
		for _, a := range e.Addresses {
			owners[a.Owner] = a.Pod
		}
	}
	for _, p := range st.Pods {
		w := want[p.Pod]
		if p.Namespace != w.Namespace || p.Name != w.Name || p.ContainerID != w.ContainerID || p.IfName != w.IfName || p.IP == "" || p.ENIID == "" {
			t.Errorf("pod %+v, want %+v with an IP and ENI", p, w)
		}
	}
	if owners["c0ffee01/eth0"] != "shop/web-0" {
		t.Errorf("address owned by c0ffee01/eth0 names pod %q, want shop/web-0", owners["c0ffee01/eth0"])
	}
}

// events names the pod where a message names an assignment.
func TestEventsNamePods(t *testing.T) {
	dir, env := podsState(t)
	r := vpc(t, env, "--state-dir", dir, "events")
	r.want(t, 0, "c0ffee01/eth0 (pod shop/web-0) is gone")
	r = vpc(t, env, "--state-dir", dir, "events", "-o", "json")
	r.want(t, 0)
	var out struct {
		Events []EventView `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	var named int
	for _, e := range out.Events {
		if e.Kind == "lost-assignment" {
			named++
			if len(e.Pods) != 1 || e.Pods[0] != (PodRef{"shop/web-0", "c0ffee01", "eth0"}) {
				t.Errorf("lost-assignment event names pods %+v, want shop/web-0 c0ffee01/eth0", e.Pods)
			}
		} else if len(e.Pods) != 0 {
			t.Errorf("event %q names pods %+v", e.Message, e.Pods)
		}
	}
	if named != 1 {
		t.Errorf("%d lost-assignment events, want 1: %s", named, r.stdout)
	}
}

// The events table shows every counter -o json shows, with its value.
func TestEventsTableShowsTheCounters(t *testing.T) {
	dir, env := podsState(t)
	r := vpc(t, env, "--state-dir", dir, "events", "-o", "json")
	r.want(t, 0)
	var out struct {
		Counters map[string]int64 `json:"counters"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Counters) == 0 {
		t.Fatalf("counters %v (%v)", out.Counters, err)
	}
	table := vpc(t, env, "--state-dir", dir, "events")
	table.want(t, 0, "COUNTER")
	for name, v := range out.Counters {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +` + strconv.FormatInt(v, 10) + `$`).MatchString(table.stdout) {
			t.Errorf("the table lacks %s %d:\n%s", name, v, table.stdout)
		}
	}
}
