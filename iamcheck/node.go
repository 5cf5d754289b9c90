package iamcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/internal/printers"
	"vpc-cni/settings"
)

// Node checks this node: the knobs from in, EC2 and IMDS through the SDK's
// usual environment (AWS_ENDPOINT_URL_EC2 included), and the credentials a
// pass would use (the handoff file in stateDir, read only).
func Node(ctx context.Context, in settings.Inputs, stateDir, userAgent string) (Report, error) {
	cfg, err := settings.Resolve(settings.Overrides{}, in)
	if err != nil {
		return Report{}, err
	}
	cl, err := cloud.New(ctx, cloud.Options{ClusterName: cfg.ClusterName, UserAgent: userAgent,
		HTTPTimeout: cloud.AttemptTimeout(ctx), Handoff: filepath.Join(stateDir, cloud.HandoffFile), HandoffReadOnly: true})
	if err != nil {
		return Report{}, err
	}
	return Run(ctx, cl, cfg, in)
}

// Rows is the report as a table: one line per action.
func (r Report) Rows(t *printers.Table) {
	t.Header("ACTION", "RESULT", "CHECK", "STATEMENT", "DETAIL")
	for _, c := range r.Checks {
		t.Row(c.Action, c.Result, c.Method, c.Statement, c.Detail)
	}
}

// Summary is one line: how many actions, how many EC2 calls, what is missing.
func (r Report) Summary() string {
	if r.OK() {
		return fmt.Sprintf("%d EC2 actions allowed (%d EC2 calls, no change made)", len(r.Checks), r.Calls)
	}
	return fmt.Sprintf("%d of %d EC2 actions not allowed: %s", len(r.Missing()), len(r.Checks), strings.Join(r.Missing(), ", "))
}

// WriteAdd prints the statements to add to the node's role, when any.
func (r Report) WriteAdd(w io.Writer) error {
	if r.Add == nil {
		return nil
	}
	data, err := json.MarshalIndent(r.Add, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\nadd to the node's role (from deploy/iam-policy.json):\n%s\n", data)
	return err
}
