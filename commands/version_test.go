package commands

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The binary the Makefile builds says the chart's appVersion (the image's
// tag too), the commit it was built from with that commit's date, and
// where it runs.
func TestVersionIsTheChartsAppVersionAndTheCommit(t *testing.T) {
	r := vpc(t, nil, "version", "-o", "json")
	r.want(t, 0)
	var v VersionInfo
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, r.stdout)
	}
	if app := chartAppVersion(t); v.Version != app {
		t.Errorf("version %q, the chart's appVersion is %q", v.Version, app)
	}
	head := gitOut(t, "rev-parse", "--short=7", "HEAD")
	if !regexp.MustCompile(`^` + head + `(-dirty)?$`).MatchString(v.Commit) {
		t.Errorf("commit %q, HEAD is %s", v.Commit, head)
	}
	when, err := time.Parse(time.RFC3339, v.BuildDate)
	if err != nil {
		t.Fatalf("build date %q: %v", v.BuildDate, err)
	}
	committed, err := time.Parse(time.RFC3339, gitOut(t, "log", "-1", "--format=%cI"))
	if err != nil || !when.Equal(committed) {
		t.Errorf("build date %s, HEAD's commit date %s (%v)", when, committed, err)
	}
	if want := runtime.GOOS + "/" + runtime.GOARCH; v.Platform != want || v.GoVersion != runtime.Version() {
		t.Errorf("platform %q, go %q; want %q, %q", v.Platform, v.GoVersion, want, runtime.Version())
	}
}

// make image tags the image with the same version.
func TestImageTagIsTheVersion(t *testing.T) {
	out, err := exec.Command("make", "-s", "-n", "-C", "..", "image").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	if ref := "--ref vpc-cni:" + chartAppVersion(t) + " "; !strings.Contains(string(out), ref) {
		t.Errorf("make image does not say %q:\n%s", ref, out)
	}
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	chart, err := os.ReadFile("../deploy/helm/vpc-cni/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion: *"?([^"\n]+)"?$`).FindSubmatch(chart)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return string(m[1])
}

func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Skipf("git %s: %v (not a git checkout)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
