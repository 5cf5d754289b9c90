package reconcile

import (
	"time"

	"vpc-cni/settings"
	"vpc-cni/store"
)

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
