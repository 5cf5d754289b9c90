// Command image writes the DaemonSet's image, an OCI image-layout tar,
// with no container engine: `make image` runs it. The image holds the one
// static binary and the CA certificates the EC2 endpoint's TLS needs, as
// deploy/Dockerfile's distroless image does.
//
//	go run ./deploy/image --binary bin/vpcctl --ref REGISTRY/vpc-cni:TAG --out bin/vpc-cni-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"vpc-cni/internal/ociimage"
)

func main() {
	binary := flag.String("binary", "bin/vpcctl", "the static vpcctl binary (make build)")
	ref := flag.String("ref", "", "the image's name, REGISTRY/REPOSITORY:TAG")
	certs := flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	out := flag.String("out", "bin/vpc-cni-image.tar", "where to write the OCI archive")
	arch := flag.String("arch", runtime.GOARCH, "the binary's GOARCH")
	flag.Parse()
	if err := write(*binary, *certs, *ref, *arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s)\n", *out, *ref)
}

func write(binary, certs, ref, arch, out string) error {
	if ref == "" {
		return fmt.Errorf("--ref is required (REGISTRY/REPOSITORY:TAG)")
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("the binary: %w (run make build)", err)
	}
	ca, err := os.ReadFile(certs)
	if err != nil {
		return fmt.Errorf("the CA bundle: %w (Debian package ca-certificates)", err)
	}
	im := ociimage.Image{Ref: ref, Arch: arch, Entrypoint: []string{"/usr/local/bin/vpcctl"},
		Env: []string{"PATH=/usr/local/bin"},
		Files: map[string]ociimage.File{
			"usr/local/bin/vpcctl":              {Data: bin, Mode: 0o755},
			"etc/ssl/certs/ca-certificates.crt": {Data: ca, Mode: 0o644},
		}}
	b, err := im.Archive()
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
