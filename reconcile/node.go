package reconcile

import (
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

func nodeFrom(id cloud.Identity, limits pool.Limits, info cloud.InstanceTypeInfo, now time.Time) store.Node {
	return store.Node{
		InstanceID: id.InstanceID, InstanceType: id.InstanceType, Region: id.Region, AZ: id.AZ,
		VPCID: id.VPCID, VPCCIDRs: id.VPCCIDRs, SubnetID: id.SubnetID, SubnetCIDR: id.SubnetCIDR,
		PrimaryENI: id.PrimaryENI, PrimaryMAC: id.PrimaryMAC, PrimaryIP: id.PrimaryIP,
		SecurityGroups: id.SecurityGroups, Limits: limits, Hypervisor: info.Hypervisor, LearnedAt: now,
	}
}

// persistEffective records the configuration this pass acted on, so status
// shows it and the next command can say when it acts differently.
func persistEffective(tx *store.Tx, cfg settings.Effective, now time.Time) error {
	s, err := tx.Settings()
	if err != nil {
		return err
	}
	s.Effective = cfg.Pool
	s.LastPass = cfg.Values
	s.UpdatedAt = now
	return tx.PutSettings(s)
}
