package pool

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the property tests with 1000 checks unless -rapid.checks or
// RAPID_CHECKS asks for another number (rapid's default is 100).
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if _, env := os.LookupEnv("RAPID_CHECKS"); !set && !env {
		if err := flag.Set("rapid.checks", "1000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
