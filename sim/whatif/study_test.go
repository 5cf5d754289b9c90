package whatif

import (
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/usage"
)

// The CLI's inputs: good ones parse, bad ones are the caller's mistake
// (exit 2) with a message naming the flag.
func TestStudyInputs(t *testing.T) {
	got, err := ParseTargets([]string{"WARM_IP_TARGET=1 MINIMUM_IP_TARGET=4", "WARM_ENI_TARGET=1"})
	if err != nil || len(got) != 2 || got[0]["MINIMUM_IP_TARGET"] != "4" || got[1]["WARM_ENI_TARGET"] != "1" {
		t.Errorf("targets %v, %v", got, err)
	}
	if b, err := ParseBackoff("5s/2m"); err != nil || b != (Backoff{5 * time.Second, 2 * time.Minute}) {
		t.Errorf("backoff %v, %v", b, err)
	}
	if w, err := (ModelSpec{Model: "bursts", Pods: 20, Burst: 10, Every: time.Second}).Workload(); err != nil || len(w.Pods) != 20 {
		t.Errorf("bursts: %v", err)
	}
	bad := map[string]error{}
	_, bad["--target"] = ParseTargets([]string{"WARM_IP_TARGET"})
	_, bad["--interval"] = ParseIntervals([]string{"-3s"})
	_, bad["--throttle-backoff"] = ParseBackoff("2m/5s")
	_, bad["--model"] = ModelSpec{Model: "nope", Pods: 1, Every: time.Second}.Workload()
	_, bad["--trace"] = ModelSpec{Trace: "/nonexistent/trace"}.Workload()
	for flag, err := range bad {
		if !usage.Is(err) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v, want a usage error naming the flag", flag, err)
		}
	}
	// A misspelt key was taken and silently meant nothing.
	if _, err := ParseTargets([]string{"WARM_IP_TARGTE=1"}); !usage.Is(err) || !strings.Contains(err.Error(), "did you mean WARM_IP_TARGET?") {
		t.Errorf("a misspelt key: %v", err)
	}
}
