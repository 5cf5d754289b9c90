package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"testing"
)

// pauseSource is the sandbox's only process: it holds the pod's namespaces
// until the runtime stops it.
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

// writePauseImage builds a static pause binary and packs it as an OCI image
// archive named ref (annotation io.containerd.image.name, which `ctr images
// import` uses as the image's name).
func writePauseImage(tb testing.TB, path, ref string) {
	tb.Helper()
	src := tb.TempDir()
	for name, body := range map[string]string{"main.go": pauseSource, "go.mod": "module pause\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cmd := exec.Command(goBinary(), "build", "-trimpath", "-ldflags", "-s -w", "-o", "pause", ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building pause: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(filepath.Join(src, "pause"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, ociArchive(tb, binary, ref), 0o644); err != nil {
		tb.Fatal(err)
	}
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ociArchive is an OCI image layout in a tar: one layer holding /pause.
func ociArchive(tb testing.TB, pause []byte, ref string) []byte {
	layer := tarOf(tb, map[string][]byte{"pause": pause}, 0o755)
	blobs := map[string][]byte{}
	add := func(mediaType string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs["blobs/sha256/"+hex.EncodeToString(sum[:])] = b
		return descriptor{MediaType: mediaType, Digest: d, Size: len(b)}
	}
	layerDesc := add("application/vnd.oci.image.layer.v1.tar", layer)
	config := add("application/vnd.oci.image.config.v1+json", mustJSON(tb, map[string]any{
		"architecture": goruntime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/pause"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	}))
	manifest := add("application/vnd.oci.image.manifest.v1+json", mustJSON(tb, map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": config, "layers": []descriptor{layerDesc},
	}))
	manifest.Annotations = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": "1"}
	blobs["index.json"] = mustJSON(tb, map[string]any{"schemaVersion": 2,
		"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []descriptor{manifest}})
	blobs["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	return tarOf(tb, blobs, 0o644)
}

// tarOf packs files (sorted by name, for a stable digest) with one mode.
func tarOf(tb testing.TB, files map[string][]byte, mode int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
