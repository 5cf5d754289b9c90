package docs

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"vpc-cni/internal/testsupport/gotool"
)

// The package map of design.md is the layering's data: this test reads its
// table and its "Never:" paragraph and holds them against `go list`, so the
// page and the imports cannot drift apart.

const (
	module    = "vpc-cni"
	designMD  = "design.md"
	mapHead   = "## Package map"
	layersTag = "The layers, top down:"
)

// goPkg is one package as `go list` sees it (test files left out).
type goPkg struct {
	path     string
	imports  []string // direct
	deps     []string // transitive
	standard bool
}

// rule is one row of the package map: who may be imported. any: "everything
// below"; testOnly: test support, imported by tests only.
type rule struct {
	mayImport []string
	any       bool
	testOnly  bool
}

func TestPackagesImportOnlyWhatThePackageMapAllows(t *testing.T) {
	pkgs := listPackages(t)
	rules := packageMap(t, pkgs)
	for _, p := range ours(pkgs) {
		r, ok := rules[p.path]
		if !ok {
			t.Errorf("%s is not in the package map of %s: add its row", p.path, designMD)
			continue
		}
		if r.any || r.testOnly {
			continue
		}
		for _, imp := range p.imports {
			if isOurs(imp) && !slices.Contains(r.mayImport, imp) {
				t.Errorf("%s imports %s; the package map allows %v", p.path, imp, r.mayImport)
			}
		}
	}
	for path := range rules {
		if _, ok := pkgs[path]; !ok {
			t.Errorf("the package map names %s, which does not exist", path)
		}
	}
	for _, p := range ours(pkgs) {
		for _, imp := range p.imports {
			if r := rules[imp]; r.testOnly && !slices.Contains(rules[p.path].mayImport, imp) {
				t.Errorf("%s imports the test support %s outside its tests", p.path, imp)
			}
		}
	}
}

// A lower layer never imports a higher one (the layers as the page lists
// them, top down).
func TestNoLayerImportsAHigherOne(t *testing.T) {
	pkgs := listPackages(t)
	layers := layerOrder(t, pkgs)
	if len(layers) < 5 {
		t.Fatalf("%d layers read from %q; the page's sentence changed shape", len(layers), layersTag)
	}
	for path, level := range layers {
		for _, imp := range pkgs[path].imports {
			if l, ok := layers[imp]; ok && l < level {
				t.Errorf("%s (layer %d) imports %s (layer %d, higher)", path, level, imp, l)
			}
		}
	}
}

// pool is pure: the standard library only, nothing that does I/O, nothing
// of ours, directly or not.
func TestPoolIsPure(t *testing.T) {
	pkgs := listPackages(t)
	p := pkgs[module+"/pool"]
	for _, imp := range p.imports {
		if io := ioPackage(imp); io || !pkgs[imp].standard {
			t.Errorf("pool imports %s (I/O %v, standard library %v)", imp, io, pkgs[imp].standard)
		}
	}
	for _, d := range p.deps {
		if isOurs(d) || !pkgs[d].standard {
			t.Errorf("pool depends on %s", d)
		}
	}
}

// The edges (cloud, netns, hostnet) never reach the store, even indirectly.
func TestEdgesDoNotImportTheStore(t *testing.T) {
	pkgs := listPackages(t)
	for _, edge := range []string{"cloud", "netns", "hostnet"} {
		if slices.Contains(pkgs[module+"/"+edge].deps, module+"/store") {
			t.Errorf("%s depends on store", edge)
		}
	}
}

// Production code never links the emulator or the simulator, except
// `vpcctl sim` (commands/sim*.go) and the simulator's own use of the
// emulator; the test tiers (e2e/...) are not production. Only commands/
// imports urfave/cli.
func TestProductionCodeLinksNoEmulator(t *testing.T) {
	pkgs := listPackages(t)
	rules := packageMap(t, pkgs)
	sims := []string{module + "/sim/ec2sim", module + "/sim/whatif"}
	for _, p := range ours(pkgs) {
		if rules[p.path].testOnly || slices.Contains(sims, p.path) || p.path == module+"/commands" || p.path == module ||
			strings.HasPrefix(p.path, module+"/e2e/") {
			continue
		}
		for _, d := range p.deps {
			if slices.Contains(sims, d) {
				t.Errorf("%s depends on %s", p.path, d)
			}
		}
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, "github.com/urfave/cli") {
				t.Errorf("%s imports %s: only commands/ does", p.path, imp)
			}
		}
	}
	files, err := filepath.Glob("../commands/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("commands/*.go: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(filepath.Base(f), "sim") {
			continue
		}
		for _, imp := range fileImports(t, f) {
			if slices.Contains(sims, imp) {
				t.Errorf("%s imports %s: only commands/sim*.go may", f, imp)
			}
		}
	}
}

// The standard library's I/O: files, processes, sockets, the OS, logging,
// randomness from the kernel. (net/netip is values only.)
func ioPackage(path string) bool {
	for _, p := range []string{"os", "net", "syscall", "io/fs", "io/ioutil", "log", "crypto/rand", "runtime/debug", "plugin", "database/sql"} {
		if path == p || strings.HasPrefix(path, p+"/") && path != "net/netip" {
			return true
		}
	}
	return false
}

func isOurs(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

func ours(pkgs map[string]goPkg) []goPkg {
	var out []goPkg
	for _, p := range pkgs {
		if isOurs(p.path) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b goPkg) int { return strings.Compare(a.path, b.path) })
	return out
}

// listPackages is `go list -deps` over the module: our packages and
// everything they link, without test files (listed once per test binary).
// The tag adds the cluster tier (e2e/cluster), built only with it.
func listPackages(t *testing.T) map[string]goPkg {
	t.Helper()
	pkgs, err := listed()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

var listed = sync.OnceValues(func() (map[string]goPkg, error) {
	cmd := exec.Command(gotool.Go(), "list", "-tags", "cluster", "-deps",
		"-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}\t{{.Standard}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	pkgs := map[string]goPkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("go list line %q", line)
		}
		std, _ := strconv.ParseBool(f[3])
		pkgs[f[0]] = goPkg{path: f[0], imports: strings.Fields(f[1]), deps: strings.Fields(f[2]), standard: std}
	}
	return pkgs, nil
})

func fileImports(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	inParens   = regexp.MustCompile(`\([^)]*\)`)
)

// packageMap reads the table under "## Package map": the package column
// names one or more packages (`internal/awsnode`, `logfile` ...), the last
// says what they may import.
func packageMap(t *testing.T, pkgs map[string]goPkg) map[string]rule {
	t.Helper()
	rules := map[string]rule{}
	for _, row := range mapRows(t) {
		r := mayImport(t, row[2], pkgs)
		for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
			rules[resolve(t, m[1], pkgs)] = r
		}
	}
	if len(rules) < 20 {
		t.Fatalf("%d packages read from the package map of %s; its shape changed", len(rules), designMD)
	}
	return rules
}

func mayImport(t *testing.T, cell string, pkgs map[string]goPkg) rule {
	cell = strings.TrimSpace(cell)
	switch cell {
	case "everything below":
		return rule{any: true}
	case "(tests only)":
		return rule{testOnly: true}
	case "—", "-", "nothing of ours":
		return rule{}
	}
	var r rule
	for _, item := range strings.Split(inParens.ReplaceAllString(cell, ""), ",") {
		if name := strings.TrimSpace(item); name != "" {
			r.mayImport = append(r.mayImport, resolve(t, strings.Fields(name)[0], pkgs))
		}
	}
	return r
}

// mapRows are the cells of the package map's table rows, header left out.
func mapRows(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(designMD)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line) == mapHead
		case in && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---") && !strings.HasPrefix(line, "| package"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 3 {
				t.Fatalf("%s: a package map row has 3 cells: %q", designMD, line)
			}
			rows = append(rows, cells)
		}
	}
	return rows
}

// layerOrder reads "The layers, top down: a; b, c; ...; x and y import
// nothing of ours" into each package's depth (0 is the top).
func layerOrder(t *testing.T, pkgs map[string]goPkg) map[string]int {
	t.Helper()
	data, err := os.ReadFile(designMD)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	_, rest, ok := strings.Cut(text, layersTag)
	if !ok {
		t.Fatalf("%s lacks %q", designMD, layersTag)
	}
	rest, _, _ = strings.Cut(rest, ".")
	layers := map[string]int{}
	for i, group := range strings.Split(rest, ";") {
		group = inParens.ReplaceAllString(group, "")
		for _, m := range backticked.FindAllStringSubmatch(group, -1) {
			layers[resolve(t, m[1], pkgs)] = i
		}
	}
	return layers
}

// homes are where a short name of the page is looked for: the top level,
// the helpers, the test support, the shipped simulators.
var homes = []string{"", "internal/", "internal/testsupport/", "sim/"}

// resolve turns a name of the page (`main.go`, `commands/`, `logfile`,
// `sim/ec2sim/`) into an import path.
func resolve(t *testing.T, name string, pkgs map[string]goPkg) string {
	t.Helper()
	name = strings.TrimSuffix(name, "/")
	if name == "main.go" {
		return module
	}
	for _, home := range homes {
		if p := module + "/" + home + name; pkgs[p].path != "" {
			return p
		}
	}
	t.Errorf("%s names %q, which is no package of the module", designMD, name)
	return name
}
