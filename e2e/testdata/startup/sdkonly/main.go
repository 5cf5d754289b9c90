// Command sdkonly calibrates BenchmarkVersionStartup: a static binary that
// links what the plugin cannot do without (EC2 and IMDS clients, bbolt) and
// does nothing, so its start-up is the cost of linking them.
package main

import (
	"os"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	bolt "go.etcd.io/bbolt"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "never" { // keeps the packages linked
		_ = ec2.New(ec2.Options{})
		_ = imds.New(imds.Options{})
		_, _ = bolt.Open(os.Args[2], 0o600, nil)
	}
}
