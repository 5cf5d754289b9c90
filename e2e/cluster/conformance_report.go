//go:build cluster

package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// junitCase is one spec of e2e.test's JUnit report (ginkgo v2 writes the
// outcome in status; older reports only as child elements).
type junitCase struct {
	Name    string    `xml:"name,attr"`
	Status  string    `xml:"status,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// outcome is passed, failed or skipped.
func (c junitCase) outcome() string {
	switch {
	case c.Status == "passed":
		return "passed"
	case c.Status == "skipped" || c.Status == "pending" || c.Skipped != nil:
		return "skipped"
	case c.Status != "" || c.Failure != nil || c.Error != nil:
		return "failed"
	}
	return "passed"
}

// reportOutcomes prints the specs the focus selected, by outcome and name,
// with counts, from the JUnit files in dir. Specs outside the focus (the
// report lists every spec of the suite) are left out.
func reportOutcomes(w io.Writer, dir, focus string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "junit*.xml"))
	if len(files) == 0 {
		return fmt.Errorf("no JUnit report in %s", dir)
	}
	re, err := regexp.Compile(focus)
	if err != nil {
		return err
	}
	by := map[string][]string{}
	for _, f := range files {
		cases, err := readJUnit(f)
		if err != nil {
			return err
		}
		for _, c := range cases {
			name := strings.TrimPrefix(c.Name, "[It] ")
			if re.MatchString(name) {
				by[c.outcome()] = append(by[c.outcome()], name)
			}
		}
	}
	for _, o := range []string{"passed", "failed", "skipped"} {
		sort.Strings(by[o])
		fmt.Fprintf(w, "%s: %d\n", o, len(by[o]))
		for _, n := range by[o] {
			fmt.Fprintf(w, "  %s %s\n", o, n)
		}
	}
	return nil
}

// readJUnit reads every testcase of one report, at any depth.
func readJUnit(path string) ([]junitCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []junitCase
	d := xml.NewDecoder(f)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "testcase" {
			var c junitCase
			if err := d.DecodeElement(&c, &se); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out = append(out, c)
		}
	}
}
