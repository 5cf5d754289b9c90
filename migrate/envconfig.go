package migrate

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"vpc-cni/internal/atomicfile"
	"vpc-cni/internal/printers"
	"vpc-cni/internal/usage"
	"vpc-cni/settings"
)

// What migrate does with each of aws-node's variables.
const (
	Written = "written" // carried into the config file
	Dropped = "dropped" // not in the config file; the note says why and what instead
)

// ConfigVar is one variable of aws-node's env and its fate here.
type ConfigVar struct {
	EnvVar
	Fate   string `json:"fate"`   // settings.Fate, or "unknown"
	Action string `json:"action"` // Written or Dropped
	// Stops: the node would silently behave differently, so the migration
	// stops unless --force (Forced: it went on).
	Stops  bool   `json:"stops,omitempty"`
	Forced bool   `json:"forced,omitempty"`
	Note   string `json:"note,omitempty"`
}

// ConfigReport is what `migrate --aws-node-env` did (or, dry-run, would do).
type ConfigReport struct {
	Source  string      `json:"source"`
	Path    string      `json:"path"`
	DryRun  bool        `json:"dryRun,omitempty"`
	Written bool        `json:"written"`
	Same    bool        `json:"unchanged,omitempty"` // the file already said this
	Config  string      `json:"config"`
	Vars    []ConfigVar `json:"variables"`
}

// ConfigOptions are the inputs of a configuration migration.
type ConfigOptions struct {
	Source string // the file the env came from, for the report and the header
	Path   string // the config file to write
	DryRun bool
	Force  bool // drop the refused variables, replace a different file
	Agent  PolicyAgent
}

// MigrateConfig writes the config file equivalent to aws-node's env: every
// carried variable, checked by the settings code that reads the file. A
// refused variable (or a different file already at Path) stops it with a
// usage error unless Force; the report names every variable either way.
func MigrateConfig(vars []EnvVar, o ConfigOptions) (*ConfigReport, error) {
	out := &ConfigReport{Source: o.Source, Path: o.Path, DryRun: o.DryRun, Vars: classify(vars, o.Agent)}
	out.Config = configText(o.Source, out.Vars)
	if err := out.validate(); err != nil {
		return out, err
	}
	var refused []string
	for i, v := range out.Vars {
		if v.Stops {
			refused = append(refused, v.Name)
			out.Vars[i].Forced = o.Force
		}
	}
	if len(refused) > 0 && !o.Force {
		return out, usage.Errorf("%s: %s would change what the node does (%s); nothing was written; "+
			"see each one's note, or --force to write the config without them", o.Source, printers.Plural(len(refused), "variable", "variables"), strings.Join(refused, ", "))
	}
	return out, out.write(o.Force)
}

// validate reads the config text as every vpc-cni process will: a bad
// value is an error naming the variable.
func (out *ConfigReport) validate() error {
	f, err := settings.ParseFile(out.Path, []byte(out.Config))
	if err == nil {
		_, err = settings.Resolve(settings.Overrides{}, settings.Inputs{File: f})
	}
	if err != nil {
		return usage.Errorf("%s: aws-node's value cannot be carried: %v", out.Source, err)
	}
	return nil
}

func (out *ConfigReport) write(force bool) error {
	old, err := os.ReadFile(out.Path)
	switch {
	case err == nil && string(old) == out.Config:
		out.Same = true
		return nil
	case err == nil && !force:
		return usage.Errorf("%s exists and says something else; nothing was written: --force replaces it "+
			"(--dry-run prints what would be written)", out.Path)
	case err != nil && !os.IsNotExist(err):
		return fmt.Errorf("reading %s: %w", out.Path, err)
	case out.DryRun:
		return nil
	}
	if err := atomicfile.Write(out.Path, []byte(out.Config), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out.Path, err)
	}
	out.Written = true
	return nil
}

// configText is the file: a header, then the written variables in the
// DaemonSet's order.
func configText(source string, vars []ConfigVar) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# vpc-cni configuration, written by `vpcctl migrate --aws-node-env` from %s.\n", source)
	b.WriteString("# aws-node's variables vpc-cni carries, with the same names and meanings.\n")
	for _, v := range vars {
		if v.Action == Written {
			fmt.Fprintf(&b, "%s=%s\n", v.Name, v.Value)
		}
	}
	return b.String()
}

// Rows is the table form of the report.
func (out *ConfigReport) Rows(t *printers.Table) {
	switch {
	case out.DryRun:
		t.Row("DRY RUN", "nothing written; "+out.Path+" would say:", "", "", "")
	case out.Same:
		t.Row("UNCHANGED", out.Path+" already says this", "", "", "")
	case out.Written:
		t.Row("WROTE", out.Path, "", "", "")
	}
	t.Header("VARIABLE", "VALUE", "FATE", "ACTION", "NOTE")
	for _, v := range out.Vars {
		action := v.Action
		switch {
		case v.Forced:
			action += " (--force)"
		case v.Stops:
			action += ", STOPS"
		}
		t.Row(v.Name, strconv.Quote(v.Value)+fromNote(v.From), v.Fate, action, v.Note)
	}
}

func fromNote(from string) string {
	if from == "" {
		return ""
	}
	return " (valueFrom " + from + ")"
}
