// Package promtext reads Prometheus text exposition with Prometheus's own
// parser, for tests only (the binary must not link it:
// commands/binary_deps_test.go).
package promtext

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse reads text into "name{labels}" → value; a text Prometheus rejects
// fails the test, naming where it came from.
func Parse(tb testing.TB, name string, text []byte) map[string]float64 {
	tb.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(text)))
	if err != nil {
		tb.Fatalf("%s: Prometheus's parser rejects it: %v\n%s", name, err, text)
	}
	out := map[string]float64{}
	for fname, f := range fams {
		for _, m := range f.GetMetric() {
			out[fname+labelsOf(m)] = valueOf(f.GetType(), m)
		}
	}
	return out
}

func labelsOf(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func valueOf(typ dto.MetricType, m *dto.Metric) float64 {
	if typ == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
