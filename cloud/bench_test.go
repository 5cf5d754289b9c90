package cloud

import (
	"context"
	"testing"
	"time"
	"vpc-cni/internal/testsupport/simtest"

	"vpc-cni/sim/ec2sim"
)

// startSimB is startSim for benchmarks.
func startSimB(b *testing.B, cfg ec2sim.Config) *ec2sim.Sim {
	b.Helper()
	sim := simtest.Start(b, cfg)
	return sim
}

// BenchmarkFirstCall is what a fresh process (the plugin's inline grow)
// pays before its first EC2 answer: LoadDefaultConfig, client construction,
// one DescribeSubnets over loopback.
func BenchmarkFirstCall(b *testing.B) {
	sim := startSimB(b, ec2sim.Config{})
	subnet := sim.State().SubnetID
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		c, err := New(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Subnet(ctx, subnet); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/first-call")
}

// BenchmarkInstanceENIs is one reconcile's read of the truth (warm client).
func BenchmarkInstanceENIs(b *testing.B) {
	sim := startSimB(b, ec2sim.Config{InstanceType: "m5.large"})
	ctx := context.Background()
	c, err := New(ctx, Options{})
	if err != nil {
		b.Fatal(err)
	}
	id := sim.State().InstanceID
	for b.Loop() {
		if _, err := c.InstanceENIs(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdentity is a cold IMDS identity read (a new Client each time).
func BenchmarkIdentity(b *testing.B) {
	startSimB(b, ec2sim.Config{})
	ctx := context.Background()
	for b.Loop() {
		c, err := New(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Identity(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
