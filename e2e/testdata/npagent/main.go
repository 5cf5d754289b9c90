// Command npagent stands in for the reference's network policy agent in the
// e2e tests, built from the reference's own generated gRPC code
// (github.com/aws/amazon-vpc-cni-k8s/rpc), so the plugin's calls and the
// loop's answer are checked against the real definitions:
//
//	npagent serve SOCKET RECORD [fail]  serve NPBackend on SOCKET; append each
//	                                    request to RECORD as a JSON line; with
//	                                    "fail", answer Success=false
//	npagent config SOCKET               ask GetNetworkPolicyConfigs on SOCKET
//	                                    as the agent does; print the reply as JSON
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/aws/amazon-vpc-cni-k8s/rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

func main() {
	var err error
	switch {
	case len(os.Args) >= 4 && os.Args[1] == "serve":
		err = serve(os.Args[2], os.Args[3], len(os.Args) > 4 && os.Args[4] == "fail")
	case len(os.Args) == 3 && os.Args[1] == "config":
		err = config(os.Args[2])
	default:
		err = fmt.Errorf("usage: npagent serve SOCKET RECORD [fail] | npagent config SOCKET")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "npagent:", err)
		os.Exit(1)
	}
}

// agent is the NPBackend server: it records what it is asked.
type agent struct {
	rpc.UnimplementedNPBackendServer
	mu      sync.Mutex
	record  *os.File
	success bool
}

func (a *agent) EnforceNpToPod(_ context.Context, r *rpc.EnforceNpRequest) (*rpc.EnforceNpReply, error) {
	return &rpc.EnforceNpReply{Success: a.success}, a.write("EnforceNpToPod", r)
}

func (a *agent) DeletePodNp(_ context.Context, r *rpc.DeleteNpRequest) (*rpc.DeleteNpReply, error) {
	return &rpc.DeleteNpReply{Success: a.success}, a.write("DeletePodNp", r)
}

// write appends {"method":..., "request":...} to the record, synced, so
// the test reads it as soon as the plugin has its answer.
func (a *agent) write(method string, m proto.Message) error {
	req, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(map[string]any{"method": method, "request": json.RawMessage(req)})
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.record.Write(append(line, '\n')); err != nil {
		return err
	}
	return a.record.Sync()
}

func serve(socket, record string, fail bool) error {
	f, err := os.OpenFile(record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	rpc.RegisterNPBackendServer(s, &agent{record: f, success: !fail})
	return s.Serve(ln)
}

// config asks as the agent does (pkg/rpcclient): wait for the server to be
// ready, a bounded context.
func config(socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := rpc.NewConfigServerBackendClient(conn).GetNetworkPolicyConfigs(ctx, &emptypb.Empty{})
	if err != nil {
		return err
	}
	out, err := protojson.MarshalOptions{EmitUnpopulated: true, UseProtoNames: true}.Marshal(reply)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
