package migrate

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type referenceFile struct {
	name, origin, blob string
	envAs              string // made files: the file whose env it carries ("" itself)
	data               []byte
}

// referenceFiles are the reference's published files in
// testdata/reference, as its ORIGIN lists them.
func referenceFiles(t testing.TB) []referenceFile {
	t.Helper()
	dir := filepath.Join("testdata", "reference")
	f, err := os.Open(filepath.Join(dir, "ORIGIN"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []referenceFile
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if strings.HasPrefix(cols[0], "#") || cols[0] == "" {
			continue
		}
		if len(cols) != 5 {
			t.Fatalf("ORIGIN: %q is not 5 tab-separated columns", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dir, cols[0]))
		if err != nil {
			t.Fatal(err)
		}
		f := referenceFile{name: cols[0], origin: strings.Join(cols[1:4], " "), blob: cols[4], data: data}
		if made, ok := strings.CutPrefix(cols[4], "made: "); ok {
			_, as, found := strings.Cut(made, "; env as in ")
			if !found {
				t.Fatalf("ORIGIN: %s says how it was made but not whose env it carries", cols[0])
			}
			f.blob, f.envAs = "", strings.TrimPrefix(as, "itself")
		}
		out = append(out, f)
	}
	if len(out) < 5 {
		t.Fatalf("ORIGIN lists %d files", len(out))
	}
	return out
}

func gitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Each file is byte for byte the one its origin names (git's blob id).
func TestReferenceFilesAreAsPublished(t *testing.T) {
	for _, f := range referenceFiles(t) {
		if f.blob == "" {
			continue // made from the repository, not published
		}
		if got := gitBlobID(f.data); got != f.blob {
			t.Errorf("%s: blob %s, want %s (%s): the file is not as published", f.name, got, f.blob, f.origin)
		}
	}
}

// awsNodeEnvNames lists the aws-node container's env names as the file
// spells them, by a line scan independent of the YAML reader.
func awsNodeEnvNames(data []byte) []string {
	var names []string
	inNode, inEnv, envIndent := false, false, 0
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		indent := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case strings.HasPrefix(t, "- name: ") && strings.HasSuffix(l, "aws-node") && !inEnv:
			inNode = true
		case inNode && t == "env:":
			inEnv, envIndent = true, indent
		case inEnv && t != "" && indent <= envIndent && !strings.HasPrefix(t, "- "):
			return names
		case inEnv && strings.HasPrefix(t, "- name: "):
			names = append(names, strings.Trim(strings.TrimPrefix(t, "- name: "), `"`))
		}
	}
	return names
}

// migrate --aws-node-env on each of the reference's published manifests
// (and its chart's output) names every variable of the aws-node container,
// in the file's order, and decides each one.
func TestMigrateNamesEveryVariableOfThePublishedManifests(t *testing.T) {
	for _, f := range referenceFiles(t) {
		t.Run(f.name, func(t *testing.T) {
			want := awsNodeEnvNames(f.data)
			if f.envAs != "" {
				data, err := os.ReadFile(filepath.Join("testdata", "reference", f.envAs))
				if err != nil {
					t.Fatal(err)
				}
				want = awsNodeEnvNames(data)
			}
			if len(want) < 20 {
				t.Fatalf("the line scan found %d variables: %v", len(want), want)
			}
			env, err := ReadAWSNodeEnv(filepath.Join("testdata", "reference", f.name))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := MigrateConfig(env.Vars, ConfigOptions{Source: f.name, Path: filepath.Join(t.TempDir(), "config")})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range rep.Vars {
				got = append(got, v.Name)
				if v.Fate == unknownFate || v.Stops || v.Action != Written && v.Note == "" {
					t.Errorf("%s: %+v", v.Name, v)
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("the report names\n%v\nthe manifest has\n%v", got, want)
			}
		})
	}
}
