package reconcile

import (
	"time"

	"vpc-cni/settings"
	"vpc-cni/store"
)

// OverridesOf converts the persisted overrides to the settings form.
func OverridesOf(s store.Settings) settings.Overrides {
	o := s.Overrides
	return settings.Overrides{WarmIP: o.WarmIP, MinIP: o.MinIP, WarmENI: o.WarmENI, WarmPrefix: o.WarmPrefix}
}

// StoreOverrides converts settings overrides to the persisted form.
func StoreOverrides(o settings.Overrides) store.Overrides {
	return store.Overrides{WarmIP: o.WarmIP, MinIP: o.MinIP, WarmENI: o.WarmENI, WarmPrefix: o.WarmPrefix}
}

// persistEffective records the configuration this pass acted on, so the
// plugin (which runs with kubelet's environment) acts on the same.
func persistEffective(tx *store.Tx, cfg settings.Effective, now time.Time) error {
	s, err := tx.Settings()
	if err != nil {
		return err
	}
	s.Effective = cfg.Pool
	s.Sources = map[string]string{}
	for _, v := range cfg.Values {
		s.Sources[v.Name] = string(v.Source)
	}
	s.UpdatedAt = now
	return tx.PutSettings(s)
}
