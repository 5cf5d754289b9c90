package settings

import "fmt"

// Change is a knob whose value in this invocation differs from the one the
// last reconcile pass acted on.
type Change struct {
	Name string `json:"name"`
	Now  Value  `json:"now"`
	Last Value  `json:"lastPass"`
}

// String names the knob and both values with where they came from.
func (c Change) String() string {
	return fmt.Sprintf("%s=%s (%s) differs from the last pass's %s=%s (%s)",
		c.Name, quoteEmpty(c.Now.Value), c.Now.Origin(), c.Name, quoteEmpty(c.Last.Value), c.Last.Origin())
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Changes lists the knobs of now whose value differs from last (the last
// pass's values). Knobs the last pass did not record are not changes: an
// older state, or no pass yet.
func Changes(last, now []Value) []Change {
	prev := make(map[string]Value, len(last))
	for _, v := range last {
		prev[v.Name] = v
	}
	var out []Change
	for _, v := range now {
		if p, ok := prev[v.Name]; ok && p.Value != v.Value {
			out = append(out, Change{Name: v.Name, Now: v, Last: p})
		}
	}
	return out
}

// FromEnvironment keeps the changes this process's environment causes: what
// an operator's shell makes a command do differently from the timer.
func FromEnvironment(cs []Change) []Change {
	var out []Change
	for _, c := range cs {
		if c.Now.Source == FromEnv {
			out = append(out, c)
		}
	}
	return out
}
