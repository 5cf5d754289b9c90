// Package ociimage writes a one-layer OCI image as an image-layout tar:
// what `make image` ships and the cluster tier imports, with no container
// engine (`ctr images import`, `podman load`, `docker load` and `skopeo copy
// oci-archive:` read it).
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
)

// File is one file of the layer.
type File struct {
	Data []byte
	Mode int64
}

// Image is one layer of files (path without a leading slash → file), an
// entrypoint and an environment, named ref.
type Image struct {
	Ref        string
	Arch       string // GOARCH; amd64 when empty
	Files      map[string]File
	Entrypoint []string
	Cmd        []string // the default arguments, when a pod gives none
	Env        []string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Archive is the image as an OCI image layout in a tar. The same files
// give the same digests: entries are sorted and carry no times.
func (im Image) Archive() ([]byte, error) {
	layer, err := tarOf(im.Files)
	if err != nil {
		return nil, err
	}
	files := map[string]File{}
	add := func(mediaType string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		files["blobs/sha256/"+hex.EncodeToString(sum[:])] = File{Data: b, Mode: 0o644}
		return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: len(b)}
	}
	arch := im.Arch
	if arch == "" {
		arch = "amd64"
	}
	layerDesc := add("application/vnd.oci.image.layer.v1.tar", layer)
	run := map[string]any{"Entrypoint": im.Entrypoint, "Env": im.Env}
	if len(im.Cmd) > 0 {
		run["Cmd"] = im.Cmd
	}
	cfg, _ := json.Marshal(map[string]any{
		"architecture": arch, "os": "linux",
		"config": run,
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	config := add("application/vnd.oci.image.config.v1+json", cfg)
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": config, "layers": []descriptor{layerDesc}})
	manifest := add("application/vnd.oci.image.manifest.v1+json", man)
	// containerd reads the first annotation, the OCI tools the second.
	manifest.Annotations = map[string]string{"io.containerd.image.name": im.Ref, "org.opencontainers.image.ref.name": im.Ref}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2,
		"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []descriptor{manifest}})
	files["index.json"] = File{Data: index, Mode: 0o644}
	files["oci-layout"] = File{Data: []byte(`{"imageLayoutVersion":"1.0.0"}`), Mode: 0o644}
	return tarOf(files)
}

// tarOf packs files sorted by name, parents first.
func tarOf(files map[string]File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	dirs := map[string]bool{}
	for n := range files {
		names = append(names, n)
		for d := path.Dir(n); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		names = append(names, d+"/")
	}
	slices.Sort(names)
	for _, n := range names {
		f, isFile := files[n]
		h := &tar.Header{Name: n, Mode: 0o755, Typeflag: tar.TypeDir}
		if isFile {
			h = &tar.Header{Name: n, Mode: f.Mode, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil { // the trailer: before the bytes are taken
		return nil, err
	}
	return buf.Bytes(), nil
}
