package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"testing"
)

func untar(t *testing.T, b []byte) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func read(t *testing.T, archive []byte, name string) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the archive: %v", name, err)
		}
		if h.Name == name {
			b, _ := io.ReadAll(tr)
			return b
		}
	}
}

type desc struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

// blob reads the blob d names and checks its digest and size.
func blob(t *testing.T, archive []byte, d desc) []byte {
	t.Helper()
	b := read(t, archive, "blobs/sha256/"+d.Digest[len("sha256:"):])
	sum := sha256.Sum256(b)
	if "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || len(b) != d.Size {
		t.Fatalf("blob %s: digest or size (%d) does not match", d.Digest, len(b))
	}
	return b
}

// The archive is a valid OCI layout: index → manifest → config and layer,
// each blob matching its digest; the layer holds the files with their modes
// and parents; the same image gives the same bytes.
func TestArchiveIsAnOCILayout(t *testing.T) {
	im := Image{Ref: "registry.example/vpc-cni:1.2.3", Entrypoint: []string{"/usr/local/bin/vpcctl"}, Env: []string{"PATH=/usr/local/bin"},
		Files: map[string]File{"usr/local/bin/vpcctl": {Data: []byte("binary"), Mode: 0o755},
			"etc/ssl/certs/ca-certificates.crt": {Data: []byte("certs"), Mode: 0o644}}}
	a, err := im.Archive()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := im.Archive(); !bytes.Equal(a, b) {
		t.Fatal("two archives of one image differ")
	}
	var index struct{ Manifests []desc }
	if err := json.Unmarshal(read(t, a, "index.json"), &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %+v", err, index)
	}
	m := index.Manifests[0]
	if m.Annotations["io.containerd.image.name"] != im.Ref || m.Annotations["org.opencontainers.image.ref.name"] != im.Ref {
		t.Errorf("manifest annotations %v", m.Annotations)
	}
	var man struct {
		Config desc
		Layers []desc
	}
	if err := json.Unmarshal(blob(t, a, m), &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("manifest: %v %+v", err, man)
	}
	var cfg struct {
		Architecture, OS string
		Config           struct{ Entrypoint, Env []string }
		Rootfs           struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(blob(t, a, man.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "amd64" || cfg.OS != "linux" || cfg.Config.Entrypoint[0] != "/usr/local/bin/vpcctl" ||
		len(cfg.Rootfs.DiffIDs) != 1 || cfg.Rootfs.DiffIDs[0] != man.Layers[0].Digest {
		t.Errorf("config %+v", cfg)
	}
	files := untar(t, blob(t, a, man.Layers[0]))
	for name, mode := range map[string]int64{"usr/": 0o755, "usr/local/bin/": 0o755, "usr/local/bin/vpcctl": 0o755,
		"etc/ssl/certs/ca-certificates.crt": 0o644} {
		if h := files[name]; h == nil || h.Mode != mode {
			t.Errorf("layer: %s is %+v, want mode %o", name, h, mode)
		}
	}
}

// The archive ends with tar's trailer, which strict readers (tar(1),
// skopeo) require.
func TestArchiveEndsWithTheTrailer(t *testing.T) {
	a, err := Image{Ref: "x:1", Files: map[string]File{"f": {Data: []byte("x"), Mode: 0o644}}}.Archive()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 1024 || !bytes.Equal(a[len(a)-1024:], make([]byte, 1024)) {
		t.Fatal("no end-of-archive trailer (two zero blocks)")
	}
}
