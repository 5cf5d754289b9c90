package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/sim/ec2sim"
)

const e2eRole = "arn:aws:iam::123456789012:role/vpc-cni"

// podCredentials is a world whose EC2 accepts only credentials its STS or
// Pod Identity endpoint issued, with no keys in any process's environment
// (the instance role's are refused too). The pod's environment, which only
// the "DaemonSet" passes get, is what the caller returns from podEnv.
func podCredentials(t *testing.T, targets []string) *world {
	t.Helper()
	w := newWorld(t, worldOpts{env: targets, fresh: true})
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	w.sim.SetTrust(ec2sim.Trust{IssuedOnly: true})
	return w
}

func (w *world) token(aud string, exp time.Time) string {
	w.tb.Helper()
	p := filepath.Join(w.tb.TempDir(), "token")
	if err := os.WriteFile(p, []byte(ec2sim.MintToken(aud, "system:serviceaccount:kube-system:vpc-cni", exp)), 0o600); err != nil {
		w.tb.Fatal(err)
	}
	return p
}

func webIdentityEnv(w *world, tokenFile string) []string {
	return []string{"AWS_WEB_IDENTITY_TOKEN_FILE=" + tokenFile, "AWS_ROLE_ARN=" + e2eRole,
		"AWS_ROLE_SESSION_NAME=vpc-cni", "AWS_ENDPOINT_URL_STS=" + w.sim.URL() + "/sts"}
}

func podIdentityEnv(w *world, tokenFile string) []string {
	return []string{"AWS_CONTAINER_CREDENTIALS_FULL_URI=" + w.sim.URL() + ec2sim.PodIdentityPath,
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=" + tokenFile}
}

// The DaemonSet's passes (with the pod's credentials) grow the pool; a pass
// at rest asks STS nothing; a plugin ADD (kubelet's environment: no token)
// that finds the pool empty grows it inline with the handed-off token.
func TestPrivilegedWebIdentityEndToEnd(t *testing.T) {
	w := podCredentials(t, []string{"WARM_IP_TARGET=1"})
	exchangesThePodToken(t, w, webIdentityEnv(w, w.token("sts.amazonaws.com", time.Now().Add(time.Hour))),
		"STS:AssumeRoleWithWebIdentity")
}

func TestPrivilegedPodIdentityEndToEnd(t *testing.T) {
	w := podCredentials(t, []string{"WARM_IP_TARGET=1"})
	exchangesThePodToken(t, w, podIdentityEnv(w, w.token("pods.eks.amazonaws.com", time.Now().Add(time.Hour))),
		"PodIdentity:GetCredentials")
}

func exchangesThePodToken(t *testing.T, w *world, podEnv []string, exchange string) {
	t.Helper()
	w.reconcileUntilSettled(podEnv...)
	c := w.sim.Counters()
	if c[exchange] == 0 || c["refused:AuthFailure"] != 0 || len(w.sim.State().ENIs) == 0 {
		t.Fatalf("the passes grew nothing with issued credentials: counters %v", c)
	}
	if fi, err := os.Stat(filepath.Join(w.stateDir, cloud.HandoffFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("handoff: %v %v, want a 0600 file in the state dir", fi, err)
	}
	w.sim.ResetCounters()
	if n := w.reconcile(podEnv...); n != 0 {
		t.Fatalf("a pass at rest planned %d actions", n)
	}
	if c := w.sim.Counters(); c[exchange] != 0 || c["STS:AssumeRoleWithWebIdentity"] != 0 {
		t.Errorf("a pass at rest exchanged the token: counters %v", c)
	}
	conf := mustJSON(t, w.conf(nil))
	w.add(w.newPod("a"), conf) // takes the one free address
	w.sim.ResetCounters()
	w.add(w.newPod("b"), conf) // the pool is empty: grows inline
	c = w.sim.Counters()
	if c[exchange] == 0 || c["AssignPrivateIpAddresses"]+c["CreateNetworkInterface"] == 0 || c["refused:AuthFailure"] != 0 {
		t.Errorf("the inline grow did not use the handed-off token: counters %v", c)
	}
	if n := len(w.assignments()); n != 2 {
		t.Errorf("%d assignments, want 2", n)
	}
}

// An expired token, a wrong audience and a missing token file each fail
// the pass with a message naming the cause, and doctor repeats it.
func TestPrivilegedPodCredentialFailuresNameTheCause(t *testing.T) {
	w := podCredentials(t, []string{"WARM_IP_TARGET=1"})
	w.reconcileUntilSettled(webIdentityEnv(w, w.token("sts.amazonaws.com", time.Now().Add(time.Hour)))...)
	for name, tc := range map[string]struct {
		env   []string
		cause string
	}{
		"expired token":  {webIdentityEnv(w, w.token("sts.amazonaws.com", time.Now().Add(-time.Minute))), "ExpiredTokenException"},
		"wrong audience": {webIdentityEnv(w, w.token("pods.eks.amazonaws.com", time.Now().Add(time.Hour))), "incorrect token audience"},
		"missing file":   {webIdentityEnv(w, filepath.Join(t.TempDir(), "gone")), "cannot read the token file"},
		"pod identity":   {podIdentityEnv(w, w.token("sts.amazonaws.com", time.Now().Add(time.Hour))), "incorrect token audience"},
	} {
		t.Run(name, func(t *testing.T) {
			// A target the pool misses makes the pass call EC2, so it needs credentials.
			r := w.vpcctl(append(tc.env, "WARM_IP_TARGET=3"), "reconcile", "--wait", "--timeout", "30s")
			out := string(r.stdout) + string(r.stderr)
			if r.err == nil || !strings.Contains(out, tc.cause) || !strings.Contains(out, "no usable AWS credentials") {
				t.Fatalf("reconcile: %v, want a failure naming %q:\n%s", r.err, tc.cause, out)
			}
			d := w.vpcctl(nil, "doctor")
			if d.err == nil || !bytes.Contains(d.stdout, []byte(tc.cause)) || !bytes.Contains(d.stdout, []byte("no-credentials")) {
				t.Errorf("doctor: %v, want it to name %q:\n%s%s", d.err, tc.cause, d.stdout, d.stderr)
			}
		})
	}
}

// The plugin's process never links service/sts, whose package
// initialisation every start would pay (cloud/sts.go).
func TestPrivilegedBinaryLinksNoSTSService(t *testing.T) {
	testenv.RequireRoot(t, needsRoot) // TestMain builds the binaries as root only
	b, err := os.ReadFile(bin("vpc-cni"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("github.com/aws/aws-sdk-go-v2/service/ec2.")) {
		t.Fatal("no service/ec2 symbol in the binary: the check below would prove nothing")
	}
	if bytes.Contains(b, []byte("github.com/aws/aws-sdk-go-v2/service/sts.")) {
		t.Error("the binary links service/sts")
	}
}
