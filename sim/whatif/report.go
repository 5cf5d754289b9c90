package whatif

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Grid is every setting of the targets crossed with the timer intervals.
func Grid(targets []map[string]string, intervals []time.Duration) []Setting {
	var out []Setting
	for _, t := range targets {
		for _, iv := range intervals {
			out = append(out, Setting{Env: t, Interval: iv})
		}
	}
	return out
}

// DefaultTargets are the settings operators choose between, and adaptive growth.
func DefaultTargets() []map[string]string {
	return []map[string]string{
		{"WARM_ENI_TARGET": "1"},
		{"WARM_IP_TARGET": "1"},
		{"WARM_IP_TARGET": "5"},
		{"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "30"},
		{"ENABLE_PREFIX_DELEGATION": "true"},
		{"WARM_IP_TARGET": "1", "ADAPTIVE_GROWTH_WINDOW": "60s"},
	}
}

// WriteTable prints one row per result.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tMUTATING\tASSIGN\tCREATE\tUNASSIGN\tDELETE\tIDLE MEAN\tIDLE P95\tEMPTY\tWAIT MEAN\tWAIT MAX\tENIS\tTHROTTLED")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%s\t%s\t%d\t%d\n", r.Setting.Label(), r.Mutating,
			r.Calls["AssignPrivateIpAddresses"], r.Calls["CreateNetworkInterface"], r.Calls["UnassignPrivateIpAddresses"],
			r.Calls["DeleteNetworkInterface"], r.MeanIdle, r.P95Idle, r.Empty, r.MeanWait.Round(time.Second),
			r.MaxWait.Round(time.Second), r.ENIs, r.Throttled)
	}
	return tw.Flush()
}

// WriteSVG draws mutating calls against mean idle addresses, one labelled
// point per result (adaptive ones in another colour), as a plain SVG.
func WriteSVG(w io.Writer, title string, rs []Result) error {
	const width, height, left, bottom, top, right = 900.0, 600.0, 70.0, 60.0, 40.0, 30.0
	maxX, maxY := 1.0, 1.0
	for _, r := range rs {
		maxX, maxY = max(maxX, r.MeanIdle), max(maxY, float64(r.Mutating))
	}
	maxX, maxY = maxX*1.1, maxY*1.1
	px := func(x float64) float64 { return left + x/maxX*(width-left-right) }
	py := func(y float64) float64 { return height - bottom - y/maxY*(height-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="14">%s</text>`+"\n", left, esc(title))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`, left, py(0), px(maxX), py(0))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, py(0), left, py(maxY))
	for i := 0; i <= 5; i++ {
		x, y := maxX*float64(i)/5, maxY*float64(i)/5
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%.1f</text>`, px(x), py(0)+16, x)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.0f</text>`+"\n", left-6, py(y)+4, y)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">time-weighted mean idle addresses</text>`, (left+width)/2, height-15)
	fmt.Fprintf(&b, `<text transform="translate(18 %.0f) rotate(-90)" text-anchor="middle">mutating EC2 calls</text>`+"\n", height/2)
	for _, r := range rs {
		colour := "steelblue"
		if r.Adaptive {
			colour = "crimson"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s</title></circle>`, px(r.MeanIdle), py(float64(r.Mutating)), colour, esc(r.Setting.Label()))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", px(r.MeanIdle)+7, py(float64(r.Mutating))-4, esc(r.Setting.Label()))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
