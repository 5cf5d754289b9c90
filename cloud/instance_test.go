package cloud

import (
	"slices"
	"testing"

	"vpc-cni/sim/ec2sim"
)

func TestInstanceShowsTheNodeAndItsDeviceIndexes(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 1, ClientToken: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachENI(ctx, eni.ID, st.InstanceID, 2); err != nil {
		t.Fatal(err)
	}
	in, err := c.Instance(ctx, st.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != st.InstanceID || in.Type != "m5.large" || in.SubnetID != st.SubnetID || in.VPCID != st.VPCID || in.AZ == "" {
		t.Fatalf("Instance = %+v, sim %+v", in, st)
	}
	if !slices.Equal(in.DeviceIndexes, []int{0, 2}) {
		t.Fatalf("device indexes %v, want [0 2]", in.DeviceIndexes)
	}
	_, err = c.Instance(ctx, "i-0000000000000000f")
	if err == nil {
		t.Fatal("an unknown instance: want an error")
	}
}
