// Command vpcctl is both the vpc-cni CNI plugin (when invoked as "vpc-cni")
// and the admin CLI (under any other name, normally "vpcctl").
package main

import (
	"os"
	"path/filepath"

	"vpc-cni/commands"
)

func main() {
	if filepath.Base(os.Args[0]) == commands.PluginName {
		commands.PluginMain()
		return
	}
	os.Exit(commands.Run(os.Args))
}
