package loop

import (
	"context"
	"fmt"
	"log/slog"

	"vpc-cni/npa"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// startPolicyConfig serves GetNetworkPolicyConfigs while ctx lasts, when
// the mode is on. Off, nothing is served: the agent exits on an answer it
// cannot use, and aws-node's none is one. A bad configuration is the
// passes' to report; the socket is then not served.
func startPolicyConfig(ctx context.Context, cfg Config) error {
	mode := policyKnobs(cfg).NetworkPolicyMode
	if mode == "" {
		cfg.Log(slog.LevelInfo, fmt.Sprintf("network policy off (%s unset): the agent's GetNetworkPolicyConfigs is not answered",
			settings.NetworkPolicyMode))
		return nil
	}
	path := cfg.PolicySocket
	ln, err := npa.Listen(path)
	if err != nil {
		return fmt.Errorf("network policy: serving the agent's configuration: %w", err)
	}
	cfg.Log(slog.LevelInfo, fmt.Sprintf("network policy %s: answering the agent's GetNetworkPolicyConfigs on %s", mode, path))
	go func() {
		if err := npa.ServeConfig(ctx, ln, path, func() (npa.ConfigReply, error) { return policyReply(cfg) }); err != nil {
			cfg.Log(slog.LevelError, fmt.Sprintf("network policy: %s: %v", path, err))
		}
	}()
	return nil
}

// policyKnobs are the knobs as the loop's inputs say now (policy off when
// they cannot be read).
func policyKnobs(cfg Config) settings.Effective {
	in, err := cfg.Inputs()
	if err != nil {
		return settings.Effective{}
	}
	e, err := settings.Resolve(settings.Overrides{}, in)
	if err != nil {
		return settings.Effective{}
	}
	return e
}

// policyReply is ipamd's answer: the mode as configured now, one network
// card, and the node as the last pass recorded it (its IPv6 in an IPv6
// cluster, its IPv4 otherwise).
func policyReply(cfg Config) (npa.ConfigReply, error) {
	e := policyKnobs(cfg)
	mode := e.NetworkPolicyMode
	if mode == "" {
		return npa.ConfigReply{}, fmt.Errorf("%s is unset or invalid now: restart the agent's pod once it is set", settings.NetworkPolicyMode)
	}
	st, err := cfg.OpenState()
	if err != nil {
		return npa.ConfigReply{}, fmt.Errorf("%w: %v", npa.ErrNoNode, err)
	}
	var node store.Node
	var known bool
	err = st.View(func(tx *store.Tx) (err error) {
		node, known, err = tx.Node()
		return err
	})
	if err != nil || !known {
		return npa.ConfigReply{}, fmt.Errorf("%w (%v)", npa.ErrNoNode, err)
	}
	r := npa.ConfigReply{Mode: mode, InstanceID: node.InstanceID, Region: node.Region}
	switch {
	case e.Pool.IPv6 && node.PrimaryIPv6.IsValid():
		r.NodeIPv6 = node.PrimaryIPv6.String()
	case !e.Pool.IPv6 && node.PrimaryIP.IsValid():
		r.NodeIPv4 = node.PrimaryIP.String()
	}
	return r, nil
}
