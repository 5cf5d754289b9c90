//go:build cluster

package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"

	"vpc-cni/internal/gotool"
)

// Images are OCI archives imported into each node's containerd: no registry
// is reachable, so nothing is ever pulled (pullPolicy Never).
const (
	pauseRef  = "localhost/vpc-cni-cluster/pause:1"
	vpcCNIRef = "localhost/vpc-cni-cluster/vpc-cni:cluster"
	probeRef  = "localhost/vpc-cni-cluster/probe:1"
)

const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`

// probeSource is the test pods' one binary: "serve" answers every HTTP
// request on :8080 with the caller's address; "get URL" prints the answer.
const probeSource = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "get" {
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(resp.Body)
		fmt.Print(string(b))
		return
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		host, _ := os.Hostname()
		fmt.Fprintf(w, "%s %s\n", host, r.RemoteAddr)
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe(":8080", nil))
	os.Exit(1)
}
`

// goProgram builds a static binary from one source file.
func goProgram(dir, name, src string) ([]byte, error) {
	d := filepath.Join(dir, "src", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	for f, body := range map[string]string{"main.go": src, "go.mod": "module " + name + "\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(gotool.Go(), "build", "-trimpath", "-ldflags", "-s -w", "-o", name, ".")
	cmd.Dir = d
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, &buildError{name, err, out}
	}
	return os.ReadFile(filepath.Join(d, name))
}

type buildError struct {
	name string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return "building " + e.name + ": " + e.err.Error() + "\n" + string(e.out)
}

// image is one layer of files (path -> content, all mode 0755) with an
// entrypoint and environment.
type image struct {
	ref        string
	files      map[string][]byte
	entrypoint []string
	env        []string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// archive is an OCI image layout in a tar (`ctr images import` reads it).
func (im image) archive() ([]byte, error) {
	layer, err := tarOf(im.files, 0o755)
	if err != nil {
		return nil, err
	}
	blobs := map[string][]byte{}
	add := func(mediaType string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		blobs["blobs/sha256/"+hex.EncodeToString(sum[:])] = b
		return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: len(b)}
	}
	layerDesc := add("application/vnd.oci.image.layer.v1.tar", layer)
	cfg, _ := json.Marshal(map[string]any{
		"architecture": goruntime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": im.entrypoint, "Env": im.env},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	config := add("application/vnd.oci.image.config.v1+json", cfg)
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": config, "layers": []descriptor{layerDesc}})
	manifest := add("application/vnd.oci.image.manifest.v1+json", man)
	manifest.Annotations = map[string]string{"io.containerd.image.name": im.ref}
	blobs["index.json"], _ = json.Marshal(map[string]any{"schemaVersion": 2,
		"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []descriptor{manifest}})
	blobs["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	return tarOf(blobs, 0o644)
}

// tarOf packs files sorted by name (a stable digest), parents first.
func tarOf(files map[string][]byte, mode int64) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	dirs := map[string]bool{}
	for _, n := range names {
		for d := filepath.Dir(n); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	ds := make([]string, 0, len(dirs))
	for d := range dirs {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	for _, d := range ds {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			return nil, err
		}
	}
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}
