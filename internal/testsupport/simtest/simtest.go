// Package simtest is what tests need around the EC2/IMDS emulator: a running
// node, an environment that points the SDK at it and at nothing of the
// host's, and a URL nothing listens on. Only tests import it.
package simtest

import (
	"net"
	"os"
	"strings"
	"testing"

	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
)

// hostAWSEnv is every variable that could leak the host's AWS setup into a test.
var hostAWSEnv = []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY", "AWS_SECRET_KEY",
	"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_DISABLED", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	"AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS", "AWS_CA_BUNDLE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"}

// Start runs an emulated node on loopback, closed at cleanup, and points the
// process's AWS environment at it.
func Start(tb testing.TB, cfg ec2sim.Config) *ec2sim.Sim {
	tb.Helper()
	sim, err := ec2sim.New(cfg)
	if err != nil {
		tb.Fatalf("ec2sim.New: %v", err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		tb.Fatalf("sim.Start: %v", err)
	}
	tb.Cleanup(func() { _ = sim.Close() })
	PointAt(tb, sim)
	return sim
}

// PointAt unsets the host's AWS variables (restored at cleanup) and sets the
// emulator's. Use it when the emulator was started elsewhere (in a netns).
func PointAt(tb testing.TB, sim *ec2sim.Sim) {
	tb.Helper()
	for _, k := range hostAWSEnv {
		tb.Setenv(k, "") // registers the restore
		os.Unsetenv(k)
	}
	for _, kv := range sim.Env() {
		k, v, _ := strings.Cut(kv, "=")
		tb.Setenv(k, v)
	}
}

// ClosedURL is an http URL on which nothing listens.
func ClosedURL(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	_ = l.Close()
	return u
}

// Held is what the emulated node holds in EC2: its attached ENIs and their
// pod addresses (secondary addresses, and 16 per /28 prefix; never an ENI's
// primary address).
func Held(sim *ec2sim.Sim) (enis, addrs int) {
	for _, e := range sim.State().ENIs {
		if e.DeviceIndex < 0 {
			continue
		}
		enis++
		for _, ip := range e.Secondary {
			if ip != e.PrimaryIP {
				addrs++
			}
		}
		addrs += len(e.Prefixes) * pool.PrefixSize
	}
	return enis, addrs
}
