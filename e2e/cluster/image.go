//go:build cluster

package main

import (
	"os"
	"os/exec"
	"path/filepath"

	"vpc-cni/internal/ociimage"
	"vpc-cni/internal/testsupport/gotool"
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
	if len(os.Args) > 2 && os.Args[1] == "poll" {
		poll(os.Args[2:])
	}
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

// poll tries each URL every 100 ms from the process's start, for ever, and
// prints "<unix nanoseconds> ok|fail <url>" per try ("start" first).
func poll(urls []string) {
	c := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	fmt.Println(time.Now().UnixNano(), "start")
	for {
		for _, u := range urls {
			verdict := "ok"
			resp, err := c.Get(u)
			if err != nil {
				verdict = "fail"
			} else {
				resp.Body.Close()
			}
			fmt.Println(time.Now().UnixNano(), verdict, u)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// exe is an executable file of an image.
func exe(b []byte) ociimage.File { return ociimage.File{Data: b, Mode: 0o755} }
